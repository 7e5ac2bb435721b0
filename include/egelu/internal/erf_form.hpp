// The exact form, gelu(x) = x Phi(x) = 0.5 x erfc(-x / sqrt2), and its derivative,
// as packet functions.
//
// Both are computed at -a, a = |x|, where Phi(-a) = 0.5 erfc(a / sqrt2) and
// nothing cancels: gelu(x) = max(x, 0) - a Phi(-a), and erfc(z) = e^{-z^2} erfcx(z).
//
// Where a float packet has double twins (x86, aarch64), float gelu and gelu' run in
// double: a^2 is exact there, and erfcx(a / sqrt2) / 2 is one rational function of a to
// 2^-39, and a rounding test makes the one rounding back to float correct
// (correct_rounding.hpp).
//
// Elsewhere (double, and float on other targets) z^2 = a^2 / 2 is carried exactly
// in two words and erfcx written as u 2^shape(u), u = 1 / (1 + sqrt(pi/2) a), so
// that shape(u) stays in [0, 0.25] over the whole range.
#ifndef EGELU_INTERNAL_ERF_FORM_HPP
#define EGELU_INTERNAL_ERF_FORM_HPP

#include "correct_rounding.hpp"
#include "exp2.hpp"
#include "exp2_in_double.hpp"

namespace egelu {
namespace internal {

constexpr double inv_sqrt_2pi = 0.39894228040143267794;  // phi(a) = e^{-a^2/2} inv_sqrt_2pi

// At -a: Phi(-a) = u/2 (1 + g + g_lo) 2^-n, and e^{-a^2/2} = 2^-shift (1 + g + g_lo) 2^-n.
template <typename Packet>
struct erf_form_at_minus_a {
  Packet a, u, shift, g, g_lo, n;

