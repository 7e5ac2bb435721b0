// Correctly rounded float activations: the float kernels run in double (double_twin.hpp)
// and a rounding test decides, from the double result r and a proven bound on its error,
// whether rounding r to float gives the float nearest the exact value. It almost always
// does; the rare lanes it cannot decide go, one at a time, to a medium stage (the double
// kernel, good to 2 units in the last place of double) with the same test, and what that
// leaves to a slow stage in double-double (double_double.hpp), with tiny |x| decided by
// the Taylor rule. docs/DESIGN.md, "Correctly rounded float", has the bounds and the
// measurements; tools/exhaustive_rounding checks every float on every ISA.
//
// The test. r has 52 fraction bits and a float 23, so r's low 29 bits are what rounding to
// float discards; r lies within e ulps of r (in units of its own last place) of the exact
// value, e = bound * 2^53. Rounding is certain unless those 29 bits lie within 2^h >= e of
// the midpoint pattern 2^28: one integer addition (which moves that window to 0) and one
// test of bits h+1..28 per double packet. The test assumes a normal float result, whose
// grid is 2^29 double ulps, so results of subnormal size are caught separately: each
// vector target flags negative ones (from the far negative tail: x < -9 for gelu, and tiny
// negative x) and -2^-126. Positive subnormal results come only from tiny x, where the
// kernels lean towards +inf as the functions do (coefficients.hpp: the constant terms
// 1 - 2^-46 and (1 - 2^-44) / 2), which rounds them correctly; the scalar test flags them
// all the same. Zero results (x = +-0, and the far tail, floored where
// every result rounds to -0) are never flagged, so zeros cost nothing.
#ifndef EGELU_INTERNAL_CORRECT_ROUNDING_HPP
#define EGELU_INTERNAL_CORRECT_ROUNDING_HPP

#include <cstdint>
#include <cstring>
#include <limits>

#include "double_double.hpp"
#include "double_twin.hpp"

