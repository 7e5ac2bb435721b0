// The architectures (hf_architectures.hpp), from Transformers' modeling and configuration
// files: a row a family, its names as the Hub's checkpoints save them, and Transformers'
// config-class default for each key a config.json may leave out (docs/DESIGN.md,
// "Checkpoints", has the same table for readers).
#include "checkpoints/hf_architectures.hpp"

#include <limits>
#include <stdexcept>

namespace egelu {
namespace hf {

namespace {

using json = nlohmann::json;

// The names of a plain block's tensors under `mlp1`, `mlp2` (first and second linear
// layers, weight and bias) and `norm` (LayerNorm, weight and bias; '|' alternatives).
tensor_names plain_names(const std::string& mlp1, const std::string& mlp2, const std::string& norm_weight,
                         const std::string& norm_bias) {
  return {{"w1", mlp1 + ".weight"}, {"b1", mlp1 + ".bias"}, {"w2", mlp2 + ".weight"},
          {"b2", mlp2 + ".bias"},   {"norm", norm_weight},  {"norm_bias", norm_bias}};
}
tensor_names layer_norm_names(const std::string& mlp1, const std::string& mlp2, const std::string& norm) {
  return plain_names(mlp1, mlp2, norm + ".weight", norm + ".bias");
}

// The LayerNorm module `norm` (weight and bias) as the MLP's norm: a by_config rule's choice.
void read_layer_norm(tensor_names& names, const std::string& norm) {
  names["norm"] = norm + ".weight";
  names["norm_bias"] = norm + ".bias";
}

// LLaMA's names: mlp.{gate,up,down}_proj and post_attention_layernorm.
tensor_names llama_names() {
  return {{"gate", "mlp.gate_proj.weight"},
          {"up", "mlp.up_proj.weight"},
          {"down", "mlp.down_proj.weight"},
          {"norm", "post_attention_layernorm.weight"}};
}
// Gemma 2 and 3: the MLP's own norms around it (post_attention_layernorm is the attention's).
tensor_names gemma2_names() {
  tensor_names n = llama_names();
  n["norm"] = "pre_feedforward_layernorm.weight";
  n["post_norm"] = "post_feedforward_layernorm.weight";
  return n;
}

// A LLaMA-like stack: gated, RMSNorm, the settings at the top level.
stack_def llama_stack(tensor_names names, setting act, setting eps = key("rms_norm_eps")) {
  stack_def s;
  s.prefixes = {"model.layers.{}.", "layers.{}."};
  s.kind = block_kind::gated;
  s.d_model = key("hidden_size");
  s.d_ff = key("intermediate_size");
  s.layers = key("num_hidden_layers");
  s.eps = std::move(eps);
  s.act = std::move(act);
  s.names = std::move(names);
  return s;
}

// A pre-norm LayerNorm stack with biases (ViT, CLIP, SigLIP, GPT-NeoX, Whisper).
stack_def pre_norm_stack(std::string name, std::string section, std::vector<std::string> prefixes, tensor_names names,
                         setting d_model, setting d_ff, setting layers, setting eps, setting act) {
  stack_def s;
  s.name = std::move(name);
  s.section = std::move(section);
  s.prefixes = std::move(prefixes);
  s.kind = block_kind::plain;
  s.pre_norm = true;
  s.d_model = std::move(d_model);
  s.d_ff = std::move(d_ff);
  s.layers = std::move(layers);
  s.eps = std::move(eps);
  s.act = std::move(act);
  s.names = std::move(names);
  return s;
}

// GPT-2's config keys, which GPT-J and GPT-BigCode kept: n_embd, n_inner (null: 4 n_embd),
// n_layer, layer_norm_epsilon (1e-5 in all three config classes), activation_function; the
// other defaults are each config class's (null: required).
stack_def gpt2_keys_stack(tensor_names names, json n_embd, json n_layer, json act) {
  stack_def s = pre_norm_stack("", "", {"transformer.h.{}.", "h.{}."}, std::move(names),
                               key("n_embd", std::move(n_embd)), key("n_inner"), key("n_layer", std::move(n_layer)),
                               key("layer_norm_epsilon", 1e-5), key("activation_function", std::move(act)));
  s.d_ff_times_d_model = 4;
  return s;
}

// A BERT-like post-norm block, LayerNorm(X + MLP(X)) with biases (DistilBERT, MPNet, ELECTRA).
stack_def post_norm_stack(std::vector<std::string> prefixes, tensor_names names, setting d_model, setting d_ff,
                          setting layers, setting eps, setting act) {
  stack_def s = pre_norm_stack("", "", std::move(prefixes), std::move(names), std::move(d_model), std::move(d_ff),
                               std::move(layers), std::move(eps), std::move(act));
  s.pre_norm = false;
  return s;
}

// CLIP's and SigLIP's encoder layers: layer_norm2, mlp.fc1, mlp.fc2.
const tensor_names& clip_names() {
  static const tensor_names n = layer_norm_names("mlp.fc1", "mlp.fc2", "layer_norm2");
  return n;
}
stack_def clip_stack(std::string name, std::string section, std::string prefix, long long d, long long d_ff) {
  // CLIPTextConfig / CLIPVisionConfig defaults: quick_gelu, eps 1e-5, 12 layers.
  return pre_norm_stack(std::move(name), std::move(section), {std::move(prefix)}, clip_names(), key("hidden_size", d),
                        key("intermediate_size", d_ff), key("num_hidden_layers", 12), key("layer_norm_eps", 1e-5),
                        key("hidden_act", "quick_gelu"));
}

// Gemma 3's language model, as gemma3_text or under a multimodal model's text_config
// (whose Hub configs leave out rms_norm_eps and hidden_activation: Gemma3TextConfig's
// defaults, as everything the class defaults).
stack_def gemma3_text_stack(std::string name, std::string section, std::vector<std::string> prefixes) {
  stack_def s = llama_stack(gemma2_names(), key("hidden_activation", "gelu_pytorch_tanh"), key("rms_norm_eps", 1e-6));
  s.name = std::move(name);
  s.section = std::move(section);
  s.prefixes = std::move(prefixes);
  s.plus_one = true;
  s.d_model = key("hidden_size", 2304);
  s.d_ff = key("intermediate_size", 9216);
  s.layers = key("num_hidden_layers", 26);
  return s;
}

// T5's feed-forward sub-layers: layer.1 of an encoder block, layer.2 of a decoder block
// (layer.1 is its cross-attention); no biases, T5LayerNorm (RMSNorm).
std::vector<stack_def> t5_stacks(const char* feed_forward_proj_default) {
  std::vector<stack_def> stacks;
  for (const char* stack : {"encoder", "decoder"}) {
    stack_def s;
    s.name = stack;
    const bool encoder = s.name == "encoder";
    s.prefixes = {std::string(stack) + ".block.{}.layer." + (encoder ? "1." : "2.")};
    s.kind = block_kind::gated;
    s.d_model = key("d_model");
    s.d_ff = key("d_ff");
    s.layers = encoder ? key("num_layers") : key_or("num_decoder_layers", "num_layers");
    s.eps = key("layer_norm_epsilon", 1e-6);
    s.act = key("feed_forward_proj", feed_forward_proj_default);
    s.syntax = activation_syntax::t5_feed_forward_proj;
    s.names = {{"gate", "DenseReluDense.wi_0.weight"},
               {"up", "DenseReluDense.wi_1.weight"},
               {"down", "DenseReluDense.wo.weight"},
               {"norm", "layer_norm.weight"}};
    stacks.push_back(s);
  }
  return stacks;
}

// Whisper's encoder and decoder layers: final_layer_norm, fc1, fc2; nn.LayerNorm's eps.
std::vector<stack_def> whisper_stacks() {
  std::vector<stack_def> stacks;
  for (const std::string stack : {"encoder", "decoder"}) {
    stacks.push_back(pre_norm_stack(stack, "", {"model." + stack + ".layers.{}.", stack + ".layers.{}."},
                                    layer_norm_names("fc1", "fc2", "final_layer_norm"), key("d_model"),
                                    key(stack + "_ffn_dim"), key(stack + "_layers"), fixed(1e-5),
                                    key("activation_function", "gelu")));
  }
  return stacks;
}

// The names of a mixture of experts' tensors under mlp_prefix: the router, the experts
// (per expert, or stacked as Transformers 5's first releases saved them), the shared
// expert, and the dense layers' MLP.
tensor_names moe_names(const std::string& mlp, const std::string& expert_gate, const std::string& expert_up,
                       const std::string& expert_down) {
  tensor_names n = llama_names();
  n["router"] = mlp + ".gate.weight";
  n["expert_gate"] = mlp + ".experts.{e}." + expert_gate + ".weight";
  n["expert_up"] = mlp + ".experts.{e}." + expert_up + ".weight";
  n["expert_down"] = mlp + ".experts.{e}." + expert_down + ".weight";
  n["experts_gate_up"] = "mlp.experts.gate_up_proj";
  n["experts_down"] = "mlp.experts.down_proj";
  return n;
}

// Granite's mixtures of experts (JetMoE's experts): the router in block_sparse_moe.router.layer,
// the experts stacked, each one's gate rows then up rows in input_linear (E, 2 d_ff, d_model) and
// its down in output_linear (E, d_model, d_ff); the shared MLP (granitemoeshared, granitemoehybrid)
// fused the same way, which is the whole MLP of Granite 4's models without experts.
tensor_names granite_moe_names() {
  tensor_names n = llama_names();
  n.erase("gate");
  n.erase("up");
  n["router"] = "block_sparse_moe.router.layer.weight";
  n["experts_gate_up"] = "block_sparse_moe.input_linear.weight";
  n["experts_down"] = "block_sparse_moe.output_linear.weight";
  n["shared_gate_up"] = n["gate_up"] = "shared_mlp.input_linear.weight";
  n["shared_down"] = n["down"] = "shared_mlp.output_linear.weight";
  return n;
}

// A mixture of experts at feed_forward (Jamba, Llama 4): the router, the stacked experts, the dense
// layers' MLP, and the norm before it.
tensor_names feed_forward_moe_names(const std::string& norm) {
  return {{"gate", "feed_forward.gate_proj.weight"},         {"up", "feed_forward.up_proj.weight"},
          {"down", "feed_forward.down_proj.weight"},         {"norm", norm},
          {"router", "feed_forward.router.weight"},          {"experts_gate_up", "feed_forward.experts.gate_up_proj"},
          {"experts_down", "feed_forward.experts.down_proj"}};
}

stack_def moe_stack(tensor_names names, const moe_def* moe) {
  stack_def s = llama_stack(std::move(names), key("hidden_act"));
  s.kind = block_kind::moe;
  s.moe = moe;
  return s;
}

}  // namespace

const std::vector<architecture>& architectures() {
  static const moe_def mixtral{routing_family::mixtral, sparse_layers::all, key("num_local_experts"),
                               key("num_experts_per_tok"), key("intermediate_size")};
  static const moe_def qwen_moe{routing_family::qwen, sparse_layers::qwen_step, key("num_experts"),
                                key("num_experts_per_tok"), key("moe_intermediate_size")};
  static const moe_def olmoe{routing_family::qwen, sparse_layers::all, key("num_experts"), key("num_experts_per_tok"),
                             key("intermediate_size")};
  static const moe_def deepseek_v2{routing_family::deepseek_v2, sparse_layers::deepseek_first_k,
                                   key("n_routed_experts"), key("num_experts_per_tok"), key("moe_intermediate_size")};
  static const moe_def deepseek_v3{routing_family::deepseek_v3, sparse_layers::deepseek_first_k,
                                   key("n_routed_experts"), key("num_experts_per_tok"), key("moe_intermediate_size")};
  // Granite's: Transformers takes the softmax of the top k logits (JetMoeTopKGating), which is
  // Mixtral's renormalised top k of the softmax.
  static const moe_def granite_moe{routing_family::mixtral, sparse_layers::all, key("num_local_experts", 8),
                                   key("num_experts_per_tok", 2), key("intermediate_size")};
  static const moe_def granite_moe_shared{routing_family::mixtral,     sparse_layers::all,
                                          key("num_local_experts", 8), key("num_experts_per_tok", 2),
                                          key("intermediate_size"),    key("shared_intermediate_size", 0)};
  static const moe_def phimoe{routing_family::phimoe, sparse_layers::all, key("num_local_experts", 16),
                              key("num_experts_per_tok", 2), key("intermediate_size")};
  static const moe_def granite_hybrid{routing_family::mixtral,     sparse_layers::with_experts,
                                      key("num_local_experts", 8), key("num_experts_per_tok", 2),
                                      key("intermediate_size"),    key("shared_intermediate_size", 1024)};
  static const moe_def jamba{routing_family::jamba, sparse_layers::jamba, key("num_experts", 16),
                             key("num_experts_per_tok", 2), key("intermediate_size", 14336)};
  // DBRX's, in its config's ffn_config (DbrxFFNConfig's defaults).
  static const moe_def dbrx{routing_family::dbrx,
                            sparse_layers::all,
                            key("ffn_config.moe_num_experts", 4),
                            key("ffn_config.moe_top_k", 1),
                            key("ffn_config.ffn_hidden_size", 3584),
                            {"", "", nullptr},
                            stacked_layout::rows};
  // Llama 4's (Llama4TextConfig's defaults): the shared expert as wide as the routed ones.
  static const moe_def llama4{routing_family::llama4,         sparse_layers::llama4,
                              key("num_local_experts", 16),   key("num_experts_per_tok", 1),
                              key("intermediate_size", 8192), key("intermediate_size", 8192),
                              stacked_layout::in_out};
  // gpt-oss's (GptOssConfig's defaults; its attribute_map makes num_experts an alias of
  // num_local_experts, set after it, so the alias wins where a config has both).
  static const moe_def gpt_oss{routing_family::gpt_oss,
                               sparse_layers::all,
                               setting{"num_experts", "num_local_experts", 128},
                               key("num_experts_per_tok", 4),
                               key("intermediate_size", 2880),
                               {"", "", nullptr},
                               stacked_layout::in_out_interleaved};

  static const std::vector<architecture> all = [] {
    std::vector<architecture> a;
    // BERT's post-norm block; bert-base-uncased's own file still has TensorFlow's names.
    {
      stack_def s;
      s.prefixes = {"bert.encoder.layer.{}.", "roberta.encoder.layer.{}.", "encoder.layer.{}."};
      s.kind = block_kind::plain;
      s.pre_norm = false;
      s.d_model = key("hidden_size");
      s.d_ff = key("intermediate_size");
      s.layers = key("num_hidden_layers");
      s.eps = key("layer_norm_eps");
      s.act = key("hidden_act");
      s.names = plain_names("intermediate.dense", "output.dense", "output.LayerNorm.weight|output.LayerNorm.gamma",
                            "output.LayerNorm.bias|output.LayerNorm.beta");
      a.push_back({{"bert", "roberta", "xlm-roberta", "camembert"}, {s}, ""});
    }
    // BERT's block under other names and defaults. DistilBERT: ffn.lin1, ffn.lin2,
    // output_layer_norm, its own config keys, LayerNorm eps fixed in code (1e-12); MPNet
    // (all-mpnet-base-v2), DeBERTa-v2/v3 and ELECTRA: BERT's names and keys, with their classes'
    // defaults.
    a.push_back(
        {{"distilbert"},
         {post_norm_stack({"distilbert.transformer.layer.{}.", "transformer.layer.{}."},
                          layer_norm_names("ffn.lin1", "ffn.lin2", "output_layer_norm"), key("dim", 768),
                          key("hidden_dim", 3072), key("n_layers", 6), fixed(1e-12), key("activation", "gelu"))},
         ""});
    // (With BERT's alternatives for TensorFlow-converted files' LayerNorm.gamma / .beta.)
    const tensor_names bert_names =
        plain_names("intermediate.dense", "output.dense", "output.LayerNorm.weight|output.LayerNorm.gamma",
                    "output.LayerNorm.bias|output.LayerNorm.beta");
    a.push_back({{"mpnet"},
                 {post_norm_stack({"mpnet.encoder.layer.{}.", "encoder.layer.{}."}, bert_names, key("hidden_size", 768),
                                  key("intermediate_size", 3072), key("num_hidden_layers", 12),
                                  key("layer_norm_eps", 1e-12), key("hidden_act", "gelu"))},
                 ""});
    // DeBERTa-v2 and v3 (deberta-v2): its attention is its own, its MLP BERT's.
    a.push_back(
        {{"deberta-v2"},
         {post_norm_stack({"deberta.encoder.layer.{}.", "encoder.layer.{}."}, bert_names, key("hidden_size", 1536),
                          key("intermediate_size", 6144), key("num_hidden_layers", 24), key("layer_norm_eps", 1e-7),
                          key("hidden_act", "gelu"))},
         ""});
    a.push_back({{"electra"},
                 {post_norm_stack({"electra.encoder.layer.{}.", "encoder.layer.{}."}, bert_names,
                                  key("hidden_size", 256), key("intermediate_size", 1024), key("num_hidden_layers", 12),
                                  key("layer_norm_eps", 1e-12), key("hidden_act", "gelu"))},
                 ""});
    // GPT-2: Conv1D weights (in, out); mlp.c_proj, not attn.c_proj beside it; its widths and
    // activation required.
    {
      stack_def s = gpt2_keys_stack(layer_norm_names("mlp.c_fc", "mlp.c_proj", "ln_2"), nullptr, nullptr, nullptr);
      s.conv1d = true;
      a.push_back({{"gpt2"}, {s}, ""});
    }
    // ViT: BERT's names, but pre-norm (layernorm_after) and no output.LayerNorm.
    a.push_back({{"vit"},
                 {pre_norm_stack("", "", {"vit.encoder.layer.{}.", "encoder.layer.{}."},
                                 layer_norm_names("intermediate.dense", "output.dense", "layernorm_after"),
                                 key("hidden_size"), key("intermediate_size"), key("num_hidden_layers"),
                                 key("layer_norm_eps", 1e-12), key("hidden_act", "gelu"))},
                 ""});
    // GPT-NeoX (Pythia): with use_parallel_residual the MLP reads LN(X) of the layer's input
    // too, so the block is Y = X + MLP(LN(X)) either way.
    a.push_back({{"gpt_neox"},
                 {pre_norm_stack("", "", {"gpt_neox.layers.{}.", "layers.{}."},
                                 layer_norm_names("mlp.dense_h_to_4h", "mlp.dense_4h_to_h", "post_attention_layernorm"),
                                 key("hidden_size"), key("intermediate_size"), key("num_hidden_layers"),
                                 key("layer_norm_eps", 1e-5), key("hidden_act", "gelu"))},
                 ""});
    // Phi-1, 1.5 and 2: attention and MLP both read input_layernorm's LN(X) of the layer's
    // input (a parallel block), so the MLP's part is Y = X + MLP(LN(X)), the caller adding the
    // attention's output; the tanh GELU (gelu_new).
    a.push_back({{"phi"},
                 {pre_norm_stack("", "", {"model.layers.{}.", "layers.{}."},
                                 layer_norm_names("mlp.fc1", "mlp.fc2", "input_layernorm"), key("hidden_size", 2048),
                                 key("intermediate_size", 8192), key("num_hidden_layers", 24),
                                 key("layer_norm_eps", 1e-5), key("hidden_act", "gelu_new"))},
                 ""});
    // StarCoder2: c_fc, c_proj (nn.Linear, biases unless use_bias is false) after
    // post_attention_layernorm, the tanh GELU.
    {
      stack_def s =
          pre_norm_stack("", "", {"model.layers.{}.", "layers.{}."},
                         layer_norm_names("mlp.c_fc", "mlp.c_proj", "post_attention_layernorm"),
                         key("hidden_size", 3072), key("intermediate_size", 12288), key("num_hidden_layers", 30),
                         key("norm_epsilon", 1e-5), key("hidden_act", "gelu_pytorch_tanh"));
      s.biases = key("use_bias", true);
      a.push_back({{"starcoder2"}, {s}, ""});
    }
    // GPT-J: always a parallel block, attention and MLP reading ln_1 of the layer's input, so
    // the MLP's part is Y = X + MLP(ln_1(X)), the caller adding the attention's output; fc_in,
    // fc_out (nn.Linear, biases), gelu_new; n_inner null means 4 n_embd.
    {
      stack_def s = gpt2_keys_stack(layer_norm_names("mlp.fc_in", "mlp.fc_out", "ln_1"), 4096, 28, "gelu_new");
      a.push_back({{"gptj"}, {s}, ""});
    }
    // GPT-BigCode (StarCoder, SantaCoder): GPT-2's block with nn.Linear weights (out, in): c_fc,
    // c_proj after ln_2, the tanh GELU by default.
    {
      stack_def s = gpt2_keys_stack(layer_norm_names("mlp.c_fc", "mlp.c_proj", "ln_2"), 768, 12, "gelu_pytorch_tanh");
      a.push_back({{"gpt_bigcode"}, {s}, ""});
    }
    // BLOOM: dense_h_to_4h, dense_4h_to_h (4 hidden_size wide, biases) after
    // post_attention_layernorm, the MLP adding the residual; its GELU (bloom_gelu_forward) is the
    // tanh form written 0.79788456 x (1 + 0.044715 x^2), fixed in the code. A legacy n_embed wins
    // over hidden_size, as BloomConfig takes it, and num_hidden_layers (its attribute_map's alias) over n_layer.
    {
      stack_def s = pre_norm_stack(
          "", "", {"transformer.h.{}.", "h.{}."},
          layer_norm_names("mlp.dense_h_to_4h", "mlp.dense_4h_to_h", "post_attention_layernorm"),
          setting{"n_embed", "hidden_size", 64}, fixed(nullptr), setting{"num_hidden_layers", "n_layer", 2},
          key("layer_norm_epsilon", 1e-5), fixed("gelu_pytorch_tanh"));
      s.d_ff_times_d_model = 4;
      s.by_config = [](const settings& c, tensor_names&) {
        if (c.boolean(key("apply_residual_connection_post_layernorm", false))) {
          throw std::invalid_argument(
              c.where() +
              ": \"apply_residual_connection_post_layernorm\" is true: the MLP's residual is then its LayerNorm's "
              "output, LN(X) + MLP(LN(X)), which FeedForward's pre-norm block (X + MLP(LN(X))) is not");
        }
        if (c.integer(key("pretraining_tp", 1)) > 1 && c.boolean(key("slow_but_exact", false))) {
          throw std::invalid_argument(c.where() +
                                      ": \"slow_but_exact\" is true with \"pretraining_tp\" above 1: Transformers' "
                                      "BloomMLP then runs dense_4h_to_h without its bias, which egelu does not copy");
        }
      };
      a.push_back({{"bloom"}, {s}, ""});
    }
    // Falcon: dense_h_to_4h, dense_4h_to_h, biases only if `bias` (false by default), exact GELU
    // (`activation`), ffn_hidden_size null meaning 4 hidden_size (n_embed, a legacy key, wins).
    // The config chooses the LayerNorm the MLP reads (FalconDecoderLayer): a parallel block
    // (parallel_attn, the default) reads input_layernorm, or ln_mlp beside the attention's ln_attn
    // when new_decoder_architecture has two (num_ln_in_parallel_attn, 2 if null); the MLP's part is
    // then Y = X + MLP(LN(X)), the caller adding the attention's output. Otherwise the MLP reads
    // post_attention_layernorm after the attention's residual, as GPT-2. The layouts whose forward
    // fails in Transformers (new_decoder_architecture without parallel_attn, two norms in the old
    // architecture, counts other than 1 and 2 in the new) are refused. ffn_hidden_size null is
    // 4 times the width n_embed gave (FalconConfig since 5.0; 4.x took 4 hidden_size).
    {
      stack_def s =
          pre_norm_stack("", "", {"transformer.h.{}.", "h.{}."},
                         layer_norm_names("mlp.dense_h_to_4h", "mlp.dense_4h_to_h", "input_layernorm"),
                         setting{"n_embed", "hidden_size", 4544}, key("ffn_hidden_size"), key("num_hidden_layers", 32),
                         key("layer_norm_epsilon", 1e-5), key("activation", "gelu"));
      s.d_ff_times_d_model = 4;
      s.biases = key("bias", false);
      s.by_config = [](const settings& c, tensor_names& names) {
        const bool new_architecture = c.boolean(key("new_decoder_architecture", false));
        const bool parallel = c.boolean(key("parallel_attn", true));
        const auto refuse = [](const std::string& what) {
          throw std::invalid_argument(what + ": a layout whose forward fails in Transformers' FalconDecoderLayer, " +
                                      "which egelu does not guess");
        };
        if (new_architecture && !parallel) {
          refuse(c.where() +
                 "'s \"new_decoder_architecture\" is true and \"parallel_attn\" false (the layer "
                 "builds post_attention_layernorm and its forward reads ln_attn or leaves the MLP's "
                 "input unset)");
        }
        std::string norm = "post_attention_layernorm";  // a sequential block; the count is not read
        if (parallel) {
          // Two norms (new_decoder_architecture's default) give ln_attn and ln_mlp; any other count one
          // input_layernorm, which the new architecture's forward reads only for a count of 1.
          std::string count_from;
          long long norms = new_architecture ? 2 : 1;
          if (c.has("num_ln_in_parallel_attn")) {
            norms = c.integer(key("num_ln_in_parallel_attn"), &count_from, std::numeric_limits<long long>::min());
          }
          if (new_architecture && norms != 1 && norms != 2) {
            refuse(count_from + " is " + std::to_string(norms) +
                   " with \"new_decoder_architecture\" (its forward leaves the MLP's input unset)");
          }
          if (!new_architecture && norms == 2) {
            refuse(count_from +
                   " is 2 without \"new_decoder_architecture\" (the layer builds ln_attn and ln_mlp, "
                   "and its forward reads input_layernorm)");
          }
          norm = norms == 2 ? "ln_mlp" : "input_layernorm";
        }
        read_layer_norm(names, norm);
      };
      a.push_back({{"falcon"}, {s}, ""});
    }
    // CLIP's two towers, and each alone.
    a.push_back({{"clip"},
                 {clip_stack("text", "text_config", "text_model.encoder.layers.{}.", 512, 2048),
                  clip_stack("vision", "vision_config", "vision_model.encoder.layers.{}.", 768, 3072)},
                 ""});
    a.push_back({{"clip_text_model"}, {clip_stack("", "", "text_model.encoder.layers.{}.", 512, 2048)}, ""});
    a.push_back({{"clip_vision_model"}, {clip_stack("", "", "vision_model.encoder.layers.{}.", 768, 3072)}, ""});
    a.push_back({{"whisper"}, whisper_stacks(), ""});
    // LLaMA and the models that kept its MLP, with their config classes' defaults (the widths'
    // matter where a vision-language model's text_config leaves them out, as llava-1.5's does; the
    // tensors' shapes are checked against them).
    struct llama_like {
      const char* type;
      double eps;
      long long d_model, d_ff, layers;
    };
    for (const llama_like& t : {llama_like{"llama", 1e-6, 4096, 11008, 32},
                                {"mistral", 1e-6, 4096, 14336, 32},
                                {"qwen2", 1e-6, 4096, 22016, 32},
                                {"qwen3", 1e-6, 4096, 22016, 32},
                                {"ministral", 1e-6, 4096, 14336, 32},
                                {"smollm3", 1e-6, 2048, 11008, 36},
                                {"seed_oss", 1e-6, 4096, 27648, 64},
                                {"hunyuan_v1_dense", 1e-5, 4096, 11008, 32},
                                {"helium", 1e-8, 2560, 7040, 24}}) {
      stack_def s = llama_stack(llama_names(), key("hidden_act", "silu"), key("rms_norm_eps", t.eps));
      s.d_model = key("hidden_size", t.d_model);
      s.d_ff = key("intermediate_size", t.d_ff);
      s.layers = key("num_hidden_layers", t.layers);
      a.push_back({{t.type}, {s}, ""});
    }
    // Vision-language models: their language model's layers, under text_config (whose model_type, or
    // the config class's default, names the row), as Transformers saves them ("language_model.model.")
    // and as it holds them since 4.52 ("model.language_model."), which some trainers save; Idefics3's and
    // SmolVLM's at "model.text_model.", never renamed.
    const std::vector<std::string> renamed = {"language_model.model.layers.{}.", "model.language_model.layers.{}."},
                                   text_model = {"model.text_model.layers.{}."},
                                   llama4_lm = {"language_model.model.layers.{}."};  // (never renamed)
    struct vlm {
      const char *type, *text_type;
      const std::vector<std::string>& prefixes;
      bool absent_means_defaults;  // text_config absent: the text model class's own defaults
    };
    for (const vlm& v : {vlm{"llava", "llama", renamed, true}, vlm{"llava_next", "llama", renamed, true},
                         vlm{"mistral3", "mistral", renamed, false}, vlm{"paligemma", "gemma", renamed, false},
                         vlm{"internvl", "qwen2", renamed, true}, vlm{"idefics3", "llama", text_model, false},
                         vlm{"smolvlm", "llama", text_model, false}, vlm{"llama4", "llama4_text", llama4_lm, true}}) {
      stack_def s;
      s.section = "text_config";
      s.prefixes = v.prefixes;
      s.nested_default_type = v.text_type;
      // Without a text_config, Mistral3Config, PaliGemmaConfig, Idefics3Config and SmolVLMConfig build
      // their language model with values other than its class's defaults (Mistral 3: 5120 / 32768 / 40,
      // eps 1e-5; Idefics3: eps 1e-5): refused rather than guessed. LLaVA's, InternVL's and Llama 4's take the class's.
      s.section_required = !v.absent_means_defaults;
      a.push_back({{v.type}, {s}, ""});
    }
    // Qwen2-VL and Qwen2.5-VL: Qwen2's MLP; the text settings at the top level (or, saved by newer
    // Transformers, in text_config); the layers at model.layers (or model.language_model.layers).
    for (const char* type : {"qwen2_vl", "qwen2_5_vl"}) {
      stack_def s = llama_stack(llama_names(), key("hidden_act"));
      s.section = "text_config";
      s.section_or_top = true;
      s.prefixes = {"model.layers.{}.", "model.language_model.layers.{}."};
      a.push_back({{type}, {s}, ""});
    }
    // Granite: LLaMA's MLP, its output times residual_multiplier before the residual is added.
    {
      stack_def s = llama_stack(llama_names(), key("hidden_act", "silu"), key("rms_norm_eps", 1e-6));
      s.output_scale = key("residual_multiplier", 1.0);
      a.push_back({{"granite"}, {s}, ""});
    }
    // Phi-3 (and Phi-3.5, Phi-4-mini): gate and up in one tensor, the gate's rows first.
    {
      tensor_names n = llama_names();
      n.erase("gate");
      n.erase("up");
      n["gate_up"] = "mlp.gate_up_proj.weight";
      a.push_back({{"phi3"}, {llama_stack(n, key("hidden_act"))}, ""});
      // GLM (GlmMLP is Phi3MLP), and GLM-4 with an RMSNorm after the MLP too.
      a.push_back({{"glm"}, {llama_stack(n, key("hidden_act", "silu"), key("rms_norm_eps", 1.5625e-7))}, ""});
      n["post_norm"] = "post_mlp_layernorm.weight";
      a.push_back({{"glm4"}, {llama_stack(n, key("hidden_act", "silu"), key("rms_norm_eps", 1.5625e-7))}, ""});
    }
    // Gemma 1: hidden_activation, else the tanh GELU whatever hidden_act says (its 1.0
    // configs say "gelu" for a model trained with the tanh form); RMSNorm weight + 1.
    {
      stack_def s =
          llama_stack(llama_names(), key("hidden_activation", "gelu_pytorch_tanh"), key("rms_norm_eps", 1e-6));
      s.plus_one = true;
      s.d_model = key("hidden_size", 3072);
      s.d_ff = key("intermediate_size", 24576);
      s.layers = key("num_hidden_layers", 28);
      a.push_back({{"gemma"}, {s}, ""});
    }
    // Gemma 2 and 3: the MLP between norms of its own.
    {
      stack_def s =
          llama_stack(gemma2_names(), key("hidden_activation", "gelu_pytorch_tanh"), key("rms_norm_eps", 1e-6));
      s.plus_one = true;
      a.push_back({{"gemma2"}, {s}, ""});
    }
    a.push_back({{"gemma3_text"}, {gemma3_text_stack("", "", {"model.layers.{}.", "layers.{}."})}, ""});
    // Gemma 3 with its SigLIP vision tower: the released names, and those of Transformers 4.52 on.
    a.push_back(
        {{"gemma3"},
         {gemma3_text_stack("text", "text_config",
                            {"language_model.model.layers.{}.", "model.language_model.layers.{}."}),
          pre_norm_stack(
              "vision", "vision_config",
              {"vision_tower.vision_model.encoder.layers.{}.", "model.vision_tower.vision_model.encoder.layers.{}."},
              clip_names(), key("hidden_size", 768), key("intermediate_size", 3072), key("num_hidden_layers", 12),
              key("layer_norm_eps", 1e-6), key("hidden_act", "gelu_pytorch_tanh"))},
         "text"});
    // T5 (its default feed_forward_proj "relu"), mT5 and umT5 ("gated-gelu").
    a.push_back({{"t5"}, t5_stacks("relu"), ""});
    a.push_back({{"mt5", "umt5"}, t5_stacks("gated-gelu"), ""});
    // LayerNorm before the gated MLP. ModernBERT: Wi holds both halves, act(first) * second
    // (the gate's rows first), Wo; mlp_norm (nn.LayerNorm, a bias if norm_bias); exact GELU.
    {
      tensor_names n{{"gate_up", "mlp.Wi.weight"},
                     {"down", "mlp.Wo.weight"},
                     {"norm", "mlp_norm.weight"},
                     {"norm_bias", "mlp_norm.bias"}};
      stack_def s = llama_stack(n, key("hidden_activation", "gelu"), key("norm_eps", 1e-5));
      s.d_model = key("hidden_size", 768);
      s.d_ff = key("intermediate_size", 1152);
      s.layers = key("num_hidden_layers", 22);
      s.gated_norm = GatedNorm::layer;
      s.norm_bias = key("norm_bias", false);
      a.push_back({{"modernbert"}, {s}, ""});
    }
    // StableLM: nn.LayerNorm with its bias; post_attention_layernorm, or, with
    // use_parallel_residual (where that module does not exist), input_layernorm, which the
    // attention reads too: the MLP's part, the caller adding the attention's output.
    {
      tensor_names n = llama_names();
      n["norm_bias"] = "post_attention_layernorm.bias";
      stack_def s = llama_stack(n, key("hidden_act", "silu"), key("layer_norm_eps", 1e-5));
      s.gated_norm = GatedNorm::layer;
      s.norm_bias = fixed(true);
      s.by_config = [](const settings& c, tensor_names& names) {
        if (c.boolean(key("use_parallel_residual", false))) read_layer_norm(names, "input_layernorm");
      };
      a.push_back({{"stablelm"}, {s}, ""});
    }
    // Cohere (Command R) and Cohere 2: a parallel block reading input_layernorm, a LayerNorm
    // without bias (CohereLayerNorm); the MLP's part, the caller adding the attention's output.
    {
      tensor_names n = llama_names();
      n["norm"] = "input_layernorm.weight";
      stack_def s = llama_stack(n, key("hidden_act", "silu"), key("layer_norm_eps", 1e-5));
      s.gated_norm = GatedNorm::layer;
      a.push_back({{"cohere", "cohere2"}, {s}, ""});
    }
    // OLMo: a LayerNorm without weight or bias (OlmoLayerNorm, eps 1e-5 in its code), so no
    // norm tensor: the block's weight is ones.
    {
      tensor_names n = llama_names();
      n.erase("norm");
      stack_def s = llama_stack(n, key("hidden_act", "silu"), fixed(1e-5));
      s.gated_norm = GatedNorm::layer;
      a.push_back({{"olmo"}, {s}, ""});
    }
    // OLMo 2 and 3: no norm before the MLP, RMSNorm after it (post_attention_layernorm
    // normalises the attention's output there).
    {
      tensor_names n = llama_names();
      n.erase("norm");
      n["post_norm"] = "post_feedforward_layernorm.weight";
      stack_def s = llama_stack(n, key("hidden_act", "silu"), key("rms_norm_eps", 1e-5));
      s.gated_norm = GatedNorm::none;
      a.push_back({{"olmo2", "olmo3"}, {s}, ""});
      a.push_back({{"exaone4"}, {s}, ""});  // Exaone4DecoderLayer is Olmo2DecoderLayer
    }
    // Mixtures of experts.
    a.push_back({{"mixtral"}, {moe_stack(moe_names("block_sparse_moe", "w1", "w3", "w2"), &mixtral)}, ""});
    a.back().stacks[0].names["router"] = "block_sparse_moe.gate.weight|mlp.gate.weight";
    a.push_back({{"qwen2_moe", "qwen3_moe"},
                 {moe_stack(moe_names("mlp", "gate_proj", "up_proj", "down_proj"), &qwen_moe)},
                 ""});
    {
      tensor_names& n = a.back().stacks[0].names;
      n["shared_gate"] = "mlp.shared_expert.gate_proj.weight";
      n["shared_up"] = "mlp.shared_expert.up_proj.weight";
      n["shared_down"] = "mlp.shared_expert.down_proj.weight";
      n["shared_expert_gate"] = "mlp.shared_expert_gate.weight";
    }
    a.push_back({{"olmoe"}, {moe_stack(moe_names("mlp", "gate_proj", "up_proj", "down_proj"), &olmoe)}, ""});
    for (const auto& [type, moe] : {std::pair<const char*, const moe_def*>{"deepseek_v2", &deepseek_v2},
                                    std::pair<const char*, const moe_def*>{"deepseek_v3", &deepseek_v3}}) {
      a.push_back({{type}, {moe_stack(moe_names("mlp", "gate_proj", "up_proj", "down_proj"), moe)}, ""});
      tensor_names& n = a.back().stacks[0].names;
      // A buffer of V3's router, F32 in the Hub's BF16 files.
      if (moe == &deepseek_v3) n["correction_bias"] = "mlp.gate.e_score_correction_bias";
      n["shared_gate"] = "mlp.shared_experts.gate_proj.weight";
      n["shared_up"] = "mlp.shared_experts.up_proj.weight";
      n["shared_down"] = "mlp.shared_experts.down_proj.weight";
    }
    // Phi-3.5-MoE: Mixtral's names and experts, a LayerNorm with its bias before the mixture (eps
    // rms_norm_eps, as PhimoeDecoderLayer builds it), the sparsemixer's routing.
    {
      tensor_names n = moe_names("block_sparse_moe", "w1", "w3", "w2");
      n["router"] = "block_sparse_moe.gate.weight|mlp.router.weight|mlp.gate.weight";
      n["norm_bias"] = "post_attention_layernorm.bias";
      stack_def s = moe_stack(n, &phimoe);
      s.act = key("hidden_act", "silu");
      s.eps = key("rms_norm_eps", 1e-5);
      s.gated_norm = GatedNorm::layer;
      s.norm_bias = fixed(true);
      a.push_back({{"phimoe"}, {s}, ""});
    }
    // Granite 3's (granitemoe; granitemoeshared with its shared MLP) and Granite 4's (granitemoehybrid,
    // whose Mamba or attention layers all have the shared MLP, and the experts unless there are 0):
    // the MLP's output, routed and shared, times residual_multiplier before the residual is added.
    for (const auto& [type, moe] : {std::pair<const char*, const moe_def*>{"granitemoe", &granite_moe},
                                    std::pair<const char*, const moe_def*>{"granitemoeshared", &granite_moe_shared},
                                    std::pair<const char*, const moe_def*>{"granitemoehybrid", &granite_hybrid}}) {
      stack_def s = moe_stack(granite_moe_names(), moe);
      s.act = key("hidden_act", "silu");
      s.eps = key("rms_norm_eps", 1e-6);
      s.d_ff = key("shared_intermediate_size", 1024);  // the dense layers' (Granite 4 without experts)
      s.output_scale = key("residual_multiplier", 1.0);
      a.push_back({{type}, {s}, ""});
    }
    // Jamba (Jamba 1.5, Jamba-v0.1): Mamba and attention layers, each with an MLP at feed_forward, the
    // mixture of experts in every expert_layer_period-th (Mixtral's experts, saved per expert or
    // stacked), the other layers a gated MLP as wide as an expert; pre_ff_layernorm before it.
    {
      tensor_names n = feed_forward_moe_names("pre_ff_layernorm.weight");
      for (const char* proj : {"gate", "up", "down"}) {
        n[std::string("expert_") + proj] = std::string("feed_forward.experts.{e}.") + proj + "_proj.weight";
      }
      stack_def s = moe_stack(n, &jamba);
      s.act = key("hidden_act", "silu");
      s.eps = key("rms_norm_eps", 1e-6);
      s.d_model = key("hidden_size", 4096);
      s.d_ff = key("intermediate_size", 14336);
      s.layers = key("num_hidden_layers", 32);
      a.push_back({{"jamba"}, {s}, ""});
    }
    // DBRX: transformer.blocks.N., the MLP ffn after norm_attn_norm.norm_2 (nn.LayerNorm without bias,
    // its default eps), the experts' w1, v1 and w2 each (E d_ff, d) (DbrxExpertGLU), the settings of the
    // MLP in ffn_config.
    {
      stack_def s;
      s.prefixes = {"transformer.blocks.{}.", "blocks.{}."};
      s.kind = block_kind::moe;
      s.moe = &dbrx;
      s.gated_norm = GatedNorm::layer;
      s.norm_bias = fixed(false);
      s.d_model = key("d_model", 2048);
      s.d_ff = key("ffn_config.ffn_hidden_size", 3584);
      s.layers = key("n_layers", 24);
      s.eps = fixed(1e-5);
      s.act = key("ffn_config.ffn_act_fn.name", "silu");
      s.names = {{"norm", "norm_attn_norm.norm_2.weight"},
                 {"router", "ffn.router.layer.weight"},
                 {"experts_gate", "ffn.experts.mlp.w1"},
                 {"experts_up", "ffn.experts.mlp.v1"},
                 {"experts_down", "ffn.experts.mlp.w2"}};
      a.push_back({{"dbrx"}, {s}, ""});
    }
    // Llama 4's language model (llama4_text; llama4's text_config is read with the VLMs above): in
    // its MoE layers the router, the experts stacked for bmm and the shared expert, all at
    // feed_forward; its dense layers' MLP there too, intermediate_size_mlp wide.
    {
      tensor_names n = feed_forward_moe_names("post_attention_layernorm.weight");
      for (const char* proj : {"gate", "up", "down"}) {
        n[std::string("shared_") + proj] = std::string("feed_forward.shared_expert.") + proj + "_proj.weight";
      }
      stack_def s = moe_stack(n, &llama4);
      s.act = key("hidden_act", "silu");
      s.eps = key("rms_norm_eps", 1e-5);
      s.d_model = key("hidden_size", 5120);
      s.d_ff = key("intermediate_size_mlp", 16384);
      s.layers = key("num_hidden_layers", 48);
      a.push_back({{"llama4_text"}, {s}, ""});
    }
    // gpt-oss: every layer a mixture of experts (GptOssMLP), its router and experts with biases.
    {
      stack_def s = moe_stack({{"norm", "post_attention_layernorm.weight"},
                               {"router", "mlp.router.weight"},
                               {"router_bias", "mlp.router.bias"},
                               {"experts_gate_up", "mlp.experts.gate_up_proj"},
                               {"experts_gate_up_bias", "mlp.experts.gate_up_proj_bias"},
                               {"experts_down", "mlp.experts.down_proj"},
                               {"experts_down_bias", "mlp.experts.down_proj_bias"}},
                              &gpt_oss);
      s.act = fixed("silu");  // (GptOssExperts reads no hidden_act: the family's clamped SwiGLU)
      s.eps = key("rms_norm_eps", 1e-5);
      s.d_model = key("hidden_size", 2880);
      s.d_ff = key("intermediate_size", 2880);
      s.layers = key("num_hidden_layers", 36);
      a.push_back({{"gpt_oss"}, {s}, ""});
    }
    return a;
  }();
  return all;
}

const char* unsupported_reason(const std::string& model_type) {
  if (model_type == "phi-msft" || model_type == "mixformer-sequential") {
    return "it is Phi's format from before Transformers took it in (trust_remote_code: its layers' mixer and ln "
           "modules); the Hub's Phi-1, 1.5 and 2 are saved as model_type \"phi\" since, which egelu loads";
  }
  if (model_type == "RefinedWeb" || model_type == "RefinedWebModel") {
    return "it is Falcon's format from before Transformers took it in (trust_remote_code: n_head_kv and the "
           "layer's norms implied by the model type); the Hub's Falcon checkpoints are saved as model_type "
           "\"falcon\" since, which egelu loads";
  }
  return nullptr;
}

}  // namespace hf
}  // namespace egelu
