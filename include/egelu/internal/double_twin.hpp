// A float packet as two double packets of half its width ("double twins"),
// for float kernels that are cheaper run in double than carried in two floats.
//
// Eigen 3.4 converts float packets to double only on SSE and NEON, one half at
// a time, so the conversions are written here: SSE2, AVX and AVX-512 (F only),
// and aarch64's NEON (float32x4 to two float64x2). Other targets (32-bit ARM,
// PowerPC, ...) report no twin and keep their float kernels. Overloads rather than
// template specialisations: a template argument drops the vector types' attributes
// (-Wignored-attributes).
#ifndef EGELU_INTERNAL_DOUBLE_TWIN_HPP
#define EGELU_INTERNAL_DOUBLE_TWIN_HPP

#include "exact_arithmetic.hpp"

namespace egelu {
namespace internal {

// Declarations only: their return types name each float packet's twin.
template <typename Packet>
void double_twin_of(const Packet&);  // no twin
// A plain float (the scalar tail of a vectorized loop, or a functor called on one
// value) takes the route its packets take, so that lanes and tail agree: in double
// where float packets have twins (x86, aarch64) or where there are no float packets,
// in two floats where they have none (before aarch64 had twins, its scalar tail ran
// in double while its lanes ran in two floats, a 1-ulp difference in a few percent
// of the inputs).
#if defined(EIGEN_VECTORIZE_SSE2) || EGELU_NEON_DOUBLE || !defined(EIGEN_VECTORIZE)
double double_twin_of(const float&);
#endif

EIGEN_STRONG_INLINE double widen_low(const float& x) { return double(x); }
EIGEN_STRONG_INLINE float narrow(const double& low) { return float(low); }

#if defined(EIGEN_VECTORIZE_SSE2)
Packet2d double_twin_of(const Packet4f&);
EIGEN_STRONG_INLINE Packet2d widen_low(const Packet4f& x) { return _mm_cvtps_pd(x); }
EIGEN_STRONG_INLINE Packet2d widen_high(const Packet4f& x) { return _mm_cvtps_pd(_mm_movehl_ps(x, x)); }
EIGEN_STRONG_INLINE Packet4f narrow(const Packet2d& low, const Packet2d& high) {
  return _mm_movelh_ps(_mm_cvtpd_ps(low), _mm_cvtpd_ps(high));
}
#endif
#if defined(EIGEN_VECTORIZE_AVX)
Packet4d double_twin_of(const Packet8f&);
EIGEN_STRONG_INLINE Packet4d widen_low(const Packet8f& x) { return _mm256_cvtps_pd(_mm256_castps256_ps128(x)); }
EIGEN_STRONG_INLINE Packet4d widen_high(const Packet8f& x) { return _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)); }
EIGEN_STRONG_INLINE Packet8f narrow(const Packet4d& low, const Packet4d& high) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(low)), _mm256_cvtpd_ps(high), 1);
}
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
Packet8d double_twin_of(const Packet16f&);
EIGEN_STRONG_INLINE Packet8d widen_low(const Packet16f& x) { return _mm512_cvtps_pd(_mm512_castps512_ps256(x)); }
EIGEN_STRONG_INLINE Packet8d widen_high(const Packet16f& x) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
}
EIGEN_STRONG_INLINE Packet16f narrow(const Packet8d& low, const Packet8d& high) {
  const __m256d high_floats = _mm256_castps_pd(_mm512_cvtpd_ps(high));
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm512_cvtpd_ps(low))), high_floats, 1));
}
#endif

#if EGELU_NEON_DOUBLE
// Packet2f (NEON's half packet, fixed-size objects of two floats) has one twin as wide.
Packet2d double_twin_of(const Packet2f&);
EIGEN_STRONG_INLINE Packet2d widen_low(const Packet2f& x) { return vcvt_f64_f32(x); }
EIGEN_STRONG_INLINE Packet2f narrow(const Packet2d& x) { return vcvt_f32_f64(x); }
Packet2d double_twin_of(const Packet4f&);
EIGEN_STRONG_INLINE Packet2d widen_low(const Packet4f& x) { return vcvt_f64_f32(vget_low_f32(x)); }
EIGEN_STRONG_INLINE Packet2d widen_high(const Packet4f& x) { return vcvt_high_f64_f32(x); }
EIGEN_STRONG_INLINE Packet4f narrow(const Packet2d& low, const Packet2d& high) {
  return vcvt_high_f32_f64(vcvt_f32_f64(low), high);
}
#endif

template <typename Packet>
using double_twin = decltype(double_twin_of(std::declval<const Packet&>()));

template <typename Packet>
constexpr bool has_double_twin = !std::is_void<double_twin<Packet>>::value;

// Whether x's twin holds all of x (a float, NEON's Packet2f) rather than half of it.
template <typename Packet>
constexpr bool has_one_twin = int(unpacket_traits<double_twin<Packet>>::size) == int(unpacket_traits<Packet>::size);

// kernel(x) evaluated on x's double twins and rounded back to float once.
template <typename Packet, typename Kernel>
EIGEN_STRONG_INLINE Packet in_double(const Packet& x, Kernel kernel) {
  if constexpr (has_one_twin<Packet>) {
    return narrow(kernel(widen_low(x)));
  } else {
    return narrow(kernel(widen_low(x)), kernel(widen_high(x)));
  }
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_DOUBLE_TWIN_HPP
