// The tanh approximation, gelu(x) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3),
// and its derivative, as packet functions.
//
// Where a float packet has double twins (x86), float gelu and gelu' run in double: one
// double word holds 2u log2(e) to far below float's rounding, so x / (1 + e^-2u)
// needs no correction terms, and the one rounding back to float dominates the error.
//
// Elsewhere (double, and float on other targets) both are computed at
// -a, a = |x|, where the sigmoid is E / (1 + E) with E = e^-|2u| <= 1 and nothing
// cancels; gelu(x) = x + gelu(-x) and gelu'(x) = 1 - gelu'(-x) give the positive
// side. |2u| log2(e) is carried in twice the working precision: rounding it to one
// precision alone would cost up to 64 ulp in the far negative tail.
#ifndef EGELU_INTERNAL_TANH_FORM_HPP
#define EGELU_INTERNAL_TANH_FORM_HPP

#include "double_twin.hpp"
#include "exp2.hpp"
#include "exp2_in_double.hpp"

namespace egelu {
namespace internal {

// At -a: E = (1 + g + g_lo) 2^-n, and 1 / (1 + E) = q (1 + rho).
template <typename Packet>
struct tanh_form_at_minus_a {
  Packet a, a_squared, g, g_lo, q, rho;
  pow2_scale<Packet> unit;  // 2^-n

