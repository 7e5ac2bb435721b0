// The reference (reference.hpp): long double with a generous bound, MPFR for the rest.
#include "reference.hpp"

#if EGELU_TOOL_MPFR
#include <mpfr.h>
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

static_assert(LDBL_MANT_DIG >= 64, "the long double evaluation assumes x87's 64-bit significand or wider");

namespace exhaustive {

const char* exact_name(Exact f) {
  switch (f) {
    case Exact::gelu:
      return "gelu";
    case Exact::gelu_exact:
      return "gelu_exact";
    case Exact::silu:
      return "silu";
    case Exact::quick_gelu:
      return "quick_gelu";
  }
  return "?";
}

namespace {

// The long double evaluation's error bound, relative to the value. With x87's 64-bit
// significand its actual error is a few units of 2^-64 times the condition of exp at
// |t| <= 110 (2^-55 in the far tail) and of erfc at z <= 10.7 (2^-56): 2^-50 is deliberately
// generous. With binary128 (aarch64), a few units of 2^-113 times the same: 2^-100. main.cpp
// checks a sample of inputs and every undecided one against MPFR, where it has MPFR.
constexpr long double kLongDoubleBound = LDBL_MANT_DIG >= 113 ? 0x1p-100L : 0x1p-50L;

// MPFR's evaluation at p bits has a relative error below 2^(kMpfrSlack - p): a few roundings,
// times the condition of exp (|t| <= 2^8) and of erfc (2 z^2 <= 2^8) for the inputs that get here.
constexpr int kMpfrSlack = 14;

// x sigmoid(t), in an order that does not cancel.
long double times_sigmoid(long double x, long double t) {
  if (t >= 0) return x / (1 + expl(-t));
  const long double e = expl(t);
  return x * e / (1 + e);
}

// The constants as the definitions write them: 0.044715 is a decimal.
const long double kSqrt2OverPi = sqrtl(2 / acosl(-1));
const long double kQuickAlpha = static_cast<long double>(1.702f);  // as the float kernels hold it

// The first filter, in double (glibc's exp and erfc, within a few ulps): the argument of exp
// is good to 2^-52 of itself (|t| <= 110: 2^-45 absolute) and erfc's condition is 2 z^2 <= 230
// (2^-45), so 2^-40 of the value is generous; it decides all but about 2^-15 of the inputs,
// which go on to long double.
constexpr double kDoubleBound = 0x1p-40;

double times_sigmoid_d(double x, double t) {
  if (t >= 0) return x / (1 + std::exp(-t));
  const double e = std::exp(t);
  return x * e / (1 + e);
}

double value_in_double(Exact f, double x) {
  switch (f) {
    case Exact::gelu:
      return times_sigmoid_d(x, 2 * 0.79788456080286535588 * (x + 0.044715 * x * x * x));
    case Exact::gelu_exact:
      return x * std::erfc(-x * 0.70710678118654752440) / 2;
    case Exact::silu:
      return times_sigmoid_d(x, x);
    case Exact::quick_gelu:
      return times_sigmoid_d(x, double(1.702f) * x);
  }
  return NAN;
}

long double value_in_long_double(Exact f, long double x) {
  switch (f) {
    case Exact::gelu:
      return times_sigmoid(x, 2 * kSqrt2OverPi * (x + 0.044715L * x * x * x));
    case Exact::gelu_exact:  // erfcl of a negative argument is 2 - erfcl(|z|): no cancellation
      return x * erfcl(-x / sqrtl(2)) / 2;
    case Exact::silu:
      return times_sigmoid(x, x);
    case Exact::quick_gelu:
      return times_sigmoid(x, kQuickAlpha * x);
  }
  return NAN;
}

#if EGELU_TOOL_MPFR
struct Mp {
  mpfr_t v;
  explicit Mp(mpfr_prec_t bits) { mpfr_init2(v, bits); }
  ~Mp() { mpfr_clear(v); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
  operator mpfr_ptr() { return v; }
};

// out = x sigmoid(t) at out's precision.
void times_sigmoid(mpfr_ptr out, mpfr_srcptr x, mpfr_srcptr t, mpfr_prec_t bits) {
  Mp e(bits), d(bits);
  if (mpfr_sgn(t) >= 0) {
    mpfr_neg(e, t, MPFR_RNDN);
    mpfr_exp(e, e, MPFR_RNDN);
    mpfr_add_ui(d, e, 1, MPFR_RNDN);
    mpfr_div(out, x, d, MPFR_RNDN);
  } else {
    mpfr_exp(e, t, MPFR_RNDN);
    mpfr_add_ui(d, e, 1, MPFR_RNDN);
    mpfr_mul(e, e, x, MPFR_RNDN);
    mpfr_div(out, e, d, MPFR_RNDN);
  }
}

void value_in_mpfr(mpfr_ptr out, Exact f, float x_float, mpfr_prec_t bits) {
  Mp x(bits), t(bits), a(bits);
  mpfr_set_flt(x, x_float, MPFR_RNDN);  // exact
  switch (f) {
    case Exact::gelu:
      mpfr_const_pi(a, MPFR_RNDN);
      mpfr_ui_div(a, 2, a, MPFR_RNDN);
      mpfr_sqrt(a, a, MPFR_RNDN);  // sqrt(2/pi)
      mpfr_mul(t, x, x, MPFR_RNDN);
      mpfr_mul(t, t, x, MPFR_RNDN);
      mpfr_mul_ui(t, t, 44715, MPFR_RNDN);
      mpfr_div_ui(t, t, 1000000, MPFR_RNDN);  // 0.044715 x^3
      mpfr_add(t, t, x, MPFR_RNDN);
      mpfr_mul(t, t, a, MPFR_RNDN);
      mpfr_mul_2ui(t, t, 1, MPFR_RNDN);  // 2u
      times_sigmoid(out, x, t, bits);
      return;
    case Exact::gelu_exact:
      mpfr_sqrt_ui(a, 2, MPFR_RNDN);
      mpfr_div(t, x, a, MPFR_RNDN);
      mpfr_neg(t, t, MPFR_RNDN);
      mpfr_erfc(t, t, MPFR_RNDN);
      mpfr_mul(out, t, x, MPFR_RNDN);
      mpfr_div_2ui(out, out, 1, MPFR_RNDN);
      return;
    case Exact::silu:
      times_sigmoid(out, x, x, bits);
      return;
    case Exact::quick_gelu:
      mpfr_set_flt(a, 1.702f, MPFR_RNDN);
      mpfr_mul(t, x, a, MPFR_RNDN);  // exact: 24 bits times 24 bits
      times_sigmoid(out, x, t, bits);
      return;
  }
}

#endif  // EGELU_TOOL_MPFR

// The exponent q of the format's ulp at a value whose floor(log2 |v|) is e.
int ulp_exponent(long e, Format format) { return int(std::max<long>(e, format.min_exponent) - (format.precision - 1)); }

// 2^k for a normal double's exponent range, from its bits (faster than ldexp).
double power_of_two(int k) {
  const std::uint64_t bits = std::uint64_t(k + 1023) << 52;
  double p;
  std::memcpy(&p, &bits, sizeof p);
  return p;
}

// The double filter's decision (as the long double one below, in double, without libm calls).
bool decide(double v, double err, Format format, Rounded& out) {
  if (v == 0) {
    out.value = v;
    out.midpoint_ulps = 0.5;
    return true;
  }
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int exponent = int((bits >> 52) & 0x7ff) - 1023;  // v is normal (the results are above 2^-1000)
  const int q = ulp_exponent(exponent, format);
  const double s = v * power_of_two(-q), whole = std::floor(s), fraction = s - whole;  // exact
  const double to_midpoint = std::fabs(fraction - 0.5);
  out.midpoint_ulps = to_midpoint;
  if (to_midpoint <= err * power_of_two(-q)) return false;
  const double rounded = fraction > 0.5 ? whole + 1 : whole;
  out.value = rounded == 0 ? std::copysign(0.0, v) : rounded * power_of_two(q);
  return true;
}

// v, within err of the exact value, rounded to the format: false when a midpoint lies within err.
bool decide(long double v, long double err, Format format, Rounded& out) {
  if (v == 0) {
    out.value = double(v);
    out.midpoint_ulps = 0.5;
    return true;
  }
  const int q = ulp_exponent(ilogbl(v), format);
  const long double s = ldexpl(v, -q), whole = floorl(s), fraction = s - whole;  // exact
  const long double to_midpoint = fabsl(fraction - 0.5L);
  out.midpoint_ulps = double(to_midpoint);
  if (to_midpoint <= ldexpl(err, -q)) return false;
  const long double rounded = fraction > 0.5L ? whole + 1 : whole;
  out.value = rounded == 0 ? std::copysign(0.0, double(v)) : double(ldexpl(rounded, q));
  return true;
}

#if EGELU_TOOL_MPFR
bool decide(mpfr_ptr v, mpfr_prec_t bits, Format format, Rounded& out) {
  if (mpfr_zero_p(v)) {
    out.value = mpfr_signbit(v) ? -0.0 : 0.0;
    out.midpoint_ulps = 0.5;
    return true;
  }
  const int q = ulp_exponent(mpfr_get_exp(v) - 1, format);
  Mp s(bits), whole(bits), fraction(bits), bound(bits);
  mpfr_mul_2si(s, v, -q, MPFR_RNDN);  // exact
  mpfr_floor(whole, s);
  mpfr_sub(fraction, s, whole, MPFR_RNDN);  // exact: the bits below the units
  mpfr_sub_d(fraction, fraction, 0.5, MPFR_RNDN);
  const bool above = mpfr_sgn(fraction.v) > 0;
  mpfr_abs(fraction, fraction, MPFR_RNDN);
  out.midpoint_ulps = mpfr_get_d(fraction, MPFR_RNDN);
  mpfr_abs(bound, s, MPFR_RNDN);
  mpfr_mul_2si(bound, bound, kMpfrSlack - long(bits), MPFR_RNDU);
  if (mpfr_cmp(fraction, bound) <= 0) return false;
  if (above) mpfr_add_ui(whole, whole, 1, MPFR_RNDN);
  const double rounded = mpfr_get_d(whole, MPFR_RNDN);  // an integer below 2^25: exact
  out.value = rounded == 0 ? (mpfr_signbit(v) ? -0.0 : 0.0) : std::ldexp(rounded, q);
  return true;
}
#endif  // EGELU_TOOL_MPFR

}  // namespace

long double long_double_value(Exact f, long double x) { return value_in_long_double(f, x); }

bool have_mpfr() { return EGELU_TOOL_MPFR; }
double double_value(Exact f, double x) { return value_in_double(f, x); }
double double_bound() { return kDoubleBound; }
long double long_double_bound() { return kLongDoubleBound; }

long double mpfr_value(Exact f, float x, int bits) {
#if EGELU_TOOL_MPFR
  Mp v(bits);
  value_in_mpfr(v, f, x, bits);
  return mpfr_get_ld(v, MPFR_RNDN);
#else
  (void)bits;
  return long_double_value(f, x);
#endif
}

double round_value(double v, Format format) {
  if (v == 0 || !std::isfinite(v)) return v;
  const int q = ulp_exponent(std::ilogb(v), format);
  const double rounded = std::nearbyint(std::ldexp(v, -q));  // ties to even (the default mode)
  return rounded == 0 ? std::copysign(0.0, v) : std::ldexp(rounded, q);
}

Rounded round_exact(Exact f, float x, Format format) {
  Rounded out{0, Decider::special, 0.5, 0, 0};
  if (std::isnan(x)) {
    out.value = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  if (std::isinf(x)) {  // +inf -> +inf, -inf -> -0
    out.value = x > 0 ? double(x) : -0.0;
    return out;
  }
  if (x == 0) {
    out.value = double(x);
    return out;
  }
  if (std::fabs(x) <= 0x1p-100f) {
    // The tiny rule. Each f is x s(x) with s - 1/2 of x's sign and |s - 1/2| <= 0.43 |x| (s is
    // sigmoid(t(x)), t odd and increasing with |t| <= 1.61 |x| (1 + 0.045 x^2), or Phi(x)), so
    // 0 < f(x) - x/2 <= 0.43 x^2 <= 2^-201: f(x) lies just above x/2, which double holds
    // exactly, closer to it than any grid point or midpoint of the format (all at least
    // 2^-151 away). So f(x) rounds to x/2 where x/2 is a grid point, and to the grid point
    // above it (towards +inf) where x/2 is a midpoint.
    const double v = double(x) / 2;
    const int q = ulp_exponent(std::ilogb(v), format);
    const double s = std::ldexp(v, -q), whole = std::floor(s), fraction = s - whole;
    out.decider = Decider::tiny_rule;
    out.midpoint_ulps = std::fabs(fraction - 0.5);
    const double rounded = fraction == 0 ? whole : fraction == 0.5 ? whole + 1 : std::nearbyint(s);
    out.value = rounded == 0 ? std::copysign(0.0, v) : std::ldexp(rounded, q);
    out.estimate = v;
    return out;
  }
  const double d = value_in_double(f, x);
  out.decider = Decider::double_precision;
  out.estimate = d;
  if (std::isfinite(d) && (d == 0 || std::fabs(d) > 0x1p-1000) && decide(d, kDoubleBound * std::fabs(d), format, out)) {
    return out;
  }
  const long double v = value_in_long_double(f, x);
  out.estimate = v;
  out.decider = Decider::long_double;
  if (decide(v, kLongDoubleBound * fabsl(v), format, out)) return out;
  out.decider = Decider::mpfr;
#if !EGELU_TOOL_MPFR
  throw std::runtime_error(std::string("reference: ") + exact_name(f) + " undecided in long double, and no MPFR");
#else
  for (mpfr_prec_t bits = 200; bits <= 25600; bits *= 2) {
    Mp m(bits);
    value_in_mpfr(m, f, x, bits);
    out.mpfr_bits = int(bits);
    out.estimate = mpfr_get_ld(m, MPFR_RNDN);
    if (decide(m, bits, format, out)) return out;
  }
  throw std::runtime_error(std::string("reference: ") + exact_name(f) + " undecided at 25600 bits");
#endif
}

}  // namespace exhaustive
