// Hugging Face names and settings, one description per architecture, read against
// config.json and the checkpoint's tensors (hf_checkpoint.hpp).
#include "checkpoints/hf_checkpoint.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace egelu {
namespace hf {
namespace {

using json = nlohmann::json;

// Where an architecture keeps its MLP and its settings.
struct architecture {
  std::vector<std::string> model_types;
  mlp_kind kind;
  std::vector<std::string> layer_prefixes;  // "{}" is the layer's number
  // Tensor names under the layer's prefix: W1 b1 W2 b2 norm weight, norm bias (first
  // that exists of each '|' list), or gate up down norm.
  std::vector<std::string> names;
  bool conv1d = false;  // weights stored (in, out)
  std::string d_model_key, d_ff_key, layers_key, eps_key, act_key;
};

const std::vector<architecture>& architectures() {
  static const std::vector<architecture> all = {
      {{"bert", "roberta", "xlm-roberta"},
       mlp_kind::post_norm,
       {"bert.encoder.layer.{}.", "roberta.encoder.layer.{}.", "encoder.layer.{}."},
       {"intermediate.dense.weight", "intermediate.dense.bias", "output.dense.weight", "output.dense.bias",
        // bert-base-uncased's own checkpoint still has TensorFlow's names
        "output.LayerNorm.weight|output.LayerNorm.gamma", "output.LayerNorm.bias|output.LayerNorm.beta"},
       false,
       "hidden_size",
       "intermediate_size",
       "num_hidden_layers",
       "layer_norm_eps",
       "hidden_act"},
      {{"gpt2"},
       mlp_kind::pre_norm,
       {"transformer.h.{}.", "h.{}."},
       // mlp.c_proj, not attn.c_proj beside it
       {"mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias", "ln_2.weight", "ln_2.bias"},
       true,
       "n_embd",
       "n_inner",
       "n_layer",
       "layer_norm_epsilon",
       "activation_function"},
      {{"llama", "mistral", "qwen2", "gemma"},
       mlp_kind::gated,
       {"model.layers.{}.", "layers.{}."},
       {"mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", "post_attention_layernorm.weight"},
       false,
       "hidden_size",
       "intermediate_size",
       "num_hidden_layers",
       "rms_norm_eps",
       "hidden_act"},  // Gemma: hidden_activation, else gelu_pytorch_tanh (below)
  };
  return all;
}

// Model types whose MLP egelu's blocks are not, with the reason.
const char* unsupported_reason(const std::string& model_type) {
  if (model_type == "gemma2" || model_type == "gemma3" || model_type == "gemma3_text") {
    return "its MLP has norms of its own around it (pre_feedforward_layernorm, post_feedforward_layernorm)";
  }
  if (model_type == "qwen2_moe" || model_type == "mixtral" || model_type == "qwen3_moe") {
    return "its MLP is a mixture of experts";
  }
  return nullptr;
}

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

json read_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open " + path + ": " + std::strerror(errno) + " (a Hugging Face checkpoint folder has one)");
  try {
    json config = json::parse(in);
    if (!config.is_object()) fail(path + ": not a JSON object");
    return config;
  } catch (const json::exception& e) {
    fail(path + ": not valid JSON: " + e.what());
  }
}

std::string string_setting(const json& config, const std::string& path, const std::string& key) {
  const auto it = config.find(key);
  if (it == config.end()) fail(path + " has no \"" + key + "\"");
  if (!it->is_string()) fail(path + ": \"" + key + "\" is " + it->dump() + ", not a string");
  return it->get<std::string>();
}

long long integer_setting(const json& config, const std::string& path, const std::string& key) {
  const auto it = config.find(key);
  if (it == config.end()) fail(path + " has no \"" + key + "\"");
  if (!it->is_number_integer() || it->get<long long>() <= 0) {
    fail(path + ": \"" + key + "\" is " + it->dump() + ", not a positive integer");
  }
  return it->get<long long>();
}

double number_setting(const json& config, const std::string& path, const std::string& key) {
  const auto it = config.find(key);
  if (it == config.end()) fail(path + " has no \"" + key + "\"");
  if (!it->is_number() || !(it->get<double>() > 0))
    fail(path + ": \"" + key + "\" is " + it->dump() + ", not a positive number");
  return it->get<double>();
}

// Hugging Face's ACT2FN names for the activations egelu's blocks run.
activation activation_named(const std::string& name, const std::string& where) {
  // gelu and gelu_python: x Phi(x); the rest: the tanh form (gelu_fast and gelu_accurate
  // write the same function another way; gelu_pytorch_tanh is PyTorch's approximate='tanh').
  if (name == "gelu" || name == "gelu_python") return activation::gelu_exact;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast" || name == "gelu_accurate") {
    return activation::gelu_tanh;
  }
  if (name == "silu" || name == "swish") return activation::silu;
  fail(where + " is \"" + name +
       "\", an activation egelu's blocks do not run (they run gelu, gelu_python, gelu_new, gelu_pytorch_tanh, "
       "gelu_fast, gelu_accurate, silu, swish)");
}

