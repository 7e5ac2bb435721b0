// The feed-forward sub-layer of one layer of a Hugging Face checkpoint, as the blocks build
// themselves from it: config.json read for the architecture, activation, epsilon, widths
// and routing, and the layer's tensors found under the names each architecture gives them.
// The architectures are one table (hf_architectures.cpp): a model type's stacks, where
// each keeps its settings and layers, the names of its tensors and Transformers' defaults
// for the keys its configs may leave out. Every setting comes from the config or from
// that default, never from a guess that could silently differ; what egelu does not run
// is refused by name (docs/DESIGN.md, "Checkpoints").
#ifndef EGELU_SRC_CHECKPOINTS_HF_CHECKPOINT_HPP
#define EGELU_SRC_CHECKPOINTS_HF_CHECKPOINT_HPP

#include <egelu/gated_feed_forward.hpp>
#include <egelu/safetensors.hpp>
#include <string>
#include <vector>

#include "gemm/packed_weights.hpp"

namespace egelu {
namespace hf {

// The block a layer's feed-forward is: FeedForward (LayerNorm, biases), GatedFeedForward
// (RMSNorm, gate and up), MoeFeedForward (a router over gated experts).
enum class block_kind { plain, gated, moe };
// The activation, from the config's hidden_act (activation_function, hidden_activation,
// feed_forward_proj).
enum class activation { gelu_exact, gelu_tanh, silu, quick_gelu, clamped_swiglu };  // (the last: gpt-oss's experts')

// A weight matrix (out x in) or a vector of the layer, viewed in the mapped checkpoint:
// a whole 1-D or 2-D tensor, a range of a 2-D tensor's rows (one half of Phi-3's fused
// gate_up_proj), or one matrix of a 3-D tensor (experts stacked along its first axis).
struct tensor_ref {
  const safetensors::Tensor* tensor = nullptr;
  bool transposed = false;  // stored (in, out): GPT-2's Conv1D, Llama 4's experts
  long long slice = -1;     // the matrix of a 3-D tensor (or of a 2-D one cut in `slices`), -1 for none
  long long slices = 0;     // a 2-D tensor's rows cut into this many matrices (DBRX's experts), 0 for none
  long long row0 = 0;       // the first of `rows` output rows (-1: all of them; stored columns if transposed)
  long long rows = -1;
  long long row_step = 1;  // the output rows row0, row0 + row_step, ... (gpt-oss's interleaved gate and up: 2)
  // FP8 weights (F8_E4M3, 2-D, not transposed): each block of block_rows x block_cols times its
  // scale in `scale` (DeepSeek-V3's weight_scale_inv, (ceil(out / block_rows), ceil(in / block_cols))).
  const safetensors::Tensor* scale = nullptr;
  long long block_rows = 0, block_cols = 0;

  explicit operator bool() const { return tensor != nullptr; }
  gemm::matrix_view matrix() const;
  // "model.safetensors: tensor 'model.layers.0.mlp.gate_up_proj.weight' rows [0, 60)", for messages.
  std::string name() const;
};

// How a mixture of experts routes a token (MoeFeedForward's routing options).
enum class router_score { softmax, sigmoid, sparsemixer };
enum class group_rank { none, best, top2_sum };
struct routing {
  router_score score = router_score::softmax;
  long long experts = 0, per_token = 0;   // E and k
  bool normalize = false;                 // the k weights divided by their sum
  double scale = 1;                       // then multiplied by this (DeepSeek's routed_scaling_factor)
  long long groups = 1, groups_kept = 1;  // DeepSeek: pick among the best groups_kept of `groups`
  group_rank rank = group_rank::none;
  double jitter = 0.01;      // sparsemixer's router_jitter_noise (Phi-3.5-MoE)
  bool weigh_input = false;  // the weights multiply the experts' inputs (Llama 4)
};

struct expert_ref {
  tensor_ref gate, up, down;
  tensor_ref gate_bias, up_bias, down_bias;  // gpt-oss's, as one-column matrices (tensor_ref::matrix); or none
};

struct mlp_layer {
  mlp_layer(safetensors::Checkpoint c, std::string config_path)
      : checkpoint(std::move(c)), config(std::move(config_path)) {}

  safetensors::Checkpoint checkpoint;  // the mapping the tensors view
  std::string config;                  // config.json's path, for messages
  std::string model_type, stack;
  block_kind kind = block_kind::plain;
  bool pre_norm = false;  // plain: LayerNorm before the MLP (else after the residual)
  activation act = activation::gelu_exact;
  double eps = 0;
  long long d_model = 0, d_ff = 0;  // a MoE layer: d_ff is an expert's
  // plain: W1 b1 W2 b2 (b1 and b2 empty when the config says the MLP has no biases) and the
  // LayerNorm's weight and bias (norm_weight, norm_bias).
  tensor_ref w1, b1, w2, b2, norm_weight, norm_bias;
  // gated (and a MoE layer's shared expert): gate, up, down; the norm before the MLP
  // (gated_norm: RMSNorm, LayerNorm with norm_weight and, if it has one, norm_bias, or none)
  // and, optionally, RMSNorm after it (post_norm_weight; plus_one: Gemma's weight - 1).
  tensor_ref gate, up, down, post_norm_weight;
  GatedNorm gated_norm = GatedNorm::rms;
  double output_scale = 1;        // the MLP's output times this before the residual (Granite)
  std::string output_scale_from;  // where it comes from, for messages
  bool plus_one = false;
  // moe: the router (E x d), DeepSeek-V3's score correction bias (E), the routed experts,
  // the shared expert (gate, up, down above; none when `gate` is empty) of shared_d_ff,
  // and Qwen2-MoE's sigmoid gate on it (1 x d); the router's bias (E: gpt-oss's), or none.
  routing route;
  tensor_ref router, correction_bias, shared_gate, router_bias;
  std::vector<expert_ref> experts;
  long long shared_d_ff = 0;
};

// The feed-forward of layer `layer` of stack `stack` (null: the model's only or default
// stack) of the checkpoint folder `path`, which must be a block of kind `want`.
// Throws std::invalid_argument naming the file, tensor or value at fault (a layer of
// another kind names the block that loads it), and safetensors::format_error for a
// malformed safetensors file.
mlp_layer open_mlp_layer(const std::string& path, const std::string* stack, int layer, block_kind want);

// The stored type a tensor's dtype is.
gemm::stored stored_of(safetensors::DType dtype);

}  // namespace hf
}  // namespace egelu

#endif  // EGELU_SRC_CHECKPOINTS_HF_CHECKPOINT_HPP
