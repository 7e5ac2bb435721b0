// egelu's Q8_0 and Q4_0 quantization against ggml's bytes: the rows of a raw float32 file
// (row-major, R x K) quantized by egelu (src/gemm/block_formats.hpp, what the blocks run
// when they pack weights) and compared byte for byte with ggml_quantize_chunk's output for
// the same rows (bench/ggml's `ggml_products quantize`, or a .q4_0 file of
// bench/onnxruntime's models). Prints one JSON line per type; exits 1 on a mismatch.
//
//   quantize_check --rows R --cols K --in FLOATS [--q8_0 FILE] [--q4_0 FILE]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gemm/block_formats.hpp"

namespace {

std::vector<char> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "quantize_check: cannot open %s\n", path.c_str());
    std::exit(2);
  }
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// egelu's blocks of one type, in ggml's layout (f16 d, then the quants), for every row.
template <typename Block, typename Quantize>
std::vector<char> egelu_bytes(const std::vector<float>& x, long rows, long cols, Quantize quantize) {
  std::vector<char> out;
  for (long r = 0; r < rows; ++r) {
    for (long c = 0; c < cols; c += egelu::gemm::block_length) {
      const Block b = quantize(&x[std::size_t(r * cols + c)]);
      const char* p = reinterpret_cast<const char*>(&b.d);
      out.insert(out.end(), p, p + 2);
      const char* q = reinterpret_cast<const char*>(b.q);
      out.insert(out.end(), q, q + sizeof b.q);
    }
  }
  return out;
}

int compare(const char* type, const std::vector<char>& ours, const std::vector<char>& ggml, std::size_t block_bytes) {
  std::size_t mismatched = 0, first = std::size_t(-1);
  const std::size_t blocks = ours.size() / block_bytes;
  if (ggml.size() != ours.size()) {
    std::printf(
        "{\"kind\": \"quantize_check\", \"type\": \"%s\", \"error\": \"ggml's file has %zu bytes, egelu's %zu\"}\n",
        type, ggml.size(), ours.size());
    return 1;
  }
  for (std::size_t b = 0; b < blocks; ++b) {
    if (std::memcmp(&ours[b * block_bytes], &ggml[b * block_bytes], block_bytes) != 0) {
      if (!mismatched++) first = b;
    }
  }
  std::printf("{\"kind\": \"quantize_check\", \"type\": \"%s\", \"blocks\": %zu, \"mismatched_blocks\": %zu", type,
              blocks, mismatched);
  if (mismatched) std::printf(", \"first_mismatch\": %zu", first);
  std::printf("}\n");
  return mismatched ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  long rows = 0, cols = 0;
  std::string in, q8, q4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--rows") rows = std::atol(value.c_str());
    if (flag == "--cols") cols = std::atol(value.c_str());
    if (flag == "--in") in = value;
    if (flag == "--q8_0") q8 = value;
    if (flag == "--q4_0") q4 = value;
  }
  if (rows <= 0 || cols <= 0 || cols % egelu::gemm::block_length || in.empty()) {
    std::fprintf(stderr,
                 "usage: quantize_check --rows R --cols K (a multiple of 32) --in FLOATS [--q8_0 F] [--q4_0 F]\n");
    return 2;
  }
  const std::vector<char> raw = read(in);
  if (raw.size() != std::size_t(rows * cols) * 4) {
    std::fprintf(stderr, "quantize_check: %s has %zu bytes, not %ld x %ld float32\n", in.c_str(), raw.size(), rows,
                 cols);
    return 2;
  }
  std::vector<float> x(std::size_t(rows * cols));
  std::memcpy(x.data(), raw.data(), raw.size());
  int status = 0;
  if (!q8.empty()) {
    status |= compare("q8_0", egelu_bytes<egelu::gemm::q8_0_block>(x, rows, cols, egelu::gemm::quantize_q8_0), read(q8),
                      2 + egelu::gemm::block_length);
  }
  if (!q4.empty()) {
    status |= compare("q4_0", egelu_bytes<egelu::gemm::q4_0_block>(x, rows, cols, egelu::gemm::quantize_q4_0), read(q4),
                      2 + egelu::gemm::block_length / 2);
  }
  return status;
}