std::string with_layer(const std::string& prefix, int layer) {
  const std::size_t at = prefix.find("{}");
  return prefix.substr(0, at) + std::to_string(layer) + prefix.substr(at + 2);
}

// The first of the '|'-separated names present under the prefix, or the first name.
std::string present_name(const safetensors::Checkpoint& c, const std::string& prefix, const std::string& names) {
  std::istringstream alternatives(names);
  std::string name, first;
  while (std::getline(alternatives, name, '|')) {
    if (first.empty()) first = name;
    if (c.contains(prefix + name)) return prefix + name;
  }
  return prefix + first;
}

std::string shape_string(long long a, long long b = -1) {
  return b < 0 ? "(" + std::to_string(a) + ",)" : "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

// The tensor, whose shape must be `shape`; `why` says where the expected shape comes from.
const safetensors::Tensor& expect(const safetensors::Checkpoint& c, const std::string& name,
                                  const std::vector<long long>& shape, const std::string& why) {
  const safetensors::Tensor& t = c.tensor(name);  // throws naming the folder and what the layer has
  bool ok = t.shape.size() == shape.size();
  for (std::size_t i = 0; ok && i < shape.size(); ++i) ok = (long long)(t.shape[i]) == shape[i];
  if (!ok) {
    fail(t.file + ": tensor '" + name + "' is " + t.shape_string() + " but must be " +
         (shape.size() == 1 ? shape_string(shape[0]) : shape_string(shape[0], shape[1])) + " (" + why + ")");
  }
  return t;
}

}  // namespace

gemm::stored stored_of(safetensors::DType dtype) {
  switch (dtype) {
    case safetensors::DType::F64:
      return gemm::stored::f64;
    case safetensors::DType::F32:
      return gemm::stored::f32;
    case safetensors::DType::F16:
      return gemm::stored::f16;
    case safetensors::DType::BF16:
      return gemm::stored::bf16;
  }
  return gemm::stored::f32;
}

gemm::matrix_view tensor_ref::matrix() const {
  const auto rows = gemm::index(tensor->shape[0]), cols = gemm::index(tensor->shape[1]);
  // (out, in) row-major as nn.Linear; Conv1D's (in, out) read transposed.
  return transposed ? gemm::matrix_view{tensor->data, stored_of(tensor->dtype), cols, rows, 1, cols}
                    : gemm::matrix_view{tensor->data, stored_of(tensor->dtype), rows, cols, cols, 1};
}

