// Plain C++ kernels, one value a "register": the fallback for CPUs egelu has no kernels
// for, compiled with the library's own flags (micro_kernel.hpp). The multiply-adds are
// std::fma, one rounding each as the FMA kernels' (AVX2, AVX-512, NEON), so that the blocks
// give those kernels' bits here too (tests/test_block_bits.cpp); without a hardware FMA it
// is a library call, slow but exact, which is the fallback's job.
#include <cmath>
#include <cstdint>

#include "micro_kernel.hpp"
#include "narrow_floats.hpp"

namespace egelu {
namespace gemm {
namespace portable {

template <typename Scalar>
struct scalar_vector {
  using scalar = Scalar;
  using reg = Scalar;
  static constexpr int lanes = 1, prefetch_bytes = 1024;
  static reg zero() { return Scalar(0); }
  static reg load(const Scalar* p) { return *p; }
  static void store(Scalar* p, reg r) { *p = r; }
  static reg broadcast(const Scalar* p) { return *p; }
  static reg add(reg a, reg b) { return a + b; }
  static reg madd(reg a, reg b, reg c) { return std::fma(a, b, c); }
  static reg load_weights(const Scalar* p) { return *p; }
  static reg load_weights(const bf16* p) { return widen(*p); }
  static reg load_weights(const f16* p) { return widen(*p); }
  static reg mul(reg a, reg b) { return a * b; }
  static reg load_q8(const std::int8_t* p) { return Scalar(*p); }
  static reg msub(reg a, reg b, reg c) { return a * b - c; }
  static reg load_q4_low(const std::uint8_t* p) { return Scalar(*p & 15); }
  static reg load_q4_high(const std::uint8_t* p) { return Scalar(*p >> 4); }

  // Quantized inputs (tile_kernel_body.inc): a 32-bit integer sum of 16-bit pairs, as pmaddwd.
  using ireg = std::int32_t;
  static constexpr int input_rows = 8, input_chunk = 4;
  static void pin(ireg& r) { __asm__("" : "+r"(r)); }  // (kept in a register, in its order)
  static ireg izero() { return 0; }
  static ireg iadd(ireg a, ireg b) { return a + b; }
  static ireg isub(ireg a, ireg b) { return a - b; }
  static ireg ibroadcast(const std::int32_t* p) { return *p; }
  static std::int32_t low(ireg a) { return std::int16_t(std::uint16_t(std::uint32_t(a) & 0xffffu)); }
  static std::int32_t high(ireg a) { return std::int16_t(std::uint16_t(std::uint32_t(a) >> 16)); }
  static ireg madd_pairs(ireg w, ireg x) { return low(w) * low(x) + high(w) * high(x); }
  static ireg add_pairs(ireg acc, ireg w, ireg x) { return iadd(acc, madd_pairs(w, x)); }
  static reg to_float(ireg a) { return Scalar(a); }
  static ireg pair(int first, int second) {
    return std::int32_t((std::uint32_t(first) & 0xffffu) | (std::uint32_t(second) & 0xffffu) << 16);
  }
  static ireg q4_pairs(const std::uint8_t* p) { return pair(*p & 15, *p >> 4); }
  static ireg q8_pairs(const std::int8_t* p) { return pair(p[0], p[1]); }
};
using f32 = scalar_vector<float>;
using f64 = scalar_vector<double>;

#include "tile_kernel_body.inc"

constexpr kernel_set set{"portable",
                         make_kernel<f32, float, 8, 4>(),
                         make_kernel<f32, bf16, 8, 4>(),
                         make_kernel<f32, f16, 8, 4>(),
                         make_kernel<f64, double, 8, 4>(),
                         make_block_kernel<f32, q8_0_panel, 8, 4>(),
                         make_block_kernel<f32, q4_0_panel, 8, 4>(),
                         make_block_kernel<f32, mxfp4_panel, 8, 4>()};

}  // namespace portable

const kernel_set& portable_kernels() { return portable::set; }

}  // namespace gemm
}  // namespace egelu