namespace egelu {
namespace internal {

// The window of half-width 2^h around the midpoint pattern, as the addition that moves it
// to 0 and the bits that must then all be 0: r is undecided iff ((bits(r) + offset) & mask) == 0,
// i.e. its low 29 bits lie in [2^28 - 2^h, 2^28 + 2^h).
constexpr std::uint64_t window_offset(int h) { return (std::uint64_t(1) << h) - (std::uint64_t(1) << 28); }
constexpr std::uint64_t window_mask(int h) { return (std::uint64_t(1) << 29) - (std::uint64_t(2) << h); }
// The same on the low 32 bits of r (all the test looks at), for 32-bit lanes.
constexpr std::int32_t window_offset32(int h) { return std::int32_t(std::uint32_t(window_offset(h))); }
constexpr std::int32_t window_mask32(int h) { return std::int32_t(std::uint32_t(window_mask(h))); }
// Float bits below this, as signed integers, after subtracting 1: negative subnormals and
// -2^-126 (and not -0, which wraps to the largest positive integer).
constexpr std::int32_t negative_subnormal_limit = std::numeric_limits<std::int32_t>::min() + 0x800000;

EIGEN_ALWAYS_INLINE bool near_midpoint(double r, int h) {
  std::uint64_t bits;
  std::memcpy(&bits, &r, sizeof bits);
  return ((bits + window_offset(h)) & window_mask(h)) == 0;
}

// 0 < |f| <= 2^-126: subnormal, or the least normal number (whose rounding may have come
// from below, on the subnormal grid).
EIGEN_ALWAYS_INLINE bool subnormal_or_least_normal(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return (bits & 0x7fffffffu) - 1u < 0x800000u;
}

// Whether some lane's rounding is not certain: r its double result, f its float.
template <int h>
EIGEN_STRONG_INLINE bool any_undecided(const double& r, const float& f) {
  return near_midpoint(r, h) || subnormal_or_least_normal(f);
}

// Generic: lane by lane (targets without a vector form below).
template <int h, typename PacketD, typename Packet>
EIGEN_STRONG_INLINE bool any_undecided(const PacketD& lo, const PacketD& hi, const Packet& f) {
  constexpr int half = unpacket_traits<PacketD>::size;
  double r[2 * half];
  float g[2 * half];
  pstoreu(r, lo);
  pstoreu(r + half, hi);
  pstoreu(g, f);
  bool any = false;
  for (int i = 0; i < 2 * half; ++i) any = any || any_undecided<h>(r[i], g[i]);
  return any;
}
template <int h, typename PacketD, typename Packet>
EIGEN_STRONG_INLINE bool any_undecided(const PacketD& r, const Packet& f) {
  constexpr int lanes = unpacket_traits<PacketD>::size;
  double rs[lanes];
  float g[lanes];
  pstoreu(rs, r);
  pstoreu(g, f);
  bool any = false;
  for (int i = 0; i < lanes; ++i) any = any || any_undecided<h>(rs[i], g[i]);
  return any;
}

#if defined(EIGEN_VECTORIZE_SSE2)
// The low 32 bits of both packets' doubles gathered into one register (one shuffle), then
// the window test and the negative-subnormal test on four 32-bit lanes.
template <int h>
EIGEN_STRONG_INLINE bool any_undecided(const Packet2d& lo, const Packet2d& hi, const Packet4f& f) {
  const __m128i low_words =
      _mm_castps_si128(_mm_shuffle_ps(_mm_castpd_ps(lo), _mm_castpd_ps(hi), _MM_SHUFFLE(2, 0, 2, 0)));
  const __m128i moved = _mm_add_epi32(low_words, _mm_set1_epi32(window_offset32(h)));
  const __m128i near = _mm_cmpeq_epi32(_mm_and_si128(moved, _mm_set1_epi32(window_mask32(h))), _mm_setzero_si128());
  const __m128i tiny =
      _mm_cmpgt_epi32(_mm_set1_epi32(negative_subnormal_limit), _mm_sub_epi32(_mm_castps_si128(f), _mm_set1_epi32(1)));
  return _mm_movemask_ps(_mm_castsi128_ps(_mm_or_si128(near, tiny))) != 0;
}
#endif
#if defined(EIGEN_VECTORIZE_AVX)
// The same on eight lanes (the shuffle works within 128-bit halves, which only reorders
// lanes). Without AVX2's 256-bit integer operations, on the two halves.
template <int h>
EIGEN_STRONG_INLINE bool any_undecided(const Packet4d& lo, const Packet4d& hi, const Packet8f& f) {
  const __m256i low_words =
      _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castpd_ps(lo), _mm256_castpd_ps(hi), _MM_SHUFFLE(2, 0, 2, 0)));
#if defined(EIGEN_VECTORIZE_AVX2)
  const __m256i moved = _mm256_add_epi32(low_words, _mm256_set1_epi32(window_offset32(h)));
  const __m256i near =
      _mm256_cmpeq_epi32(_mm256_and_si256(moved, _mm256_set1_epi32(window_mask32(h))), _mm256_setzero_si256());
  const __m256i tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(negative_subnormal_limit),
                                          _mm256_sub_epi32(_mm256_castps_si256(f), _mm256_set1_epi32(1)));
  const __m256i any = _mm256_or_si256(near, tiny);
  return !_mm256_testz_si256(any, any);
#else
  const __m128i words[2] = {_mm256_castsi256_si128(low_words), _mm256_extractf128_si256(low_words, 1)};
  const __m128i floats[2] = {_mm256_castsi256_si128(_mm256_castps_si256(f)),
                             _mm256_extractf128_si256(_mm256_castps_si256(f), 1)};
  __m128i any = _mm_setzero_si128();
  for (int k = 0; k < 2; ++k) {
    const __m128i moved = _mm_add_epi32(words[k], _mm_set1_epi32(window_offset32(h)));
    any =
        _mm_or_si128(any, _mm_cmpeq_epi32(_mm_and_si128(moved, _mm_set1_epi32(window_mask32(h))), _mm_setzero_si128()));
    any = _mm_or_si128(
        any, _mm_cmpgt_epi32(_mm_set1_epi32(negative_subnormal_limit), _mm_sub_epi32(floats[k], _mm_set1_epi32(1))));
  }
  return _mm_movemask_ps(_mm_castsi128_ps(any)) != 0;
