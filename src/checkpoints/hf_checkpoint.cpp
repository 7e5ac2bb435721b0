// Reading a layer's feed-forward from a Hugging Face checkpoint: any row of the table
// (hf_architectures.hpp) the same way -- its stack, its settings (from the config, a
// fallback key or Transformers' default, each named in messages), the layer's kind
// (a mixture of experts' dense layers are gated MLPs) and its tensors, checked against
// the shapes the settings give.
#include "checkpoints/hf_checkpoint.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "checkpoints/config_settings.hpp"
#include "checkpoints/hf_architectures.hpp"

namespace egelu {
namespace hf {
namespace {

using json = nlohmann::json;

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

// Hugging Face's ACT2FN names for the activations egelu's blocks run.
activation activation_named(const std::string& name, const std::string& where) {
  // gelu and gelu_python: x Phi(x); the tanh form under four names (gelu_fast and
  // gelu_accurate write the same function another way; gelu_pytorch_tanh is PyTorch's
  // approximate='tanh'); QuickGELU x sigmoid(1.702 x); SiLU.
  if (name == "gelu" || name == "gelu_python") return activation::gelu_exact;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast" || name == "gelu_accurate" ||
      name == "gelu_python_tanh") {
    return activation::gelu_tanh;
  }
  if (name == "quick_gelu") return activation::quick_gelu;
  if (name == "silu" || name == "swish") return activation::silu;
  fail(where + " is \"" + name +
       "\", an activation egelu's blocks do not run (they run gelu, gelu_python, gelu_new, gelu_pytorch_tanh, "
       "gelu_python_tanh, gelu_fast, gelu_accurate, quick_gelu, silu, swish)");
}

const char* block_name(block_kind k) {
  switch (k) {
    case block_kind::plain:
      return "egelu::FeedForward";
    case block_kind::gated:
      return "egelu::GatedFeedForward";
    case block_kind::moe:
      return "egelu::MoeFeedForward";
  }
  return "";
}

std::string with_number(const std::string& pattern, const std::string& slot, long long n) {
  const std::size_t at = pattern.find(slot);
  return at == std::string::npos ? pattern
                                 : pattern.substr(0, at) + std::to_string(n) + pattern.substr(at + slot.size());
}

std::string shape_string(const std::vector<long long>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// What config.json's quantization_config says the weights are: float (none); FP8 with a scale
// per block of fp8_rows x fp8_cols (weight_block_size); or MXFP4 (gpt-oss's experts).
struct weight_quantization {
  long long fp8_rows = 0, fp8_cols = 0;
  bool mxfp4 = false;
};

// What a tensor may be read as besides floats: a linear layer's FP8 weight (with its scales), or
// MXFP4's U8 blocks and scales.
enum class quantized_as { none, fp8_weight, mxfp4 };

// A layer's tensors under its prefix, by the stack's roles.
class layer_tensors {
 public:
  layer_tensors(const safetensors::Checkpoint& c, const stack_def& s, std::string prefix,
                weight_quantization quantization = {})
      : c_(c), s_(s), prefix_(std::move(prefix)), quantization_(quantization) {}

  // Whether `role`'s tensor is stored in MXFP4, as "<name>_blocks" and "<name>_scales" and not under
  // its own name (Transformers saves the experts it has dequantized under their own names); which
  // quantization_config's quant_method "mxfp4" must say.
  bool mxfp4(const std::string& role) const {
    const std::string blocks = name(role) + "_blocks";
    if (has(role) || !c_.contains(blocks)) return false;
    if (!quantization_.mxfp4) {
      fail(c_.tensor(blocks).file + ": tensor '" + blocks +
           "' holds MXFP4 weights but config.json has no quantization_config with quant_method \"mxfp4\"");
    }
    return true;
  }

  bool named(const std::string& role) const { return s_.names.count(role) != 0; }

  // The first of the role's '|' alternatives present (or the first), "{e}" being `expert`.
  std::string name(const std::string& role, long long expert = -1) const {
    std::istringstream alternatives(s_.names.at(role));
    std::string alternative, first;
    while (std::getline(alternatives, alternative, '|')) {
      const std::string full = prefix_ + with_number(alternative, "{e}", expert);
      if (first.empty()) first = full;
      if (c_.contains(full)) return full;
    }
    return first;
  }
  bool has(const std::string& role, long long expert = -1) const {
    return named(role) && c_.contains(name(role, expert));
  }

  // The role's tensor, which must have `shape`; `why` says where the shape comes from. F8_E4M3
  // only as `quantized` says (a linear layer's 2-D weight, read with its scales by matrix()).
  const safetensors::Tensor& get(const std::string& role, const std::vector<long long>& shape, const std::string& why,
                                 long long expert = -1, quantized_as quantized = quantized_as::none) const {
    const std::string full = name(role, expert);
    return checked(c_.tensor(full), shape, why, quantized);  // (tensor() throws naming the folder and the layer's)
  }
  // A weight matrix (out x in), stored as nn.Linear's (out, in) or Conv1D's (in, out); FP8 weights
  // with their weight_scale_inv.
  tensor_ref matrix(const std::string& role, long long out, long long in, const std::string& why,
                    long long expert = -1) const {
    const std::vector<long long> shape = s_.conv1d ? std::vector<long long>{in, out} : std::vector<long long>{out, in};
    tensor_ref r;
    r.tensor = &get(role, shape, std::string(s_.conv1d ? "Conv1D's (in, out)" : "nn.Linear's (out, in)") + ": " + why,
                    expert, s_.conv1d ? quantized_as::none : quantized_as::fp8_weight);
    r.transposed = s_.conv1d;
    if (r.tensor->dtype == safetensors::DType::F8_E4M3) {
      const std::string what = r.tensor->file + ": tensor '" + r.tensor->name + "' is F8_E4M3";
      if (!quantization_.fp8_rows) {
        fail(what +
             " but config.json has no quantization_config with quant_method \"fp8\" and a weight_block_size "
             "(the blocks its weight_scale_inv scales)");
      }
      const long long b0 = quantization_.fp8_rows, b1 = quantization_.fp8_cols;
      r.scale = &checked(c_.tensor(r.tensor->name + "_scale_inv"), {(out + b0 - 1) / b0, (in + b1 - 1) / b1},
                         "a scale per block of weight_block_size [" + std::to_string(b0) + ", " + std::to_string(b1) +
                             "] of " + r.tensor->name + ", " + shape_string(shape),
                         quantized_as::none);
      if (r.scale->dtype == safetensors::DType::F64) {  // (code times scale is exact in double up to 24 bits)
        fail(r.scale->file + ": tensor '" + r.scale->name + "' is F64: egelu reads FP8 scales of F32, BF16 or F16");
      }
      r.block_rows = b0;
      r.block_cols = b1;
    }
    return r;
  }
  // A gated MLP's gate and up (rows x in each): the `fused` role's tensor where the row names one
  // (Phi-3's gate_up_proj, Granite's input_linear: the gate's rows, then the up's), else two.
  void gate_and_up(const std::string& fused, const std::string& gate_role, const std::string& up_role, long long rows,
                   long long in, const std::string& why, tensor_ref& gate, tensor_ref& up) const {
    if (named(fused)) {
      gate = up = matrix(fused, 2 * rows, in, "the gate's and the up's rows: " + why);
      gate.rows = up.rows = rows;
      up.row0 = rows;
      if (up.scale && rows % up.block_rows) {
        fail(up.name() + " starts inside a block of weight_block_size's " + std::to_string(up.block_rows) +
             " rows: its scales are not the up's alone");
      }
    } else {
      gate = matrix(gate_role, rows, in, why);
      up = matrix(up_role, rows, in, why);
    }
  }
  tensor_ref vector(const std::string& role, long long size, const std::string& why) const {
    tensor_ref r;
    r.tensor = &get(role, {size}, why);
    return r;
  }
  // gpt-oss's stacked experts in MXFP4, (E, out, in) as nn.Linear's: "<name>_blocks" (E, out, in / 32, 16),
  // each byte two FP4 E2M1 codes, the low nibble first, and "<name>_scales" (E, out, in / 32), each
  // 32 codes' E8M0 exponent; both U8 (Transformers' convert_moe_packed_tensors reads them so).
  tensor_ref mxfp4_experts(const std::string& role, long long experts, long long out, long long in,
                           const std::string& why) const {
    const std::string base = name(role);
    if (in % 32) {
      fail(base + "_blocks: MXFP4 weights of " + std::to_string(in) + " inputs, not a whole number of blocks of 32 (" +
           why + ")");
    }
    tensor_ref r;
    r.tensor = &checked(c_.tensor(base + "_blocks"), {experts, out, in / 32, 16},
                        "MXFP4 blocks of 32 codes, two a byte: " + why, quantized_as::mxfp4);
    r.scale = &checked(c_.tensor(base + "_scales"), {experts, out, in / 32}, "an E8M0 scale a block: " + why,
                       quantized_as::mxfp4);
    if (const void* nan = std::memchr(r.scale->data, 255, r.scale->bytes)) {
      fail(r.scale->file + ": tensor '" + r.scale->name + "' has the E8M0 scale 255 (NaN) at its value " +
           std::to_string(static_cast<const unsigned char*>(nan) - r.scale->data));
    }
    r.block_rows = 1;
    r.block_cols = 32;
    return r;
  }

 private:
  // F8_E4M3 is read only as a linear layer's 2-D weight with its scales, U8 only as MXFP4's blocks and scales.
  const safetensors::Tensor& checked(const safetensors::Tensor& t, const std::vector<long long>& shape,
                                     const std::string& why, quantized_as quantized) const {
    // (The dtype first: a U8 or F8 tensor's shape counts bytes, not the weights it may stand for.)
    if (t.dtype == safetensors::DType::F8_E4M3 && quantized != quantized_as::fp8_weight) {
      fail(t.file + ": tensor '" + t.name +
           "' is F8_E4M3: egelu reads FP8 only as a linear layer's 2-D weight in nn.Linear's layout, with its "
           "weight_scale_inv");
    }
    if ((t.dtype == safetensors::DType::U8) != (quantized == quantized_as::mxfp4)) {
      fail(t.file + ": tensor '" + t.name + "' is " + safetensors::dtype_name(t.dtype) +
           (quantized == quantized_as::mxfp4 ? ": MXFP4's are U8"
                                             : ": egelu reads U8 only as MXFP4 experts' _blocks and _scales"));
    }
    bool ok = t.shape.size() == shape.size();
    for (std::size_t i = 0; ok && i < shape.size(); ++i) ok = (long long)(t.shape[i]) == shape[i];
    if (!ok) {
      fail(t.file + ": tensor '" + t.name + "' is " + t.shape_string() + " but must be " + shape_string(shape) + " (" +
           why + ")");
    }
    return t;
  }

  const safetensors::Checkpoint& c_;
  const stack_def& s_;
  std::string prefix_;
  weight_quantization quantization_;
};

// quantization_config: none, FP8 with per-block scales (DeepSeek-V3's, Qwen3's FP8 releases:
// quant_method "fp8", fmt "e4m3", weight_block_size), or MXFP4 (gpt-oss's releases: quant_method
// "mxfp4", the experts' weights only); any other method is refused by name.
weight_quantization quantization(const settings& top) {
  if (!top.has("quantization_config")) return {};
  std::string from;
  const json q = top.value(key("quantization_config"), &from);
  if (!q.is_object()) fail(from + " is " + q.dump() + ", not an object");
  const auto field = [&](const char* name) { return q.contains(name) ? q.at(name) : json(); };
  const json method = field("quant_method"), fmt = field("fmt"), block = field("weight_block_size");
  if (method == "mxfp4") return {0, 0, true};
  if (method != "fp8") {
    fail(from + " has quant_method " + method.dump() +
         ": egelu reads float checkpoints (F32, F16, BF16), FP8 ones with a scale per block (quant_method "
         "\"fp8\", weight_block_size) and gpt-oss's MXFP4 experts (\"mxfp4\"); dequantize it first");
  }
  if (!fmt.is_null() && fmt != "e4m3") fail(from + " has fmt " + fmt.dump() + ": egelu reads FP8 as e4m3 only");
  const auto positive = [](const json& v) { return v.is_number_integer() && v.get<long long>() > 0; };
  if (!block.is_array() || block.size() != 2 || !positive(block[0]) || !positive(block[1])) {
    fail(from + " has weight_block_size " + block.dump() +
         ": egelu reads FP8 weights with a scale per block of [rows, columns], both positive");
  }
  return {block[0].get<long long>(), block[1].get<long long>(), false};
}

// The stack `wanted` names (null: the only one, or the default).
const stack_def& stack_of(const architecture& a, const std::string* wanted, const std::string& config,
                          const std::string& model_type) {
  std::string names;
  for (const stack_def& s : a.stacks) names += (names.empty() ? "\"" : ", \"") + s.name + "\"";
  const std::string what = config + ": model_type \"" + model_type + "\"";
  if (a.stacks.size() == 1) {
    if (wanted) {
      fail(what + " has one stack of layers, not \"" + *wanted +
           "\": load it without a stack name (from_pretrained(path, layer))");
    }
    return a.stacks.front();
  }
  const std::string name = wanted ? *wanted : a.default_stack;
  if (name.empty()) {
    fail(what + " has the stacks " + names + ": name one (from_pretrained(path, stack, layer))");
  }
  for (const stack_def& s : a.stacks) {
    if (s.name == name) return s;
  }
  fail(what + " has no stack \"" + name + "\" (it has " + names + ")");
}

// T5's feed_forward_proj as T5Config reads it: "[gated-]ACT", "gated-gelu" meaning
// gelu_new; returns whether it is gated and sets the activation's name.
bool t5_gated(const std::string& proj, const std::string& where, std::string& act) {
  const std::size_t dash = proj.find('-');
  const bool gated = dash != std::string::npos && proj.substr(0, dash) == "gated";
  act = dash == std::string::npos ? proj : proj.substr(dash + 1);
  if ((dash != std::string::npos && !gated) || act.find('-') != std::string::npos) {
    fail(where + " is \"" + proj + "\", not a T5 feed_forward_proj (\"ACT\" or \"gated-ACT\")");
  }
  if (proj == "gated-gelu") act = "gelu_new";  // T5Config's rule, for backward compatibility
  return gated;
}

// Whether layer `layer` of a mixture-of-experts stack is sparse (a routed layer).
bool sparse_layer(const moe_def& moe, const settings& c, long long layer, long long experts) {
  switch (moe.sparse) {
    case sparse_layers::all:
      return true;
    case sparse_layers::qwen_step: {
      std::string from;
      const json only = c.value(key("mlp_only_layers", json::array()), &from);
      if (!only.is_array()) fail(from + " is " + only.dump() + ", not a list of layers");
      for (const json& i : only) {
        if (i.is_number_integer() && i.get<long long>() == layer) return false;
      }
      return experts > 0 && (layer + 1) % c.integer(key("decoder_sparse_step", 1)) == 0;
    }
    case sparse_layers::deepseek_first_k:
      // moe_layer_freq, in the Hub's configs, is read by none of Transformers' code.
      return layer >= c.integer(key("first_k_dense_replace", 0), nullptr, 0);
    case sparse_layers::with_experts:
      return experts > 0;
    case sparse_layers::jamba: {
      // JambaConfig.layers_num_experts; JambaConfig refuses an offset not below the period.
      std::string period_from, offset_from;
      const long long period = c.integer(key("expert_layer_period", 2), &period_from),
                      offset = c.integer(key("expert_layer_offset", 1), &offset_from, 0);
      if (offset >= period) {
        fail(offset_from + " is " + std::to_string(offset) + ", not below " + period_from + ", " +
             std::to_string(period) + " (JambaConfig refuses it)");
      }
      return experts > 1 && layer % period == offset;
    }
    case sparse_layers::llama4: {
      // Llama4TextConfig: moe_layers when given, else every interleave_moe_layer_step-th layer.
      if (!c.has("moe_layers")) return (layer + 1) % c.integer(key("interleave_moe_layer_step", 1)) == 0;
      std::string from;
      const json listed = c.value(key("moe_layers"), &from);
      const auto is_layer = [](const json& i) { return i.is_number_integer(); };
      if (!listed.is_array() || !std::all_of(listed.begin(), listed.end(), is_layer)) {
        fail(from + " is " + listed.dump() + ", not a list of layers");
      }
      for (const json& i : listed) {
        if (i.get<long long>() == layer) return true;
      }
      return false;
    }
  }
  return true;
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
    case safetensors::DType::F8_E4M3:
      return gemm::stored::f8_e4m3;
    case safetensors::DType::U8:  // (MXFP4's blocks: tensor_ref::matrix reads them as e2m1 codes)
      return gemm::stored::e2m1;
  }
  return gemm::stored::f32;
}

gemm::matrix_view tensor_ref::matrix() const {
  if (tensor->dtype == safetensors::DType::U8) {
    // MXFP4's blocks (E, out, in / 32, 16), two codes a byte (the view's strides count codes), and
    // scales (E, out, in / 32), one for each 32 codes of a row (the only U8 the loader reads).
    if (!scale || tensor->shape.size() != 4) throw std::invalid_argument(name() + ": U8 is read as MXFP4 blocks only");
    const gemm::index rows_all = gemm::index(tensor->shape[1]), cols = gemm::index(tensor->shape[2]) * 32;
    const gemm::index first = gemm::index(row0), count = rows < 0 ? rows_all - first : gemm::index(rows),
                      step = gemm::index(row_step), blocks = cols / 32;
    const std::size_t start_row = std::size_t(slice < 0 ? 0 : slice) * std::size_t(rows_all) + std::size_t(first);
    gemm::matrix_view v{
        tensor->data + start_row * std::size_t(cols) / 2, gemm::stored::e2m1, count, cols, cols * step, 1};
    v.scales = scale->data + start_row * std::size_t(blocks);
    v.scale_type = gemm::stored::e8m0;
    v.block_rows = 1;
    v.block_cols = 32;
    v.scale_row_stride = blocks * step;
    v.scale_col_stride = 1;
    return v;
  }
  const std::size_t n = tensor->shape.size();
  const auto rows_all = gemm::index(tensor->shape[n - 2] / (slices > 0 ? slices : 1)),
             cols = gemm::index(tensor->shape[n - 1]);
  const gemm::stored type = stored_of(tensor->dtype);
  if (scale && row_step != 1) {  // (value_at finds a row's block by its row in the view)
    throw std::invalid_argument(name() + ": FP8 weights are read with their rows in order only");
  }
  const std::size_t matrix_size = std::size_t(rows_all) * std::size_t(cols), size = gemm::size_of(type),
                    start = std::size_t(slice < 0 ? 0 : slice) * matrix_size;
  // (out, in) row-major as nn.Linear; Conv1D's and Llama 4's experts' (in, out) read transposed:
  // an output row is then a column of the stored matrix.
  const gemm::index outputs = transposed ? cols : rows_all, first = gemm::index(row0),
                    count = rows < 0 ? outputs - first : gemm::index(rows);
  const gemm::index step = gemm::index(row_step);
  if (transposed) {
    return gemm::matrix_view{tensor->data + (start + std::size_t(first)) * size, type, count, rows_all, step, cols};
  }
  gemm::matrix_view v{
      tensor->data + (start + std::size_t(first) * std::size_t(cols)) * size, type, count, cols, cols * step, 1};
  if (scale) {  // (the loader gives a scale to 2-D weights only, and fails a first row inside a block)
    const std::size_t scale_cols = scale->shape[1], scale_size = safetensors::dtype_size(scale->dtype);
    v.scales = scale->data + std::size_t(first / block_rows) * scale_cols * scale_size;
    v.scale_type = stored_of(scale->dtype);
    v.block_rows = gemm::index(block_rows);
    v.block_cols = gemm::index(block_cols);
    v.scale_row_stride = gemm::index(scale_cols);
    v.scale_col_stride = 1;
  }
  return v;
}

std::string tensor_ref::name() const {
  std::string n = tensor->file + ": tensor '" + tensor->name + "'";
  if (slice >= 0 && slices > 0) {
    const long long per = static_cast<long long>(tensor->shape.front()) / slices;
    n += " rows [" + std::to_string(slice * per) + ", " + std::to_string((slice + 1) * per) + ")";
    if (transposed) n += " read transposed";
  } else if (slice >= 0) {
    n += " [" + std::to_string(slice) + "]";
  }
  if (rows >= 0 && row_step != 1) {
    n += (transposed ? " columns " : " rows ") + std::to_string(row0) + ", " + std::to_string(row0 + row_step) +
         ", ... " + std::to_string(row0 + (rows - 1) * row_step);
  } else if (rows >= 0) {
    n += (transposed ? " columns [" : " rows [") + std::to_string(row0) + ", " + std::to_string(row0 + rows) + ")";
  }
  return n;
}

// The row of the table that covers `model_type` (null: none).
const architecture* architecture_of(const std::string& model_type) {
  for (const architecture& a : architectures()) {
    for (const std::string& type : a.model_types) {
      if (type == model_type) return &a;
    }
  }
  return nullptr;
}

mlp_layer open_mlp_layer(const std::string& path, const std::string* stack, int layer, block_kind want) {
  const std::string dir = path.empty() || path.back() == '/' ? path : path + "/";
  const json config = read_config(dir + "config.json");
  mlp_layer m(safetensors::Checkpoint::open(path), dir + "config.json");
  const settings top(config, m.config);
  m.model_type = top.string(key("model_type", nullptr));
  if (const char* why = unsupported_reason(m.model_type)) {
    fail(m.config + ": model_type \"" + m.model_type + "\" is not supported: " + why);
  }
  const architecture* arch = architecture_of(m.model_type);
  if (!arch) {
    std::string known;
    for (const architecture& a : architectures()) {
      for (const std::string& type : a.model_types) known += (known.empty() ? "" : ", ") + type;
    }
    fail(m.config + ": model_type \"" + m.model_type + "\" is not one egelu knows (" + known + ")");
  }
  stack_def s = stack_of(*arch, stack, m.config, m.model_type);  // (a copy: by_config may rename tensors)
  m.stack = s.name;

  // The stack's settings: a section of its own, which Transformers fills with its config
  // class's defaults when absent (or, for some, takes from the top level).
  static const json no_settings = json::object();
  const json* section = &config;
  if (!s.section.empty()) {
    const auto it = config.find(s.section);
    if (it != config.end() && !it->is_null() && !it->is_object()) {
      fail(m.config + ": \"" + s.section + "\" is " + it->dump() + ", not an object");
    }
    const bool absent = it == config.end() || it->is_null();
    if (absent && s.section_required) {
      fail(m.config + " has no \"" + s.section + "\": model_type \"" + m.model_type +
           "\"'s config class then builds its language model with values of its own, which egelu does not guess");
    }
    section = absent ? (s.section_or_top ? &config : &no_settings) : &*it;
    if (absent && s.section_or_top) s.section.clear();
  }
  // A vision-language model's language model: the row of its section's model_type.
  if (!s.nested_default_type.empty()) {
    const std::string where = m.config + "'s \"" + s.section + "\"";
    const auto type = section->find("model_type");
    if (type != section->end() && !type->is_string()) {
      fail(where + " has model_type " + type->dump() + ", not a model type's name");
    }
    const std::string text_type = type != section->end() ? type->get<std::string>() : s.nested_default_type;
    const architecture* row = architecture_of(text_type);
    const char* why = unsupported_reason(text_type);
    if (!why && !row) why = "it is not one egelu knows";
    if (!why && !row->stacks.front().nested_default_type.empty()) why = "it is itself a vision-language model";
    if (!why && (row->stacks.size() != 1 || !row->stacks[0].section.empty())) {
      why = "its layers are not one stack of a language model's";
    }
    if (why) {
      fail(where + " has model_type \"" + text_type + "\" (" +
           (type != section->end() ? "" : "its config class's default, ") +
           "the language model), which egelu does not load here: " + why);
    }
    stack_def nested = row->stacks[0];
    nested.name = s.name;
    nested.section = s.section;
    nested.prefixes = s.prefixes;
    s = nested;
  }
  const settings c(*section, s.section.empty() ? m.config : m.config + "'s " + s.section);
  const std::string stack_said = s.name.empty() ? "" : " of stack \"" + s.name + "\"";

  // The layer, and its kind: a MoE stack's dense layers are gated MLPs; T5's
  // feed_forward_proj says whether its MLP is gated.
  std::string layers_from;
  const long long layers = c.integer(s.layers, &layers_from);
  if (layer < 0 || layer >= layers) {
    fail("layer " + std::to_string(layer) + stack_said + " is out of range: " + layers_from + " is " +
         std::to_string(layers));
  }
  std::string act_from;
  const std::string act_setting = c.string(s.act, &act_from);
  std::string act_name = act_setting;
  m.kind = s.kind;
  if (s.syntax == activation_syntax::t5_feed_forward_proj) {
    bool gated = t5_gated(act_setting, act_from, act_name);
    // T5Config derives dense_act_fn and is_gated_act from feed_forward_proj, then takes
    // the config's own keys over them when it has them (umT5's configs do).
    if (c.has("dense_act_fn")) act_name = c.string(key("dense_act_fn", nullptr), &act_from);
    if (c.has("is_gated_act")) gated = c.boolean(key("is_gated_act", nullptr));
    if (!gated) {
      fail(act_from + " is \"" + act_name + "\" without a gate: the original T5's feed-forward (" +
           "DenseReluDense.wi, wo: an ungated MLP without biases, after T5's RMSNorm), which egelu's blocks do not "
           "run (they run the gated forms, \"gated-gelu\" and \"gated-silu\")");
    }
  }
  long long experts = 0;
  if (m.kind == block_kind::moe) {
    // Granite 4's dense models are saved with 0 experts (their shared MLP alone).
    experts = c.integer(s.moe->experts, nullptr, s.moe->sparse == sparse_layers::with_experts ? 0 : 1);
    if (!sparse_layer(*s.moe, c, layer, experts)) m.kind = block_kind::gated;
  }
  if (m.kind != want) {
    const char* what = m.kind == block_kind::plain   ? "a plain MLP"
                       : m.kind == block_kind::gated ? "a gated MLP"
                                                     : "a mixture of experts";
    fail(m.config + ": layer " + std::to_string(layer) + stack_said + " of model_type \"" + m.model_type + "\" is " +
         what + ": load it with " + block_name(m.kind));
  }
  m.act = activation_named(act_name, act_from);
  if (m.kind == block_kind::plain && m.act == activation::silu) {
    fail(act_from + " is \"" + act_name +
         "\", SiLU, which egelu::FeedForward does not run (it runs GELU and QuickGELU)");
  }
  if (m.kind != block_kind::plain && m.act == activation::quick_gelu) {
    fail(act_from + " is \"" + act_name + "\": " + block_name(m.kind) + " runs SiLU and GELU gates, not QuickGELU");
  }
  if (m.kind != block_kind::plain && c.has("mlp_bias") && c.boolean(key("mlp_bias", false))) {
    fail(c.where() + ": \"mlp_bias\" is true: " + block_name(m.kind) + " has no biases");
  }
  const bool biases = c.boolean(s.biases);
  m.eps = c.number(s.eps);
  // The tensors the config chooses (StableLM's, Falcon's parallel blocks), or its refusal.
  if (s.by_config) s.by_config(c, s.names);
  m.plus_one = s.plus_one;
  m.pre_norm = s.pre_norm;
  std::string d_from, ff_from;
  m.d_model = c.integer(s.d_model, &d_from);
  const setting& d_ff = m.kind == block_kind::moe ? s.moe->expert_d_ff : s.d_ff;
  if (s.d_ff_times_d_model && !c.has(d_ff.key)) {
    m.d_ff = s.d_ff_times_d_model * m.d_model;  // GPT2MLP's width when n_inner is null
    ff_from =
        std::to_string(s.d_ff_times_d_model) + " times d_model, " +
        (d_ff.key.empty() ? "fixed in Transformers' code" : "since " + c.where() + "'s \"" + d_ff.key + "\" is null");
  } else {
    m.d_ff = c.integer(d_ff, &ff_from);
  }
  const std::string d_why = "d_model = " + std::to_string(m.d_model) + " from " + d_from;
  const std::string ff_why = "d_ff = " + std::to_string(m.d_ff) + " from " + ff_from;
  const std::string both = d_why + ", " + ff_why;
  const long long d = m.d_model, f = m.d_ff;

  // The layer's tensors, under the first prefix that has its norm (its down product when it
  // has no norm before the MLP: OLMo 2).
  const std::string probe = s.names.count("norm") ? "norm" : "down";
  std::string prefix = with_number(s.prefixes.front(), "{}", layer);
  for (const std::string& p : s.prefixes) {
    if (layer_tensors(m.checkpoint, s, with_number(p, "{}", layer)).has(probe)) {
      prefix = with_number(p, "{}", layer);
      break;
    }
  }
  const layer_tensors t(m.checkpoint, s, prefix, quantization(top));
  if (t.named("norm")) m.norm_weight = t.vector("norm", d, d_why);
  if (m.kind == block_kind::plain) {
    m.w1 = t.matrix("w1", f, d, both);
    m.w2 = t.matrix("w2", d, f, both);
    if (biases) {  // (without, the block adds zeros: StarCoder2's use_bias false, Falcon's bias false)
      m.b1 = t.vector("b1", f, ff_why);
      m.b2 = t.vector("b2", d, d_why);
    }
    m.norm_bias = t.vector("norm_bias", d, d_why);
    return m;
  }
  if (t.named("post_norm")) m.post_norm_weight = t.vector("post_norm", d, d_why);
  m.output_scale = c.number(s.output_scale, &m.output_scale_from);
  m.gated_norm = s.gated_norm;
  if (s.gated_norm == GatedNorm::layer && c.boolean(s.norm_bias)) m.norm_bias = t.vector("norm_bias", d, d_why);
  if (m.kind == block_kind::gated) {
    t.gate_and_up("gate_up", "gate", "up", f, d, both, m.gate, m.up);
    m.down = t.matrix("down", d, f, both);
    return m;
  }

  // A mixture of experts: the routing rule, the router, the experts, the shared expert.
  const moe_def& moe = *s.moe;
  routing& r = m.route;
  r.experts = experts;
  std::string k_from;
  r.per_token = c.integer(moe.per_token, &k_from);
  if (r.per_token > r.experts) {
    fail(k_from + " is " + std::to_string(r.per_token) + ", more than the " + std::to_string(r.experts) +
         " experts of " + c.where());
  }
  long long shared_experts = 0;
  std::string shared_from;  // where the shared expert's width comes from, for messages
  switch (moe.family) {
    case routing_family::mixtral:
      r.normalize = true;
      break;
    case routing_family::phimoe:
      // Transformers' sparsemixer chooses two experts whatever num_experts_per_tok says.
      if (r.per_token != 2) {
        fail(k_from + " is " + std::to_string(r.per_token) +
             ": Phi-3.5-MoE's sparsemixer (Transformers' PhimoeTopKRouter) routes every token to 2 experts");
      }
      r.score = router_score::sparsemixer;
      r.jitter = c.number(key("router_jitter_noise", 0.01));
      break;
    case routing_family::jamba:
      r.normalize = false;
      break;
    case routing_family::dbrx: {
      // DbrxFFN: the top k divided by their p-norm, p = moe_normalize_expert_weights (DbrxFFNConfig's
      // 1.0 when absent: their sum, the weights being positive), or by nothing when it is null.
      const setting p = key("ffn_config.moe_normalize_expert_weights", 1.0);
      r.normalize = !c.null(p.key);
      std::string p_from;
      if (r.normalize && c.number(p, &p_from) != 1.0) {
        fail(p_from + " is " + c.value(p).dump() +
             ": egelu's MoeFeedForward divides DBRX's routing weights by their sum (1) or by nothing (null)");
      }
      break;
    }
    case routing_family::gpt_oss: {
      // GptOssTopKRouter: the softmax of the top-k logits (Mixtral's renormalised top k of the softmax);
      // GptOssExperts: quick_gelu(min(gate, 7)) (up clamped to [-7, 7] + 1), whatever hidden_act says, with
      // the alpha and limit fixed in its code, or read from swiglu_alpha and swiglu_limit (later releases).
      r.normalize = true;
      m.act = activation::clamped_swiglu;
      for (const auto& [name, value] : {std::pair<const char*, double>{"swiglu_alpha", 1.702},
                                        std::pair<const char*, double>{"swiglu_limit", 7.0}}) {
        std::string from;
        const double v = c.number(key(name, value), &from);
        if (v != value) {
          fail(from + " is " + json(v).dump() + ": egelu's GatedForm::clamped_swiglu is gpt-oss's, with " + name + " " +
               json(value).dump());
        }
      }
      break;
    }
    case routing_family::llama4:
      // Llama4Router: the top-k logits, each weighed by its sigmoid, which multiplies the
      // expert's input (Llama4TextMoe); no renormalisation.
      r.score = router_score::sigmoid;
      r.weigh_input = true;
      break;
    case routing_family::qwen:
      r.normalize = c.boolean(key("norm_topk_prob", false));
      if (t.named("shared_gate") && c.has("shared_expert_intermediate_size")) {
        m.shared_d_ff = c.integer(key("shared_expert_intermediate_size", nullptr), &shared_from, 0);
      }
      break;
    case routing_family::deepseek_v2: {
      // Transformers' DeepseekV2Moe: softmax, greedy or group-limited choice, never
      // renormalised (it reads no norm_topk_prob), times routed_scaling_factor.
      std::string method_from;
      const std::string method = c.string(key("topk_method", "greedy"), &method_from);
      if (method == "group_limited_greedy") {
        r.rank = group_rank::best;
        r.groups = c.integer(key("n_group", nullptr));
        r.groups_kept = c.integer(key("topk_group", nullptr));
      } else if (method != "greedy") {
        fail(method_from + " is \"" + method + "\", a choice DeepSeek-V2 does not make (greedy, group_limited_greedy)");
      }
      r.scale = c.number(key("routed_scaling_factor", 1.0));
      shared_experts = c.integer(key("n_shared_experts", 2), &shared_from, 0);
      break;
    }
    case routing_family::deepseek_v3:
      // Transformers' DeepseekV3 router: sigmoid and noaux_tc whatever scoring_func and
      // topk_method say.
      r.score = router_score::sigmoid;
      r.rank = group_rank::top2_sum;
      r.groups = c.integer(key("n_group", 8));
      r.groups_kept = c.integer(key("topk_group", 4));
      r.normalize = c.boolean(key("norm_topk_prob", true));
      r.scale = c.number(key("routed_scaling_factor", 2.5));
      shared_experts = c.integer(key("n_shared_experts", 1), &shared_from, 0);
      break;
  }
  if (shared_experts) {
    m.shared_d_ff = shared_experts * f;
    shared_from += " times the experts' d_ff";
  }
  if (!moe.shared_d_ff.key.empty()) m.shared_d_ff = c.integer(moe.shared_d_ff, &shared_from, 0);
  if (r.rank != group_rank::none) {
    const long long per_group = r.experts / r.groups;
    if (r.experts % r.groups || r.groups_kept > r.groups || (r.rank == group_rank::top2_sum && per_group < 2) ||
        r.groups_kept * per_group < r.per_token) {
      fail(c.where() + ": " + std::to_string(r.experts) + " experts in \"n_group\" " + std::to_string(r.groups) +
           " groups, \"topk_group\" " + std::to_string(r.groups_kept) + " of them kept and \"num_experts_per_tok\" " +
           std::to_string(r.per_token) +
           " do not make a routing (the groups must divide the experts, and the kept "
           "groups hold at least the experts chosen)");
    }
  }
  const std::string e_why = "E = " + std::to_string(r.experts) + " experts: " + both;
  {
    tensor_ref router;
    router.tensor = &t.get("router", {r.experts, d}, "(E, d_model), " + e_why);
    m.router = router;
  }
  if (t.named("correction_bias")) m.correction_bias = t.vector("correction_bias", r.experts, e_why);
  if (t.named("router_bias")) m.router_bias = t.vector("router_bias", r.experts, e_why);
  m.experts.resize(std::size_t(r.experts));
  // Per expert where the row names them and the file has them or no stacked ones (Granite's
  // rows name only the stacked tensors, whose absence get() then reports).
  if (t.named("expert_gate") && (t.has("expert_gate", 0) || !t.has("experts_gate_up"))) {
    for (long long e = 0; e < r.experts; ++e) {
      expert_ref& x = m.experts[std::size_t(e)];
      x.gate = t.matrix("expert_gate", f, d, both, e);
      x.up = t.matrix("expert_up", f, d, both, e);
      x.down = t.matrix("expert_down", d, f, both, e);
    }
  } else if (moe.stacked == stacked_layout::rows) {
    // DBRX's w1, v1 and w2, each (E d_ff, d): expert e's rows [e d_ff, (e + 1) d_ff), its down
    // product reading them transposed.
    tensor_ref gate, up, down;
    const std::string rows_why = "(E d_ff, d_model), " + e_why;
    gate.tensor = &t.get("experts_gate", {r.experts * f, d}, rows_why);
    up.tensor = &t.get("experts_up", {r.experts * f, d}, rows_why);
    down.tensor = &t.get("experts_down", {r.experts * f, d}, rows_why);
    down.transposed = true;
    down.slices = r.experts;
    for (long long e = 0; e < r.experts; ++e) {
      expert_ref& x = m.experts[std::size_t(e)];
      x.gate = gate;
      x.up = up;
      x.gate.row0 = x.up.row0 = e * f;
      x.gate.rows = x.up.rows = f;
      x.down = down;
      x.down.slice = e;
    }
  } else {
    // Stacked, as Transformers 5's first releases saved them: (E, 2 d_ff, d), each
    // expert's gate rows first, and (E, d, d_ff); or as Llama 4 saves them for its bmm,
    // (E, d, 2 d_ff), each expert's gate columns first, and (E, d_ff, d).
    // MXFP4 experts (gpt-oss's release) are stored as nn.Linear's, (E, out, in), whatever the layout
    // of the dequantized ones.
    tensor_ref gate_up, down;
    const bool interleaved = moe.stacked == stacked_layout::in_out_interleaved;
    const bool in_out = moe.stacked == stacked_layout::in_out || interleaved;
    if (t.mxfp4("experts_gate_up")) {
      gate_up = t.mxfp4_experts("experts_gate_up", r.experts, 2 * f, d, "(E, 2 d_ff, d_model), " + e_why);
    } else if (in_out) {
      gate_up.tensor = &t.get("experts_gate_up", {r.experts, d, 2 * f}, "(E, d_model, 2 d_ff), " + e_why);
      gate_up.transposed = true;
    } else {
      gate_up.tensor = &t.get("experts_gate_up", {r.experts, 2 * f, d}, "(E, 2 d_ff, d_model), " + e_why);
    }
    if (t.mxfp4("experts_down")) {
      down = t.mxfp4_experts("experts_down", r.experts, d, f, "(E, d_model, d_ff), " + e_why);
    } else if (in_out) {
      down.tensor = &t.get("experts_down", {r.experts, f, d}, "(E, d_ff, d_model), " + e_why);
      down.transposed = true;
    } else {
      down.tensor = &t.get("experts_down", {r.experts, d, f}, "(E, d_model, d_ff), " + e_why);
    }
    // gpt-oss's biases, (E, 2 d_ff) alternating gate and up, and (E, d_model): each expert's row
    // read as a column (one-row slices, transposed), as its weights' columns are.
    tensor_ref gate_up_bias, down_bias;
    if (interleaved) {
      gate_up_bias.tensor = &t.get("experts_gate_up_bias", {r.experts, 2 * f}, "(E, 2 d_ff), " + e_why);
      down_bias.tensor = &t.get("experts_down_bias", {r.experts, d}, "(E, d_model), " + e_why);
      gate_up_bias.transposed = down_bias.transposed = true;
      gate_up_bias.slices = down_bias.slices = r.experts;
    }
    for (long long e = 0; e < r.experts; ++e) {
      expert_ref& x = m.experts[std::size_t(e)];
      x.gate = x.up = gate_up;
      x.gate.slice = x.up.slice = x.down.slice = e;
      x.gate.rows = x.up.rows = f;
      x.up.row0 = interleaved ? 1 : f;
      x.gate.row_step = x.up.row_step = interleaved ? 2 : 1;
      x.down = down;
      x.down.slice = e;
      if (interleaved) {
        x.gate_bias = x.up_bias = gate_up_bias;
        x.gate_bias.slice = x.up_bias.slice = e;
        x.gate_bias.rows = x.up_bias.rows = f;
        x.up_bias.row0 = 1;
        x.gate_bias.row_step = x.up_bias.row_step = 2;
        x.down_bias = down_bias;
        x.down_bias.slice = e;
      }
    }
  }
  if (m.shared_d_ff > 0) {
    const long long g = m.shared_d_ff;
    const std::string g_why = "the shared expert's d_ff = " + std::to_string(g) + " from " + shared_from + ", " + d_why;
    t.gate_and_up("shared_gate_up", "shared_gate", "shared_up", g, d, g_why, m.gate, m.up);
    m.down = t.matrix("shared_down", d, g, g_why);
    if (t.named("shared_expert_gate")) {
      tensor_ref gate;
      gate.tensor = &t.get("shared_expert_gate", {1, d}, "(1, d_model): " + d_why);
      m.shared_gate = gate;
    }
  }
  return m;
}

}  // namespace hf
}  // namespace egelu
