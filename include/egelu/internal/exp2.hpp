// Base-2 exponentials split as (1 + g) * 2^-n, the form both GELU kernels need.
//
// Keeping 1 + g unevaluated lets a kernel apply it as p + p*g with a single
// rounding, and keeping 2^-n apart lets it scale only at the very end, where
// the result may be subnormal while every intermediate is normal.
#ifndef EGELU_INTERNAL_EXP2_HPP
#define EGELU_INTERNAL_EXP2_HPP

#include "coefficients.hpp"
#include "exact_arithmetic.hpp"

namespace egelu {
namespace internal {

// 2^f - 1 = g + g_lo for |f| <= 0.5 (+ slack): ln2 f is carried exactly and the
// polynomial tail is small next to it, so g + g_lo is good to far below one
// rounding of g.
template <typename Packet>
EIGEN_STRONG_INLINE Packet exp2m1_reduced(const Packet& f, Packet& g_lo) {
  using K = gelu_coefficients<scalar_of<Packet>>;
  Packet h, h_lo;
  two_prod(f, cst<Packet>(K::ln2_hi), h, h_lo);
  const Packet tail = fmadd(pmul(f, f), polynomial(K::exp2_tail, f), fmadd(f, cst<Packet>(K::ln2_lo), h_lo));
  Packet g;
  fast_two_sum(h, tail, g, g_lo);  // |tail| < |h| / 4
  return g;
}

// 2^-(y_hi + y_lo - shift) = (1 + g + g_lo) * 2^-n, n integer-valued, |g| < 0.42.
// y_hi >= 0, |y_lo| <= ulp(y_hi), 0 <= shift < 1 (a small exponent correction).
template <typename Packet>
EIGEN_STRONG_INLINE void exp2_negative(const Packet& y_hi, const Packet& y_lo, const Packet& shift, Packet& g,
                                       Packet& g_lo, Packet& n) {
  n = round_to_integer(psub(y_hi, shift));
  // n - y_hi is exact (Sterbenz), so f keeps y_lo's bits.
  g = exp2m1_reduced(padd(psub(psub(n, y_hi), y_lo), shift), g_lo);
}

template <typename Packet>
EIGEN_STRONG_INLINE void exp2_negative(const Packet& y_hi, const Packet& y_lo, Packet& g, Packet& g_lo, Packet& n) {
  n = round_to_integer(y_hi);
  g = exp2m1_reduced(psub(psub(n, y_hi), y_lo), g_lo);
}

// Multiplication by 2^-n as 2^(offset - n) * 2^-offset, both factors normal,
// so 2^-n may lie far below the normal range: exact unless the product is
// subnormal, which then rounds once.
template <typename Packet>
struct pow2_scale {
  using Scalar = scalar_of<Packet>;
  using K = gelu_coefficients<Scalar>;
  Packet shifted;  // 2^(offset - n)

  pow2_scale() = default;
  // The offset is folded into the shifter: one subtraction gives offset - n's shifted form.
  EIGEN_STRONG_INLINE explicit pow2_scale(const Packet& n)
      : shifted(pow2_from_shifted(psub(cst<Packet>(Scalar(K::scale_offset) + pow2_shifter<Scalar>), n),
                                  psub(cst<Packet>(Scalar(K::scale_offset)), n))) {}

  // value * factor * 2^-n for a power-of-two factor (sign included).
  EIGEN_STRONG_INLINE Packet apply(const Packet& value, Scalar factor) const {
    return pmul(pmul(value, shifted), cst<Packet>(factor * K::scale_unit));
  }

  // value * factor * 2^-n + addend, the last product fused with the addition. The
  // result is the same (a product that underflows is far below the addend's ulp,
  // or the addend is -0), but a fused multiply-add whose product underflows took
  // no microcode assist here, where a multiplication took one (3x slower kernels).
  EIGEN_STRONG_INLINE Packet apply_add(const Packet& value, Scalar factor, const Packet& addend) const {
    return fmadd(pmul(value, shifted), cst<Packet>(factor * K::scale_unit), addend);
  }

  // max(2^-n, 2^k) for a normal 2^k: 2^-n where a caller can do without its
  // subnormal (and microcode-assisted) values. k is a template argument so that
  // 2^(offset + k) is computed by the compiler, not by a loop on every call.
  template <int k>
  EIGEN_STRONG_INLINE Packet at_least() const {
    constexpr Scalar lowest = power_of_two<Scalar>(K::scale_offset + k);
    return pmul(pmax(shifted, cst<Packet>(lowest)), cst<Packet>(K::scale_unit));
  }
};

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_EXP2_HPP
