// The precision a feed-forward block holds its weights in. Models ship in bfloat16 (LLaMA,
// Mistral, Qwen, Gemma) or half; a block keeps them so, in about two bytes a weight, or
// quantizes them to ggml's 8- or 4-bit block formats (about one byte or half a byte) or
// OCP's MXFP4 (gpt-oss's release), widens them to float in registers and sums in float.
/// @file
/// egelu::WeightFormat, the precision of a block's weights (egelu::nn).
#ifndef EGELU_WEIGHT_FORMAT_HPP
#define EGELU_WEIGHT_FORMAT_HPP

#include <egelu/internal/nn_api.hpp>

namespace egelu {

/// The precision a block holds its weights in: float blocks hold f32, bf16, f16, q8_0, q4_0
/// or mxfp4 weights (widened to float in registers, with float sums); double blocks hold f64.
enum class WeightFormat { f32, bf16, f16, f64, q8_0, q4_0, mxfp4 };
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
/// @var WeightFormat::mxfp4
/// OCP's MXFP4 (the Microscaling spec; gpt-oss's release): blocks of 32 weights along a row's
/// input, each an FP4 E2M1 value (0, ±0.5, ±1, ±1.5, ±2, ±3, ±4 or ±6) times the block's
/// power of two; 17 bytes a block (0.53 a weight). An MXFP4 checkpoint's blocks are kept
/// exactly, as released (the default for them; blocks of scales 253 and 254 re-encoded to the
/// same values); other weights are quantized by the spec's rule (the
/// power 2^(floor(log2 max|w|) - 2), the nearest value, ties to even, saturating). The input
/// dimension a multiple of 32.

/// "f32", "bf16", "f16", "f64", "q8_0", "q4_0" or "mxfp4".
EGELU_NN_API const char* to_string(WeightFormat format);

/// The precision a float block's products read their inputs in (the normalised tokens and
/// the hidden layer) when it holds q8_0 or q4_0 weights.
enum class InputFormat { f32, q16_0 };
/// @var InputFormat::f32
/// Float: the block computes what the float block computes on the dequantized weights. The default.
/// @var InputFormat::q16_0
/// Opt-in, for q8_0 and q4_0 weights only: each group of 32 inputs of a token rounded to
/// 16-bit integers with one float scale d = max|x| / 32767 (each input off by at most d / 2),
/// the products summed exactly in 32-bit integers a group, then scaled and added in float.
/// Faster (Q4_0's weights need no widening to float), and off the f32 inputs' result by the
/// inputs' rounding: about 10^-5 of the outputs' scale, where llama.cpp's 8-bit inputs are
/// 256 times coarser. The same bits on every CPU with FMA and any number of threads.

/// "f32" or "q16_0".
EGELU_NN_API const char* to_string(InputFormat format);

}  // namespace egelu

#endif  // EGELU_WEIGHT_FORMAT_HPP
