// ggml's 8- and 4-bit block formats, Q8_0 and Q4_0: blocks of 32 consecutive weights of
// one row along the input, each block one half-precision scale d and 32 small integers q,
// the weight w' = q d. The quantization is ggml's reference, quantize_row_q8_0_ref and
// quantize_row_q4_0_ref, operation for operation, so that egelu's bytes are the bytes
// llama.cpp and GGUF files hold for the same tensors (but where 1/d overflows, whose bytes
// ggml leaves undefined: inverse_scale):
//   - Q8_0: d = amax / 127, q = roundf(w (1/d)) (half away from zero), in -127..127;
//   - Q4_0: m = the weight of largest magnitude, with its sign (the first of equal ones),
//     d = m / -8, q = min(15, (int8)(w (1/d) + 8.5)) - 8, in -8..7;
// 1/d from the float d before d is rounded to half, and w (1/d) rounded to float before
// 8.5 is added: no fused multiply-add, whatever the flags of the file that includes this
// (the library compiles with -ffp-contract=off; a test or tool may not).
// Dequantizing, q d is exact in float (an 8-bit integer times an 11-bit significand), so
// a block on these weights computes exactly what the float block on q d would.
//
// OCP's MXFP4 (the Microscaling spec; gpt-oss's release): blocks of 32 weights along a
// row, each an FP4 E2M1 code c (a sign and 0, 0.5, 1, 1.5, 2, 3, 4 or 6) times the
// block's E8M0 scale, a power of two 2^(s - 127): w' = c 2^(s - 127), exact in float
// (2 significant bits) where finite (every code for s <= 252). Quantized by the spec's
// rule, as the fixtures' generator does: s - 127 = floor(log2(max|w|)) - 2 (2: E2M1's
// largest exponent; within -127..127, -127 for a block of zeros), c = w / 2^(s - 127) to
// the nearest E2M1 value, ties to the even code, saturating at 6. A checkpoint's MXFP4
// blocks are copied into the panels as they are (packed_weights.hpp), the release's bytes;
// read as their values they would quantize back to the same values (codes times 1, 2, 4 or
// 8 where the largest code is below 4, the scale divided so), as blocks of scale 253 and 254,
// which the packing takes through their values, do.
//
// In a block's packed panels (packed_weights.hpp) a format's blocks are regrouped for the
// kernels: a panel's depth block is a run of groups of 32 depth steps, each group
//   - the mv rows' scales, mv halves (the rows' ggml blocks at that depth);
//   - Q8_0: 32 steps of mv bytes, q as a signed byte (or, for the integer kernels of
//     quantized inputs, 16 pairs of steps of 2 mv bytes, row i's steps 2s and 2s + 1 at
//     bytes 2i and 2i + 1 of pair s: one sign extension to 16 bits makes the kernels' pairs);
//   - Q4_0: 16 steps of mv bytes, byte s of row i holding q + 8 of steps 2s (low
//     nibble) and 2s + 1 (high nibble) of the group;
//   - MXFP4: the mv rows' scales, mv bytes (s), then 16 steps of mv bytes as Q4_0's,
//     each nibble an E2M1 code,
// so that a kernel loads a step's mv weights at once, as it loads a float panel's.
#ifndef EGELU_SRC_GEMM_BLOCK_FORMATS_HPP
#define EGELU_SRC_GEMM_BLOCK_FORMATS_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "narrow_floats.hpp"

