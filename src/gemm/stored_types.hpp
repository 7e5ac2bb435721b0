// The types a block's weights are stored in: float, double, bfloat16 and half as their
// bits, ggml's 8- and 4-bit block formats and OCP's MXFP4 (block_formats.hpp). Types and constant tables only, no
// functions: the per-ISA kernel files include this, and an inline function compiled there with that ISA's flags could
// be merged by the linker with a portable file's copy (docs/DESIGN.md, "The compiled library").
#ifndef EGELU_SRC_GEMM_STORED_TYPES_HPP
#define EGELU_SRC_GEMM_STORED_TYPES_HPP

#include <cstdint>

namespace egelu {
namespace gemm {

// f8_e4m3 and e2m1 are read, never packed: FP8 checkpoints' codes, and MXFP4's (two 4-bit
// codes a byte, the low nibble first), each times its block's scale (matrix_view's scales;
// MXFP4's are e8m0, 2^(byte - 127), for each 32 codes of a row).
// mxfp4 is the packed format of MXFP4 weights (block_formats.hpp), e2m1 the checkpoint's codes.
enum class stored { f32, bf16, f16, f64, q8_0, q4_0, mxfp4, f8_e4m3, e2m1, e8m0 };

struct bf16 {
  std::uint16_t bits;
};
struct f16 {
  std::uint16_t bits;
};
struct e4m3 {  // OCP E4M3FN, FP8 checkpoints' weights
  std::uint8_t bits;
};
struct e2m1 {  // OCP FP4 E2M1, MXFP4 checkpoints' weights (the low 4 bits)
  std::uint8_t bits;
};
// E2M1's 16 values by code (OCP MX v1.0: sign, 2 exponent bits of bias 1, 1 mantissa bit;
// exponent 0 subnormal), read by widen(e2m1) and the kernels that look codes up lane by lane.
inline constexpr float e2m1_values[16] = {0.f,  0.5f,  1.f,  1.5f,  2.f,  3.f,  4.f,  6.f,
                                          -0.f, -0.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f};
struct e8m0 {  // OCP E8M0, MXFP4's scales: 2^(bits - 127), 255 NaN
  std::uint8_t bits;
};

// A panel of weights in a block format, as the kernels read it (block_formats.hpp): tags
// only, for the kernels' templates.
struct q8_0_panel;
struct q4_0_panel;
struct mxfp4_panel;
// A panel of bfloat16 weights with its depth steps in pairs (packed_weights' paired_steps):
// row i of steps 2s and 2s + 1 in one 32-bit word, step 2s in its low half. A tag.
struct bf16_pairs;

// A panel of quantized inputs (quantized_inputs.hpp): the 32-bit words one token takes in
// a group of 32 depth steps -- its scale, its offset and 16 pairs of 16-bit integers.
constexpr int quantized_words_per_token = 18;

}  // namespace gemm
}  // namespace egelu

#endif  // EGELU_SRC_GEMM_STORED_TYPES_HPP
