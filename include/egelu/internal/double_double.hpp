// Double-double arithmetic, and the activations' values in it: the slow stage of the
// correctly rounded float activations (correct_rounding.hpp), which decides the inputs
// whose value lies too close to a midpoint between two floats for the double kernels
// (about one input in 2^25, and none on most arrays).
//
// A value is hi + lo with |lo| <= ulp(hi) / 2, about 106 bits. Each operation below is
// accurate to a few units of 2^-104 of its result; the functions use no subtraction that
// cancels more than 9 bits, so their values are good to about 2^-90, far below the 2^-80
// the slow stage's own rounding test allows for (correct_rounding.hpp). Everything is
// scalar and header-only: it needs only <cmath>.
#ifndef EGELU_INTERNAL_DOUBLE_DOUBLE_HPP
#define EGELU_INTERNAL_DOUBLE_DOUBLE_HPP

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "coefficients.hpp"
#include "exact_arithmetic.hpp"

namespace egelu {
namespace internal {

struct double_double {
  double hi, lo;
};

EIGEN_STRONG_INLINE double_double dd_normalized(double hi, double lo) {
  double s, e;
  fast_two_sum(hi, lo, s, e);
  return {s, e};
}

inline double_double dd_add(const double_double& a, const double_double& b) {
  // The accurate addition (both parts' errors carried): no cancellation is lost.
  double s, e, t, f;
  two_sum(a.hi, b.hi, s, e);
  two_sum(a.lo, b.lo, t, f);
  e += t;
  // Into new variables: fast_two_sum takes its inputs by reference, and writing its sum over
  // its first input before it reads it again made the error term a copy of e (the slow stage
  // was then wrong at 2^-53 of some values: tools/exhaustive_rounding found 7 floats).
  double u, v;
  fast_two_sum(s, e, u, v);
  v += f;
  return dd_normalized(u, v);
}

inline double_double dd_negate(const double_double& a) { return {-a.hi, -a.lo}; }

inline double_double dd_sub(const double_double& a, const double_double& b) { return dd_add(a, dd_negate(b)); }

inline double_double dd_mul(const double_double& a, const double_double& b) {
  double p, e;
  two_prod(a.hi, b.hi, p, e);
  e += a.hi * b.lo + a.lo * b.hi;
  return dd_normalized(p, e);
}

inline double_double dd_mul(const double_double& a, double b) {
  double p, e;
  two_prod(a.hi, b, p, e);
  e += a.lo * b;
  return dd_normalized(p, e);
}

inline double_double dd_div(const double_double& a, const double_double& b) {
  // Three quotient digits, each from the exact remainder of the ones before.
  const double q1 = a.hi / b.hi;
  double_double r = dd_sub(a, dd_mul(b, q1));
  const double q2 = r.hi / b.hi;
  r = dd_sub(r, dd_mul(b, q2));
  const double q3 = r.hi / b.hi;
  return dd_add(dd_normalized(q1, q2), {q3, 0});
}

inline double_double dd_div(const double_double& a, double b) { return dd_div(a, {b, 0}); }

inline double_double dd_constant(double hi, double lo) { return {hi, lo}; }

// e^-z for 0 <= z <= 700: e^-z = 2^-k e^-r, z = k ln2 + r, |r| <= ln2 / 2 (r to 2^-100
// absolute: ln2 holds 106 bits and k < 2^10); e^-r = (e^(-r / 64))^64, the inner value
// by its Taylor series to the 11th power (|r / 64| <= 0.0055: the rest is below 2^-108),
// then six squarings (each doubles the relative error: 2^6 2^-104).
inline double_double dd_exp_minus(const double_double& z) {
  using C = double_double_constants;
  const double_double ln2 = dd_constant(C::ln2_hi, C::ln2_lo);
  const double k = std::nearbyint(z.hi / C::ln2_hi);
  const double_double s = dd_mul(dd_sub(z, dd_mul(ln2, k)), -1.0 / 64);  // -r / 64, exact scaling
  double_double term = {1, 0}, sum = {1, 0};
  for (int i = 1; i <= 11; ++i) {
    term = dd_div(dd_mul(term, s), double(i));
    sum = dd_add(sum, term);
  }
  for (int i = 0; i < 6; ++i) sum = dd_mul(sum, sum);
  return {std::ldexp(sum.hi, -int(k)), std::ldexp(sum.lo, -int(k))};
}

// x sigmoid(t) for t of x's sign (t odd and increasing in x): x / (1 + E) for x >= 0 and
// x E / (1 + E) below, E = e^-|t| <= 1, so that nothing cancels.
inline double_double dd_times_sigmoid(double x, const double_double& t) {
  const bool negative = t.hi < 0;
  const double_double e = dd_exp_minus(negative ? dd_negate(t) : t);
  const double_double one_plus_e = dd_add({1, 0}, e);
  return dd_div(negative ? dd_mul(e, x) : double_double{x, 0}, one_plus_e);
}

// Phi(-a) for 0 <= a <= 20 (a with at most 26 significant bits, so that a^2 / 2 is exact).
// Up to 3: 1/2 - phi(a) S(a), S = sum a^(2n+1) / (2n+1)!! (all terms positive; the
// subtraction keeps 1/2 - Phi(-3) = 2^-9.5 of 1/2, losing 9 bits). Beyond: phi(a) times
// the Mills ratio's continued fraction 1 / (a + 1 / (a + 2 / (a + 3 / ...))), evaluated
// from a depth that leaves its truncation below 2^-100 (measured with mpmath: 160 terms at
// a = 3, 100 at 4, 52 at 6, 32 at 10).
inline double_double dd_upper_tail(double a) {
  using C = double_double_constants;
  const double half_square = a * a / 2;  // exact
  const double_double phi = dd_mul(dd_exp_minus({half_square, 0}), dd_constant(C::inv_sqrt_2pi_hi, C::inv_sqrt_2pi_lo));
  if (a <= 3) {
    double_double term = {a, 0}, sum = {a, 0};
    const double a2 = a * a;
    for (int n = 1; n < 200 && term.hi > 0x1p-112 * sum.hi; ++n) {
      term = dd_div(dd_mul(term, a2), double(2 * n + 1));
      sum = dd_add(sum, term);
    }
    return dd_sub({0.5, 0}, dd_mul(phi, sum));
  }
  const int depth = a <= 4 ? 176 : a <= 6 ? 112 : a <= 10 ? 56 : 40;
  double_double t = {a, 0};
  for (int k = depth; k >= 1; --k) t = dd_add({a, 0}, dd_div({double(k), 0}, t));
  return dd_div(phi, t);
}

// gelu_exact(x) = x Phi(x): x (1 - Phi(-x)) for x >= 0 (Phi(-x) <= 1/2: no cancellation),
// x Phi(-|x|) below.
inline double_double dd_gelu_erf(double x) {
  const double_double tail = dd_upper_tail(std::fabs(x));
  return x >= 0 ? dd_mul(dd_sub({1, 0}, tail), x) : dd_mul(tail, x);
}

// v, within bound |v| of the exact value, rounded to the nearest float (ties to even),
// subnormal results included; `decided` is false when a midpoint between two floats lies
// within that distance of v, and the result is then v's own rounding.
inline float dd_round_to_float(const double_double& v, double bound, bool& decided) {
  decided = true;
  const float c = float(v.hi);
  const double to_c = (v.hi - double(c)) + v.lo;  // v.hi - c is exact
  if (to_c == 0 || std::isinf(c)) return c;
  const float neighbour =
      std::nextafter(c, to_c > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
  const double midpoint = (double(c) + double(neighbour)) / 2;  // exact
  const double to_midpoint = (v.hi - midpoint) + v.lo;          // v.hi - midpoint is exact
  if (std::fabs(to_midpoint) <= bound * std::fabs(v.hi)) {
    decided = false;
    return c;
  }
  return (to_midpoint > 0) == (to_c > 0) ? neighbour : c;
}

// f(x) for 0 < |x| <= 2^-30 and f(x) = x s(x), s - 1/2 of x's sign and |s - 1/2| <= 0.43 |x|
// (each activation: docs/DESIGN.md, "Correctly rounded float"): f(x) lies above x/2 by at
// most 0.43 x^2, less than a quarter of x/2's ulp, so it rounds to x/2 where x/2 is a float
// and to the float above it (towards +inf) where x/2 is a midpoint (subnormal results).
// Inline and free of library calls: the packet path's rare branch runs it for every tiny lane.
EIGEN_STRONG_INLINE float tiny_rule(float x) {
  const double half = double(x) / 2;  // exact
  const float c = float(half);
  if (double(c) >= half) return c;
  // the float above c (c < half, so c is not -0): one more in magnitude above 0, one less below
  std::uint32_t bits;
  std::memcpy(&bits, &c, sizeof bits);
  bits = c >= 0 ? bits + 1 : bits - 1;
  float above;
  std::memcpy(&above, &bits, sizeof above);
  return above;
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_DOUBLE_DOUBLE_HPP
