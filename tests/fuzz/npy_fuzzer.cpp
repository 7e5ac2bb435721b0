// libFuzzer target for the .npy reader: any bytes must either parse into a
// consistent Array or throw egelu::npy::format_error -- never crash, read out of
// bounds or loop. Built by -DEGELU_FUZZ=ON (clang); CI runs it for 60 s.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <egelu/npy.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const egelu::npy::Array a = egelu::npy::parse(data, size, "fuzz.npy");
    const std::size_t item = a.is_double ? 8 : 4;
    if (a.data.size() != a.size() * item) std::abort();  // the invariant parse() promises
    const auto values = a.values<double>();
    if (values.size() != a.size()) std::abort();
  } catch (const egelu::npy::format_error&) {
  }
  return 0;
}
