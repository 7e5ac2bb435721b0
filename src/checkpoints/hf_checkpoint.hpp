// The MLP of one layer of a Hugging Face checkpoint, as the blocks build themselves from
// it: config.json read for the architecture, activation, epsilon and widths, and the
// layer's tensors found under the names each architecture gives them (hf_checkpoint.cpp
// holds one small description per architecture). Every setting comes from the config,
// never from a default that could silently differ; what egelu does not run is refused by
// name (docs/DESIGN.md, "Checkpoints").
#ifndef EGELU_SRC_CHECKPOINTS_HF_CHECKPOINT_HPP
#define EGELU_SRC_CHECKPOINTS_HF_CHECKPOINT_HPP

#include <egelu/safetensors.hpp>
#include <string>

#include "gemm/packed_weights.hpp"

namespace egelu {
namespace hf {

// The MLP's shape: BERT's post-norm, GPT-2's pre-norm, or LLaMA's gated pre-norm.
enum class mlp_kind { post_norm, pre_norm, gated };
// The activation, from hidden_act (activation_function, hidden_activation).
enum class activation { gelu_exact, gelu_tanh, silu };

// A weight matrix (out x in) or a vector of the layer, viewed in the mapped checkpoint.
struct tensor_ref {
  const safetensors::Tensor* tensor = nullptr;
  bool transposed = false;  // stored (in, out): GPT-2's Conv1D

  gemm::matrix_view matrix() const;
};

struct mlp_layer {
  mlp_layer(safetensors::Checkpoint c, std::string config_path)
      : checkpoint(std::move(c)), config(std::move(config_path)) {}

  safetensors::Checkpoint checkpoint;  // the mapping the tensors view
  std::string config;                  // config.json's path, for messages
  std::string model_type;
  mlp_kind kind = mlp_kind::post_norm;
  activation act = activation::gelu_exact;
  double eps = 0;
  long long d_model = 0, d_ff = 0;
  // post_norm, pre_norm: W1 b1 W2 b2 and the LayerNorm's weight and bias;
  // gated: gate, up, down and the RMSNorm's weight (plus_one: Gemma's weight - 1).
  tensor_ref w1, b1, w2, b2, norm_weight, norm_bias;
  tensor_ref gate, up, down;
  bool plus_one = false;
};

// Layer `layer`'s MLP from the checkpoint folder `path`, which must be of `want`'s family
// (post_norm and pre_norm are FeedForward's, gated GatedFeedForward's).
// Throws std::invalid_argument naming the file, tensor or value at fault, and
// safetensors::format_error for a malformed safetensors file.
mlp_layer open_mlp_layer(const std::string& path, int layer, bool want_gated);

// The stored type a tensor's dtype is.
gemm::stored stored_of(safetensors::DType dtype);

}  // namespace hf
}  // namespace egelu

#endif  // EGELU_SRC_CHECKPOINTS_HF_CHECKPOINT_HPP
