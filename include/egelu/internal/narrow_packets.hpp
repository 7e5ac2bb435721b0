// Packets of Eigen::half and Eigen::bfloat16 as float packets of as many lanes,
// and back, rounding to nearest even as the scalar conversions do, so a
// vectorized loop's lanes and its scalar tail agree.
//
// Where Eigen's narrow packet is wider than its widest float packet (AVX512-FP16's
// 32 halves against 16 floats), it is taken as two halves, each a float packet.
//
// Two exceptions to Eigen's own casts:
// - Eigen 3.4's half conversions fall back to one lane at a time under GCC: its
//   test for F16C reads `!defined(EIGEN_COMP_CLANG)`, and Eigen defines that
//   macro (as 0) for every compiler. Where the compiler has F16C, egelu converts
//   with the F16C instructions itself.
// - With AVX512-BF16, Eigen rounds 16 floats to bfloat16 with vcvtneps2bf16,
//   which flushes subnormal results to zero where the scalar conversion keeps
//   them. egelu rounds those with integer arithmetic, as Eigen does without it.
#ifndef EGELU_INTERNAL_NARROW_PACKETS_HPP
#define EGELU_INTERNAL_NARROW_PACKETS_HPP

#include "exact_arithmetic.hpp"

namespace egelu {
namespace internal {

// The float packet with as many lanes as a packet of a narrow type.
template <typename NarrowPacket>
using float_packet_like = typename find_best_packet<float, unpacket_traits<NarrowPacket>::size>::type;

// Whether Eigen has packets of Scalar that convert to float packets and back.
template <typename Scalar>
constexpr bool has_vectorized_float_cast = bool(packet_traits<Scalar>::Vectorizable) &&
                                           bool(type_casting_traits<Scalar, float>::VectorizedCast) &&
                                           bool(type_casting_traits<float, Scalar>::VectorizedCast);

template <typename NarrowPacket>
EIGEN_STRONG_INLINE float_packet_like<NarrowPacket> to_float_packet(const NarrowPacket& x) {
  using FloatPacket = float_packet_like<NarrowPacket>;
  static_assert(int(unpacket_traits<FloatPacket>::size) == int(unpacket_traits<NarrowPacket>::size),
                "no float packet as wide");
  return pcast<NarrowPacket, FloatPacket>(x);
}

template <typename NarrowPacket>
EIGEN_STRONG_INLINE NarrowPacket from_float_packet(const float_packet_like<NarrowPacket>& x) {
  return pcast<float_packet_like<NarrowPacket>, NarrowPacket>(x);
}

#if defined(__F16C__) && !defined(EIGEN_HAS_FP16_C)
#if defined(EIGEN_VECTORIZE_AVX512)
template <>
EIGEN_STRONG_INLINE Packet16f to_float_packet(const Packet16h& x) {
  return _mm512_cvtph_ps(x);
}
template <>
EIGEN_STRONG_INLINE Packet16h from_float_packet<Packet16h>(const Packet16f& x) {
  return _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
#elif defined(EIGEN_VECTORIZE_AVX)
template <>
EIGEN_STRONG_INLINE Packet8f to_float_packet(const Packet8h& x) {
  return _mm256_cvtph_ps(x);
}
template <>
EIGEN_STRONG_INLINE Packet8h from_float_packet<Packet8h>(const Packet8f& x) {
  return _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
#endif
#endif

#if defined(EIGEN_VECTORIZE_AVX512FP16)
// 32 halves as two packets of 16 (Eigen converts those to and from float packets).
EIGEN_STRONG_INLINE Packet16h low_half(const Packet32h& x) { return _mm512_castph512_ph256(x); }
EIGEN_STRONG_INLINE Packet16h high_half(const Packet32h& x) {
  return _mm256_castpd_ph(_mm512_extractf64x4_pd(_mm512_castph_pd(x), 1));
}
EIGEN_STRONG_INLINE Packet32h join_halves(const Packet16h& low, const Packet16h& high) {
  return _mm512_castpd_ph(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castph_pd(low)), _mm256_castph_pd(high), 1));
}
#endif

#if defined(EIGEN_VECTORIZE_AVX512BF16)
// Round to nearest even on the bits: add 0x7fff plus the lowest kept bit, then
// keep the upper half; a NaN becomes the quiet NaN 0x7fc0.
template <>
EIGEN_STRONG_INLINE Packet16bf from_float_packet<Packet16bf>(const Packet16f& x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(lowest_kept, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 ordered = _mm512_cmp_ps_mask(x, x, _CMP_ORD_Q);
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(ordered, _mm512_set1_epi32(0x7fc0), rounded));
}
#endif

// Whether a narrow packet is wider than any float packet, and so split in two.
template <typename NarrowPacket>
constexpr bool is_wider_than_float_packets = int(unpacket_traits<float_packet_like<NarrowPacket>>::size) <
                                             int(unpacket_traits<NarrowPacket>::size);

// kernel(x) on x's lanes as floats, rounded back once: the float packet of as many
// lanes, or the two halves of a packet wider than any float packet.
template <typename NarrowPacket, typename Kernel>
EIGEN_STRONG_INLINE NarrowPacket in_float(const NarrowPacket& x, Kernel kernel) {
  if constexpr (is_wider_than_float_packets<NarrowPacket>) {
    return join_halves(in_float(low_half(x), kernel), in_float(high_half(x), kernel));
  } else {
    return from_float_packet<NarrowPacket>(kernel(to_float_packet(x)));
  }
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_NARROW_PACKETS_HPP
