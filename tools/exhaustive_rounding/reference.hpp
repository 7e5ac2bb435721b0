// The exhaustive check's reference: each activation's exact value rounded to float
// (or to half or bfloat16), independent of egelu. A first evaluation in double (glibc's
// exp and erfc) with a bound of 2^-40 of the value decides most inputs; then one in long double with a
// deliberately generous error bound (2^-50 of the value in x87's 64-bit significand,
// 2^-100 in aarch64's binary128) decides almost every input; MPFR, at 200 bits and more
// (Ziv's strategy), decides the rest (built without MPFR, the tool stops on such an
// input). |x| <= 2^-100 is decided by a theorem instead (reference.cpp).
#ifndef EGELU_TOOLS_EXHAUSTIVE_ROUNDING_REFERENCE_HPP
#define EGELU_TOOLS_EXHAUSTIVE_ROUNDING_REFERENCE_HPP

#include <cstdint>

namespace exhaustive {

// The four functions the reference knows; swish(x, 1) is silu and swish(x, 1.702f) quick_gelu.
enum class Exact { gelu, gelu_exact, silu, quick_gelu };
constexpr int kExactCount = 4;
const char* exact_name(Exact f);

// A floating-point format: significand bits, the least normal exponent, the largest finite value.
struct Format {
  int precision;
  int min_exponent;  // the least normal number is 2^min_exponent
  const char* name;
};
constexpr Format kFloat{24, -126, "float"};
constexpr Format kHalf{11, -14, "half"};
constexpr Format kBfloat16{8, -126, "bfloat16"};

// How an input was decided.
enum class Decider : std::uint8_t { special, tiny_rule, double_precision, long_double, mpfr };

struct Rounded {
  double value;  // the correctly rounded result (exactly representable in the format), as a double
  Decider decider;
  double midpoint_ulps;  // |exact - nearest midpoint| in the result's ulps (0 to 0.5; 0.5 for exact results)
  int mpfr_bits;         // the precision that decided, when MPFR did
  long double estimate;  // the value the decision was made on (long double's or MPFR's, rounded)
};

// An exactly known value v rounded to nearest even in the format.
double round_value(double v, Format format);

// f(x) rounded to nearest (ties to even) in the format, for any float x (NaN gives NaN).
Rounded round_exact(Exact f, float x, Format format);

// f(x) in long double, for the margin measurements (not a decision).
long double long_double_value(Exact f, long double x);

// MPFR's value of f(x) at `bits` bits, as a long double (for checking the long double
// evaluation's error against its bound); without MPFR, the long double value.
long double mpfr_value(Exact f, float x, int bits);
bool have_mpfr();
// f(x) in double (the first filter), and the bounds each evaluation is trusted to, relative.
double double_value(Exact f, double x);
double double_bound();
long double long_double_bound();

}  // namespace exhaustive

#endif  // EGELU_TOOLS_EXHAUSTIVE_ROUNDING_REFERENCE_HPP
