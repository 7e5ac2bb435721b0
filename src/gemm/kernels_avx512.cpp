// The AVX-512 kernels (AVX512F, and AVX512BW for the integer kernels' 16-bit pairs): 48 rows (three registers) by 8
// tokens, 24 accumulators of the 32 registers, as Eigen 5's and oneDNN's AVX-512 float kernels; bfloat16 widened by a
// zero-extension and a shift, half by vcvtph2ps. Compiled with -mavx512f and no Eigen (micro_kernel.hpp).
#include <immintrin.h>

#include "micro_kernel.hpp"

namespace egelu {
namespace gemm {
namespace avx512 {

struct f32 {
  using scalar = float;
  using reg = __m512;
  static constexpr int lanes = 16, prefetch_bytes = 4096;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg r) { _mm512_storeu_ps(p, r); }
  static reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg madd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg load_weights(const float* p) { return _mm512_loadu_ps(p); }
  static reg load_weights(const bf16* p) {
    const __m512i widened = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
  }
  static reg load_weights(const f16* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg msub(reg a, reg b, reg c) { return _mm512_fmsub_ps(a, b, c); }
  // Sixteen bytes zero-extended to 32-bit lanes, once for both nibbles of a byte: the empty
  // asm keeps the compiler from moving the masks before the extension and so extending
  // twice (Q4_0 decoding 12% faster on Zen 5).
  static __m512i bytes(const void* p) {
    __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    __asm__("" : "+v"(b));
    return b;
  }
  static reg load_q8(const std::int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static reg load_q4_low(const std::uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_and_si512(bytes(p), _mm512_set1_epi32(15)));
  }
  static reg load_q4_high(const std::uint8_t* p) { return _mm512_cvtepi32_ps(_mm512_srli_epi32(bytes(p), 4)); }

  // Quantized inputs (tile_kernel_body.inc): 32-bit integer sums of 16-bit pairs (AVX512BW).
  using ireg = __m512i;
  // The integer kernels take 3 row registers by 4 tokens: 12 integer and 12 float sums of the 32.
  static constexpr int input_rows = 3, input_chunk = 4;
  static void pin(ireg& r) { __asm__("" : "+v"(r)); }  // (kept in a register, in its order)
  static ireg izero() { return _mm512_setzero_si512(); }
  static ireg iadd(ireg a, ireg b) { return _mm512_add_epi32(a, b); }
  static ireg isub(ireg a, ireg b) { return _mm512_sub_epi32(a, b); }
  static ireg ibroadcast(const std::int32_t* p) { return _mm512_set1_epi32(*p); }
  static ireg madd_pairs(ireg w, ireg x) { return _mm512_madd_epi16(w, x); }
  // acc + madd_pairs(w, x): one vpdpwssd where the build has AVX512-VNNI (-march=native on
  // Cascade Lake, Ice Lake, Zen 4 on): TinyLlama q4_0+q16_0 at T = 128 42 -> 32 ms on Zen 5 (g++).
#ifdef __AVX512VNNI__
  static ireg add_pairs(ireg acc, ireg w, ireg x) { return _mm512_dpwssd_epi32(acc, w, x); }
#else
  static ireg add_pairs(ireg acc, ireg w, ireg x) { return _mm512_add_epi32(acc, _mm512_madd_epi16(w, x)); }
#endif
  static reg to_float(ireg a) { return _mm512_cvtepi32_ps(a); }
  // A byte's nibbles as the pair (low, high): (b | b << 12) & 0x000f000f, one ternary logic.
  static ireg q4_pairs(const std::uint8_t* p) {
    const __m512i b = bytes(p);
    return _mm512_ternarylogic_epi32(b, _mm512_slli_epi32(b, 12), _mm512_set1_epi32(0x000f000f), 0xa8);
  }
  // Paired steps' signed bytes (each lane's two adjacent) sign-extended to 16 bits.
  static ireg q8_pairs(const std::int8_t* p) {
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};

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

constexpr kernel_set set{"avx512",
                         make_kernel<f32, float, 3, 8>(),
                         make_kernel<f32, bf16, 3, 8>(),
                         make_kernel<f32, f16, 3, 8>(),
                         make_kernel<f64, double, 3, 8>(),
                         make_block_kernel<f32, q8_0_panel, 3, 8>(),
                         make_block_kernel<f32, q4_0_panel, 3, 8>()};

}  // namespace avx512

const kernel_set* avx512_kernels() { return &avx512::set; }

}  // namespace gemm
}  // namespace egelu
