// The AVX-512 kernels (AVX512F, and AVX512BW for the integer kernels' 16-bit pairs): 48 rows (three registers) by 8
// tokens, 24 accumulators of the 32 registers, as Eigen 5's and oneDNN's AVX-512 float kernels; bfloat16 in paired
// steps, widened by a shift or a mask (tile_kernel_body.inc, bf16_pairs), half by vcvtph2ps. Compiled with -mavx512f
// and no Eigen (micro_kernel.hpp).
#include <immintrin.h>

#include "micro_kernel.hpp"

namespace egelu {
namespace gemm {
namespace avx512 {

#include "avx512_vectors.inc"

struct f64 {
  using scalar = double;
  using reg = __m512d;
  static constexpr int lanes = 8, prefetch_bytes = 1024;
  static reg zero() { return _mm512_setzero_pd(); }
  static reg load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, reg r) { _mm512_storeu_pd(p, r); }
  static reg broadcast(const double* p) { return _mm512_set1_pd(*p); }
  static reg add(reg a, reg b) { return _mm512_add_pd(a, b); }
  static reg madd(reg a, reg b, reg c) { return _mm512_fmadd_pd(a, b, c); }
  static reg load_weights(const double* p) { return _mm512_loadu_pd(p); }
};

#include "tile_kernel_body.inc"

// Doubles for the input quantizer (quantize_inputs_body.inc).
struct quantizer_doubles {
  using reg = __m512d;
  static constexpr int lanes = 8;
  static reg from_floats(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
  static reg load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, reg a) { _mm512_storeu_pd(p, a); }
  static reg add(reg a, reg b) { return _mm512_add_pd(a, b); }
  static reg sub(reg a, reg b) { return _mm512_sub_pd(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_pd(a, b); }
  static reg abs(reg a) { return _mm512_abs_pd(a); }
  static void store_pairs(unsigned* p, reg even, reg odd) {
    const __m256i low = _mm256_and_si256(_mm512_cvtpd_epi32(even), _mm256_set1_epi32(0xffff));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm256_or_si256(low, _mm256_slli_epi32(_mm512_cvtpd_epi32(odd), 16)));
  }
  static reg splat(double v) { return _mm512_set1_pd(v); }
  static reg div(reg a, reg b) { return _mm512_div_pd(a, b); }
  static reg round_even(reg a) { return _mm512_roundscale_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static reg min(reg a, reg b) { return _mm512_min_pd(a, b); }
  static reg max(reg a, reg b) { return _mm512_max_pd(a, b); }
};

#include "quantize_inputs_body.inc"

constexpr kernel_set set{"avx512",
                         make_kernel<f32, float, 3, 8>(),
                         make_kernel<f32, bf16_pairs, 3, 8>(),
                         make_kernel<f32, f16, 3, 8>(),
                         make_kernel<f64, double, 3, 8>(),
                         make_block_kernel<f32, q8_0_panel, 3, 8>(),
                         make_block_kernel<f32, q4_0_panel, 3, 8>(),
                         make_block_kernel<f32, mxfp4_panel, 3, 8>(),
                         &quantize_inputs_of<quantizer_doubles>};

}  // namespace avx512

const kernel_set* avx512_kernels() { return &avx512::set; }

}  // namespace gemm
}  // namespace egelu