#endif
}
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
// Sixteen lanes: the low words gathered by one shuffle, the window test into a mask, and the
// negative-subnormal test into another (AVX512DQ's class test for subnormals would be one
// instruction, but it leaves out -2^-126, which x = -2^-125 + 2^-149 reaches from below the
// subnormal grid's last midpoint: test_rounding found it).
template <int h>
EIGEN_STRONG_INLINE bool any_undecided(const Packet8d& lo, const Packet8d& hi, const Packet16f& f) {
  const __m512i low_words =
      _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi), _MM_SHUFFLE(2, 0, 2, 0)));
  const __mmask16 near = _mm512_testn_epi32_mask(_mm512_add_epi32(low_words, _mm512_set1_epi32(window_offset32(h))),
                                                 _mm512_set1_epi32(window_mask32(h)));
  const __mmask16 tiny = _mm512_cmplt_epi32_mask(_mm512_sub_epi32(_mm512_castps_si512(f), _mm512_set1_epi32(1)),
                                                 _mm512_set1_epi32(negative_subnormal_limit));
  return !_mm512_kortestz(near, tiny);  // one kortest, not two moves to general registers and an or
}
#endif
#if EGELU_NEON_DOUBLE
// aarch64: the low words of both packets by one unzip (the even 32-bit elements, little-endian).
template <int h>
EIGEN_STRONG_INLINE bool any_undecided(const Packet2d& lo, const Packet2d& hi, const Packet4f& f) {
#if defined(__ARM_BIG_ENDIAN)
  const uint32x4_t low_words = vuzp2q_u32(vreinterpretq_u32_f64(lo), vreinterpretq_u32_f64(hi));
#else
  const uint32x4_t low_words = vuzp1q_u32(vreinterpretq_u32_f64(lo), vreinterpretq_u32_f64(hi));
#endif
  const uint32x4_t moved = vaddq_u32(low_words, vdupq_n_u32(std::uint32_t(window_offset32(h))));
  const uint32x4_t near = vceqzq_u32(vandq_u32(moved, vdupq_n_u32(std::uint32_t(window_mask32(h)))));
  const uint32x4_t tiny =
      vcltq_s32(vsubq_s32(vreinterpretq_s32_f32(f), vdupq_n_s32(1)), vdupq_n_s32(negative_subnormal_limit));
  return vmaxvq_u32(vorrq_u32(near, tiny)) != 0;
}
#endif

// Whether r, of subnormal size, lies within 2^h of its own last places, scaled to the subnormal
// grid (2^-149 is then 2^29 of them, as a float's ulp is for normal results), of a midpoint
// of that grid. |r| 2^149 + 2^23 holds frac(|r| 2^149) in its low 29 bits (one rounding, at
// 2^-30 of the grid: within the window's slack).
EIGEN_ALWAYS_INLINE bool near_subnormal_midpoint(double r, int h) {
  return near_midpoint(fmadd(std::fabs(r), 0x1p149, 0x1p23), h);
}

// The medium stage's test: the window, and every result of subnormal size or zero (the
// slow stage decides those exactly).
EIGEN_STRONG_INLINE bool medium_undecided(double r, float f, int h) {
  return near_midpoint(r, h) || !(std::fabs(f) > std::numeric_limits<float>::min());
}

// The slow stage: tiny |x| by the Taylor rule, the rest in double-double, rounded with a
// bound of 2^-80 of the value. No float is left undecided there (tools/exhaustive_rounding
// checks every input that reaches it); were one, its double-double rounding would stand.
// The earlier stages never send it the saturated ends (x beyond about 2^22, where the
// double-double products overflow to NaN, or far negative, where the result is -0); it
// still returns them correctly (x, and -0 for negative x), so that it is right on its
// own for every float, as the tool checks it.
template <typename Form>
float slow_stage(float x, const Form& form) {
  if (std::fabs(x) <= 0x1p-30f) return tiny_rule(x);
  bool decided;
  const float y = dd_round_to_float(form.exact(double(x)), 0x1p-80, decided);
  if (!(std::fabs(y) <= std::numeric_limits<float>::max())) return x > 0.0f ? x : -0.0f;
  return y == 0.0f ? std::copysign(0.0f, x) : y;
}

