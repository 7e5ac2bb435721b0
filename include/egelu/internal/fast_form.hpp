// The opt-in fast kernels behind egelu::fast: gelu = x h(x) with h, Phi(x) or
// sigmoid(2u), fitted in absolute error. They trade the default kernels' ULP bound
// for speed: the error is at most 4e-6 |x| (README, "Fast variants"), so below
// about -4 no digit of the result is right, as with Eigen's composed expressions.
//
// With AVX-512, h is a cubic on each of 32 pieces of [-6, 6] whose coefficients
// one vpermt2ps per coefficient looks up: no division, 14 operations per 16
// floats. Elsewhere (no one-instruction 32-entry lookup) h = 1/2 + x P(x^2)/Q(x^2).
// Either way h is exactly 0 or 1 beyond the clamp, so -Inf gives -0 and +Inf gives
// +Inf, and NaN stays NaN (pmax and pmin keep their first argument's NaN).
//
// double: the exact form is a rational of degrees (12, 12) within 1e-15 |x| (about
// 3.5 times the default double kernel's speed); the default double tanh kernel
// already meets the speed it is asked for, so egelu::fast::gelu keeps it.
#ifndef EGELU_INTERNAL_FAST_FORM_HPP
#define EGELU_INTERNAL_FAST_FORM_HPP

#include "coefficients.hpp"
#include "exact_arithmetic.hpp"

namespace egelu {
namespace internal {

struct fast_tanh_form {
  static constexpr const float (&pieces)[4][32] = fast_pieces::tanh;
  using float_rational = fast_rational_tanh_float;
};

struct fast_erf_form {
  static constexpr const float (&pieces)[4][32] = fast_pieces::erf;
  using float_rational = fast_rational_erf_float;
};

// h = 1/2 + x P(x^2) / Q(x^2) with the coefficients of Rational, for packets and scalars alike.
template <typename Rational, typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_fast_rational(const Packet& x) {
  const Packet x_low = pmax(x, cst<Packet>(-Rational::clamp));  // -Inf times h = 0 would be NaN
  const Packet x_clamped = pmin(x_low, cst<Packet>(Rational::clamp));
  const Packet s = pmul(x_clamped, x_clamped);
  const Packet h = fmadd(x_clamped, pdiv(horner(Rational::p, s), horner(Rational::q, s)), cst<Packet>(0.5));
  return pmul(x_low, pmin(pmax(h, cst<Packet>(0)), cst<Packet>(1)));
}

#if defined(EIGEN_VECTORIZE_AVX512)
template <typename Form>
EIGEN_STRONG_INLINE Packet16f pgelu_fast_pieces(const Packet16f& x) {
  using K = fast_pieces;
  constexpr float width = 2 * K::clamp / K::count;
  constexpr float round_to_integer = 0x1.8p23f;
  // Just inside the clamp, so that the piece index stays in [0, 32); beyond it h is 0
  // (the first piece) or 1 (the last), and x_low keeps -Inf * 0 from making NaN.
  const Packet16f x_low = pmax(x, cst<Packet16f>(-K::clamp * (1 - 0x1p-23f)));
  const Packet16f x_clamped = pmin(x_low, cst<Packet16f>(K::clamp * (1 - 0x1p-23f)));
  // s = x - mid_0, mid_k = -clamp + (k + 1/2) width; k = round(s / width), which adding
  // 1.5 2^23 leaves in the low bits, where vpermt2ps reads five of them as the index.
  const Packet16f s = padd(x_clamped, cst<Packet16f>(K::clamp - width / 2));
  const Packet16f index = pmadd(s, cst<Packet16f>(1 / width), cst<Packet16f>(round_to_integer));
  const Packet16f k = psub(index, cst<Packet16f>(round_to_integer));
  const Packet16f d = pmadd(k, cst<Packet16f>(-width), s);  // x - mid_k
  const __m512i lanes = _mm512_castps_si512(index);
  const auto coefficient = [&](int j) {
    return _mm512_permutex2var_ps(_mm512_load_ps(Form::pieces[j]), lanes, _mm512_load_ps(Form::pieces[j] + 16));
  };
  Packet16f h = coefficient(3);
  for (int j = 2; j >= 0; --j) h = pmadd(h, d, coefficient(j));
  return pmul(x_low, h);
}

// Narrower packets and scalars run in the low lanes of a Packet16f, so every lane
// and the scalar tail of a loop agree bit for bit.
EIGEN_STRONG_INLINE Packet16f widen_to_16(const float& x) { return pset1<Packet16f>(x); }
EIGEN_STRONG_INLINE Packet16f widen_to_16(const Packet4f& x) { return _mm512_castps128_ps512(x); }
EIGEN_STRONG_INLINE Packet16f widen_to_16(const Packet8f& x) { return _mm512_castps256_ps512(x); }
EIGEN_STRONG_INLINE Packet16f widen_to_16(const Packet16f& x) { return x; }
EIGEN_STRONG_INLINE void narrow_from_16(const Packet16f& y, float& out) { out = pfirst(y); }
EIGEN_STRONG_INLINE void narrow_from_16(const Packet16f& y, Packet4f& out) { out = _mm512_castps512_ps128(y); }
EIGEN_STRONG_INLINE void narrow_from_16(const Packet16f& y, Packet8f& out) { out = _mm512_castps512_ps256(y); }
EIGEN_STRONG_INLINE void narrow_from_16(const Packet16f& y, Packet16f& out) { out = y; }
#endif

/// gelu in the form Form (fast_tanh_form, fast_erf_form) for float packets and floats.
template <typename Form, typename Packet>
EIGEN_STRONG_INLINE Packet pgelu_fast(const Packet& x) {
  static_assert(std::is_same<scalar_of<Packet>, float>::value, "egelu: the fast kernels are float kernels");
#if defined(EIGEN_VECTORIZE_AVX512)
  Packet y;
  narrow_from_16(pgelu_fast_pieces<Form>(widen_to_16(x)), y);
  return y;
#else
  return pgelu_fast_rational<typename Form::float_rational>(x);
#endif
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_FAST_FORM_HPP
