// 2^y in double to about 1e-10 of itself: the exponential of the float kernels
// that run in double (double_twin.hpp), where one rounding to float follows.
//
// y = (n + f) / steps with n an integer and |f| <= 1/2, so 2^y = 2^(n / steps) 2^(f / steps).
// With AVX-512, steps = 8: 2^(j/8) comes from an eight-entry table held in one
// register (one vpermq), and 2^(f/8) needs a polynomial of degree 4 instead of 7.
// The polynomial is most of the float tanh kernel's work, so this makes it about
// 1.25x faster. Other targets have no one-instruction lookup and use steps = 1.
// The scalar path follows the same steps, so the scalar tail agrees with the lanes.
#ifndef EGELU_INTERNAL_EXP2_IN_DOUBLE_HPP
#define EGELU_INTERNAL_EXP2_IN_DOUBLE_HPP

#include <cstdint>
#include <cstring>

#include "coefficients.hpp"
#include "exact_arithmetic.hpp"

namespace egelu {
namespace internal {

#if defined(EIGEN_VECTORIZE_AVX512)
constexpr int exp2_steps = 8;  // per octave
#else
constexpr int exp2_steps = 1;
#endif

// 2^(n / 8) from n's shifted form, n + low_bits_shifter<double>, as the table's
// rounding of 2^(j/8) times 2^m, n = 8m + j: the three lowest bits pick j, and the
// bits shifted left by 49 add m to the exponent (the table is stored less j 2^49).
EIGEN_STRONG_INLINE double pow2_of_eighths(const double& shifted) {
  std::uint64_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  bits = float_in_double_coefficients::exp2_eighths_bits[bits & 7] + (bits << 49);
  double result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

#if defined(EIGEN_VECTORIZE_AVX512)
EIGEN_STRONG_INLINE Packet8d pow2_of_eighths(const Packet8d& shifted) {
  const __m512i bits = _mm512_castpd_si512(shifted);
  const __m512i table = _mm512_loadu_si512(float_in_double_coefficients::exp2_eighths_bits);
  return _mm512_castsi512_pd(_mm512_add_epi64(_mm512_permutexvar_epi64(bits, table), _mm512_slli_epi64(bits, 49)));
}
#endif
#if defined(EIGEN_VECTORIZE_AVX512) && defined(__AVX512VL__)
// The half packet (a fixed-size object of 8 floats): the table in two registers.
EIGEN_STRONG_INLINE Packet4d pow2_of_eighths(const Packet4d& shifted) {
  const __m256i bits = _mm256_castpd_si256(shifted);
  const auto* table = float_in_double_coefficients::exp2_eighths_bits;
  const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table));
  const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 4));
  return _mm256_castsi256_pd(_mm256_add_epi64(_mm256_permutex2var_epi64(low, bits, high), _mm256_slli_epi64(bits, 49)));
}
#endif

// Narrower packets (the quarter packets of AVX-512 builds, and the half packets
// without AVX-512VL): lane by lane.
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD pow2_of_eighths(const PacketD& shifted) {
  double lanes[unpacket_traits<PacketD>::size];
  pstoreu(lanes, shifted);
  for (double& lane : lanes) lane = pow2_of_eighths(lane);
  return ploadu<PacketD>(lanes);
}

// 2^(v / exp2_steps) for |v| / exp2_steps below about 1000. Callers fold the
// factor exp2_steps (a power of two) into their own constants.
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD exp2_of_steps(const PacketD& v) {
  using K = float_in_double_coefficients;
  // v = n + f, n = round(v) (ties to even), whose shifted form (the sum that
  // rounds) also gives the scaling its bits
  constexpr double shifter = exp2_steps == 8 ? low_bits_shifter<double> : pow2_shifter<double>;
  const PacketD shifted = padd(v, cst<PacketD>(shifter));
  const PacketD n = psub(shifted, cst<PacketD>(shifter));
  const PacketD f = psub(v, n);  // exact
  if constexpr (exp2_steps == 8) {
    return pmul(horner(K::exp2_eighth, f), pow2_of_eighths(shifted));
  } else {
    return pmul(polynomial(K::exp2, f), pow2_from_shifted(shifted, n));
  }
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_EXP2_IN_DOUBLE_HPP