namespace egelu {
namespace gemm {

// Weights a block of a block format holds.
constexpr int block_length = 32;

// ggml's block_q8_0 and block_q4_0, field for field.
struct q8_0_block {
  f16 d;
  std::int8_t q[block_length];
};
struct q4_0_block {
  f16 d;
  std::uint8_t q[block_length / 2];  // byte j: weight j + 8 in the low nibble, weight j + 16 + 8 in the high
};
// An MXFP4 block, its codes one a byte (the checkpoint's and the panels' layouts pack two).
struct mxfp4_block {
  std::uint8_t scale;               // E8M0: 2^(scale - 127)
  std::uint8_t code[block_length];  // E2M1: bit 3 the sign, bits 0-2 the magnitude's index
};

// Bytes of one block of 32 weights (a row's share of a group): Q8_0's and Q4_0's half-precision scale
// and their integers, MXFP4's scale byte and its codes.
inline std::size_t block_bytes(stored s) {
  switch (s) {
    case stored::q8_0:
      return 2 + block_length;
    case stored::q4_0:
      return 2 + block_length / 2;
    case stored::mxfp4:
      return 1 + block_length / 2;
    default:
      throw std::invalid_argument("block_bytes: not a block format");
  }
}
// Bytes of one group of 32 depth steps of a panel of mv rows.
inline std::size_t group_bytes(stored s, int mv) { return std::size_t(mv) * block_bytes(s); }

// Whether the scale fits half (a weight beyond 127 or 8 times half's largest does not).
inline bool scale_fits(f16 d) { return (d.bits & 0x7fffu) < 0x7c00u; }

// 1 / d, and 0 for d = 0 as ggml has it -- and where 1 / d overflows (|d| below 2^-128, a
// block's weights all below about 1e-36: half's d is 0 then), where ggml would convert an
// infinity to an integer (undefined; the bytes differ between x86 and ARM), so that q = 0.
inline float inverse_scale(float d) {
  const float id = d != 0.f ? 1.f / d : 0.f;
  return std::isfinite(id) ? id : 0.f;
}

// quantize_row_q8_0_ref for one block.
inline q8_0_block quantize_q8_0(const float* x) {
  float amax = 0.f;
  for (int j = 0; j < block_length; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.f;
  const float id = inverse_scale(d);
  q8_0_block b;
  b.d = round_to_f16(d);
  for (int j = 0; j < block_length; ++j) b.q[j] = std::int8_t(std::round(x[j] * id));
  return b;
}

// a b rounded to float: the product goes through memory, so that no compiler fuses it with
// an addition that follows (GCC does across statements under -ffp-contract=fast, its default
// for GNU C++).
inline float rounded_product(float a, float b) {
  float p = a * b;
  __asm__ volatile("" : "+m"(p));
  return p;
}

// quantize_row_q4_0_ref for one block.
inline q4_0_block quantize_q4_0(const float* x) {
  float amax = 0.f, max = 0.f;
  for (int j = 0; j < block_length; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.f;
  const float id = inverse_scale(d);
  q4_0_block b;
  b.d = round_to_f16(d);
  constexpr int half = block_length / 2;
  for (int j = 0; j < half; ++j) {
    const float x0 = rounded_product(x[j], id), x1 = rounded_product(x[half + j], id);
    const int q0 = std::min(15, int(std::int8_t(x0 + 8.5f))), q1 = std::min(15, int(std::int8_t(x1 + 8.5f)));
    b.q[j] = std::uint8_t(q0 | q1 << 4);
  }
  return b;
}

// The MX rule for one block of finite weights (above), in double: x / 2^(s - 127) is exact
// there.
inline mxfp4_block quantize_mxfp4(const float* x) {
  float amax = 0.f;
  for (int j = 0; j < block_length; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const int exponent = amax > 0.f ? std::clamp(std::ilogb(amax) - 2, -127, 127) : -127;
  mxfp4_block b;
  b.scale = std::uint8_t(exponent + 127);
  const double inverse = widen(e8m0{std::uint8_t(127 - exponent)});  // (2^-X, exactly)
  for (int j = 0; j < block_length; ++j) {
    const double q = std::fabs(double(x[j])) * inverse;
    // The nearest of the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0-7) by the midpoints
    // between them passed; on a midpoint, the even code: the lower one's midpoints (0.25,
    // 1.25, 2.5, 5) count only when passed, the higher one's (0.75, 1.75, 3.5) when reached.
    const int nearest = (q > 0.25) + (q >= 0.75) + (q > 1.25) + (q >= 1.75) + (q > 2.5) + (q >= 3.5) + (q > 5.0);
    b.code[j] = std::uint8_t(nearest | (std::signbit(x[j]) ? 8 : 0));
  }
  return b;
}

// Weight j of a block, dequantized: q d.
inline float dequantized(const q8_0_block& b, int j) { return float(b.q[j]) * widen(b.d); }
inline float dequantized(const q4_0_block& b, int j) {
  const int nibble = j < block_length / 2 ? b.q[j] & 15 : b.q[j - block_length / 2] >> 4;
  return float(nibble - 8) * widen(b.d);
}
inline float dequantized(const mxfp4_block& b, int j) {
  return float(double(widen(e2m1{b.code[j]})) * widen(e8m0{b.scale}));
}

}  // namespace gemm
}  // namespace egelu

#endif  // EGELU_SRC_GEMM_BLOCK_FORMATS_HPP
