// 2^y in double to about 2^-40 of itself: the exponential of the float kernels that
// run in double (double_twin.hpp), whose results must stay well inside the rounding
// test's window (correct_rounding.hpp).
//
// y = (n + f) / steps with n an integer and |f| <= 1/2, so 2^y = 2^(n / steps) 2^(f / steps).
// With AVX-512, steps = 16: 2^(j/16) comes from a sixteen-entry table held in two
// registers (one vpermt2q), and 2^(f/16) needs a polynomial of degree 4 (2^-38.5) where
// 2^f needs degree 8 (2^-40). The polynomial is most of the float kernels' work. Other
// targets have no one-instruction lookup and use steps = 1. Both polynomials run by
// Horner's rule, the fewest operations. The scalar path follows the same steps, so the
// scalar tail agrees with the lanes.
#ifndef EGELU_INTERNAL_EXP2_IN_DOUBLE_HPP
#define EGELU_INTERNAL_EXP2_IN_DOUBLE_HPP

#include <cstdint>
#include <cstring>

#include "coefficients.hpp"
#include "exact_arithmetic.hpp"

namespace egelu {
namespace internal {

#if defined(EIGEN_VECTORIZE_AVX512)
constexpr int exp2_steps = 16;  // per octave
#else
constexpr int exp2_steps = 1;
#endif

// 2^(n / 16) from n's shifted form, n + low_bits_shifter<double>, as the table's
// rounding of 2^(j/16) times 2^m, n = 16m + j: the four lowest bits pick j, and the
// bits shifted left by 48 add m to the exponent (the table is stored less j 2^48).
EIGEN_STRONG_INLINE double pow2_of_sixteenths(const double& shifted) {
  std::uint64_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  bits = float_in_double_coefficients::exp2_sixteenths_bits[bits & 15] + (bits << 48);
  double result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

#if defined(EIGEN_VECTORIZE_AVX512)
// The table in two registers: vpermt2q picks from both by the index's four low bits.
EIGEN_STRONG_INLINE Packet8d pow2_of_sixteenths(const Packet8d& shifted) {
  const __m512i bits = _mm512_castpd_si512(shifted);
  const auto* table = float_in_double_coefficients::exp2_sixteenths_bits;
  const __m512i low = _mm512_load_si512(table), high = _mm512_load_si512(table + 8);
  return _mm512_castsi512_pd(_mm512_add_epi64(_mm512_permutex2var_epi64(low, bits, high), _mm512_slli_epi64(bits, 48)));
}
#endif
#if defined(EIGEN_VECTORIZE_AVX512) && defined(__AVX512VL__)
// The half packet (a fixed-size object of 8 floats): two lookups of eight entries each,
// chosen by the index's fourth bit.
EIGEN_STRONG_INLINE Packet4d pow2_of_sixteenths(const Packet4d& shifted) {
  const __m256i bits = _mm256_castpd_si256(shifted);
  const auto* table = float_in_double_coefficients::exp2_sixteenths_bits;
  const auto quarter = [table](int k) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(table + 4 * k)); };
  const __m256i low = _mm256_permutex2var_epi64(quarter(0), bits, quarter(1));
  const __m256i high = _mm256_permutex2var_epi64(quarter(2), bits, quarter(3));
  const __m256i entry = _mm256_mask_blend_epi64(_mm256_test_epi64_mask(bits, _mm256_set1_epi64x(8)), low, high);
  return _mm256_castsi256_pd(_mm256_add_epi64(entry, _mm256_slli_epi64(bits, 48)));
}
#endif

// Narrower packets (the quarter packets of AVX-512 builds, and the half packets
// without AVX-512VL): lane by lane.
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD pow2_of_sixteenths(const PacketD& shifted) {
  double lanes[unpacket_traits<PacketD>::size];
  pstoreu(lanes, shifted);
  for (double& lane : lanes) lane = pow2_of_sixteenths(lane);
  return ploadu<PacketD>(lanes);
}

// v = n + f with n = round(v) (ties to even) and |f| <= 1/2: f exactly, and the shifted
// form of n from which the scaling takes its bits (n + pow2_shifter with steps of 1, whose
// bias 1023 is added to n exactly: added to v, a tie such as v = -499.5 would round the
// other way than n, as every target must round alike for lanes and tail to agree).
template <typename PacketD>
EIGEN_STRONG_INLINE void split_steps(const PacketD& v, PacketD& shifted, PacketD& n, PacketD& f) {
  const PacketD rounder = cst<PacketD>(low_bits_shifter<double>);
  if constexpr (exp2_steps == 16) {  // the table reads n's own low bits
    shifted = padd(v, rounder);
    n = psub(shifted, rounder);
  } else {
    n = psub(padd(v, rounder), rounder);
    shifted = padd(n, cst<PacketD>(pow2_shifter<double>));
  }
  f = psub(v, n);  // exact
}
// With a rounding instruction, n = round(v) and f = v - n take one constant fewer (the
// shifter's negation), which a 16-register target (AVX2) feels: 5-8% on SiLU there. (An
// earlier version made the shifted form from v: at a tie n and 2^n disagreed, a factor of 2,
// which test_accuracy's Exp2InDouble found.)
#if defined(EIGEN_VECTORIZE_AVX) && !defined(EIGEN_VECTORIZE_AVX512)
EIGEN_STRONG_INLINE void split_steps(const Packet4d& v, Packet4d& shifted, Packet4d& n, Packet4d& f) {
  n = _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  shifted = padd(n, cst<Packet4d>(pow2_shifter<double>));
  f = psub(v, n);
}
#endif
#if defined(EIGEN_VECTORIZE_SSE4_1) && !defined(EIGEN_VECTORIZE_AVX512)
EIGEN_STRONG_INLINE void split_steps(const Packet2d& v, Packet2d& shifted, Packet2d& n, Packet2d& f) {
  n = _mm_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  shifted = padd(n, cst<Packet2d>(pow2_shifter<double>));
  f = psub(v, n);
}
#endif
#if EGELU_NEON_DOUBLE
EIGEN_STRONG_INLINE void split_steps(const Packet2d& v, Packet2d& shifted, Packet2d& n, Packet2d& f) {
  n = vrndnq_f64(v);
  shifted = padd(n, cst<Packet2d>(pow2_shifter<double>));
  f = psub(v, n);
}
#endif
#if defined(EIGEN_VECTORIZE_AVX512) && defined(__AVX512DQ__)
// With AVX512DQ one vreducepd gives f = v - round(v) (the same value, exact), and the
// table lookup needs only the shifted form: one instruction fewer per packet.
EIGEN_STRONG_INLINE void split_steps(const Packet8d& v, Packet8d& shifted, Packet8d& n, Packet8d& f) {
  shifted = padd(v, cst<Packet8d>(low_bits_shifter<double>));
  n = v;  // unused with the table
  f = _mm512_reduce_pd(v, _MM_FROUND_TO_NEAREST_INT);
}
#endif

// 2^(v / exp2_steps) = p s for |v| / exp2_steps below about 1000, with p the polynomial
// for 2^(f / exp2_steps) and s = 2^(n / exp2_steps) exactly (the table's rounding of it
// with AVX-512). Callers fold the factor exp2_steps (a power of two) into their own constants.
template <typename PacketD>
EIGEN_STRONG_INLINE void exp2_of_steps_parts(const PacketD& v, PacketD& p, PacketD& s) {
  using K = float_in_double_coefficients;
  PacketD shifted, n, f;
  split_steps(v, shifted, n, f);
  if constexpr (exp2_steps == 16) {
    p = horner(K::exp2_sixteenth, f);
    s = pow2_of_sixteenths(shifted);
  } else {
    p = horner(K::exp2, f);
    s = pow2_from_shifted(shifted, n);
  }
}

template <typename PacketD>
EIGEN_STRONG_INLINE PacketD exp2_of_steps(const PacketD& v) {
  PacketD p, s;
  exp2_of_steps_parts(v, p, s);
  return pmul(p, s);
}

// 1 + 2^(v / exp2_steps), the last product fused with the addition.
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD one_plus_exp2_of_steps(const PacketD& v) {
  PacketD p, s;
  exp2_of_steps_parts(v, p, s);
  return fmadd(p, s, cst<PacketD>(1));
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_EXP2_IN_DOUBLE_HPP
