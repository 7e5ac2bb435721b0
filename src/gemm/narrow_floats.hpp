// bfloat16 and IEEE half as 16-bit storage: exact widening to float, and rounding to
// nearest even from float or double, for packing weights (the kernels widen in
// registers with the same bit operations). No Eigen here: the per-ISA kernel files
// include this header, and Eigen code must not be compiled for two ISAs in one
// library (docs/DESIGN.md, "The compiled library").
#ifndef EGELU_SRC_GEMM_NARROW_FLOATS_HPP
#define EGELU_SRC_GEMM_NARROW_FLOATS_HPP

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "stored_types.hpp"

namespace egelu {
namespace gemm {

inline std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float float_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// bfloat16 is float's top half: widening is a shift.
inline float widen(bf16 h) { return float_of(std::uint32_t(h.bits) << 16); }

// Half to float, exactly: normal and subnormal halves alike through one product by
// 2^112 (the half's exponent and fraction shifted into float's fields read as a float
// 2^-112 times the value), infinities and NaNs by their exponent.
inline float widen(f16 h) {
  const std::uint32_t sign = std::uint32_t(h.bits & 0x8000u) << 16, rest = h.bits & 0x7fffu;
  if (rest >= 0x7c00u) return float_of(sign | 0x7f800000u | (rest & 0x3ffu) << 13);
  return float_of(sign | bits_of(float_of(rest << 13) * 0x1p112f));
}

// OCP E4M3FN to float, exactly: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0
// is subnormal (m / 8 * 2^-6); no infinities, S.1111.111 is NaN. A table of the 256 values,
// computed at compile time: packing an FP8 checkpoint reads billions of codes.
struct e4m3_values {
  float value[256] = {};
  constexpr e4m3_values() {
    for (unsigned c = 0; c < 256; ++c) {
      const unsigned e = c >> 3 & 15u, m = c & 7u;
      // e = 0: m / 8 * 2^-6; otherwise (1 + m / 8) 2^(e - 7) = (8 + m) 2^-10 2^e.
      float magnitude = e == 0 ? float(m) / 512.f : float(8 + m) / 1024.f;
      for (unsigned k = 0; k < e; ++k) magnitude *= 2.f;
      if (e == 15 && m == 7) magnitude = std::numeric_limits<float>::quiet_NaN();
      value[c] = c & 128u ? -magnitude : magnitude;
    }
  }
};
inline float widen(e4m3 c) {
  static constexpr e4m3_values table{};
  return table.value[c.bits];
}

// OCP FP4 E2M1 to float, exactly: sign, 2 exponent bits (bias 1), 1 mantissa bit; exponent 0
// is subnormal (m / 2): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; no infinities nor NaN.
inline float widen(e2m1 c) { return e2m1_values[c.bits & 15u]; }

// OCP E8M0 to double: 2^(bits - 127), from 2^-127 to 2^127 (beyond float's range at both
// ends, hence double); 255 is NaN.
inline double widen(e8m0 c) {
  if (c.bits == 255) return double(float_of(0x7fc00000u));
  const std::uint64_t bits = std::uint64_t(c.bits + (1023u - 127u)) << 52;  // (a normal double's exponent field)
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// float to bfloat16, to nearest even; NaN stays a (quiet) NaN of the same sign.
inline bf16 round_to_bf16(float x) {
  const std::uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{std::uint16_t((u >> 16) | 0x40u)};
  return bf16{std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

// float to half, to nearest even, with half's subnormals; beyond 65504 rounds to infinity.
inline f16 round_to_f16(float x) {
  const std::uint32_t u = bits_of(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return f16{std::uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu))};
  if (a >= 0x477ff000u) return f16{std::uint16_t(sign | 0x7c00u)};  // 65520 and up: infinity
  if (a < 0x38800000u) {
    // Below half's least normal (2^-14): add 0.5 (2^-1, whose ulp is 2^-24, half's
    // least subnormal), which rounds |x| to a multiple of 2^-24 to nearest even.
    const float r = float_of(a) + 0.5f;
    return f16{std::uint16_t(sign | (bits_of(r) - bits_of(0.5f)))};
  }
  // Normal: rebias the exponent and round the 13 dropped bits to nearest even.
  const std::uint32_t rebiased = a - ((127u - 15u) << 23);
  return f16{std::uint16_t(sign | ((rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13))};
}

// double to float rounding to odd: the truncated value with its last bit set when the
// conversion is inexact. Rounding that to bfloat16 or half (8 or 11 bits, far fewer
// than float's 24) then gives double's value rounded once to nearest even.
inline float round_to_odd_float(double x) {
  if (std::isnan(x)) return float(x);
  const float f = float(x);
  // Without branches (weights round either way at random): one step towards zero where
  // float(x) went away from it (the magnitude's bits less one; from an infinity, float's
  // largest), then the last bit set where inexact.
  const std::uint32_t towards_zero = bits_of(f) - std::uint32_t(std::fabs(double(f)) > std::fabs(x));
  return float_of(towards_zero | std::uint32_t(double(f) != x));
}

inline bf16 round_to_bf16(double x) { return round_to_bf16(round_to_odd_float(x)); }
inline f16 round_to_f16(double x) { return round_to_f16(round_to_odd_float(x)); }

}  // namespace gemm
}  // namespace egelu

#endif  // EGELU_SRC_GEMM_NARROW_FLOATS_HPP