  EIGEN_STRONG_INLINE explicit erf_form_at_minus_a(const Packet& x) {
    using K = gelu_coefficients<scalar_of<Packet>>;
    a = pmin(pabs(x), cst<Packet>(K::erf_clamp));  // keeps NaN (std::min semantics)
    // u = 1 / (1 + kappa a), and u's own rounding, rho, folded into the exponent
    Packet d_hi, d_lo;
    mul_add_exact(cst<Packet>(K::kappa_hi), a, cst<Packet>(1), d_hi, d_lo);
    d_lo = fmadd(cst<Packet>(K::kappa_lo), a, d_lo);
    u = pdiv(cst<Packet>(1), d_hi);
    const Packet rho = fmadd(negate(u), d_lo, one_minus_product(u, d_hi));
    const Packet v = psub(u, cst<Packet>(0.5));
    shift = fmadd(polynomial(K::erf_slope, v), rho, polynomial(K::erf_shape, v));
    // a^2 log2(e) / 2 = y_hi + y_lo. Below the floor e^{-a^2/2} is 1 to far within a rounding.
    const Packet a_floored = floored_for_square(a);
    Packet s, s_lo, y, y_lo;
    two_prod(a_floored, a_floored, s, s_lo);
    two_prod(cst<Packet>(K::half_log2e_hi), s, y, y_lo);
    y_lo = fmadd(cst<Packet>(K::half_log2e_hi), s_lo, fmadd(cst<Packet>(K::half_log2e_lo), s, y_lo));
    exp2_negative(y, y_lo, shift, g, g_lo, n);
  }
};

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_erf_double_word(const Packet& x) {
  const erf_form_at_minus_a<Packet> t(x);
  // gelu(-a) = -a Phi(-a) = -(p + p g) 2^-n / 2 with a u = p + p_lo exactly
  Packet p, p_lo;
  two_prod(t.a, t.u, p, p_lo);
  const Packet magnitude = padd(p, fmadd(p, t.g, fmadd(p, t.g_lo, fmadd(p_lo, t.g, p_lo))));
  return pow2_scale<Packet>(t.n).apply_add(magnitude, -0.5, max_with_minus_zero(x));  // + x when x >= 0
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_erf_grad_double_word(const Packet& x) {
  using Scalar = scalar_of<Packet>;
  const erf_form_at_minus_a<Packet> t(x);
  // gelu'(-a) = Phi(-a) - a phi(a) = (u/2 - a 2^-shift / sqrt(2 pi)) (1 + g) 2^-n
  const Packet a_phi = pmul(t.a, cst<Packet>(Scalar(inv_sqrt_2pi)));
  Packet unused_lo;
  const Packet bracket =
      psub(pmul(t.u, cst<Packet>(0.5)), fmadd(a_phi, exp2m1_reduced(negate(t.shift), unused_lo), a_phi));
  const Packet at_minus_a = pow2_scale<Packet>(t.n).apply(fmadd(bracket, t.g, bracket), 1);
  return pselect(pcmp_lt(x, cst<Packet>(0)), at_minus_a, psub(cst<Packet>(1), at_minus_a));
}

// Float's exact form in double: Phi(-a) = E r with E = e^{-a^2/2} = 2^y and
// r = erfcx(a / sqrt2) / 2 = P(a) / Q(a) over [0, float's erf_clamp] (2^-39 relative; every
// coefficient positive, so their evaluation cannot cancel). a^2 is exact (a has float's 24 bits), y good to 2^-53 of
// itself (2^-45 absolute at a = 15) and 2^y to 2^-40 (2^-38.5 with AVX-512, exp2_in_double.hpp): results are within
// 2^-38.4 (2^-37.7) of themselves before their rounding to float. Beyond the range every float result is x or -0.
template <typename PacketD>
struct erf_form_in_double {
  using K = float_in_double_coefficients;
  static constexpr double range = gelu_coefficients<float>::erf_clamp;
  PacketD a, r, y;

  EIGEN_STRONG_INLINE explicit erf_form_in_double(const PacketD& x) {
    a = pmin(pabs(x), cst<PacketD>(range));  // keeps NaN
    r = pdiv(polynomial(K::erfcx_p, a), polynomial(K::erfcx_q, a));
    // y counted in steps of 1 / exp2_steps, the factor folded into the constant
    y = pmul(pmul(a, a), cst<PacketD>(-gelu_coefficients<double>::half_log2e_hi * exp2_steps));
  }
};

// gelu(x) = max(x, 0) - a r E, E = p s (exp2_in_double.hpp), the last product fused with
// the subtraction. For x = -0 both terms are -0: max(-0, -0) - (+0).
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD gelu_erf_float_in_double(const PacketD& x) {
  const erf_form_in_double<PacketD> t(x);
  PacketD p, s;
  exp2_of_steps_parts(t.y, p, s);
  return fnmadd(pmul(pmul(t.a, t.r), p), s, max_with_minus_zero(x));
}

// gelu'(-a) = Phi(-a) - a phi(a) = E (r - a / sqrt(2 pi)), and gelu'(a) = 1 - gelu'(-a)
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD gelu_erf_grad_float_in_double(const PacketD& x) {
  const erf_form_in_double<PacketD> t(x);
  const PacketD e = exp2_of_steps(t.y);
  const PacketD at_minus_a = pmul(e, fmadd(negate(t.a), cst<PacketD>(inv_sqrt_2pi), t.r));
  return pselect(pcmp_lt(x, cst<PacketD>(0)), at_minus_a, psub(cst<PacketD>(1), at_minus_a));
}

// Float's exact form, correctly rounded (correct_rounding.hpp): the fast stage above, the
// medium one the double kernel, the slow one x Phi(x) in double-double.
struct erf_rounding_form {
  // The fast stage's bound (2^-38.4, above; 2^-37.7 with AVX-512's table of sixteenths) is
  // 2^14.6 double ulps (2^15.3): a window of 2^15 (2^16).
  static constexpr int fast_window_log2 = exp2_steps == 16 ? 16 : 15;
  static constexpr int medium_window_log2 = 3;  // the double kernel: 2 ulps

  template <typename Packet>
  EIGEN_STRONG_INLINE Packet prepare(const Packet& x) const {
    return x;
  }
  template <typename PacketD>
  EIGEN_STRONG_INLINE PacketD fast(const PacketD& x) const {
    return gelu_erf_float_in_double(x);
  }
  double medium(double x) const { return pgelu_erf_double_word(x); }
  double_double exact(double x) const { return dd_gelu_erf(x); }
  double fast_window() const { return double(1 << fast_window_log2); }
  double medium_window() const { return double(1 << medium_window_log2); }
};

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_erf(const Packet& x) {
  if constexpr (has_double_twin<Packet>) {  // float on x86 and aarch64
    return pcorrectly_rounded(x, erf_rounding_form{});
  } else {
    return pgelu_erf_double_word(x);
  }
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_erf_grad(const Packet& x) {
  if constexpr (has_double_twin<Packet>) {  // float on x86 and aarch64
    return in_double(x, [](const auto& w) { return gelu_erf_grad_float_in_double(w); });
  } else {
    return pgelu_erf_grad_double_word(x);
  }
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_ERF_FORM_HPP
