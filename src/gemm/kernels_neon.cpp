// The NEON kernels (aarch64): 16 rows (four registers) by 6 tokens, 24 accumulators of the
// 32 registers; bfloat16 widened by a long shift, half by fcvtl. No Eigen
// (micro_kernel.hpp).
#include <arm_neon.h>

#include <cstring>

#include "micro_kernel.hpp"

namespace egelu {
namespace gemm {
namespace neon {

struct f32 {
  using scalar = float;
  using reg = float32x4_t;
  static constexpr int lanes = 4, prefetch_bytes = 1024;
  static reg zero() { return vdupq_n_f32(0.f); }
  static reg load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, reg r) { vst1q_f32(p, r); }
  static reg broadcast(const float* p) { return vld1q_dup_f32(p); }
  static reg add(reg a, reg b) { return vaddq_f32(a, b); }
  static reg madd(reg a, reg b, reg c) { return vfmaq_f32(c, a, b); }
  static reg load_weights(const float* p) { return vld1q_f32(p); }
  static reg load_weights(const bf16* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)), 16));
  }
  static reg load_weights(const f16* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p))));
  }
  static reg mul(reg a, reg b) { return vmulq_f32(a, b); }
  static reg msub(reg a, reg b, reg c) { return vsubq_f32(vmulq_f32(a, b), c); }
  // Four bytes widened to 32-bit lanes.
  static uint32x4_t bytes(const void* p) {
    std::uint32_t four;
    std::memcpy(&four, p, 4);
    return vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(four)))));
  }
  static reg load_q8(const std::int8_t* p) {
    std::uint32_t four;
    std::memcpy(&four, p, 4);
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(four))))));
  }
  static reg load_q4_low(const std::uint8_t* p) { return vcvtq_f32_u32(vandq_u32(bytes(p), vdupq_n_u32(15))); }
  static reg load_q4_high(const std::uint8_t* p) { return vcvtq_f32_u32(vshrq_n_u32(bytes(p), 4)); }
  // MXFP4 (tile_kernel_body.inc): the nibbles' E2M1 values doubled, looked up as bytes (tbl),
  // widened and converted with one fractional bit (halved, exactly); the scales' powers of two
  // as float bits (b << 23, and 2^-127's 1 << 22 for b = 0).
  static reg e2m1_of(uint8x8_t codes) {
    static const std::int8_t doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    const int8x8_t twice = vqtbl1_s8(vld1q_s8(doubled), codes);
    return vcvtq_n_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(twice))), 1);
  }
  static uint8x8_t four_bytes(const std::uint8_t* p) {
    std::uint32_t four;
    std::memcpy(&four, p, 4);
    return vreinterpret_u8_u32(vdup_n_u32(four));
  }
  static reg load_e2m1_low(const std::uint8_t* p) { return e2m1_of(vand_u8(four_bytes(p), vdup_n_u8(15))); }
  static reg load_e2m1_high(const std::uint8_t* p) { return e2m1_of(vshr_n_u8(four_bytes(p), 4)); }
  static reg load_e8m0(const std::uint8_t* p) {
    return vreinterpretq_f32_u32(vmaxq_u32(vshlq_n_u32(bytes(p), 23), vdupq_n_u32(1u << 22)));
  }

  // Quantized inputs (tile_kernel_body.inc): 32-bit integer sums of 16-bit pairs.
  using ireg = int32x4_t;
  // The integer kernels take 4 row registers by 2 tokens: 8 integer and 8 float sums of the 32.
  static constexpr int input_rows = 4, input_chunk = 2;
  static void pin(ireg& r) { __asm__("" : "+w"(r)); }  // (kept in a register, in its order)
  static ireg izero() { return vdupq_n_s32(0); }
  static ireg iadd(ireg a, ireg b) { return vaddq_s32(a, b); }
  static ireg isub(ireg a, ireg b) { return vsubq_s32(a, b); }
  static ireg ibroadcast(const std::int32_t* p) { return vld1q_dup_s32(p); }
  // Each lane's two 16-bit products summed: pmaddwd's, from widening products and pairwise adds.
  static ireg madd_pairs(ireg w, ireg x) {
    const int16x8_t a = vreinterpretq_s16_s32(w), b = vreinterpretq_s16_s32(x);
    return vpaddq_s32(vmull_s16(vget_low_s16(a), vget_low_s16(b)), vmull_high_s16(a, b));
  }
  static ireg add_pairs(ireg acc, ireg w, ireg x) { return iadd(acc, madd_pairs(w, x)); }
  static reg to_float(ireg a) { return vcvtq_f32_s32(a); }
  // A byte's nibbles as the pair (low, high): (b | b << 12) & 0x000f000f.
  static ireg q4_pairs(const std::uint8_t* p) {
    const uint32x4_t b = bytes(p);
    return vreinterpretq_s32_u32(vandq_u32(vorrq_u32(b, vshlq_n_u32(b, 12)), vdupq_n_u32(0x000f000f)));
  }
  // Paired steps' signed bytes (each lane's two adjacent) sign-extended to 16 bits.
  static ireg q8_pairs(const std::int8_t* p) { return vreinterpretq_s32_s16(vmovl_s8(vld1_s8(p))); }
};

struct f64 {
  using scalar = double;
  using reg = float64x2_t;
  static constexpr int lanes = 2, prefetch_bytes = 1024;
  static reg zero() { return vdupq_n_f64(0.); }
  static reg load(const double* p) { return vld1q_f64(p); }
  static void store(double* p, reg r) { vst1q_f64(p, r); }
  static reg broadcast(const double* p) { return vld1q_dup_f64(p); }
  static reg add(reg a, reg b) { return vaddq_f64(a, b); }
  static reg madd(reg a, reg b, reg c) { return vfmaq_f64(c, a, b); }
  static reg load_weights(const double* p) { return vld1q_f64(p); }
};

#include "tile_kernel_body.inc"

constexpr kernel_set set{"neon",
                         make_kernel<f32, float, 4, 6>(),
                         make_kernel<f32, bf16, 4, 6>(),
                         make_kernel<f32, f16, 4, 6>(),
                         make_kernel<f64, double, 4, 6>(),
                         make_block_kernel<f32, q8_0_panel, 4, 6>(),
                         make_block_kernel<f32, q4_0_panel, 4, 6>(),
                         make_block_kernel<f32, mxfp4_panel, 4, 6>()};

}  // namespace neon

const kernel_set* neon_kernels() { return &neon::set; }

}  // namespace gemm
}  // namespace egelu
