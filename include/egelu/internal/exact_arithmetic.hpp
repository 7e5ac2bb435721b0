// Error-free transformations and exact power-of-two scaling on Eigen packets.
//
// Every function here works on an Eigen packet (Packet4f, Packet16f, Packet8d, ...)
// and on a plain float/double, with bit-identical results, so that the scalar
// tail of a vectorized loop agrees with its lanes.
#ifndef EGELU_INTERNAL_EXACT_ARITHMETIC_HPP
#define EGELU_INTERNAL_EXACT_ARITHMETIC_HPP

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

// EGELU_FUSED_MADD: Eigen's pmadd is a single-rounding FMA for packets, and
// egelu::internal::fmadd is one for scalars. Without it (plain SSE2) the exact
// steps below fall back to Dekker/Veltkamp splitting, which needs no FMA.
#if defined(EIGEN_VECTORIZE_FMA) || defined(EIGEN_HAS_SINGLE_INSTRUCTION_MADD) || defined(__FMA__) || \
    defined(__ARM_FEATURE_FMA)
#define EGELU_FUSED_MADD 1
#else
#define EGELU_FUSED_MADD 0
#endif

// EGELU_NEON_DOUBLE: Eigen has NEON packets of double (Packet2d): aarch64 (Apple's
// compilers before 6.1 excepted, as Eigen excepts them).
#if defined(EIGEN_VECTORIZE_NEON) && EIGEN_ARCH_ARM64 && !EIGEN_APPLE_DOUBLE_NEON_BUG
#define EGELU_NEON_DOUBLE 1
#else
#define EGELU_NEON_DOUBLE 0
#endif

