// libFuzzer target for the safetensors reader: any bytes must either parse into a
// consistent File or throw egelu::safetensors::format_error -- never crash, read out of
// bounds or loop. parse() copies the bytes to the heap, so AddressSanitizer catches a
// tensor whose view runs past them. Built by -DEGELU_FUZZ=ON (clang); CI runs it for 60 s.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <egelu/safetensors.hpp>
#include <string>
#include <vector>

namespace st = egelu::safetensors;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const st::File file = st::File::parse(data, size, "fuzz.safetensors");
    const std::vector<std::string> names = file.names();
    if (!std::is_sorted(names.begin(), names.end())) std::abort();
    std::size_t total = 0;
    for (const std::string& name : names) {
      if (!file.contains(name)) std::abort();
      const st::Tensor* t = nullptr;
      try {
        t = &file.tensor(name);
      } catch (const st::format_error&) {  // a dtype egelu does not read
        continue;
      }
      // The invariants open() and parse() promise; the values are all read (ASan checks the bounds).
      if (t->name != name || t->bytes != t->size() * st::dtype_size(t->dtype)) std::abort();
      total += t->bytes;
      std::vector<double> d(t->size());
      t->copy_to(d.data());
      std::vector<float> f(t->size());
      t->copy_to(f.data());
    }
    if (size < 8 || total > size - 8) std::abort();
    try {  // a name after the last one, so not in the file
      file.tensor(names.empty() ? "model.layers.0.weight" : names.back() + ".missing");
      std::abort();
    } catch (const st::format_error&) {
    }
  } catch (const st::format_error&) {
  }
  return 0;
}
