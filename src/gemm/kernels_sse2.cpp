// The SSE2 kernels, every x86-64 CPU's: 8 rows (two registers) by 4 tokens, a product and
// an addition where later ISAs fuse them; bfloat16 widened by interleaving zeros, half
// by integer operations (SSE2 has no conversion). Compiled with -mno-avx (so a
// -march=native build still tests SSE2 code) and no Eigen (micro_kernel.hpp).
#include <emmintrin.h>

#include <cstring>

#include "micro_kernel.hpp"

namespace egelu {
namespace gemm {
namespace sse2 {

struct f32 {
  using scalar = float;
  using reg = __m128;
  static constexpr int lanes = 4, prefetch_bytes = 1024;
  static reg zero() { return _mm_setzero_ps(); }
  static reg load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, reg r) { _mm_storeu_ps(p, r); }
  static reg broadcast(const float* p) { return _mm_set1_ps(*p); }
  static reg add(reg a, reg b) { return _mm_add_ps(a, b); }
  static reg madd(reg a, reg b, reg c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static reg load_weights(const float* p) { return _mm_loadu_ps(p); }
  static reg load_weights(const bf16* p) {
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
  }
  // Half to float as narrow_floats.hpp's widen(f16): the exponent and fraction shifted
  // into float's fields and scaled by 2^112 (exact for normal and subnormal halves),
  // infinities and NaNs given float's all-ones exponent, then the sign.
  static reg load_weights(const f16* p) {
    const __m128i h = _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_setzero_si128());
    const __m128i rest = _mm_and_si128(h, _mm_set1_epi32(0x7fff)), sign = _mm_slli_epi32(_mm_xor_si128(h, rest), 16);
    const __m128 scaled = _mm_mul_ps(_mm_castsi128_ps(_mm_slli_epi32(rest, 13)), _mm_set1_ps(0x1p112f));
    const __m128i special = _mm_cmpgt_epi32(rest, _mm_set1_epi32(0x7bff));
    const __m128i inf_nan =
        _mm_or_si128(_mm_set1_epi32(0x7f800000), _mm_slli_epi32(_mm_and_si128(rest, _mm_set1_epi32(0x3ff)), 13));
    const __m128i value =
        _mm_or_si128(_mm_and_si128(special, inf_nan), _mm_andnot_si128(special, _mm_castps_si128(scaled)));
    return _mm_castsi128_ps(_mm_or_si128(value, sign));
  }
  static reg mul(reg a, reg b) { return _mm_mul_ps(a, b); }
  static reg msub(reg a, reg b, reg c) { return _mm_sub_ps(_mm_mul_ps(a, b), c); }
  // Four bytes in the low byte of each 32-bit lane (SSE2 has no widening conversions).
  static __m128i bytes(const void* p) {
    int four;
    std::memcpy(&four, p, 4);
    const __m128i zero = _mm_setzero_si128();
    return _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(four), zero), zero);
  }
  static reg load_q8(const std::int8_t* p) {
    // The byte moved to the lane's top and shifted back arithmetically: sign-extended.
    return _mm_cvtepi32_ps(_mm_srai_epi32(_mm_slli_epi32(bytes(p), 24), 24));
  }
  static reg load_q4_low(const std::uint8_t* p) { return _mm_cvtepi32_ps(_mm_and_si128(bytes(p), _mm_set1_epi32(15))); }
  static reg load_q4_high(const std::uint8_t* p) { return _mm_cvtepi32_ps(_mm_srli_epi32(bytes(p), 4)); }

  // Quantized inputs (tile_kernel_body.inc): 32-bit integer sums of 16-bit pairs.
  using ireg = __m128i;
  // The integer kernels take 2 row registers by 2 tokens: 4 integer and 4 float sums of the 16.
  static constexpr int input_rows = 2, input_chunk = 2;
  static void pin(ireg& r) { __asm__("" : "+x"(r)); }  // (kept in a register, in its order)
  static ireg izero() { return _mm_setzero_si128(); }
  static ireg iadd(ireg a, ireg b) { return _mm_add_epi32(a, b); }
  static ireg isub(ireg a, ireg b) { return _mm_sub_epi32(a, b); }
  static ireg ibroadcast(const std::int32_t* p) { return _mm_set1_epi32(*p); }
  static ireg madd_pairs(ireg w, ireg x) { return _mm_madd_epi16(w, x); }
  static ireg add_pairs(ireg acc, ireg w, ireg x) { return iadd(acc, madd_pairs(w, x)); }
  static reg to_float(ireg a) { return _mm_cvtepi32_ps(a); }
  // A byte's nibbles as the pair (low, high): (b | b << 12) & 0x000f000f.
  static ireg q4_pairs(const std::uint8_t* p) {
    const __m128i b = bytes(p);
    return _mm_and_si128(_mm_or_si128(b, _mm_slli_epi32(b, 12)), _mm_set1_epi32(0x000f000f));
  }
  // Paired steps' signed bytes (each lane's two adjacent) sign-extended to 16 bits: each
  // byte moved to its word's top and shifted back arithmetically.
  static ireg q8_pairs(const std::int8_t* p) {
    const __m128i eight = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_srai_epi16(_mm_unpacklo_epi8(eight, eight), 8);
  }
};

struct f64 {
  using scalar = double;
  using reg = __m128d;
  static constexpr int lanes = 2, prefetch_bytes = 1024;
  static reg zero() { return _mm_setzero_pd(); }
  static reg load(const double* p) { return _mm_loadu_pd(p); }
  static void store(double* p, reg r) { _mm_storeu_pd(p, r); }
  static reg broadcast(const double* p) { return _mm_set1_pd(*p); }
  static reg add(reg a, reg b) { return _mm_add_pd(a, b); }
  static reg madd(reg a, reg b, reg c) { return _mm_add_pd(_mm_mul_pd(a, b), c); }
  static reg load_weights(const double* p) { return _mm_loadu_pd(p); }
};

#include "tile_kernel_body.inc"

constexpr kernel_set set{"sse2",
                         make_kernel<f32, float, 2, 4>(),
                         make_kernel<f32, bf16, 2, 4>(),
                         make_kernel<f32, f16, 2, 4>(),
                         make_kernel<f64, double, 2, 4>(),
                         make_block_kernel<f32, q8_0_panel, 2, 4>(),
                         make_block_kernel<f32, q4_0_panel, 2, 4>(),
                         make_block_kernel<f32, mxfp4_panel, 2, 4>()};

}  // namespace sse2

const kernel_set* sse2_kernels() { return &sse2::set; }

}  // namespace gemm
}  // namespace egelu
