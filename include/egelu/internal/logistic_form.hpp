// x * sigmoid(t(x)) and its derivative as packet functions, for an argument t(x):
// the tanh form of GELU, t = 2u = 2 sqrt(2/pi) (x + 0.044715 x^3) (tanh_form.hpp), and
// swish, t = alpha x, which is SiLU at alpha = 1 and QuickGELU at 1.702 (swish_form.hpp).
// An argument is odd and increasing; it supplies t(a) log2(e) in two words, t'(a), the
// clamp beyond which every result is x or -0, and the same in double for float.
//
// Where a float packet has double twins (x86, aarch64), float results run in double: one
// double word holds t log2(e) to far below float's rounding, so x / (1 + e^-t) needs no
// correction terms, and a rounding test makes the one rounding back to float correct
// (correct_rounding.hpp).
//
// Elsewhere (double, and float on other targets) both are computed at -a, a = |x|,
// where the sigmoid is E / (1 + E) with E = e^-t(a) <= 1 and nothing cancels;
// f(x) = x + f(-x) and f'(x) = 1 - f'(-x) give the positive side (t is odd).
// t(a) log2(e) is carried in twice the working precision: rounding it to one
// precision alone would cost up to 64 ulp in the far negative tail.
#ifndef EGELU_INTERNAL_LOGISTIC_FORM_HPP
#define EGELU_INTERNAL_LOGISTIC_FORM_HPP

#include "correct_rounding.hpp"
#include "exp2.hpp"
#include "exp2_in_double.hpp"

namespace egelu {
namespace internal {

// At -a: E = (1 + g + g_lo) 2^-n, and 1 / (1 + E) = q (1 + rho).
template <typename Packet, typename Argument>
struct logistic_at_minus_a {
  using Scalar = scalar_of<Packet>;
  using Exponent = typename Argument::template exponent<Packet>;
  Packet a, g, g_lo, q, rho;
  Exponent y;               // t(a) log2(e) = y.hi + y.lo, and what t'(a) needs
  pow2_scale<Packet> unit;  // 2^-n

  EIGEN_STRONG_INLINE logistic_at_minus_a(const Packet& x, const Argument& t)
      : a(pmin(pabs(x), cst<Packet>(t.template clamp<Scalar>()))),  // keeps NaN (std::min semantics)
        y(a, t) {
    constexpr int digits = std::numeric_limits<Scalar>::digits;
    Packet n;
    exp2_negative(y.hi, y.lo, g, g_lo, n);
    unit = pow2_scale<Packet>(n);
    // 1 + E = d_hi + d_lo exactly, then one division and its exact residual. E is
    // taken no smaller than 2^-(3 digits), which moves 1 + E far less than the
    // 2^-(2 digits) the residual resolves, and keeps a subnormal E (|x| above about
    // 9.5 in float's tanh form) from costing a microcode assist.
    const Packet scale = unit.template at_least<-3 * digits>();
    const Packet scaled_g = pmul(scale, g);
    Packet e_hi, e_lo, d_hi, d_lo;
    fast_two_sum(scale, scaled_g, e_hi, e_lo);
    fast_two_sum(cst<Packet>(1), e_hi, d_hi, d_lo);
    d_lo = padd(d_lo, fmadd(scale, g_lo, e_lo));
    q = pdiv(cst<Packet>(1), d_hi);
    rho = fmadd(negate(q), d_lo, one_minus_product(q, d_hi));
  }

  // (1 + g)(1 + rho) - 1: E / (1 + E) = q (1 + that + g_lo) 2^-n
  EIGEN_STRONG_INLINE Packet sigmoid_correction() const { return fmadd(g, rho, padd(g, rho)); }
};

// f(-a) = -a E / (1 + E), f(x) = max(x, -0) + f(-a).
template <typename Packet, typename Argument>
EIGEN_STRONG_INLINE Packet plogistic_product_double_word(const Packet& x, const Argument& t) {
  const logistic_at_minus_a<Packet, Argument> s(x, t);
  const Packet c = s.sigmoid_correction();
  // f(-a) = -(p + p c) 2^-n with a q = p + p_lo exactly
  Packet p, p_lo;
  two_prod(s.a, s.q, p, p_lo);
  const Packet magnitude = padd(p, fmadd(p, c, fmadd(p, s.g_lo, fmadd(p_lo, c, p_lo))));
  return s.unit.apply_add(magnitude, -1, max_with_minus_zero(x));  // + x when x >= 0
}

// f'(-a) = C (1 - a t'(a) (1 - C)), C = E / (1 + E), 1 - C = 1 / (1 + E).
template <typename Packet, typename Argument>
EIGEN_STRONG_INLINE Packet plogistic_product_grad_double_word(const Packet& x, const Argument& t) {
  const logistic_at_minus_a<Packet, Argument> s(x, t);
  const Packet sigmoid = fmadd(s.q, s.sigmoid_correction(), s.q);  // C / 2^-n
  const Packet one_minus_k = fmadd(negate(pmul(s.a, s.y.slope(s.a, t))), fmadd(s.q, s.rho, s.q), cst<Packet>(1));
  const Packet at_minus_a = s.unit.apply(pmul(sigmoid, one_minus_k), 1);
  return pselect(pcmp_lt(x, cst<Packet>(0)), at_minus_a, psub(cst<Packet>(1), at_minus_a));
}

// Float's forms in double, for x >= -clamp: sigmoid(t) = 1 / (1 + E), E = 2^y,
// y = -t(x) log2(e). y is good to a few 2^-53 of itself (2^-44 absolute at |y| <= 170)
// and 2^y to 2^-40 (2^-38.5 with AVX-512, exp2_in_double.hpp), so results are within
// 2^-39.8 (2^-38.3) of themselves before their rounding to float (docs/DESIGN.md has the sum).
template <typename PacketD, typename Argument>
struct logistic_in_double {
  PacketD c, e;

