// swish(x) = x * sigmoid(alpha x) (ONNX Swish) and its derivative: logistic_form.hpp
// with the argument t = alpha x, alpha > 0 (the functors reflect a negative alpha:
// swish_alpha(x) = -swish_|alpha|(-x)). SiLU is alpha = 1, QuickGELU alpha = 1.702.
//
// Everything the kernels need from alpha is derived here, once: at compile time for
// SiLU and QuickGELU, when the functor is made for a run-time alpha.
#ifndef EGELU_INTERNAL_SWISH_FORM_HPP
#define EGELU_INTERNAL_SWISH_FORM_HPP

#include <limits>

#include "logistic_form.hpp"

namespace egelu {
namespace internal {

// hi + lo = a * b exactly (Dekker, without an FMA, so that it runs at compile time).
constexpr void exact_product(double a, double b, double& hi, double& lo) {
  constexpr double splitter = 134217729.0;  // 2^27 + 1
  hi = a * b;
  const double ca = splitter * a, cb = splitter * b;
  const double a_hi = ca - (ca - a), a_lo = a - a_hi, b_hi = cb - (cb - b), b_lo = b - b_hi;
  lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
}

template <typename Scalar>
struct swish_argument {
  static constexpr double min_alpha = 0x1p-24, max_alpha = 0x1p24;  // the alphas the constants hold for
  Scalar alpha;                                                     // t'(a)
  Scalar k_hi, k_lo;                                                // alpha log2(e) in two words
  Scalar clamp_;                                                    // |x| from here on: x or -0
  Scalar floor;        // a below this: sigmoid(-alpha a) is 1/2 to far within a rounding
  double k_in_double;  // alpha log2(e), for float's kernels run in double

  template <typename S>
  EIGEN_STRONG_INLINE S clamp() const {
    return S(clamp_);
  }

  // t(a) log2(e) = alpha log2(e) a = hi + lo
  template <typename Packet>
  struct exponent {
    Packet hi, lo;

    EIGEN_STRONG_INLINE exponent(const Packet& a, const swish_argument& t) {
      const Packet a_floored = pmax(a, cst<Packet>(t.floor));  // no subnormal hi or lo; keeps NaN
      two_prod(a_floored, cst<Packet>(t.k_hi), hi, lo);
      lo = fmadd(a_floored, cst<Packet>(t.k_lo), lo);
    }

    EIGEN_STRONG_INLINE Packet slope(const Packet&, const swish_argument& t) const { return cst<Packet>(t.alpha); }
  };

  template <typename PacketD>
  EIGEN_STRONG_INLINE PacketD exponent_in_steps(const PacketD& c) const {
    return mul_rounded(c, cst<PacketD>(-k_in_double * exp2_steps));
  }

  template <typename PacketD>
  EIGEN_STRONG_INLINE PacketD x_slope_in_double(const PacketD& c) const {
    return pmul(c, cst<PacketD>(double(alpha)));
  }

  // t(x) = alpha x in double-double (the slow stage): exact for float's alpha and x.
  double_double exact_argument(double x) const {
    double hi, lo;
    two_prod(double(alpha), x, hi, lo);
    return {hi, lo};
  }
};

// The constants for alpha in [min_alpha, max_alpha] (the caller checks the range).
template <typename Scalar>
constexpr swish_argument<Scalar> make_swish_argument(Scalar alpha) {
  const double log2e_hi = 2 * gelu_coefficients<double>::half_log2e_hi;
  const double log2e_lo = 2 * gelu_coefficients<double>::half_log2e_lo;
  double k = 0, k_lo = 0;
  exact_product(double(alpha), log2e_hi, k, k_lo);
  k_lo += double(alpha) * log2e_lo;
  swish_argument<Scalar> t{};
  t.alpha = alpha;
  t.k_in_double = k + k_lo;
  if constexpr (std::is_same<Scalar, double>::value) {
    t.k_hi = k;
    t.k_lo = k_lo;
  } else {  // double holds alpha log2(e) to 2^-53, twice float's precision
    t.k_hi = Scalar(t.k_in_double);
    t.k_lo = Scalar(t.k_in_double - double(t.k_hi));
  }
  // log2 of max(1, alpha), rounded up.
  int alpha_bits = 0;
  for (double p = 1; p < double(alpha); p *= 2) ++alpha_bits;
  // The clamp: f(-a) and f'(-a), up to alpha a e^(-alpha a) = alpha a 2^-(a k) in size, below
  // 2^-(subnormal digits + 1), half the least subnormal, for every a from there on. With
  // a < 2^m and alpha <= 2^alpha_bits, a = (m + alpha_bits + that) / k will do: the first such
  // m gives it. There y = a k stays below 2^(scale_offset) times the least normal's
  // reciprocal, and a 2^scale_offset below the largest number (exp2.hpp, pow2_scale).
  constexpr int subnormal_digits = -std::numeric_limits<Scalar>::min_exponent + std::numeric_limits<Scalar>::digits;
  for (int m = 0;; ++m) {
    const double a = (m + alpha_bits + subnormal_digits + 1) / t.k_in_double;
    if (a < power_of_two<double>(m)) {
      t.clamp_ = Scalar(a * (1 + 0x1p-20));
      break;
    }
  }
  // The floor: 2^-(digits + 8) / max(1, alpha), as a power of two.
  const int shift = std::numeric_limits<Scalar>::digits + 8 + alpha_bits;
  t.floor = power_of_two<Scalar>(-shift);
  return t;
}

// The two fixed alphas, derived at compile time.
template <typename Scalar>
constexpr swish_argument<Scalar> silu_argument = make_swish_argument<Scalar>(Scalar(1));
template <typename Scalar>
constexpr swish_argument<Scalar> quick_gelu_argument = make_swish_argument<Scalar>(Scalar(1.702));
// QuickGELU's float alpha in double, for float's medium stage (correct_rounding.hpp): the
// function float computes is x sigmoid(1.702f x).
constexpr swish_argument<double> quick_gelu_float_argument_in_double = make_swish_argument<double>(double(1.702f));

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_SWISH_FORM_HPP