// Whether one lane's fast rounding is not certain, once tiny x is left to the tiny rule: r
// of subnormal size is tested on the subnormal grid (which also covers the midpoint 2^-150
// between 0 and the least subnormal), the rest on r's own.
template <int h>
EIGEN_ALWAYS_INLINE bool lane_undecided(double r) {
  return std::fabs(r) < 0x1p-126 ? near_subnormal_midpoint(r, h) : near_midpoint(r, h);
}

// EGELU_COLD: out of line, rarely run and free of side effects. A call inside a kernel's
// loop makes the compiler assume every vector register and all memory may be clobbered:
// told that the call is cold (GCC's __builtin_expect alone says 10%), it keeps the loop's
// constants in registers and saves them only around the call, and told that it is pure,
// it keeps the loop's pointers too (measured: 0.72 -> 0.80 -> see DESIGN.md).
#if defined(__GNUC__) || defined(__clang__)
#define EGELU_COLD __attribute__((noinline, cold, pure))
#else
#define EGELU_COLD EIGEN_DONT_INLINE
#endif

// One float the fast stage may have left undecided, as the form prepared it (the logistic
// forms' floor changes only inputs whose result is -0 either way), with the fast stage's
// double result and its rounding (for inputs that cannot get here, too: NaN and infinities
// are never undecided). The form is passed by value (two pointers or none): by reference,
// the loop stored it on every packet.
template <typename Form>
EGELU_COLD float settle(float x, double r_fast, float fast, Form form) {
  if (!(std::fabs(x) <= std::numeric_limits<float>::max())) return fast;
  if (std::fabs(x) <= 0x1p-30f) return tiny_rule(x);
  if (!lane_undecided<Form::fast_window_log2>(r_fast)) return fast;
  const double r = form.medium(double(x));
  const float f = float(r);
  return medium_undecided(r, f, Form::medium_window_log2) ? slow_stage(x, form) : f;
}

// The tiny rule (double_double.hpp) on a whole packet, for |x| <= 2^-30: x/2 + 2^-151 rounded
// once in double and once to float is x/2 where x/2 is a float (2^-151 is below half its ulp)
// and the float above x/2 (towards +inf) where x/2 is a midpoint of the subnormal grid.
template <typename Packet>
EIGEN_STRONG_INLINE Packet ptiny_rule(const Packet& x) {
  using PacketD = double_twin<Packet>;
  const PacketD half = cst<PacketD>(0.5), lift = cst<PacketD>(0x1p-151);
  if constexpr (has_one_twin<Packet>) {
    return narrow(fmadd(widen_low(x), half, lift));
  } else {
    return narrow(fmadd(widen_low(x), half, lift), fmadd(widen_high(x), half, lift));
  }
}

// The same for a double packet, as the values the window test reads: r where it is of
// normal size, r on the subnormal grid (above) where not, and a decided 1 for tiny x.
template <typename PacketD>
EIGEN_STRONG_INLINE PacketD lane_test_values(const PacketD& r, const PacketD& x) {
  const PacketD magnitude = pabs(r);
  const PacketD on_subnormal_grid = fmadd(magnitude, cst<PacketD>(0x1p149), cst<PacketD>(0x1p23));
  const PacketD values = pselect(pcmp_lt(magnitude, cst<PacketD>(0x1p-126)), on_subnormal_grid, r);
  return pselect(pcmp_le(pabs(x), cst<PacketD>(0x1p-30)), cst<PacketD>(1), values);
}

