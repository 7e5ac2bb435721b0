// Products' inputs quantized to 16-bit integers, for the block formats' integer kernels
// (InputFormat::q16_0, opt-in): each group of 32 depth steps of each token becomes one
// float scale d = max|x| / 32767 and 32 integers q = x / d rounded to nearest (ties to
// even), in -32767..32767, so that |x - q d| <= d / 2 = max|x| / 65534. The weights' Q8_0
// and Q4_0 integers times these are summed exactly in 32 bits by a multiply-add of 16-bit
// pairs (pmaddwd, every x86 CPU's; NEON's widening products), then scaled in float: about
// half the instructions of widening each weight to float (tile_kernel_body.inc). 16 bits
// rather than ggml's 8 cost the same instructions here (pmaddwd takes 16-bit pairs) and
// round each input 256 times more finely.
//
// A token panel of floats (micro_kernel.hpp: k steps of nt values) is quantized in place,
// group by group; a group of 32 steps by nt tokens (32 nt words) becomes 18 nt words:
//   - nt scales d (float);
//   - nt offsets 8 sum(q) (int32: the Q4_0 kernels sum the nibbles q_w + 8 and drop it);
//   - 16 x nt pairs: pair s of token t (word 2 nt + s nt + t) holds q of steps 2s (low
//     16 bits) and 2s + 1 (high).
// A group with a value that is not finite gets a NaN scale, so that its tokens' outputs
// are NaN, never a silent number.
#ifndef EGELU_SRC_GEMM_QUANTIZED_INPUTS_HPP
#define EGELU_SRC_GEMM_QUANTIZED_INPUTS_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "block_formats.hpp"
#include "micro_kernel.hpp"

namespace egelu {
namespace gemm {

// The largest integer of a quantized input.
constexpr int input_levels = 32767;

// One group of 32 steps of one token, from its values x[s * stride].
struct quantized_group {
  float d;
  std::int32_t offset;
  std::int32_t pairs[block_length / 2];
};

inline quantized_group quantize_input_group(const float* x, index stride) {
  quantized_group g{};
  float amax = 0;
  bool finite = true;
  for (int s = 0; s < block_length; ++s) {
    const float v = x[s * stride];
    finite = finite && std::isfinite(v);
    amax = std::max(amax, std::fabs(v));
  }
  if (!finite) {
    g.d = std::numeric_limits<float>::quiet_NaN();
    return g;
  }
  g.d = amax / float(input_levels);
  int q[block_length] = {};
  std::int32_t sum = 0;
  if (g.d > 0) {
    for (int s = 0; s < block_length; ++s) {
      // x / d in double (near enough to the exact ratio that |x - q d| <= d / 2), within
      // a rounding of +-32767 at the largest |x|: clamped, never beyond.
      const double scaled = std::nearbyint(double(x[s * stride]) / double(g.d));
      q[s] = int(std::min(std::max(scaled, -double(input_levels)), double(input_levels)));
      sum += q[s];
    }
  }
  g.offset = 8 * sum;
  for (int s = 0; s < block_length / 2; ++s) {
    g.pairs[s] = std::int32_t((std::uint32_t(q[2 * s]) & 0xffffu) | (std::uint32_t(q[2 * s + 1]) & 0xffffu) << 16);
  }
  return g;
}

// Quantizes in place the first n tokens of a token panel of kc steps (a whole number of
// groups) by nt tokens; the words of tokens n..nt-1 are left as they are (no kernel reads
// them: a tile's tokens are its panel's first).
inline void quantize_input_panel(float* panel, index kc, int nt, int n) {
  constexpr int widest = 8;  // the kernels' nt (micro_kernel.hpp)
  if (nt > widest) throw std::logic_error("egelu: quantize_input_panel: a panel wider than 8 tokens");
  float group[block_length * widest];
  for (index first = 0; first < kc; first += block_length) {
    // Group g's 18 nt words end before group g + 1's floats begin: read it, then write.
    std::memcpy(group, panel + first * nt, sizeof(float) * std::size_t(block_length * nt));
    unsigned char* out =
        reinterpret_cast<unsigned char*>(panel + first / block_length * quantized_words_per_token * nt);
    for (int t = 0; t < n; ++t) {
      const quantized_group g = quantize_input_group(group + t, nt);
      std::memcpy(out + 4 * t, &g.d, 4);
      std::memcpy(out + 4 * (nt + t), &g.offset, 4);
      for (int s = 0; s < block_length / 2; ++s) std::memcpy(out + 4 * (2 * nt + s * nt + t), &g.pairs[s], 4);
    }
  }
}

}  // namespace gemm
}  // namespace egelu

#endif  // EGELU_SRC_GEMM_QUANTIZED_INPUTS_HPP
