// ggml's Q8_0 and Q4_0 block formats as their specification gives them (ggml's
// quantize_row_q8_0_ref and quantize_row_q4_0_ref, issue 35), written here for the tests,
// independently of the library's quantizer: blocks of 32 weights of a row along its input;
//   Q8_0: d = amax / 127, q = roundf(w * (1/d)), half away from zero;
//   Q4_0: m = the first weight of largest magnitude, d = m / -8,
//         q = min(15, (int8)(w * (1/d) + 8.5)) - 8;
// 1/d from the float d (0 for d = 0, and where 1/d overflows: ggml's conversion of the
// infinity is undefined there, egelu defines q = 0), d stored as half (to nearest even); every product rounded to float
// before the next operation (a volatile store forbids the compiler a fused multiply-add).
// Dequantized, w' = q * d, exact in float.
// And OCP's MXFP4 (the OCP Microscaling Formats (MX) v1.0 specification), as w' = q * d too:
//   X = floor(log2(amax)) - 2 (E2M1's largest exponent), within -127..127 (-127 for zeros),
//   v = w / 2^X rounded to E2M1 (0, 0.5, 1, 1.5 | 2, 3 | 4, 6: steps of 0.5, 1 and 2 by
//   binade) to nearest, ties to even, beyond 6 saturating; q = 2 v, d = 2^(X - 1).
#ifndef EGELU_TESTS_GGML_REFERENCE_HPP
#define EGELU_TESTS_GGML_REFERENCE_HPP

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <egelu/weight_format.hpp>

namespace ggml_reference {

constexpr int kBlock = 32;

// x rounded to half precision (11 significant bits, exponent floor -14), to nearest even,
// from the definition; beyond half's largest finite value, infinity.
inline float to_half(float x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);  // x = m 2^e, 0.5 <= |m| < 1
  const int quantum = std::max(e - 11, -24);
  const double r = std::nearbyint(std::ldexp(double(x), -quantum)) * std::ldexp(1.0, quantum);
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, x) : float(r);
}

inline float rounded(float v) {
  volatile float r = v;
  return r;
}

// One block quantized: its scale d (as half, read back as float) and its 32 integers.
struct block {
  float d;
  int q[kBlock];
};

inline block quantize(const float* x, egelu::WeightFormat format) {
  block b{};
  if (format == egelu::WeightFormat::mxfp4) {
    float amax = 0;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    int e = 0;
    std::frexp(amax, &e);  // amax = m 2^e, 0.5 <= m < 1: floor(log2(amax)) = e - 1
    const int X = amax == 0 ? -127 : std::min(127, std::max(-127, e - 1 - 2));
    b.d = float(std::ldexp(1.0, X - 1));
    for (int j = 0; j < kBlock; ++j) {
      const double v = std::ldexp(double(std::fabs(x[j])), -X);  // exact
      // To nearest even by binade: nearbyint in the current (default) rounding mode.
      const double r = v < 2   ? std::nearbyint(2 * v) / 2
                       : v < 4 ? std::nearbyint(v)
                               : std::min(6.0, 2 * std::nearbyint(v / 2));
      b.q[j] = int(2 * r) * (x[j] < 0 ? -1 : 1);
    }
    return b;
  }
  if (format == egelu::WeightFormat::q8_0) {
    float amax = 0;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = rounded(amax / 127.f), id = d != 0 && std::isfinite(1.f / d) ? rounded(1.f / d) : 0.f;
    b.d = to_half(d);
    for (int j = 0; j < kBlock; ++j) b.q[j] = int(std::round(rounded(x[j] * id)));
  } else {
    float amax = 0, max = 0;
    for (int j = 0; j < kBlock; ++j) {
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
    }
    const float d = rounded(max / -8.f), id = d != 0 && std::isfinite(1.f / d) ? rounded(1.f / d) : 0.f;
    b.d = to_half(d);
    for (int j = 0; j < kBlock; ++j) {
      const float scaled = rounded(x[j] * id);
      b.q[j] = std::min(15, int(static_cast<std::int8_t>(rounded(scaled + 8.5f)))) - 8;
    }
  }
  return b;
}

// A row-major matrix's weights as the format holds them: each row's blocks of 32
// quantized and dequantized (cols must be a multiple of 32).
template <typename Weights>
Weights dequantized(const Weights& w, egelu::WeightFormat format) {
  Weights out(w.rows(), w.cols());
  for (Eigen::Index i = 0; i < w.rows(); ++i) {
    for (Eigen::Index j = 0; j < w.cols(); j += kBlock) {
      float x[kBlock];
      for (int k = 0; k < kBlock; ++k) x[k] = float(w(i, j + k));
      const block b = quantize(x, format);
      for (int k = 0; k < kBlock; ++k) out(i, j + k) = float(b.q[k]) * b.d;
    }
  }
  return out;
}

}  // namespace ggml_reference

#endif  // EGELU_TESTS_GGML_REFERENCE_HPP