// The lanes of a packet with at least one undecided, out of line (and, being cold, compiled
// for size: what it calls is inlined by force). Tiny lanes take the tiny rule and results
// of subnormal size their own test, all at once (they are whole arrays of subnormal inputs,
// and a tenth of the lanes in the far negative tail): a packet costs the fast stage about
// twice there. Lanes still undecided, about one in 2^14, go one at a time to settle(). The
// packets come by value, in registers: passed by reference (or inlined), they were stored
// on every packet, and the inlined lane loop made the loop's own code slower.
template <typename Packet, typename PacketD, typename Form>
EGELU_COLD Packet settle_lanes(Packet x, PacketD r0, PacketD r1, Packet f, Form form) {
  constexpr int h = Form::fast_window_log2;
  constexpr int lanes = unpacket_traits<Packet>::size, twin_lanes = unpacket_traits<PacketD>::size;
  // Zeros keep their sign as they are (x/2 + 2^-151 would turn -0 into +0).
  const Packet tiny = pandnot(pcmp_le(pabs(x), cst<Packet>(0x1p-30f)), pcmp_eq(x, pzero(x)));
  f = pselect(tiny, ptiny_rule(x), f);
  // The window test again on those values, with every float result taken as normal.
  const Packet normal = cst<Packet>(1.f);
  bool undecided;
  if constexpr (2 * twin_lanes == lanes) {
    undecided = any_undecided<h>(lane_test_values(r0, widen_low(x)), lane_test_values(r1, widen_high(x)), normal);
  } else {
    undecided = any_undecided<h>(lane_test_values(r0, widen_low(x)), normal);
  }
  if (!undecided) return f;
  float xs[lanes], fs[lanes];
  double rs[2 * twin_lanes];
  pstoreu(xs, x);
  pstoreu(fs, f);
  pstoreu(rs, r0);
  if (2 * twin_lanes == lanes) pstoreu(rs + twin_lanes, r1);
  for (int i = 0; i < lanes; ++i) {
    if (!(std::fabs(xs[i]) <= 0x1p-30f) && lane_undecided<h>(rs[i])) fs[i] = settle(xs[i], rs[i], fs[i], form);
  }
  return ploadu<Packet>(fs);
}

/// The float function of `form`, correctly rounded, on a float packet with double twins or
/// a float. A form (logistic_form.hpp, erf_form.hpp) supplies prepare(x) (in float, before
/// widening), fast(w) (the kernel on double packets and scalars), medium(x) and exact(x)
/// (double and double-double, for one float), and the two windows' log2 half-widths.
template <typename Packet, typename Form>
EIGEN_STRONG_INLINE Packet pcorrectly_rounded(const Packet& x, const Form& form) {
  constexpr int h = Form::fast_window_log2;
  const Packet prepared = form.prepare(x);
  if constexpr (is_scalar_packet<Packet>) {
    const double r = form.fast(widen_low(prepared));
    const float f = narrow(r);
    return EIGEN_PREDICT_FALSE(any_undecided<h>(r, f)) ? settle(prepared, r, f, form) : f;
  } else if constexpr (has_one_twin<Packet>) {
    const double_twin<Packet> r = form.fast(widen_low(prepared));
    const Packet f = narrow(r);
    return EIGEN_PREDICT_FALSE(any_undecided<h>(r, f)) ? settle_lanes(prepared, r, r, f, form) : f;
  } else {
    // The rare path gets the prepared x, which stays in a register anyway: given x, the
    // compiler kept x apart and loaded it on its own on every packet.
    const double_twin<Packet> r0 = form.fast(widen_low(prepared)), r1 = form.fast(widen_high(prepared));
    const Packet f = narrow(r0, r1);
    return EIGEN_PREDICT_FALSE(any_undecided<h>(r0, r1, f)) ? settle_lanes(prepared, r0, r1, f, form) : f;
  }
}

// For tools/exhaustive_rounding: whether the fast stage (with the tiny rule and the test on
// the subnormal grid) and the medium stage leave a float undecided, as the scalar path sees it.
template <typename Form>
bool fast_stage_undecided(float x, double r, float f, const Form&) {
  constexpr int h = Form::fast_window_log2;
  return any_undecided<h>(r, f) && !(std::fabs(x) <= 0x1p-30f) && lane_undecided<h>(r);
}
template <typename Form>
bool medium_stage_undecided(double r, float f, const Form&) {
  return medium_undecided(r, f, Form::medium_window_log2);
}

}  // namespace internal
}  // namespace egelu

#endif  // EGELU_INTERNAL_CORRECT_ROUNDING_HPP
