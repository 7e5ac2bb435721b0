// The table of Hugging Face architectures the blocks load (hf_architectures.cpp): for each
// model type, its stacks of layers; for each stack, where its settings and layers are,
// which config keys give its widths, epsilon and activation (with Transformers' default
// where its configs may leave a key out), and the names of the feed-forward's tensors.
// Adding a family is adding a row; hf_checkpoint.cpp reads any row the same way.
#ifndef EGELU_SRC_CHECKPOINTS_HF_ARCHITECTURES_HPP
#define EGELU_SRC_CHECKPOINTS_HF_ARCHITECTURES_HPP

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoints/config_settings.hpp"
#include "checkpoints/hf_checkpoint.hpp"

namespace egelu {
namespace hf {

// How a stack's activation setting reads: a Hugging Face ACT2FN name, or T5's
// feed_forward_proj ("gated-gelu", "relu", ...), which also says whether the MLP is gated.
enum class activation_syntax { act2fn, t5_feed_forward_proj };

// Which layers of a mixture-of-experts stack are sparse; the others are gated MLPs.
enum class sparse_layers {
  all,               // Mixtral, OLMoE
  qwen_step,         // Qwen2/3-MoE: not in mlp_only_layers, and (i + 1) % decoder_sparse_step == 0
  deepseek_first_k,  // DeepSeek: i >= first_k_dense_replace (and i % moe_layer_freq == 0)
  with_experts,      // Granite 4 (granitemoehybrid): every layer when there are experts, none with 0
  llama4,            // Llama 4: those in moe_layers, or (i + 1) % interleave_moe_layer_step == 0
  jamba,             // Jamba: with experts > 1, i % expert_layer_period == expert_layer_offset
};

// The routing rules of a family of mixtures of experts, each read from its config keys.
enum class routing_family {
  mixtral,      // softmax, top-k, renormalised
  qwen,         // softmax, top-k, renormalised if norm_topk_prob (Qwen2/3-MoE, OLMoE); shared expert
  deepseek_v2,  // softmax, topk_method greedy or group_limited_greedy, times routed_scaling_factor
  deepseek_v3,  // sigmoid, noaux_tc (biased choice among groups), norm_topk_prob, routed_scaling_factor
  phimoe,       // sparsemixer (router_jitter_noise), two experts
  llama4,       // the sigmoid of the top-k logits, weighing the experts' inputs; a shared expert
  jamba,        // softmax, top-k, never renormalised (it reads no norm_topk_prob)
  dbrx,         // softmax, top-k, divided by their 1-norm unless moe_normalize_expert_weights is null
  gpt_oss,      // the softmax of the top-k logits of a router with a bias; experts with biases, clamped SwiGLU
};

// How a family stores its experts stacked ("experts_gate_up" and "experts_down", or DBRX's three).
enum class stacked_layout {
  linear,  // nn.Linear's, as Transformers 5 holds them: (E, 2 d_ff, d_model), each expert's gate rows first,
           // and (E, d_model, d_ff)
  in_out,  // Llama 4's, for bmm: (E, d_model, 2 d_ff), each expert's gate columns first, and (E, d_ff, d_model)
  rows,    // DBRX's: "experts_gate", "experts_up" and "experts_down", each (E d_ff, d_model); the down read
           // transposed (DbrxExpertGLU: intermediate.matmul(w2))
  // gpt-oss's: in_out's, the gate and up columns alternating (gate_up[..., ::2] the gate), with their biases
  // "experts_gate_up_bias" (E, 2 d_ff), alternating too, and "experts_down_bias" (E, d_model).
  in_out_interleaved,
};

struct moe_def {
  routing_family family;
  sparse_layers sparse;
  setting experts, per_token, expert_d_ff;
  // The shared expert's d_ff where a config key gives it (Granite's shared_intermediate_size: 0 for
  // none); "" where the family's routing rule says (Qwen2-MoE, DeepSeek).
  setting shared_d_ff{"", "", nullptr};
  stacked_layout stacked = stacked_layout::linear;
};

// Tensor names under a layer's prefix, by role (the '|'-separated alternatives are tried
// in order): plain "w1" "b1" "w2" "b2" "norm" "norm_bias"; gated "gate" "up" "down" or
// "gate_up" (fused, gate rows first), "norm" (none with GatedNorm::none), "norm_bias"
// (a LayerNorm's), "post_norm"; mixtures of experts "router",
// "correction_bias", "router_bias", "expert_gate" "expert_up" "expert_down" ("{e}" the expert), or the
// stacked "experts_gate_up" and "experts_down" (3-D), "shared_gate" "shared_up" or
// "shared_gate_up" (fused, gate rows first), "shared_down", "shared_expert_gate"; their dense
// layers "gate" "up" (or "gate_up") "down" "norm".
using tensor_names = std::map<std::string, std::string>;

struct stack_def {
  std::string name;               // "" when the model has one stack
  std::string section;            // where its settings are: "" (top level), "text_config", ...
  bool section_or_top = false;    // the top level's when the config has no `section` (old Qwen2-VL)
  bool section_required = false;  // refused without `section` (a class then builds it with values of its own)
  // A vision-language model's language model: the row of the section's model_type (this one when the
  // section has none) gives the stack, under this stack's name, section and prefixes.
  std::string nested_default_type;
  std::vector<std::string> prefixes;      // the layer's prefix, "{}" its number; the first that has the layer
  block_kind kind;                        // of every layer (a MoE stack's dense layers: gated)
  bool pre_norm = true;                   // plain blocks: LayerNorm before the MLP
  bool conv1d = false;                    // weights stored (in, out)
  bool plus_one = false;                  // RMSNorm's weight stored as weight - 1 (Gemma)
  GatedNorm gated_norm = GatedNorm::rms;  // gated blocks: the norm before the MLP
  setting norm_bias{"", "", false};       // gated blocks with a LayerNorm: whether it has a bias
  setting output_scale{"", "", 1.0};      // gated and MoE blocks: the MLP's output times this (Granite's
                                          // residual_multiplier)
  // A family whose config chooses the MLP's tensors (StableLM's use_parallel_residual, Falcon's
  // parallel_attn and new_decoder_architecture) or has a setting egelu does not run (BLOOM's
  // apply_residual_connection_post_layernorm): renames roles in `names`, or throws
  // std::invalid_argument naming the setting.
  void (*by_config)(const settings& config, tensor_names& names) = nullptr;
  setting d_model, d_ff, layers, eps, act;
  long long d_ff_times_d_model = 0;  // d_ff when its key is absent or null: this times d_model (GPT-2: 4)
  setting biases{"", "", true};      // a plain block's: whether its linear layers have biases (none: zeros)
  activation_syntax syntax = activation_syntax::act2fn;
  tensor_names names;
  const moe_def* moe = nullptr;
};

struct architecture {
  std::vector<std::string> model_types;
  std::vector<stack_def> stacks;
  std::string default_stack;  // the stack the two-argument form loads when there are several ("": none)
};

const std::vector<architecture>& architectures();

// Model types egelu knows and does not run, with the reason; null for any other.
const char* unsupported_reason(const std::string& model_type);

}  // namespace hf
}  // namespace egelu

#endif  // EGELU_SRC_CHECKPOINTS_HF_ARCHITECTURES_HPP