namespace egelu {
namespace internal {

using namespace Eigen::internal;

template <typename Packet>
using scalar_of = typename unpacket_traits<Packet>::type;

template <typename Packet>
constexpr bool is_scalar_packet = std::is_same<Packet, scalar_of<Packet>>::value;

// a * b + c with one rounding when EGELU_FUSED_MADD, else two (never a mix of both).
template <typename Packet>
EIGEN_STRONG_INLINE Packet fmadd(const Packet& a, const Packet& b, const Packet& c) {
  if constexpr (is_scalar_packet<Packet> && EGELU_FUSED_MADD) {
    return std::fma(a, b, c);
  } else if constexpr (is_scalar_packet<Packet>) {
    return a * b + c;
  } else {
    return pmadd(a, b, c);
  }
}

// c - a * b, rounded as fmadd rounds: the negation is free in the instruction (x86's
// vfnmadd, NEON's fmls), where fmadd(negate(a), b, c) would cost one more (Eigen 3.4 has
// no pnmadd).
#define EGELU_FNMADD(PACKET, INTRINSIC) \
  EIGEN_STRONG_INLINE PACKET fnmadd(const PACKET& a, const PACKET& b, const PACKET& c) { return INTRINSIC(a, b, c); }
#if EGELU_FUSED_MADD && defined(EIGEN_VECTORIZE_SSE2) && defined(__FMA__)
EGELU_FNMADD(Packet2d, _mm_fnmadd_pd)
#endif
#if EGELU_FUSED_MADD && defined(EIGEN_VECTORIZE_AVX) && defined(__FMA__)
EGELU_FNMADD(Packet4d, _mm256_fnmadd_pd)
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
EGELU_FNMADD(Packet8d, _mm512_fnmadd_pd)
#endif
#undef EGELU_FNMADD
#if EGELU_NEON_DOUBLE
EIGEN_STRONG_INLINE Packet2d fnmadd(const Packet2d& a, const Packet2d& b, const Packet2d& c) {
  return vfmsq_f64(c, a, b);
}
#endif

template <typename Packet>
EIGEN_STRONG_INLINE Packet fnmadd(const Packet& a, const Packet& b, const Packet& c) {
  if constexpr (is_scalar_packet<Packet> && EGELU_FUSED_MADD) {
    return std::fma(-a, b, c);
  } else if constexpr (is_scalar_packet<Packet>) {
    return c - a * b;
  } else if constexpr (EGELU_FUSED_MADD) {
    return pmadd(pxor(a, pset1<Packet>(scalar_of<Packet>(-0.0))), b, c);
  } else {
    return psub(c, pmul(a, b));
  }
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet cst(scalar_of<Packet> value) {
  return pset1<Packet>(value);
}

// -x by flipping the sign bit, so that -(+0) is -0 in every lane and in the scalar path
// alike. Eigen's x86 pnegate computed 0 - x before Eigen 5 (leaving +0 as +0) and flips
// the sign since; the kernels must not depend on which Eigen they meet.
template <typename Packet>
EIGEN_STRONG_INLINE Packet negate(const Packet& x) {
  if constexpr (is_scalar_packet<Packet>) {
    return -x;
  } else {
    return pxor(x, cst<Packet>(-0.0));
  }
}

// max(x, -0): x where x >= +0, -0 where x < 0 or x is -0; a form's "+ x when x >= 0".
// Packets take Eigen's pmax, one instruction. The scalar path does not write it as
// std::max(x, -0.0), which compares and selects: LLVM's InstCombine folds that select
// (and x < 0 ? -0.0 : x) into x <= 0 ? -0.0 : x, which turns +0 into -0 (clang 8 on,
// llvm/llvm-project#57357; seen with clang 14 at -O1, and at -O3 under
// -fsanitize=undefined). It works on the bits instead: a set sign bit on a number (a
// negative one, -inf, -0) leaves the sign bit alone, -0; a NaN stays itself, as in x86's
// max with x second.
template <typename Packet>
EIGEN_STRONG_INLINE Packet max_with_minus_zero(const Packet& x) {
  if constexpr (is_scalar_packet<Packet>) {
    using Bits = std::conditional_t<sizeof(Packet) == 4, std::uint32_t, std::uint64_t>;
    static_assert(sizeof(Bits) == sizeof(Packet), "float or double");
    constexpr Bits sign = Bits(1) << (8 * sizeof(Bits) - 1);
    constexpr int fraction_bits = std::numeric_limits<Packet>::digits - 1;
    constexpr Bits infinity = (sign - 1) >> fraction_bits << fraction_bits;  // the exponent's bits
    Bits bits;
    std::memcpy(&bits, &x, sizeof bits);
    if ((bits & sign) && (bits & ~sign) <= infinity) bits = sign;
    Packet result;
    std::memcpy(&result, &bits, sizeof result);
    return result;
  } else {
    return pmax(x, cst<Packet>(-0.0));
  }
}

// a * b rounded once and kept that way. A plain product that later feeds an
// addition may be contracted into an FMA by the compiler (GCC's default
// -ffp-contract=fast), silently replacing the rounded value an exact step
// relies on by the unrounded one. An FMA with a +0 addend cannot be folded
// back into a product (it differs for -0), so it stays put.
template <typename Packet>
EIGEN_STRONG_INLINE Packet mul_rounded(const Packet& a, const Packet& b) {
#if EGELU_FUSED_MADD
  return fmadd(a, b, cst<Packet>(0));
#else
  return pmul(a, b);
#endif
}

#if !EGELU_FUSED_MADD
// Veltkamp: x = hi + lo exactly, each half with at most half the significand bits.
template <typename Packet>
EIGEN_STRONG_INLINE void veltkamp_split(const Packet& x, Packet& hi, Packet& lo) {
  using Scalar = scalar_of<Packet>;
  constexpr Scalar splitter = Scalar((1ll << ((std::numeric_limits<Scalar>::digits + 1) / 2)) + 1);
  const Packet c = pmul(cst<Packet>(splitter), x);
  hi = psub(c, psub(c, x));
  lo = psub(x, hi);
}
#endif

// hi + lo == a * b exactly (barring underflow).
template <typename Packet>
EIGEN_STRONG_INLINE void two_prod(const Packet& a, const Packet& b, Packet& hi, Packet& lo) {
  hi = mul_rounded(a, b);
#if EGELU_FUSED_MADD
  lo = fmadd(a, b, negate(hi));
#else
  Packet a_hi, a_lo, b_hi, b_lo;
  veltkamp_split(a, a_hi, a_lo);
  veltkamp_split(b, b_hi, b_lo);
  // Dekker's order: each partial sum but the last is exact. (Adding the two cross products
  // first, as this did before, rounds their sum: lo was then good to 2^-80 of hi, not exact.)
  lo = padd(psub(pmul(a_hi, b_hi), hi), pmul(a_hi, b_lo));
  lo = padd(lo, pmul(a_lo, b_hi));
  lo = padd(lo, pmul(a_lo, b_lo));
#endif
}

// hi + lo == a + b exactly, for |a| >= |b| (or a == 0).
template <typename Packet>
EIGEN_STRONG_INLINE void fast_two_sum(const Packet& a, const Packet& b, Packet& hi, Packet& lo) {
  hi = padd(a, b);
  lo = padd(psub(a, hi), b);
}

// hi + lo == a + b exactly, any order (Knuth).
template <typename Packet>
EIGEN_STRONG_INLINE void two_sum(const Packet& a, const Packet& b, Packet& hi, Packet& lo) {
  hi = padd(a, b);
  const Packet b_virtual = psub(hi, a);
  lo = padd(psub(a, psub(hi, b_virtual)), psub(b, b_virtual));
}

// hi + lo == a * b + c to about twice the working precision.
// Precondition with EGELU_FUSED_MADD: c - hi is exact (ulp(c) >= ulp(hi) for every possible hi).
template <typename Packet>
EIGEN_STRONG_INLINE void mul_add_exact(const Packet& a, const Packet& b, const Packet& c, Packet& hi, Packet& lo) {
#if EGELU_FUSED_MADD
  hi = fmadd(a, b, c);
  lo = fmadd(a, b, psub(c, hi));
#else
  Packet p, p_lo;
  two_prod(a, b, p, p_lo);
  two_sum(p, c, hi, lo);
  lo = padd(lo, p_lo);
#endif
}

// 1 - a * b, exact when a * b is within a few ulp of 1.
template <typename Packet>
EIGEN_STRONG_INLINE Packet one_minus_product(const Packet& a, const Packet& b) {
  const Packet one = cst<Packet>(1);
#if EGELU_FUSED_MADD
  return fmadd(negate(a), b, one);
#else
  Packet p, p_lo;
  two_prod(a, b, p, p_lo);
  return psub(psub(one, p), p_lo);
#endif
}

// 2^k as a compile-time constant, for any k whose 2^k is a normal number.
template <typename Scalar>
constexpr Scalar power_of_two(int k) {
  Scalar r = 1;
  for (; k > 0; --k) r *= 2;
  for (; k < 0; ++k) r /= 2;
  return r;
}

// max(a, 2^-(digits + 8)) for a >= 0 (NaN stays NaN): a value about to be squared,
// kept where its square is a normal number. x86 computes a subnormal result through a
// microcode assist that costs several times a whole GELU kernel.
template <typename Packet>
EIGEN_STRONG_INLINE Packet floored_for_square(const Packet& a) {
  using Scalar = scalar_of<Packet>;
  constexpr Scalar lowest = power_of_two<Scalar>(-std::numeric_limits<Scalar>::digits - 8);
  return pmax(a, cst<Packet>(lowest));
}

// x + 1.5 * 2^(digits-1) holds round(x) (ties to even) in its low bits, for
// |x| < 2^(digits-2): the sum has no fraction bits left.
template <typename Scalar>
constexpr Scalar low_bits_shifter = Scalar(1.5) * Scalar(1ll << (std::numeric_limits<Scalar>::digits - 1));

// Round to the nearest integer (ties to even) for |x| < 2^(digits-2). One rule on every target.
template <typename Packet>
EIGEN_STRONG_INLINE Packet round_to_integer(const Packet& x) {
  const Packet shifter = cst<Packet>(low_bits_shifter<scalar_of<Packet>>);
  return psub(padd(x, shifter), shifter);
}

// n + pow2_shifter holds n + bias, the exponent field of 2^n, in its low bits
// (as low_bits_shifter holds n), so moving those bits into place builds 2^n.
template <typename Scalar>
constexpr Scalar pow2_shifter = low_bits_shifter<Scalar> + Scalar(std::numeric_limits<Scalar>::max_exponent - 1);

// 2^n for an integer-valued n with 2^n a normal number, exact, given n and its
// shifted form n + pow2_shifter: a target takes whichever is cheaper. Callers that
// already hold the shifted form (a rounding, or an offset folded into the shifter)
// save the addition. x86 and NEON double packets shift the bits in one instruction, where
// Eigen 3.4's generic pldexp takes about 24 (it clamps and multiplies by four
// factors). Overloads rather than specialisations: a template argument drops the
// vector types' attributes (-Wignored-attributes).
#define EGELU_POW2_FROM_LOW_BITS(PACKET, CAST_SI, CAST_PD, SLLI_EPI64)                       \
  EIGEN_STRONG_INLINE PACKET pow2_from_shifted(const PACKET& shifted, const PACKET& /*n*/) { \
    return CAST_PD(SLLI_EPI64(CAST_SI(shifted), 52));                                        \
  }
#if defined(EIGEN_VECTORIZE_SSE2)
EGELU_POW2_FROM_LOW_BITS(Packet2d, _mm_castpd_si128, _mm_castsi128_pd, _mm_slli_epi64)
#endif
#if defined(EIGEN_VECTORIZE_AVX2)
EGELU_POW2_FROM_LOW_BITS(Packet4d, _mm256_castpd_si256, _mm256_castsi256_pd, _mm256_slli_epi64)
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
EGELU_POW2_FROM_LOW_BITS(Packet8d, _mm512_castpd_si512, _mm512_castsi512_pd, _mm512_slli_epi64)
#endif
#undef EGELU_POW2_FROM_LOW_BITS
#if EGELU_NEON_DOUBLE
EIGEN_STRONG_INLINE Packet2d pow2_from_shifted(const Packet2d& shifted, const Packet2d& /*n*/) {
  return vreinterpretq_f64_s64(vshlq_n_s64(vreinterpretq_s64_f64(shifted), 52));
}
#endif

template <typename Packet>
EIGEN_STRONG_INLINE Packet pow2_from_shifted(const Packet& shifted, const Packet& n) {
  using Scalar = scalar_of<Packet>;
  if constexpr (is_scalar_packet<Packet>) {
    // A NaN n (from a NaN input) must not reach the int conversion, which would be undefined.
    return n == n ? std::ldexp(Scalar(1), int(n)) : n;
  } else if constexpr (std::is_same<Scalar, float>::value) {  // every float packet has an integer twin
    using PacketI = typename unpacket_traits<Packet>::integer_packet;
    constexpr int fraction_bits = std::numeric_limits<float>::digits - 1;
    return preinterpret<Packet>(plogical_shift_left<fraction_bits>(preinterpret<PacketI>(shifted)));
  } else {  // other double packets: pldexp is exact in the normal range
    return pldexp(cst<Packet>(1), n);
  }
}

template <typename Packet>
EIGEN_STRONG_INLINE Packet pow2(const Packet& n) {
  return pow2_from_shifted(padd(n, cst<Packet>(pow2_shifter<scalar_of<Packet>>)), n);
}

// Estrin's scheme: the same additions as Horner's rule in about log2(N) steps
// of latency, which matters in kernels limited by how much work is in flight.
// powers[k] = v^(2^k); c[0] is the constant term.
template <std::size_t Lo, std::size_t Count>
struct estrin {
  static constexpr std::size_t log2_half() {
    std::size_t k = 0;
    while ((std::size_t(2) << k) < Count) ++k;
    return k;
  }

  template <typename Packet, typename Scalar, std::size_t N>
  static EIGEN_STRONG_INLINE Packet run(const Scalar (&c)[N], const Packet* powers) {
    if constexpr (Count == 1) {
      return cst<Packet>(c[Lo]);
    } else {
      constexpr std::size_t k = log2_half(), half = std::size_t(1) << k;
      return fmadd(estrin<Lo + half, Count - half>::run(c, powers), powers[k], estrin<Lo, half>::run(c, powers));
    }
  }
};

template <typename Packet, typename Scalar, std::size_t N>
EIGEN_STRONG_INLINE Packet polynomial(const Scalar (&c)[N], const Packet& v) {
  constexpr std::size_t levels = estrin<0, N>::log2_half() + 1;
  Packet powers[levels];
  powers[0] = v;
  for (std::size_t k = 1; k < levels; ++k) powers[k] = pmul(powers[k - 1], powers[k - 1]);
  return estrin<0, N>::run(c, powers);
}

// Horner's rule: the fewest operations, for a short polynomial in a kernel limited by
// how many operations it issues (exp2_in_double.hpp). Longer ones take Estrin's.
template <typename Scalar, std::size_t N, typename Packet>
EIGEN_STRONG_INLINE Packet horner(const Scalar (&c)[N], const Packet& v) {
  Packet r = cst<Packet>(c[N - 1]);
  for (std::size_t k = N - 1; k-- > 0;) r = fmadd(r, v, cst<Packet>(c[k]));
  return r;
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_EXACT_ARITHMETIC_HPP