  EIGEN_STRONG_INLINE logistic_in_double(const PacketD& x, const Argument& t) {
    // Above the clamp E < 2^-54 vanishes next to 1; below it 2^n stays normal.
    c = pmin(x, cst<PacketD>(t.template clamp<float>()));  // keeps NaN
    e = exp2_of_steps(t.exponent_in_steps(c));
  }
};

// f(x) = x / (1 + E), 1 + E with one rounding (the scaling's product fused into the addition)
template <typename PacketD, typename Argument>
EIGEN_STRONG_INLINE PacketD plogistic_product_float_in_double(const PacketD& x, const Argument& t) {
  const PacketD c = pmin(x, cst<PacketD>(t.template clamp<float>()));  // keeps NaN
  return pdiv(x, one_plus_exp2_of_steps(t.exponent_in_steps(c)));
}

// f'(x) = s (1 + x t'(x) E s), s = 1 / (1 + E); x taken at the clamp, where the
// bracket is 1 and x t'(x) E stays finite.
template <typename PacketD, typename Argument>
EIGEN_STRONG_INLINE PacketD plogistic_product_grad_float_in_double(const PacketD& x, const Argument& t) {
  const logistic_in_double<PacketD, Argument> l(x, t);
  const PacketD s = pdiv(cst<PacketD>(1), padd(cst<PacketD>(1), l.e));
  return pmul(s, fmadd(pmul(t.x_slope_in_double(l.c), l.e), s, cst<PacketD>(1)));
}

// kernel(x) on x's double twins, x floored at -clamp, where f and f' round to -0
// (and the floor keeps -inf from giving -inf / inf).
template <typename Packet, typename Argument, typename Kernel>
EIGEN_STRONG_INLINE Packet on_double_twins(const Packet& x, const Argument& t, Kernel kernel) {
  return in_double(pmax(x, cst<Packet>(-t.template clamp<float>())), kernel);  // keeps NaN
}

// x sigmoid(t(x)) in float, correctly rounded (correct_rounding.hpp): the fast stage on
// double twins, the medium stage the double kernel with the argument in double, the slow
// one x sigmoid(t) in double-double.
template <typename Argument, typename ArgumentD>
struct logistic_rounding_form {
  const Argument& t;          // float's argument
  const ArgumentD& t_double;  // the same function's argument in double

  // The fast stage's error bound (2^-39.8, above; 2^-38.3 with AVX-512's table of sixteenths)
  // is 2^13.2 double ulps (2^14.7): a window of 2^14 (2^16) leaves one lane in 2^14 (2^13)
  // to the medium stage.
  static constexpr int fast_window_log2 = exp2_steps == 16 ? 16 : 14;
  // The double kernel is good to 2 ulps (docs/ACCURACY.md): a window of 8.
  static constexpr int medium_window_log2 = 3;

  template <typename Packet>
  EIGEN_STRONG_INLINE Packet prepare(const Packet& x) const {
    return pmax(x, cst<Packet>(-t.template clamp<float>()));  // keeps NaN; -inf gives -0
  }
  template <typename PacketD>
  EIGEN_STRONG_INLINE PacketD fast(const PacketD& x) const {
    return plogistic_product_float_in_double(x, t);
  }
  double medium(double x) const { return plogistic_product_double_word(x, t_double); }
  double_double exact(double x) const { return dd_times_sigmoid(x, t.exact_argument(x)); }
  double fast_window() const { return double(1 << fast_window_log2); }
  double medium_window() const { return double(1 << medium_window_log2); }
};

/// x sigmoid(t(x)) for float and double packets and scalars: t the argument in the
/// scalar's type, t_double the same in double (for float's medium stage; for double the
/// same as t). Float is correctly rounded where float packets have double twins.
template <typename Packet, typename Argument, typename ArgumentD>
EIGEN_STRONG_INLINE Packet plogistic_product(const Packet& x, const Argument& t, const ArgumentD& t_double) {
  if constexpr (has_double_twin<Packet>) {  // float on x86 and aarch64
    return pcorrectly_rounded(x, logistic_rounding_form<Argument, ArgumentD>{t, t_double});
  } else {
    return plogistic_product_double_word(x, t);
  }
}

/// d/dx x sigmoid(t(x)).
template <typename Packet, typename Argument>
EIGEN_STRONG_INLINE Packet plogistic_product_grad(const Packet& x, const Argument& t) {
  if constexpr (has_double_twin<Packet>) {  // float on x86 and aarch64
    return on_double_twins(x, t, [&t](const auto& w) { return plogistic_product_grad_float_in_double(w, t); });
  } else {
    return plogistic_product_grad_double_word(x, t);
  }
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_LOGISTIC_FORM_HPP