mlp_layer open_mlp_layer(const std::string& path, int layer, bool want_gated) {
  const std::string dir = path.empty() || path.back() == '/' ? path : path + "/";
  const json config = read_config(dir + "config.json");
  mlp_layer m(safetensors::Checkpoint::open(path), dir + "config.json");
  m.model_type = string_setting(config, m.config, "model_type");
  if (const char* why = unsupported_reason(m.model_type)) {
    fail(m.config + ": model_type \"" + m.model_type + "\" is not supported: " + why);
  }
  const architecture* arch = nullptr;
  std::string known;
  for (const architecture& a : architectures()) {
    for (const std::string& type : a.model_types) {
      known += (known.empty() ? "" : ", ") + type;
      if (type == m.model_type) arch = &a;
    }
  }
  if (!arch) fail(m.config + ": model_type \"" + m.model_type + "\" is not one egelu knows (" + known + ")");
  m.kind = arch->kind;
  if ((m.kind == mlp_kind::gated) != want_gated) {
    fail(m.config + ": model_type \"" + m.model_type + "\" has a " + (want_gated ? "plain" : "gated") +
         " MLP: load it with egelu::" + (want_gated ? "FeedForward" : "GatedFeedForward"));
  }

  // Settings.
  if (m.model_type == "gemma") {
    // Gemma 1.0's configs say hidden_act "gelu" though the model was trained with the tanh
    // form; Transformers runs gelu_pytorch_tanh unless hidden_activation says otherwise.
    m.act = config.contains("hidden_activation") && !config["hidden_activation"].is_null()
                ? activation_named(string_setting(config, m.config, "hidden_activation"),
                                   m.config + ": \"hidden_activation\"")
                : activation::gelu_tanh;
    m.plus_one = true;
  } else {
    m.act = activation_named(string_setting(config, m.config, arch->act_key), m.config + ": \"" + arch->act_key + "\"");
  }
  if (m.kind != mlp_kind::gated && m.act == activation::silu) {
    fail(m.config + ": the activation is SiLU, which egelu::FeedForward does not run (it runs GELU)");
  }
  if (config.contains("mlp_bias") && config["mlp_bias"].is_boolean() && config["mlp_bias"].get<bool>()) {
    fail(m.config + ": \"mlp_bias\" is true: egelu::GatedFeedForward has no biases");
  }
  m.eps = number_setting(config, m.config, arch->eps_key);
  m.d_model = integer_setting(config, m.config, arch->d_model_key);
  const std::string d_ff_why = m.config + "'s \"" + arch->d_ff_key + "\"";
  std::string ff_source = "d_ff = ";
  if (m.model_type == "gpt2" && (!config.contains("n_inner") || config["n_inner"].is_null())) {
    m.d_ff = 4 * m.d_model;  // GPT2MLP's inner width when n_inner is null
    ff_source += std::to_string(m.d_ff) + ", 4 n_embd since " + m.config + "'s \"n_inner\" is null";
  } else {
    m.d_ff = integer_setting(config, m.config, arch->d_ff_key);
    ff_source += std::to_string(m.d_ff) + " from " + d_ff_why;
  }
  const long long layers = integer_setting(config, m.config, arch->layers_key);
  if (layer < 0 || layer >= layers) {
    fail("layer " + std::to_string(layer) + " is out of range: " + m.config + " says \"" + arch->layers_key +
         "\": " + std::to_string(layers));
  }
  const std::string d_source =
      "d_model = " + std::to_string(m.d_model) + " from " + m.config + "'s \"" + arch->d_model_key + "\"";

  // The layer's tensors, under the first prefix whose first tensor is there.
  std::string prefix = with_layer(arch->layer_prefixes.front(), layer);
  for (const std::string& p : arch->layer_prefixes) {
    if (m.checkpoint.contains(present_name(m.checkpoint, with_layer(p, layer), arch->names[0]))) {
      prefix = with_layer(p, layer);
      break;
    }
  }
  const auto name = [&](int k) { return present_name(m.checkpoint, prefix, arch->names[std::size_t(k)]); };
  const long long d = m.d_model, f = m.d_ff;
  const std::string both = d_source + ", " + ff_source;
  const auto matrix = [&](int k, long long out, long long in) {
    const std::vector<long long> shape =
        arch->conv1d ? std::vector<long long>{in, out} : std::vector<long long>{out, in};
    return tensor_ref{&expect(m.checkpoint, name(k), shape,
                              std::string(arch->conv1d ? "Conv1D's (in, out)" : "nn.Linear's (out, in)") + ": " + both),
                      arch->conv1d};
  };
  const auto vector = [&](int k, long long size, const std::string& why) {
    return tensor_ref{&expect(m.checkpoint, name(k), {size}, why), false};
  };
  if (m.kind == mlp_kind::gated) {
    m.gate = matrix(0, f, d);
    m.up = matrix(1, f, d);
    m.down = matrix(2, d, f);
    m.norm_weight = vector(3, d, d_source);
  } else {
    m.w1 = matrix(0, f, d);
    m.b1 = vector(1, f, ff_source);
    m.w2 = matrix(2, d, f);
    m.b2 = vector(3, d, d_source);
    m.norm_weight = vector(4, d, d_source);
    m.norm_bias = vector(5, d, d_source);
  }
  return m;
}

}  // namespace hf
}  // namespace egelu
