// The precision a feed-forward block holds its weights in. Models ship in bfloat16 (LLaMA,
// Mistral, Qwen, Gemma) or half; a block keeps them so, in about two bytes a weight,
// widens them to float in registers and sums in float.
/// @file
/// egelu::WeightFormat, the precision of a block's weights (egelu::nn).
#ifndef EGELU_WEIGHT_FORMAT_HPP
#define EGELU_WEIGHT_FORMAT_HPP

#include <egelu/internal/nn_api.hpp>

namespace egelu {

/// The precision a block holds its weights in: float blocks hold f32, bf16 or f16 weights
/// (the 16-bit ones widened to float in registers, with float sums); double blocks hold f64.
enum class WeightFormat { f32, bf16, f16, f64 };
/// @var WeightFormat::f32
/// IEEE single precision, 4 bytes a weight.
/// @var WeightFormat::bf16
/// bfloat16 (float's top 16 bits), 2 bytes a weight: LLaMA, Mistral, Qwen and Gemma checkpoints.
/// @var WeightFormat::f16
/// IEEE half precision, 2 bytes a weight.
/// @var WeightFormat::f64
/// IEEE double precision: the format of double blocks.

/// "f32", "bf16", "f16" or "f64".
EGELU_NN_API const char* to_string(WeightFormat format);

}  // namespace egelu

#endif  // EGELU_WEIGHT_FORMAT_HPP
