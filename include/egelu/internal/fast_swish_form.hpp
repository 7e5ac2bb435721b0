// The opt-in fast SiLU behind egelu::fast::silu: x sigmoid(x) in float arithmetic alone.
//
// The default float kernel on x86 runs in double to be within 0.501 ulp; its packet
// conversions cost more than the arithmetic on Intel's AVX-512 (docs/DESIGN.md, "The
// family"). This one keeps the default's structure at -a, a = |x| -- E = e^-a =
// 2^f 2^-n with the exponent in two words, f(x) = max(x, -0) - a E / (1 + E), the 2^-n
// applied last by pow2_scale so that results near the subnormal range round once --
// but drops its correction terms: 2^f from one polynomial, one division for 1 / (1 + E)
// and no residual. So its error is a few rounding errors, within 4 ulp over the whole
// range (README, "Fast variants"), where the default is within 0.501.
#ifndef EGELU_INTERNAL_FAST_SWISH_FORM_HPP
#define EGELU_INTERNAL_FAST_SWISH_FORM_HPP

#include "exp2.hpp"
#include "swish_form.hpp"

namespace egelu {
namespace internal {

template <typename Packet>
EIGEN_STRONG_INLINE Packet pswish_fast(const Packet& x, const swish_argument<float>& t) {
  static_assert(std::is_same<scalar_of<Packet>, float>::value, "egelu: the fast SiLU is a float kernel");
  using K = gelu_coefficients<float>;
  const Packet a = pmin(pabs(x), cst<Packet>(t.clamp<float>()));  // keeps NaN
  const Packet a_floored = pmax(a, cst<Packet>(t.floor));
  // y = a alpha log2(e) in two words, n = round(y), f = n - y in [-1/2, 1/2]: E = 2^f 2^-n
  Packet y, y_lo;
  two_prod(a_floored, cst<Packet>(t.k_hi), y, y_lo);
  y_lo = fmadd(a_floored, cst<Packet>(t.k_lo), y_lo);
  const Packet n = round_to_integer(y);
  const Packet f = psub(psub(n, y), y_lo);  // n - y is exact (Sterbenz)
  // 2^f = 1 + f (ln 2 + f P(f)), the default kernels' polynomial, one word
  const Packet p = fmadd(f, fmadd(f, horner(K::exp2_tail, f), cst<Packet>(K::ln2_hi)), cst<Packet>(1));
  // 1 + E: below 2^-100, E vanishes next to 1
  const Packet e = pmul(p, pow2(pmax(negate(n), cst<Packet>(-100))));
  const Packet r = pdiv(cst<Packet>(1), padd(cst<Packet>(1), e));
  // f(-a) = -(a 2^f r) 2^-n, added to max(x, -0)
  return pow2_scale<Packet>(n).apply_add(pmul(pmul(a, p), r), -1, max_with_minus_zero(x));
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_FAST_SWISH_FORM_HPP