  EIGEN_STRONG_INLINE explicit tanh_form_at_minus_a(const Packet& x) {
    using Scalar = scalar_of<Packet>;
    using K = gelu_coefficients<Scalar>;
    constexpr int digits = std::numeric_limits<Scalar>::digits;
    a = pmin(pabs(x), cst<Packet>(K::tanh_clamp));  // keeps NaN (std::min semantics)
    // Below the floor, E / (1 + E) is 1/2 to far within a rounding.
    const Packet a_floored = floored_for_square(a);
    // y = |2u| log2(e) = a (A + B a^2) = y_hi + y_lo
    Packet s_lo, w, w_lo, y, y_lo;
    two_prod(a_floored, a_floored, a_squared, s_lo);
    mul_add_exact(cst<Packet>(K::tanh_b_hi), a_squared, cst<Packet>(K::tanh_a_hi), w, w_lo);
    w_lo = padd(w_lo, fmadd(cst<Packet>(K::tanh_b_hi), s_lo,
                            fmadd(cst<Packet>(K::tanh_b_lo), a_squared, cst<Packet>(K::tanh_a_lo))));
    two_prod(a_floored, w, y, y_lo);
    Packet n;
    exp2_negative(y, fmadd(a_floored, w_lo, y_lo), g, g_lo, n);
    unit = pow2_scale<Packet>(n);
    // 1 + E = d_hi + d_lo exactly, then one division and its exact residual. E is
    // taken no smaller than 2^-(3 digits), which moves 1 + E far less than the
    // 2^-(2 digits) the residual resolves, and keeps a subnormal E (|x| above about
    // 9.5 in float) from costing a microcode assist.
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

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_tanh_double_word(const Packet& x) {
  const tanh_form_at_minus_a<Packet> t(x);
  const Packet c = t.sigmoid_correction();
  // gelu(-a) = -a E / (1 + E) = -(p + p c) 2^-n with a q = p + p_lo exactly
  Packet p, p_lo;
  two_prod(t.a, t.q, p, p_lo);
  const Packet magnitude = padd(p, fmadd(p, c, fmadd(p, t.g_lo, fmadd(p_lo, c, p_lo))));
  return t.unit.apply_add(magnitude, -1, pmax(x, cst<Packet>(-0.0)));  // + x when x >= 0
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_tanh_grad_double_word(const Packet& x) {
  using K = gelu_coefficients<scalar_of<Packet>>;
  const tanh_form_at_minus_a<Packet> t(x);
  // gelu'(-a) = C (1 - a |2u|' (1 - C)), C = E / (1 + E), 1 - C = 1 / (1 + E)
  const Packet sigmoid = fmadd(t.q, t.sigmoid_correction(), t.q);  // C / 2^-n
  const Packet slope = pmul(fmadd(cst<Packet>(3 * K::tanh_b_hi), t.a_squared, cst<Packet>(K::tanh_a_hi)),
                            cst<Packet>(K::ln2_hi));  // d|2u|/da
  const Packet one_minus_k = fmadd(negate(pmul(t.a, slope)), fmadd(t.q, t.rho, t.q), cst<Packet>(1));
  const Packet at_minus_a = t.unit.apply(pmul(sigmoid, one_minus_k), 1);
  return pselect(pcmp_lt(x, cst<Packet>(0)), at_minus_a, psub(cst<Packet>(1), at_minus_a));
}

// Float's tanh form in double, to float's accuracy, for x >= -tanh_clamp:
// sigmoid(2u) = 1 / (1 + E), E = 2^y, y = -2u log2(e). y is good to about 2^-45
// of itself and 2^y to 8e-11 (exp2_in_double.hpp), so results are within 0.002
// float ulp before their rounding to float.
template <typename PacketD>
struct tanh_form_in_double {
  using K = float_in_double_coefficients;
  PacketD c, c_squared, e;

  EIGEN_STRONG_INLINE explicit tanh_form_in_double(const PacketD& x) {
    // Above the clamp E < 2^-162 vanishes next to 1; below it 2^n stays normal.
    c = pmin(x, cst<PacketD>(gelu_coefficients<float>::tanh_clamp));  // keeps NaN
    c_squared = pmul(c, c);
    // y counted in steps of 1 / exp2_steps, the factor folded into the constants
    const PacketD y_in_steps =
        mul_rounded(c, fmadd(cst<PacketD>(-K::tanh_b * exp2_steps), c_squared, cst<PacketD>(-K::tanh_a * exp2_steps)));
    e = exp2_of_steps(y_in_steps);
  }
};

// gelu(x) = x / (1 + E)
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD gelu_tanh_float_in_double(const PacketD& x) {
  return pdiv(x, padd(cst<PacketD>(1), tanh_form_in_double<PacketD>(x).e));
}

// gelu'(x) = s (1 + x (2u)' E s), s = 1 / (1 + E); x taken at the clamp, where
// the bracket is 1 and x (2u)' E stays finite.
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD gelu_tanh_grad_float_in_double(const PacketD& x) {
  using K = float_in_double_coefficients;
  const tanh_form_in_double<PacketD> t(x);
  const PacketD s = pdiv(cst<PacketD>(1), padd(cst<PacketD>(1), t.e));
  const PacketD x_slope = pmul(pmul(t.c, fmadd(cst<PacketD>(3 * K::tanh_b), t.c_squared, cst<PacketD>(K::tanh_a))),
                               cst<PacketD>(gelu_coefficients<double>::ln2_hi));
  return pmul(s, fmadd(pmul(x_slope, t.e), s, cst<PacketD>(1)));
}

// kernel(x) on x's double twins, x floored at -tanh_clamp, where gelu and gelu'
// round to -0 (and the floor keeps -inf from giving -inf / inf).
template <typename Packet, typename Kernel>
EIGEN_STRONG_INLINE Packet tanh_form_on_double_twins(const Packet& x, Kernel kernel) {
  return in_double(pmax(x, cst<Packet>(-gelu_coefficients<float>::tanh_clamp)), kernel);  // keeps NaN
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_tanh(const Packet& x) {
  if constexpr (has_double_twin<Packet>) {  // float on x86
    return tanh_form_on_double_twins(x, [](const auto& w) { return gelu_tanh_float_in_double(w); });
  } else {
    return pgelu_tanh_double_word(x);
  }
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_tanh_grad(const Packet& x) {
  if constexpr (has_double_twin<Packet>) {  // float on x86
    return tanh_form_on_double_twins(x, [](const auto& w) { return gelu_tanh_grad_float_in_double(w); });
  } else {
    return pgelu_tanh_grad_double_word(x);
  }
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_TANH_FORM_HPP
