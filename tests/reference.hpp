// Independent references: the GELU formulas evaluated in quad precision, written
// the textbook way but in an order that does not cancel, so that they are exact to
// far beyond double precision.
//
// Quad precision is IEEE binary128: `long double` where it is that type (aarch64
// Linux: GCC has no __float128 there, and no libquadmath), through the std::
// functions; elsewhere (x86) GCC's __float128 with libquadmath. Either way the
// call sites use libquadmath's names (expq, erfcq, fabsq, ...), which for long
// double are the global inline wrappers below, where quadmath.h declares its own.
#ifndef EGELU_TESTS_REFERENCE_HPP
#define EGELU_TESTS_REFERENCE_HPP

#include <cfloat>
#include <cmath>
#include <limits>

#if LDBL_MANT_DIG == 113
inline long double expq(long double x) { return std::exp(x); }
inline long double erfcq(long double x) { return std::erfc(x); }
inline long double sqrtq(long double x) { return std::sqrt(x); }
inline long double fabsq(long double x) { return std::fabs(x); }
inline long double atanq(long double x) { return std::atan(x); }
inline long double frexpq(long double x, int* exponent) { return std::frexp(x, exponent); }
inline long double ldexpq(long double x, int exponent) { return std::ldexp(x, exponent); }
inline int isnanq(long double x) { return std::isnan(x); }
inline int isinfq(long double x) { return std::isinf(x); }

namespace reference {
using quad = long double;
constexpr const char* quad_name = "long double, IEEE binary128";
}  // namespace reference

#else
#include <quadmath.h>

namespace reference {
using quad = __float128;
constexpr const char* quad_name = "__float128";
}  // namespace reference
#endif

namespace reference {

inline quad pi() { return 4 * atanq(quad(1)); }
inline quad cubic() { return quad(44715) / 1000000; }  // 0.044715, exactly as a decimal

inline quad sigmoid(quad t) { return t >= 0 ? 1 / (1 + expq(-t)) : expq(t) / (1 + expq(t)); }

inline quad tanh_argument(quad x) {  // 2u = 2 sqrt(2/pi) (x + 0.044715 x^3)
  return 2 * sqrtq(2 / pi()) * (x + cubic() * x * x * x);
}

// Standard normal cdf and pdf.
inline quad Phi(quad x) { return erfcq(-x / sqrtq(quad(2))) / 2; }
inline quad phi(quad x) { return expq(-x * x / 2) / sqrtq(2 * pi()); }

inline quad gelu_tanh(quad x) { return x * sigmoid(tanh_argument(x)); }
inline quad gelu_erf(quad x) { return x * Phi(x); }

inline quad gelu_tanh_grad(quad x) {
  const quad s = sigmoid(tanh_argument(x)), s_minus = sigmoid(-tanh_argument(x));
  const quad slope = 2 * sqrtq(2 / pi()) * (1 + 3 * cubic() * x * x);
  return s + x * s * s_minus * slope;
}
inline quad gelu_erf_grad(quad x) { return Phi(x) + x * phi(x); }

// swish(x) = x sigmoid(alpha x) and its derivative, alpha exactly as given.
inline quad swish(quad x, quad alpha) { return x * sigmoid(alpha * x); }
inline quad swish_grad(quad x, quad alpha) {
  return sigmoid(alpha * x) + alpha * x * sigmoid(alpha * x) * sigmoid(-alpha * x);
}
inline quad silu(quad x) { return swish(x, 1); }
inline quad silu_grad(quad x) { return swish_grad(x, 1); }
// QuickGELU's 1.702 as the kernels hold it: rounded to float (also for half and
// bfloat16, computed in float) or to double, as PyTorch rounds it to the tensor's type.
inline quad quick_gelu_float(quad x) { return swish(x, quad(1.702f)); }
inline quad quick_gelu_double(quad x) { return swish(x, quad(1.702)); }
inline quad quick_gelu_grad_float(quad x) { return swish_grad(x, quad(1.702f)); }
inline quad quick_gelu_grad_double(quad x) { return swish_grad(x, quad(1.702)); }

// Error of `got` in units in the last place of the exact result, for a result
// type T; results below the normal range are measured in units of the
// smallest normal number's ulp (they are excluded from ulp bounds).
template <typename T>
double ulp_error(T got, quad exact) {
  if (std::isnan(double(got)) || isnanq(exact)) return std::isnan(double(got)) && isnanq(exact) ? 0 : 1e300;
  if (isinfq(exact)) return double(got) == double(exact) ? 0 : 1e300;
  constexpr int digits = std::numeric_limits<T>::digits;
  quad magnitude = fabsq(exact);
  const quad min_normal = quad(std::numeric_limits<T>::min());
  if (magnitude < min_normal) magnitude = min_normal;
  int exponent;
  frexpq(magnitude, &exponent);
  const quad ulp = ldexpq(quad(1), exponent - digits);
  return double(fabsq(quad(got) - exact) / ulp);
}

template <typename T>
bool is_normal_result(quad exact) {
  return fabsq(exact) >= quad(std::numeric_limits<T>::min());
}

}  // namespace reference

#endif  // EGELU_TESTS_REFERENCE_HPP
