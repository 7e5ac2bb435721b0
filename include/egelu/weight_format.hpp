// The precision a feed-forward block holds its weights in. Models ship in bfloat16 (LLaMA,
// Mistral, Qwen, Gemma) or half; a block keeps them so, in about two bytes a weight, or
// quantizes them to ggml's 8- or 4-bit block formats (about one byte or half a byte),
// widens them to float in registers and sums in float.
/// @file
/// egelu::WeightFormat, the precision of a block's weights (egelu::nn).
#ifndef EGELU_WEIGHT_FORMAT_HPP
#define EGELU_WEIGHT_FORMAT_HPP

#include <egelu/internal/nn_api.hpp>

namespace egelu {

/// The precision a block holds its weights in: float blocks hold f32, bf16, f16, q8_0 or
/// q4_0 weights (widened to float in registers, with float sums); double blocks hold f64.
enum class WeightFormat { f32, bf16, f16, f64, q8_0, q4_0 };
/// @var WeightFormat::f32
/// IEEE single precision, 4 bytes a weight.
/// @var WeightFormat::bf16
/// bfloat16 (float's top 16 bits), 2 bytes a weight: LLaMA, Mistral, Qwen and Gemma checkpoints.
/// @var WeightFormat::f16
/// IEEE half precision, 2 bytes a weight.
/// @var WeightFormat::f64
/// IEEE double precision: the format of double blocks.
/// @var WeightFormat::q8_0
/// ggml's Q8_0 (llama.cpp, GGUF): blocks of 32 weights along a row's input, each an 8-bit
/// integer q times the block's half-precision scale d = max|w| / 127; 34 bytes a block
/// (1.0625 a weight). Quantized as ggml's reference quantizer does, to the same bytes. The
/// input dimension (d_model, d_ff) must be a multiple of 32.
/// @var WeightFormat::q4_0
/// ggml's Q4_0: blocks of 32 weights, each a 4-bit integer q in -8..7 times the block's
/// scale d = -m / 8 (m the weight of largest magnitude); 18 bytes a block (0.5625 a weight).
/// As q8_0, ggml's bytes, and the input dimension a multiple of 32.

/// "f32", "bf16", "f16", "f64", "q8_0" or "q4_0".
EGELU_NN_API const char* to_string(WeightFormat format);

}  // namespace egelu

#endif  // EGELU_WEIGHT_FORMAT_HPP
