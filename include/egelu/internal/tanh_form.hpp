// The tanh approximation, gelu(x) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3),
// and its derivative: logistic_form.hpp with the argument t = 2u.
#ifndef EGELU_INTERNAL_TANH_FORM_HPP
#define EGELU_INTERNAL_TANH_FORM_HPP

#include "logistic_form.hpp"

namespace egelu {
namespace internal {

// t(a) = 2u(a) = a (A + B a^2) / log2(e), A and B carrying the factor log2(e).
struct tanh_argument {
  template <typename Scalar>
  static constexpr Scalar clamp() {
    return gelu_coefficients<Scalar>::tanh_clamp;
  }

  // t(a) log2(e) = a (A + B a^2) = hi + lo
  template <typename Packet>
  struct exponent {
    Packet hi, lo, a_squared;

    EIGEN_STRONG_INLINE exponent(const Packet& a, const tanh_argument&) {
      using K = gelu_coefficients<scalar_of<Packet>>;
      // Below the floor, E / (1 + E) is 1/2 to far within a rounding.
      const Packet a_floored = floored_for_square(a);
      Packet s_lo, w, w_lo;
      two_prod(a_floored, a_floored, a_squared, s_lo);
      // tanh_a_hi is a multiple of every possible ulp(w), so w + w_lo is exact (mul_add_exact)
      mul_add_exact(cst<Packet>(K::tanh_b_hi), a_squared, cst<Packet>(K::tanh_a_hi), w, w_lo);
      w_lo = padd(w_lo, fmadd(cst<Packet>(K::tanh_b_hi), s_lo,
                              fmadd(cst<Packet>(K::tanh_b_lo), a_squared, cst<Packet>(K::tanh_a_lo))));
      two_prod(a_floored, w, hi, lo);
      lo = fmadd(a_floored, w_lo, lo);
    }

    // t'(a) = (A + 3 B a^2) ln 2
    EIGEN_STRONG_INLINE Packet slope(const Packet&, const tanh_argument&) const {
      using K = gelu_coefficients<scalar_of<Packet>>;
      return pmul(fmadd(cst<Packet>(3 * K::tanh_b_hi), a_squared, cst<Packet>(K::tanh_a_hi)), cst<Packet>(K::ln2_hi));
    }
  };

  // Float in double: -t(c) log2(e), counted in steps of 1 / exp2_steps (the factor
  // folded into the constants), rounded once so that contraction cannot move it.
  template <typename PacketD>
  EIGEN_STRONG_INLINE PacketD exponent_in_steps(const PacketD& c) const {
    using K = float_in_double_coefficients;
    return mul_rounded(c,
                       fmadd(cst<PacketD>(-K::tanh_b * exp2_steps), pmul(c, c), cst<PacketD>(-K::tanh_a * exp2_steps)));
  }

  // c t'(c)
  template <typename PacketD>
  EIGEN_STRONG_INLINE PacketD x_slope_in_double(const PacketD& c) const {
    using K = float_in_double_coefficients;
    return pmul(pmul(c, fmadd(cst<PacketD>(3 * K::tanh_b), pmul(c, c), cst<PacketD>(K::tanh_a))),
                cst<PacketD>(gelu_coefficients<double>::ln2_hi));
  }

  // t(x) = 2 sqrt(2/pi) (x + 0.044715 x^3) in double-double, for a float x (the slow stage):
  // x^3 is exact (72 bits), the constants hold 106 bits, so t is good to 2^-103 of itself.
  double_double exact_argument(double x) const {
    using C = double_double_constants;
    double x3_hi, x3_lo;
    two_prod(x * x, x, x3_hi, x3_lo);  // x * x is exact: 48 bits
    const double_double cubic = dd_mul({x3_hi, x3_lo}, dd_constant(C::tanh_cubic_hi, C::tanh_cubic_lo));
    return dd_mul(dd_add({x, 0}, cubic), dd_constant(C::two_sqrt_2_over_pi_hi, C::two_sqrt_2_over_pi_lo));
  }
};

// The argument as an object (forms hold it by reference).
inline constexpr tanh_argument tanh_argument_value{};

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_tanh_double_word(const Packet& x) {
  return plogistic_product_double_word(x, tanh_argument{});
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_tanh_grad_double_word(const Packet& x) {
  return plogistic_product_grad_double_word(x, tanh_argument{});
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_tanh(const Packet& x) {
  return plogistic_product(x, tanh_argument_value, tanh_argument_value);
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_tanh_grad(const Packet& x) {
  return plogistic_product_grad(x, tanh_argument{});
}

// Float's correctly rounded tanh form (correct_rounding.hpp), as pgelu_tanh runs it.
inline logistic_rounding_form<tanh_argument, tanh_argument> tanh_rounding_form() {
  return {tanh_argument_value, tanh_argument_value};
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_TANH_FORM_HPP
