// The AVX2 + FMA kernels (Haswell on, AMD Zen): 16 rows (two registers) by 6 tokens, 12
// accumulators of the 16 registers, as BLIS's haswell float kernel; bfloat16 widened by a
// zero-extension and a shift, half by F16C's vcvtph2ps. Compiled with -mavx2 -mfma
// -mf16c (and -mno-avx512f, so a -march=native build still tests AVX2 code) and no Eigen
// (micro_kernel.hpp).
#include <immintrin.h>

#include "micro_kernel.hpp"

namespace egelu {
namespace gemm {
namespace avx2 {

struct f32 {
  using scalar = float;
  using reg = __m256;
  static constexpr int lanes = 8, prefetch_bytes = 1024;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, reg r) { _mm256_storeu_ps(p, r); }
  static reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg madd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg load_weights(const float* p) { return _mm256_loadu_ps(p); }
  static reg load_weights(const bf16* p) {
    const __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
  }
  static reg load_weights(const f16* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg msub(reg a, reg b, reg c) { return _mm256_fmsub_ps(a, b, c); }
  // Eight bytes zero-extended to 32-bit lanes, once for both nibbles (see kernels_avx512.cpp).
  static __m256i bytes(const void* p) {
    __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
    __asm__("" : "+x"(b));
    return b;
  }
  static reg load_q8(const std::int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static reg load_q4_low(const std::uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_and_si256(bytes(p), _mm256_set1_epi32(15)));
  }
  static reg load_q4_high(const std::uint8_t* p) { return _mm256_cvtepi32_ps(_mm256_srli_epi32(bytes(p), 4)); }
  // MXFP4 (tile_kernel_body.inc): vpermps looks the magnitude up by the index's low three bits
  // (eight lanes: half of E2M1's table), and the code's sign, bit 3, shifted to bit 31 and
  // masked, is the float's; the scales' powers of two as float bits (b << 23, and 2^-127's
  // 1 << 22 for b = 0).
  static reg e2m1_of(__m256i codes) {
    const reg magnitude = _mm256_permutevar8x32_ps(_mm256_setr_ps(0, .5, 1, 1.5, 2, 3, 4, 6), codes);
    const __m256i sign = _mm256_and_si256(_mm256_slli_epi32(codes, 28), _mm256_set1_epi32(INT32_MIN));
    return _mm256_or_ps(magnitude, _mm256_castsi256_ps(sign));
  }
  static reg load_e2m1_low(const std::uint8_t* p) { return e2m1_of(bytes(p)); }
  static reg load_e2m1_high(const std::uint8_t* p) { return e2m1_of(_mm256_srli_epi32(bytes(p), 4)); }
  static reg load_e8m0(const std::uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_max_epi32(_mm256_slli_epi32(bytes(p), 23), _mm256_set1_epi32(1 << 22)));
  }

  // Quantized inputs (tile_kernel_body.inc): 32-bit integer sums of 16-bit pairs.
  using ireg = __m256i;
  // The integer kernels take 2 row registers by 2 tokens: 4 integer and 4 float sums of the 16.
  static constexpr int input_rows = 2, input_chunk = 2;
  static void pin(ireg& r) { __asm__("" : "+x"(r)); }  // (kept in a register, in its order)
  static ireg izero() { return _mm256_setzero_si256(); }
  static ireg iadd(ireg a, ireg b) { return _mm256_add_epi32(a, b); }
  static ireg isub(ireg a, ireg b) { return _mm256_sub_epi32(a, b); }
  static ireg ibroadcast(const std::int32_t* p) { return _mm256_set1_epi32(*p); }
  static ireg madd_pairs(ireg w, ireg x) { return _mm256_madd_epi16(w, x); }
  static ireg add_pairs(ireg acc, ireg w, ireg x) { return iadd(acc, madd_pairs(w, x)); }
  static reg to_float(ireg a) { return _mm256_cvtepi32_ps(a); }
  // A byte's nibbles as the pair (low, high): (b | b << 12) & 0x000f000f.
  static ireg q4_pairs(const std::uint8_t* p) {
    const __m256i b = bytes(p);
    return _mm256_and_si256(_mm256_or_si256(b, _mm256_slli_epi32(b, 12)), _mm256_set1_epi32(0x000f000f));
  }
  // Paired steps' signed bytes (each lane's two adjacent) sign-extended to 16 bits.
  static ireg q8_pairs(const std::int8_t* p) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};

struct f64 {
  using scalar = double;
  using reg = __m256d;
  static constexpr int lanes = 4, prefetch_bytes = 1024;
  static reg zero() { return _mm256_setzero_pd(); }
  static reg load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, reg r) { _mm256_storeu_pd(p, r); }
  static reg broadcast(const double* p) { return _mm256_broadcast_sd(p); }
  static reg add(reg a, reg b) { return _mm256_add_pd(a, b); }
  static reg madd(reg a, reg b, reg c) { return _mm256_fmadd_pd(a, b, c); }
  static reg load_weights(const double* p) { return _mm256_loadu_pd(p); }
};

#include "tile_kernel_body.inc"

// Doubles for the input quantizer (quantize_inputs_body.inc).
struct quantizer_doubles {
  using reg = __m256d;
  static constexpr int lanes = 4;
  static reg from_floats(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
  static reg load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, reg a) { _mm256_storeu_pd(p, a); }
  static reg add(reg a, reg b) { return _mm256_add_pd(a, b); }
  static reg sub(reg a, reg b) { return _mm256_sub_pd(a, b); }
  static reg mul(reg a, reg b) { return _mm256_mul_pd(a, b); }
  static reg abs(reg a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
  static void store_pairs(unsigned* p, reg even, reg odd) {
    const __m128i low = _mm_and_si128(_mm256_cvtpd_epi32(even), _mm_set1_epi32(0xffff));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_or_si128(low, _mm_slli_epi32(_mm256_cvtpd_epi32(odd), 16)));
  }
  static reg splat(double v) { return _mm256_set1_pd(v); }
  static reg div(reg a, reg b) { return _mm256_div_pd(a, b); }
  static reg round_even(reg a) { return _mm256_round_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static reg min(reg a, reg b) { return _mm256_min_pd(a, b); }
  static reg max(reg a, reg b) { return _mm256_max_pd(a, b); }
};

#include "quantize_inputs_body.inc"

constexpr kernel_set set{"avx2",
                         make_kernel<f32, float, 2, 6>(),
                         make_kernel<f32, bf16, 2, 6>(),
                         make_kernel<f32, f16, 2, 6>(),
                         make_kernel<f64, double, 2, 6>(),
                         make_block_kernel<f32, q8_0_panel, 2, 6>(),
                         make_block_kernel<f32, q4_0_panel, 2, 6>(),
                         make_block_kernel<f32, mxfp4_panel, 2, 6>(),
                         &quantize_inputs_of<quantizer_doubles>};

}  // namespace avx2

const kernel_set* avx2_kernels() { return &avx2::set; }

}  // namespace gemm
}  // namespace egelu
