// from_pretrained on the Hugging Face checkpoints tests/make_hf_checkpoints.py writes from
// PyTorch modules (BERT, RoBERTa, GPT-2, ViT, GPT-NeoX, CLIP, Whisper, LLaMA, Mistral, Qwen2
// and 3, Phi-3, Gemma 1-3, T5, mT5, umT5, and the mixtures of experts' dense layers; F32,
// F16, BF16; some sharded; stacks): every layer of every stack against the float64
// references, on one thread and on a device, with the settings and precision each
// checkpoint ships with; and every malformed checkpoint or unsupported setting throws
// naming the file, the tensor or the value at fault. (test_moe.cpp: the routed layers.)
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/moe_feed_forward.hpp>
#include <egelu/safetensors.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>

#include "ggml_reference.hpp"
#include "npy_tokens.hpp"
#include "safetensors_bytes.hpp"

namespace {

namespace fs = std::filesystem;
const std::string kHf = std::string(EGELU_TEST_DATA_DIR) + "/hf/";

struct Fixture {
  const char* name;
  bool gated;
  egelu::WeightFormat format;  // what the checkpoint keeps in a float block
  int form;                    // GeluForm or GatedForm
  bool pre_norm;
  double eps;
};

using egelu::GatedForm;
using egelu::GeluForm;
using egelu::WeightFormat;
const Fixture kFixtures[] = {
    {"bert", false, WeightFormat::f32, int(GeluForm::exact), false, 1e-12},
    {"bert_legacy", false, WeightFormat::f32, int(GeluForm::exact), false, 1e-12},
    {"roberta", false, WeightFormat::f16, int(GeluForm::exact), false, 1e-5},
    {"gpt2", false, WeightFormat::f32, int(GeluForm::tanh), true, 1e-5},
    {"gpt2_bf16", false, WeightFormat::bf16, int(GeluForm::tanh), true, 1e-5},
    {"llama", true, WeightFormat::bf16, int(GatedForm::swiglu), true, 1e-5},
    {"llama_f32", true, WeightFormat::f32, int(GatedForm::swiglu), true, 1e-5},
    {"mistral", true, WeightFormat::f16, int(GatedForm::swiglu), true, 1e-5},
    {"qwen2", true, WeightFormat::bf16, int(GatedForm::swiglu), true, 1e-6},
    {"gemma", true, WeightFormat::bf16, int(GatedForm::geglu), true, 1e-6},  // hidden_act "gelu" means tanh here
};

template <typename Scalar>
using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;

// max |y - want| / (1 + |want|)
template <typename Scalar>
double worst(const Matrix<Scalar>& y, const Matrix<double>& want) {
  return ((y.template cast<double>() - want).array().abs() / (1 + want.array().abs())).maxCoeff();
}

// The block's output for the fixture's X (of `stack`, when the model has several), on one
// thread and on two, both checked against the reference; returns the single-threaded one.
template <typename Block>
Matrix<typename Block::Matrix::Scalar> check_layer(const Block& block, const std::string& dir, int layer,
                                                   double tolerance, const std::string& stack = "") {
  using Scalar = typename Block::Matrix::Scalar;
  const std::string tag = stack.empty() ? "" : "_" + stack;
  const Matrix<Scalar> x = tokens<Scalar>(dir + "/reference/X" + tag + ".npy");
  const Matrix<double> want = tokens<double>(dir + "/reference/Y" + tag + "_layer" + std::to_string(layer) + ".npy");
  Matrix<Scalar> y = Matrix<Scalar>::Constant(x.rows(), x.cols(), NAN), y2 = y;
  block.forward(x, y);
  EXPECT_LE(worst(y, want), tolerance) << dir << stack << " layer " << layer;
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  block.forward(x, y2, device);
  EXPECT_LE(worst(y2, want), tolerance) << dir << stack << " layer " << layer << ", two threads";
  EXPECT_TRUE(y == y2) << dir << ": the device's result differs from one thread's";
  return y;
}

TEST(FromPretrained, EveryArchitectureEveryLayerMatchesTheReference) {
  for (const Fixture& f : kFixtures) {
    const std::string dir = kHf + f.name;
    for (int layer : {0, 1}) {
      if (f.gated) {
        const auto block = egelu::GatedFeedForward<float>::from_pretrained(dir, layer);
        EXPECT_EQ(block.weight_format(), f.format) << f.name;
        EXPECT_EQ(int(block.form()), f.form) << f.name;
        EXPECT_FLOAT_EQ(block.eps(), float(f.eps)) << f.name;
        check_layer(block, dir, layer, 3e-5);
        check_layer(egelu::GatedFeedForward<double>::from_pretrained(dir, layer), dir, layer, 1e-12);
      } else {
        const auto block = egelu::FeedForward<float>::from_pretrained(dir, layer);
        EXPECT_EQ(block.weight_format(), f.format) << f.name;
        EXPECT_EQ(int(block.form()), f.form) << f.name;
        EXPECT_EQ(block.norm_placement(), f.pre_norm ? egelu::NormPlacement::pre : egelu::NormPlacement::post)
            << f.name;
        EXPECT_FLOAT_EQ(block.eps(), float(f.eps)) << f.name;
        check_layer(block, dir, layer, 3e-5);
        const auto exact = egelu::FeedForward<double>::from_pretrained(dir, layer);
        EXPECT_EQ(exact.weight_format(), WeightFormat::f64);
        check_layer(exact, dir, layer, 1e-12);
      }
    }
  }
}

// The second round of families: stacks, sandwich norms, fused and stacked tensors,
// settings left to Transformers' defaults, and the dense layers of mixtures of experts.
struct StackFixture {
  const char* name;
  const char* stack;  // "" for a model of one stack
  bool gated;
  std::vector<int> layers;
  WeightFormat format;
  int form;        // GeluForm or GatedForm
  bool norm_flag;  // FeedForward: pre-norm; GatedFeedForward: a norm after the MLP too
  double eps;
  // The double block against the float64 reference: BLOOM's GELU writes sqrt(2/pi) as 0.79788456
  // (the same float, 8.0e-10 off in double), which egelu's tanh form does not copy.
  double tolerance64 = 1e-12;
};

const StackFixture kStackFixtures[] = {
    {"gemma2", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::geglu), true, 1e-6},
    {"gemma3_text", "", true, {0, 1}, WeightFormat::f32, int(GatedForm::geglu), true, 1e-6},
    // text_config leaves out rms_norm_eps and hidden_activation: Gemma3TextConfig's defaults.
    {"gemma3", "text", true, {0, 1}, WeightFormat::bf16, int(GatedForm::geglu), true, 1e-6},
    {"gemma3", "vision", false, {0, 1}, WeightFormat::bf16, int(GeluForm::tanh), true, 1e-6},
    {"gemma3_new_names", "text", true, {0, 1}, WeightFormat::bf16, int(GatedForm::geglu), true, 1e-6},
    {"gemma3_new_names", "vision", false, {0, 1, 2}, WeightFormat::bf16, int(GeluForm::tanh), true, 1e-6},
    {"phi3", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-5},
    {"qwen3", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-6},
    // "gated-gelu" is T5's tanh GELU (gelu_new).
    {"t5", "encoder", true, {0, 1, 2}, WeightFormat::f32, int(GatedForm::geglu), false, 1e-6},
    {"t5", "decoder", true, {0, 1}, WeightFormat::f32, int(GatedForm::geglu), false, 1e-6},
    {"mt5", "encoder", true, {0, 1}, WeightFormat::bf16, int(GatedForm::geglu), false, 1e-6},
    {"mt5", "decoder", true, {0, 1}, WeightFormat::bf16, int(GatedForm::geglu), false, 1e-6},
    {"umt5", "encoder", true, {0, 1}, WeightFormat::f32, int(GatedForm::geglu), false, 1e-6},
    {"umt5", "decoder", true, {0, 1}, WeightFormat::f32, int(GatedForm::geglu), false, 1e-6},
    {"vit", "", false, {0, 1}, WeightFormat::f32, int(GeluForm::exact), true, 1e-12},
    {"clip", "text", false, {0, 1}, WeightFormat::f16, int(GeluForm::quick), true, 1e-5},
    {"clip", "vision", false, {0, 1}, WeightFormat::f16, int(GeluForm::quick), true, 1e-5},
    {"whisper", "encoder", false, {0, 1}, WeightFormat::f16, int(GeluForm::exact), true, 1e-5},
    {"whisper", "decoder", false, {0, 1, 2}, WeightFormat::f16, int(GeluForm::exact), true, 1e-5},
    {"gpt_neox", "", false, {0, 1}, WeightFormat::f16, int(GeluForm::exact), true, 1e-5},
    // Phi-2's parallel block: the MLP's part, X + MLP(input_layernorm(X)); gelu_new.
    {"phi", "", false, {0, 1}, WeightFormat::f16, int(GeluForm::tanh), true, 1e-5},
    // BERT's post-norm block under DistilBERT's names and keys (eps fixed in its code), MPNet's
    // (eps from config.json, not MPNetConfig's 1e-12) and ELECTRA's (hidden_act and eps left to the defaults).
    {"distilbert", "", false, {0, 1, 2}, WeightFormat::f32, int(GeluForm::exact), false, 1e-12},
    {"distilbert_model", "", false, {0, 1}, WeightFormat::f16, int(GeluForm::exact), false, 1e-12},
    {"mpnet", "", false, {0, 1}, WeightFormat::f32, int(GeluForm::exact), false, 1e-5},
    {"electra", "", false, {0, 1}, WeightFormat::bf16, int(GeluForm::exact), false, 1e-12},
    {"deberta_v2", "", false, {0, 1}, WeightFormat::f32, int(GeluForm::exact), false, 1e-7},
    // StarCoder2: c_fc, c_proj after post_attention_layernorm, gelu_pytorch_tanh, norm_epsilon.
    {"starcoder2", "", false, {0, 1}, WeightFormat::bf16, int(GeluForm::tanh), true, 1e-5},
    // A LayerNorm before the gated MLP (ModernBERT's fused Wi, the exact GELU; StableLM's with a bias;
    // Cohere's and OLMo's without bias, OLMo's without weight), or RMSNorm after it only (OLMo 2).
    {"modernbert", "", true, {0, 1, 2}, WeightFormat::f32, int(GatedForm::geglu_exact), false, 1e-5},
    {"stablelm", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-5},
    {"cohere", "", true, {0, 1}, WeightFormat::f16, int(GatedForm::swiglu), false, 1e-5},
    {"olmo", "", true, {0, 1}, WeightFormat::f32, int(GatedForm::swiglu), false, 1e-5},
    {"olmo2", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), true, 1e-6},
    // Granite's residual_multiplier on the MLP's output; GLM-4's fused gate_up_proj and post_mlp_layernorm.
    {"granite", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-5},
    // Granite 4 without experts (granitemoehybrid, num_local_experts 0): its shared MLP, fused input_linear.
    {"granitemoehybrid_dense", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-5},
    {"stablelm_parallel", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-5},
    // Vision-language models' language models: LLaVA (text_config a llama, its eps LlamaConfig's default,
    // the saved layout language_model.model.), PaliGemma (text_config without model_type: gemma; the
    // in-memory layout model.language_model.), SmolVLM (model.text_model.), Qwen2.5-VL (top-level settings).
    {"llava", "", true, {0, 1}, WeightFormat::f16, int(GatedForm::swiglu), false, 1e-6},
    {"paligemma", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::geglu), false, 1e-6},
    {"smolvlm", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-5},
    {"qwen2_5_vl", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-6},
    {"glm4", "", true, {0, 1}, WeightFormat::bf16, int(GatedForm::swiglu), true, 1e-5},
    // GPT-J's parallel block (ln_1, n_inner null: 4 n_embd), GPT-BigCode's nn.Linear weights (n_inner given),
    // BLOOM's fixed tanh GELU (n_embed, BloomModel's h.N.), Falcon's new architecture (ln_mlp, no biases:
    // zeros) and falcon-rw's sequential block (post_attention_layernorm, biases, ffn_hidden_size).
    {"gptj", "", false, {0, 1}, WeightFormat::f16, int(GeluForm::tanh), true, 1e-5},
    {"gpt_bigcode", "", false, {0, 1}, WeightFormat::f32, int(GeluForm::tanh), true, 1e-5},
    {"bloom", "", false, {0, 1}, WeightFormat::bf16, int(GeluForm::tanh), true, 1e-5, 1e-9},
    {"falcon", "", false, {0, 1}, WeightFormat::bf16, int(GeluForm::exact), true, 1e-5},
    {"falcon_rw", "", false, {0, 1}, WeightFormat::f16, int(GeluForm::exact), true, 1e-5},
    // falcon-7b's layout: the old architecture's parallel block reading input_layernorm, no biases.
    {"falcon_7b", "", false, {0, 1}, WeightFormat::bf16, int(GeluForm::exact), true, 1e-5},
    // The dense layers of mixtures of experts (their sparse ones: test_moe.cpp).
    {"qwen2_moe", "", true, {1}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-6},
    {"qwen3_moe", "", true, {0, 2}, WeightFormat::f32, int(GatedForm::swiglu), false, 1e-6},
    {"deepseek_v2", "", true, {0}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-6},
    {"deepseek_v3", "", true, {0}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-6},
    // (FP8 weights, each times its block's scale, kept in float.)
    {"deepseek_v3_fp8", "", true, {0}, WeightFormat::f32, int(GatedForm::swiglu), false, 1e-6},
    {"deepseek_v3_fp8_blocks", "", true, {0}, WeightFormat::f32, int(GatedForm::swiglu), false, 1e-6},
    // Llama 4's, intermediate_size_mlp wide at feed_forward: Maverick's layout (a vision-language model,
    // every other layer dense) and a text model's whose moe_layers list leaves out layer 1.
    {"llama4", "", true, {0}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-5},
    {"llama4_text", "", true, {1}, WeightFormat::f32, int(GatedForm::swiglu), false, 1e-5},
    // Jamba's layers without experts (the even ones here, Mamba or attention), as wide as an expert.
    {"jamba", "", true, {0, 2}, WeightFormat::bf16, int(GatedForm::swiglu), false, 1e-6},
};

template <typename Block>
Block load(const StackFixture& f, int layer) {
  const std::string dir = kHf + f.name;
  return *f.stack ? Block::from_pretrained(dir, f.stack, layer) : Block::from_pretrained(dir, layer);
}

TEST(FromPretrained, EveryStackEveryLayerOfTheSecondRoundMatchesTheReference) {
  for (const StackFixture& f : kStackFixtures) {
    const std::string dir = kHf + f.name;
    SCOPED_TRACE(std::string(f.name) + " " + f.stack);
    for (int layer : f.layers) {
      if (f.gated) {
        const auto block = load<egelu::GatedFeedForward<float>>(f, layer);
        EXPECT_EQ(block.weight_format(), f.format);
        EXPECT_EQ(int(block.form()), f.form);
        EXPECT_EQ(block.has_post_norm(), f.norm_flag);
        EXPECT_FLOAT_EQ(block.eps(), float(f.eps));
        check_layer(block, dir, layer, 3e-5, f.stack);
        check_layer(load<egelu::GatedFeedForward<double>>(f, layer), dir, layer, f.tolerance64, f.stack);
      } else {
        const auto block = load<egelu::FeedForward<float>>(f, layer);
        EXPECT_EQ(block.weight_format(), f.format);
        EXPECT_EQ(int(block.form()), f.form);
        EXPECT_EQ(block.norm_placement(), f.norm_flag ? egelu::NormPlacement::pre : egelu::NormPlacement::post);
        EXPECT_FLOAT_EQ(block.eps(), float(f.eps));
        check_layer(block, dir, layer, 3e-5, f.stack);
        check_layer(load<egelu::FeedForward<double>>(f, layer), dir, layer, f.tolerance64, f.stack);
      }
    }
  }
}

// The norm before the MLP each family has: LayerNorm (ModernBERT, StableLM, Cohere, OLMo), none
// (OLMo 2), RMSNorm (the rest).
TEST(FromPretrained, GatedFamiliesLoadTheirOwnNorm) {
  const std::pair<const char*, egelu::GatedNorm> families[] = {
      {"modernbert", egelu::GatedNorm::layer}, {"stablelm", egelu::GatedNorm::layer},
      {"cohere", egelu::GatedNorm::layer},     {"olmo", egelu::GatedNorm::layer},
      {"olmo2", egelu::GatedNorm::none},       {"llama", egelu::GatedNorm::rms},
      {"gemma2", egelu::GatedNorm::rms}};
  for (const auto& [name, norm] : families) {
    EXPECT_EQ(egelu::GatedFeedForward<float>::from_pretrained(kHf + name, 0).norm_type(), norm) << name;
  }
  EXPECT_FLOAT_EQ(egelu::GatedFeedForward<float>::from_pretrained(kHf + "granite", 0).output_scale(), 0.22f);
  EXPECT_FLOAT_EQ(egelu::GatedFeedForward<float>::from_pretrained(kHf + "granitemoehybrid_dense", 1).output_scale(),
                  0.246f);
  EXPECT_EQ(egelu::GatedFeedForward<float>::from_pretrained(kHf + "llama", 0).output_scale(), 1.f);
}

// The three-argument form converts: a 16-bit checkpoint widened to f32 gives the 16-bit
// block's results to within float rounding (the weights are the same numbers), and a
// 16-bit block holds two bytes a weight.
TEST(FromPretrained, ConvertsTheWeightsWhenAsked) {
  const std::string llama = kHf + "llama";
  const auto bf16 = egelu::GatedFeedForward<float>::from_pretrained(llama, 1);
  const auto f32 = egelu::GatedFeedForward<float>::from_pretrained(llama, 1, WeightFormat::f32);
  EXPECT_EQ(f32.weight_format(), WeightFormat::f32);
  const auto a = check_layer(bf16, llama, 1, 3e-5), b = check_layer(f32, llama, 1, 3e-5);
  EXPECT_LE(((a - b).array().abs() / (1 + b.array().abs())).maxCoeff(), 1e-6);
  // Two bytes a weight against four (both padded alike to the kernel's panels of rows).
  EXPECT_EQ(2 * bf16.weight_bytes(), f32.weight_bytes());
  EXPECT_GE(double(f32.weight_bytes()), 4.0 * 3 * double(bf16.d_model()) * double(bf16.d_ff()));

  const std::string gpt2 = kHf + "gpt2";
  const auto half = egelu::FeedForward<float>::from_pretrained(gpt2, 0, WeightFormat::f16);
  EXPECT_EQ(half.weight_format(), WeightFormat::f16);
  check_layer(half, gpt2, 0, 3e-3);  // f16-rounded weights: within their rounding, not float's
  EXPECT_THROW(egelu::FeedForward<double>::from_pretrained(gpt2, 0, WeightFormat::bf16), std::invalid_argument);
  EXPECT_THROW(egelu::FeedForward<float>::from_pretrained(gpt2, 0, WeightFormat::f64), std::invalid_argument);
}

// A copy of a fixture to break.
class Scratch {
 public:
  explicit Scratch(const std::string& fixture) : dir_(fs::path(testing::TempDir()) / ("egelu_hf_" + fixture)) {
    fs::remove_all(dir_);
    fs::copy(kHf + fixture, dir_, fs::copy_options::recursive);
  }
  ~Scratch() { fs::remove_all(dir_); }
  std::string dir() const { return dir_.string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // config.json with `from` replaced by `to` (which must be there).
  void edit_config(const std::string& from, const std::string& to) const {
    std::string text = read(file("config.json"));
    const std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    write(file("config.json"), text);
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

 private:
  fs::path dir_;
};

// Model types whose MLP is another's under the same names (their own config classes' defaults aside) load
// that fixture, renamed, to its reference: LLaMA's, Phi-3's (GLM), OLMo 2's (OLMo 3, EXAONE 4), Cohere's;
// and with the fixture's epsilon and activation left out, their config classes' defaults.
TEST(FromPretrained, ModelTypesSharingAnMlpLoadItsFixture) {
  struct renamed {
    const char *fixture, *type, *eps_key;
    double default_eps;
  };
  const renamed types[] = {
      {"llama", "ministral", "rms_norm_eps", 1e-6},     {"llama", "smollm3", "rms_norm_eps", 1e-6},
      {"llama", "seed_oss", "rms_norm_eps", 1e-6},      {"llama", "hunyuan_v1_dense", "rms_norm_eps", 1e-5},
      {"llama", "helium", "rms_norm_eps", 1e-8},        {"llama", "granite", "rms_norm_eps", 1e-6},
      {"phi3", "glm", "rms_norm_eps", 1.5625e-7},       {"olmo2", "olmo3", "rms_norm_eps", 1e-5},
      {"olmo2", "exaone4", "rms_norm_eps", 1e-5},       {"cohere", "cohere2", "layer_norm_eps", 1e-5},
      {"glm4", "glm4", "rms_norm_eps", 1.5625e-7},      {"modernbert", "modernbert", "norm_eps", 1e-5},
      {"stablelm", "stablelm", "layer_norm_eps", 1e-5}, {"llama", "llama", "rms_norm_eps", 1e-6},
      {"mistral", "mistral", "rms_norm_eps", 1e-6},     {"qwen2", "qwen2", "rms_norm_eps", 1e-6}};
  for (const renamed& r : types) {
    SCOPED_TRACE(std::string(r.fixture) + " as " + r.type);
    Scratch s(r.fixture);
    s.edit_config("\"model_type\": \"" + std::string(r.fixture) + "\"",
                  "\"model_type\": \"" + std::string(r.type) + "\"");
    const auto block = egelu::GatedFeedForward<float>::from_pretrained(s.dir(), 1);
    check_layer(block, s.dir(), 1, 3e-5);
    EXPECT_EQ(block.output_scale(), 1.f);
    // The keys left out: the config class's defaults (SiLU, or ModernBERT's exact GELU).
    const std::string config = Scratch::read(s.file("config.json"));
    const std::size_t at = config.find("\"" + std::string(r.eps_key) + "\": ");
    ASSERT_NE(at, std::string::npos);
    const std::string line = config.substr(at, config.find('\n', at) - at);  // the key and its value
    s.edit_config(line, line.back() == ',' ? "\"unread\": 0," : "\"unread\": 0");
    for (const char* act : {"\"hidden_act\": \"silu\",", "\"hidden_activation\": \"gelu\","}) {
      if (config.find(act) != std::string::npos) s.edit_config(act, "");
    }
    const auto defaults = egelu::GatedFeedForward<float>::from_pretrained(s.dir(), 1);
    EXPECT_FLOAT_EQ(defaults.eps(), float(r.default_eps));
    EXPECT_EQ(defaults.form(), block.form());
  }
  // Vision-language models of the same layouts.
  const std::pair<const char*, const char*> vlms[] = {{"llava", "llava_next"},
                                                      {"llava", "mistral3"},
                                                      {"llava", "internvl"},
                                                      {"smolvlm", "idefics3"},
                                                      {"qwen2_5_vl", "qwen2_vl"}};
  for (const auto& [fixture, type] : vlms) {
    SCOPED_TRACE(std::string(fixture) + " as " + type);
    Scratch s(fixture);
    s.edit_config("\"model_type\": \"" + std::string(fixture) + "\"", "\"model_type\": \"" + std::string(type) + "\"");
    check_layer(egelu::GatedFeedForward<float>::from_pretrained(s.dir(), 1), s.dir(), 1, 3e-5);
  }
  // A text_config without model_type: the config class's default (Mistral 3: mistral; InternVL: qwen2).
  for (const char* type : {"mistral3", "internvl", "llava"}) {
    SCOPED_TRACE(std::string("llava as ") + type + ", text_config without model_type");
    Scratch s("llava");
    s.edit_config("\"model_type\": \"llava\"", "\"model_type\": \"" + std::string(type) + "\"");
    s.edit_config("\"model_type\": \"llama\"", "\"unread\": \"llama\"");
    check_layer(egelu::GatedFeedForward<float>::from_pretrained(s.dir(), 0), s.dir(), 0, 3e-5);
  }
  {
    // Qwen2.5-VL saved by newer Transformers: the settings in text_config (the top level's then unread).
    Scratch s("qwen2_5_vl");
    s.edit_config("\"rms_norm_eps\": 1e-06", "\"rms_norm_eps\": 0.5");
    s.edit_config("\"model_type\": \"qwen2_5_vl\",",
                  "\"model_type\": \"qwen2_5_vl\", \"text_config\": {\"hidden_act\": \"silu\", \"hidden_size\": 24, "
                  "\"intermediate_size\": 64, \"num_hidden_layers\": 2, \"rms_norm_eps\": 1e-06},");
    const auto block = egelu::GatedFeedForward<float>::from_pretrained(s.dir(), 1);
    EXPECT_FLOAT_EQ(block.eps(), 1e-6f);
    check_layer(block, s.dir(), 1, 3e-5);
  }
  // Granite's residual_multiplier left out: 1.
  Scratch granite("granite");
  granite.edit_config("\"residual_multiplier\": 0.22,", "");
  EXPECT_EQ(egelu::GatedFeedForward<float>::from_pretrained(granite.dir(), 0).output_scale(), 1.f);
}

// f() throws an exception of type E whose message holds every one of `parts`.
template <typename E = std::exception>
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one with: " << parts.front();
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

using FF = egelu::FeedForward<float>;
using GF = egelu::GatedFeedForward<float>;

TEST(FromPretrained, FalconsConfigChoosesTheLayerNormItsMlpReads) {
  // The fixture has ln_attn and ln_mlp (new_decoder_architecture, two norms by default); one norm, or
  // the old architecture's parallel block (falcon-7b), reads input_layernorm, which it lacks: named.
  const std::pair<const char*, const char*> edits[] = {
      {"\"new_decoder_architecture\": true", "\"new_decoder_architecture\": true, \"num_ln_in_parallel_attn\": 1"},
      {"\"new_decoder_architecture\": true", "\"new_decoder_architecture\": false"}};
  for (const auto& [from, to] : edits) {
    Scratch s("falcon");
    s.edit_config(from, to);
    expect_error<egelu::safetensors::format_error>([&] { egelu::FeedForward<float>::from_pretrained(s.dir(), 1); },
                                                   {"transformer.h.1.input_layernorm.weight"});
  }
  // falcon_rw's sequential block has both input_layernorm and post_attention_layernorm: as a parallel
  // block (parallel_attn true) it reads the first, so the reference (the second's) no longer holds.
  {
    Scratch s("falcon_rw");
    s.edit_config("\"parallel_attn\": false", "\"parallel_attn\": true");
    const Matrix<float> x = tokens<float>(s.file("reference/X.npy"));
    Matrix<float> y = Matrix<float>::Constant(x.rows(), x.cols(), NAN);
    egelu::FeedForward<float>::from_pretrained(s.dir(), 0).forward(x, y);
    EXPECT_TRUE(y.allFinite());
    EXPECT_GT(worst(y, tokens<double>(s.file("reference/Y_layer0.npy"))), 1e-2);
  }
  // StarCoder2 without biases (use_bias false) loads, its bias tensors unread: the block adds zeros,
  // so its output moves from the reference with biases.
  {
    Scratch s("starcoder2");
    s.edit_config("\"use_bias\": true", "\"use_bias\": false");
    const Matrix<float> x = tokens<float>(s.file("reference/X.npy"));
    Matrix<float> y = Matrix<float>::Constant(x.rows(), x.cols(), NAN);
    egelu::FeedForward<float>::from_pretrained(s.dir(), 1).forward(x, y);
    EXPECT_TRUE(y.allFinite());
    EXPECT_GT(worst(y, tokens<double>(s.file("reference/Y_layer1.npy"))), 1e-2);
  }
}

TEST(FromPretrained, SettingsItDoesNotRunAreRefusedByName) {
  {
    Scratch s("bert");
    s.edit_config("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"gelu_10\"");
    expect_error<std::invalid_argument>([&] { FF::from_pretrained(s.dir(), 0); },
                                        {"config.json", "\"hidden_act\"", "\"gelu_10\""});
  }
  {
    Scratch s("gpt2");
    s.edit_config("\"activation_function\": \"gelu_new\"", "\"activation_function\": \"relu\"");
    expect_error<std::invalid_argument>([&] { FF::from_pretrained(s.dir(), 1); }, {"activation_function", "\"relu\""});
  }
  {
    // Gemma 2's MLP sits between norms of its own: a Gemma 1 layout read as gemma2 lacks them.
    Scratch s("gemma");
    s.edit_config("\"model_type\": \"gemma\"", "\"model_type\": \"gemma2\"");
    expect_error<egelu::safetensors::format_error>([&] { GF::from_pretrained(s.dir(), 0); },
                                                   {"pre_feedforward_layernorm", "model.layers.0."});
  }
  {
    Scratch s("llama");  // a gated block names the activation it does not run
    s.edit_config("\"hidden_act\": \"silu\"", "\"hidden_act\": \"relu\"");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 0); }, {"\"hidden_act\"", "\"relu\""});
  }
  {
    Scratch s("gemma");  // Gemma with hidden_activation: that one wins over hidden_act
    s.edit_config("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"gelu\", \"hidden_activation\": \"gelu_python\"");
    EXPECT_EQ(GF::from_pretrained(s.dir(), 0).form(), GatedForm::geglu_exact);
  }
  {
    Scratch s("llama");
    s.edit_config("\"mlp_bias\": false", "\"mlp_bias\": true");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 0); }, {"config.json", "mlp_bias"});
  }
  {
    Scratch s("llama");
    s.edit_config("\"model_type\": \"llama\"", "\"model_type\": \"mamba\"");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 0); }, {"\"mamba\"", "llama"});
  }
  {
    // Phi's format from before Transformers took it in: refused with the reason, not as an unknown type.
    Scratch s("phi");
    s.edit_config("\"model_type\": \"phi\"", "\"model_type\": \"phi-msft\"");
    expect_error<std::invalid_argument>([&] { FF::from_pretrained(s.dir(), 0); },
                                        {"\"phi-msft\"", "trust_remote_code"});
  }
  {
    // BLOOM's MLP with the LayerNorm's output as its residual, or dense_4h_to_h without its bias
    // (slow_but_exact with pretraining_tp above 1): refused naming the key.
    Scratch s("bloom");
    s.edit_config("\"apply_residual_connection_post_layernorm\": false",
                  "\"apply_residual_connection_post_layernorm\": true");
    expect_error<std::invalid_argument>([&] { FF::from_pretrained(s.dir(), 0); },
                                        {"config.json", "\"apply_residual_connection_post_layernorm\" is true"});
  }
  {
    Scratch s("bloom");
    s.edit_config("\"slow_but_exact\": false", "\"slow_but_exact\": true");
    expect_error<std::invalid_argument>([&] { FF::from_pretrained(s.dir(), 0); },
                                        {"config.json", "\"slow_but_exact\"", "\"pretraining_tp\"", "bias"});
  }
  {
    // Falcon layouts whose forward fails in Transformers (it reads a LayerNorm it did not build).
    const std::pair<const char*, const char*> edits[] = {
        {"\"parallel_attn\": true", "\"parallel_attn\": false"},
        {"\"new_decoder_architecture\": true", "\"new_decoder_architecture\": false, \"num_ln_in_parallel_attn\": 2"},
        {"\"new_decoder_architecture\": true", "\"new_decoder_architecture\": true, \"num_ln_in_parallel_attn\": 3"}};
    for (const auto& [from, to] : edits) {
      Scratch s("falcon");
      s.edit_config(from, to);
      expect_error<std::invalid_argument>([&] { FF::from_pretrained(s.dir(), 0); },
                                          {"config.json", "FalconDecoderLayer"});
    }
  }
  {
    Scratch s("llava");  // a language model egelu does not load, named with where it is said
    s.edit_config("\"model_type\": \"llama\"", "\"model_type\": \"mamba\"");
    expect_error<std::invalid_argument>(
        [&] { GF::from_pretrained(s.dir(), 0); },
        {"config.json's \"text_config\" has model_type \"mamba\"", "not one egelu knows"});
  }
  {
    Scratch s("llava");  // text_config's model_type not a name
    s.edit_config("\"model_type\": \"llama\"", "\"model_type\": 7");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 0); },
                                        {"config.json's \"text_config\" has model_type 7"});
  }
  {
    Scratch s("llava");  // a vision-language model as the language model
    s.edit_config("\"model_type\": \"llama\"", "\"model_type\": \"paligemma\"");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 0); },
                                        {"\"paligemma\"", "itself a vision-language model"});
  }
  {
    // PaliGemma without text_config: PaliGemmaConfig builds a Gemma of its own widths, not GemmaConfig's
    // defaults; refused rather than guessed.
    Scratch s("paligemma");
    s.edit_config("\"text_config\":", "\"unread_text_config\":");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 0); },
                                        {"config.json has no \"text_config\"", "\"paligemma\""});
  }
  {
    // LLaVA without text_config: LlamaConfig's defaults, which the tensors' shapes then contradict.
    Scratch s("llava");
    s.edit_config("\"text_config\":", "\"unread_text_config\":");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 0); }, {"4096", "Transformers' default"});
  }
  {
    Scratch s("llava");  // "text" is the only stack: no stack name
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), "text", 0); }, {"one stack"});
  }
  {
    Scratch s("modernbert");  // a LayerNorm with a bias the checkpoint lacks: named, never left out
    s.edit_config("\"norm_bias\": false", "\"norm_bias\": true");
    expect_error<egelu::safetensors::format_error>([&] { GF::from_pretrained(s.dir(), 1); },
                                                   {"egelu_hf_modernbert", "no tensor 'model.layers.1.mlp_norm.bias'"});
  }
  {
    Scratch s("modernbert");  // ModernBERT with biases in its MLP
    s.edit_config("\"mlp_bias\": false", "\"mlp_bias\": true");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 0); }, {"config.json", "\"mlp_bias\""});
  }
  {
    Scratch s("distilbert");  // DistilBERT's own key for the activation
    s.edit_config("\"activation\": \"gelu\"", "\"activation\": \"relu\"");
    expect_error<std::invalid_argument>([&] { FF::from_pretrained(s.dir(), 0); }, {"\"activation\"", "\"relu\""});
  }
  {
    // A key the mixtures of experts' rows require (stricter than Qwen2MoeConfig, whose default is 1e-6;
    // LlamaConfig's 1e-6 applies to LLaMA: ModelTypesSharingAnMlpLoadItsFixture).
    Scratch s("qwen2_moe");
    s.edit_config("\"rms_norm_eps\"", "\"rms_norm_epsilon\"");
    expect_error<std::invalid_argument>([&] { GF::from_pretrained(s.dir(), 1); }, {"config.json", "\"rms_norm_eps\""});
  }
  expect_error<std::invalid_argument>([&] { FF::from_pretrained(kHf + "llama", 0); },
                                      {"config.json", "\"llama\"", "GatedFeedForward"});
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "bert", 0); },
                                      {"config.json", "\"bert\"", "FeedForward"});
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "llama", 2); },
                                      {"layer 2", "\"num_hidden_layers\" is 2"});
  expect_error<std::invalid_argument>([&] { FF::from_pretrained(kHf + "gpt2", -1); }, {"layer -1", "\"n_layer\" is 2"});
}

TEST(FromPretrained, MissingFilesNameThemAndWhy) {
  {
    Scratch s("bert");
    fs::remove(s.file("config.json"));
    expect_error<std::invalid_argument>([&] { FF::from_pretrained(s.dir(), 0); },
                                        {"cannot open", "config.json", "No such file"});
  }
  {
    Scratch s("qwen2");
    fs::remove(s.file("model-00002-of-00002.safetensors"));
    expect_error<egelu::safetensors::format_error>(
        [&] { GF::from_pretrained(s.dir(), 1); }, {"model.safetensors.index.json", "model-00002-of-00002.safetensors"});
  }
  {
    Scratch s("bert");
    fs::remove(s.file("model.safetensors"));
    expect_error<egelu::safetensors::format_error>([&] { FF::from_pretrained(s.dir(), 0); }, {"model.safetensors"});
  }
}

TEST(FromPretrained, MalformedFilesNameTheFileAndTheProblem) {
  {
    Scratch s("gpt2");
    const std::string bytes = Scratch::read(s.file("model.safetensors"));
    Scratch::write(s.file("model.safetensors"), bytes.substr(0, bytes.size() - 100));  // truncated
    expect_error<egelu::safetensors::format_error>([&] { FF::from_pretrained(s.dir(), 0); }, {"model.safetensors"});
  }
  {
    Scratch s("llama");
    std::string bytes = Scratch::read(s.file("model.safetensors"));
    bytes[8] = '[';  // a header that is not a JSON object
    Scratch::write(s.file("model.safetensors"), bytes);
    expect_error<egelu::safetensors::format_error>([&] { GF::from_pretrained(s.dir(), 0); }, {"model.safetensors"});
  }
  {
    Scratch s("llama");
    std::string bytes = Scratch::read(s.file("model.safetensors"));
    bytes[0] = char(0xff), bytes[1] = char(0xff), bytes[2] = char(0xff);  // a header length past the end
    Scratch::write(s.file("model.safetensors"), bytes);
    expect_error<egelu::safetensors::format_error>([&] { GF::from_pretrained(s.dir(), 0); }, {"model.safetensors"});
  }
}

// A LLaMA layer written here, with MLP tensors of the dtype and shape given.
void write_llama(const Scratch& s, const std::string& gate_dtype, const std::string& gate_shape, int gate_bytes,
                 bool with_up = true) {
  using namespace safetensors_bytes;
  const int d = 4, f = 6;
  std::string header = "{", data;
  const auto add = [&](const std::string& name, const std::string& dtype, const std::string& shape, int bytes) {
    header += (header.size() > 1 ? "," : "") + std::string("\"") + name + "\": {\"dtype\": \"" + dtype +
              "\", \"shape\": " + shape + ", \"data_offsets\": [" + std::to_string(data.size()) + ", " +
              std::to_string(data.size() + std::size_t(bytes)) + "]}";
    data += std::string(std::size_t(bytes), '\0');
  };
  add("model.layers.0.mlp.gate_proj.weight", gate_dtype, gate_shape, gate_bytes);
  if (with_up) add("model.layers.0.mlp.up_proj.weight", "F32", "[6, 4]", f * d * 4);
  add("model.layers.0.mlp.down_proj.weight", "F32", "[4, 6]", f * d * 4);
  add("model.layers.0.post_attention_layernorm.weight", "F32", "[4]", d * 4);
  add("model.layers.0.input_layernorm.weight", "F32", "[4]", d * 4);
  Scratch::write(s.file("model.safetensors"), file_bytes(header + "}", data));
  Scratch::write(s.file("config.json"),
                 R"({"model_type": "llama", "hidden_size": 4, "intermediate_size": 6, "num_hidden_layers": 1,)"
                 R"( "hidden_act": "silu", "rms_norm_eps": 1e-5, "torch_dtype": "float32"})");
}

TEST(FromPretrained, TensorsOfTheWrongDtypeOrShapeOrMissingAreNamed) {
  Scratch s("llama");
  write_llama(s, "F32", "[6, 4]", 96);
  EXPECT_NO_THROW(GF::from_pretrained(s.dir(), 0));  // the writer is right
  write_llama(s, "I32", "[6, 4]", 96);
  expect_error<egelu::safetensors::format_error>([&] { GF::from_pretrained(s.dir(), 0); },
                                                 {"model.safetensors", "model.layers.0.mlp.gate_proj.weight", "I32"});
  write_llama(s, "F32", "[4, 6]", 96);  // transposed
  expect_error<std::invalid_argument>(
      [&] { GF::from_pretrained(s.dir(), 0); },
      {"model.safetensors", "'model.layers.0.mlp.gate_proj.weight' is (4, 6) but must be (6, 4)", "intermediate_size"});
  write_llama(s, "F32", "[6, 4]", 96, false);
  expect_error<egelu::safetensors::format_error>(
      [&] { GF::from_pretrained(s.dir(), 0); },
      {"model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.gate_proj.weight",
       "model.layers.0.mlp.down_proj.weight"});
}

// Stacks (issue 33): the two-argument form on a model with several names them; a stack name on a
// model with one, an unknown stack and a layer past a stack's last say so; a layer loaded through
// the wrong block names the right one; T5's ungated relu is refused by name.
TEST(FromPretrained, StacksAndWrongBlocksAreNamed) {
  using Moe = egelu::MoeFeedForward<float>;
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "t5", 0); },
                                      {"config.json", "\"t5\"", "\"encoder\", \"decoder\"", "name one"});
  expect_error<std::invalid_argument>([&] { FF::from_pretrained(kHf + "clip", 1); }, {"\"text\"", "\"vision\""});
  expect_error<std::invalid_argument>([&] { FF::from_pretrained(kHf + "whisper", 0); }, {"\"encoder\"", "\"decoder\""});
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "llama", "decoder", 0); },
                                      {"one stack", "\"decoder\"", "without a stack name"});
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "t5", "vision", 0); },
                                      {"no stack \"vision\"", "\"encoder\", \"decoder\""});
  expect_error<std::invalid_argument>([&] { FF::from_pretrained(kHf + "clip", "audio", 0); }, {"no stack \"audio\""});
  // T5's encoder has 3 layers and its decoder 2 (num_decoder_layers).
  EXPECT_NO_THROW(GF::from_pretrained(kHf + "t5", "encoder", 2));
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "t5", "decoder", 2); },
                                      {"layer 2 of stack \"decoder\" is out of range", "num_decoder_layers"});
  expect_error<std::invalid_argument>([&] { FF::from_pretrained(kHf + "whisper", "decoder", 3); },
                                      {"layer 3 of stack \"decoder\" is out of range", "decoder_layers"});
  expect_error<std::invalid_argument>([&] { FF::from_pretrained(kHf + "t5", "encoder", 0); }, {"GatedFeedForward"});
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "whisper", "encoder", 0); }, {"FeedForward"});
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "clip", "vision", 0); }, {"FeedForward"});
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "t5_relu", "encoder", 0); },
                                      {"\"relu\"", "without a gate"});
  // A mixture of experts' dense layer (qwen2_moe's mlp_only_layers [1], deepseek_v3's first
  // layer) names GatedFeedForward; a sparse one names MoeFeedForward.
  expect_error<std::invalid_argument>([&] { Moe::from_pretrained(kHf + "qwen2_moe", 1); },
                                      {"layer 1", "a gated MLP", "GatedFeedForward"});
  expect_error<std::invalid_argument>([&] { Moe::from_pretrained(kHf + "deepseek_v3", 0); }, {"GatedFeedForward"});
  expect_error<std::invalid_argument>([&] { GF::from_pretrained(kHf + "qwen2_moe", 0); },
                                      {"a mixture of experts", "MoeFeedForward"});
}

// Q8_0 and Q4_0 from a checkpoint (issue 35): a LLaMA layer (d_model 64, d_ff 96: whole blocks
// of 32) and a BERT layer written here with F32, BF16 and F16 tensors, quantized as they load, are
// the float blocks on the stored values quantized and dequantized by the specification's
// reference, bit for bit; the fixtures' layers, whose d_model (24) is no whole number of blocks,
// are refused naming the tensor and its shape.
namespace stored_values {

using Weights = GF::Weights;

// w as the checkpoint stores it in dtype: its bytes, and the values they hold.
struct Stored {
  std::string bytes;
  Weights values;
};
Stored store(const Weights& w, const std::string& dtype) {
  using namespace safetensors_bytes;
  Stored s{"", w};
  for (Eigen::Index i = 0; i < w.rows(); ++i) {
    for (Eigen::Index j = 0; j < w.cols(); ++j) {
      const float v = w(i, j);
      if (dtype == "F32") {
        s.bytes += le(bits_of(v), 4);
      } else if (dtype == "BF16") {
        const std::uint32_t top = std::uint32_t(bits_of(v)) & 0xffff0000u;  // truncated: any stored value
        s.bytes += le(top >> 16, 2);
        std::memcpy(&s.values(i, j), &top, 4);
      } else {  // F16: the value rounded to half by Eigen, stored as its bits
        const Eigen::half h(v);
        s.bytes += le(Eigen::numext::bit_cast<std::uint16_t>(h), 2);
        s.values(i, j) = float(h);
      }
    }
  }
  return s;
}

// A safetensors file written from its specification: the tensors in order, then config.json.
class Writer {
 public:
  void add(const std::string& name, const std::string& dtype, const std::string& shape, const std::string& bytes) {
    header_ += (header_.size() > 1 ? "," : "") + std::string("\"") + name + "\": {\"dtype\": \"" + dtype +
               "\", \"shape\": " + shape + ", \"data_offsets\": [" + std::to_string(data_.size()) + ", " +
               std::to_string(data_.size() + bytes.size()) + "]}";
    data_ += bytes;
  }
  void write(const Scratch& s, const std::string& config) const {
    Scratch::write(s.file("model.safetensors"), safetensors_bytes::file_bytes(header_ + "}", data_));
    Scratch::write(s.file("config.json"), config);
  }

 private:
  std::string header_ = "{", data_;
};

std::string f32_bytes(const Eigen::VectorXf& v) {
  return safetensors_bytes::f32(std::vector<float>(v.data(), v.data() + v.size()));
}

template <typename Block>
void expect_same_bits(const Block& block, const Block& want, const std::string& what) {
  for (Eigen::Index tokens : {1, 7, 40}) {
    const Eigen::MatrixXf x = Eigen::MatrixXf::Random(block.d_model(), tokens);
    Eigen::MatrixXf y = Eigen::MatrixXf::Constant(x.rows(), tokens, NAN), y_want = y;
    block.forward(x, y);
    want.forward(x, y_want);
    EXPECT_TRUE(y == y_want) << what << ", " << tokens << " tokens: max diff " << (y - y_want).cwiseAbs().maxCoeff();
  }
}

}  // namespace stored_values

TEST(FromPretrained, BlockFormatsQuantizeTheStoredWeights) {
  using namespace stored_values;
  const int d = 64, f = 96;
  std::srand(35);
  const Weights gate = Weights::Random(f, d) * 0.2f, up = Weights::Random(f, d) * 0.2f,
                down = Weights::Random(d, f) * 0.1f;
  const Eigen::VectorXf norm = Eigen::VectorXf::Ones(d) + Eigen::VectorXf::Random(d) * 0.1f,
                        b1 = Eigen::VectorXf::Random(f) * 0.1f, b2 = Eigen::VectorXf::Random(d) * 0.1f,
                        beta = Eigen::VectorXf::Random(d) * 0.1f;
  for (const std::string dtype : {"F32", "BF16", "F16"}) {
    const Stored g = store(gate, dtype), u = store(up, dtype), w2 = store(down, dtype);
    {
      Scratch s("llama");
      Writer file;
      file.add("model.layers.0.mlp.gate_proj.weight", dtype, "[96, 64]", g.bytes);
      file.add("model.layers.0.mlp.up_proj.weight", dtype, "[96, 64]", u.bytes);
      file.add("model.layers.0.mlp.down_proj.weight", dtype, "[64, 96]", w2.bytes);
      file.add("model.layers.0.post_attention_layernorm.weight", "F32", "[64]", f32_bytes(norm));
      file.add("model.layers.0.input_layernorm.weight", "F32", "[64]", f32_bytes(Eigen::VectorXf::Ones(d)));
      file.write(s, R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,)"
                    R"( "hidden_act": "silu", "rms_norm_eps": 1e-5})");
      for (WeightFormat format : {WeightFormat::q8_0, WeightFormat::q4_0, WeightFormat::mxfp4}) {
        const GF block = GF::from_pretrained(s.dir(), 0, format);
        EXPECT_EQ(block.weight_format(), format);
        const GF want(ggml_reference::dequantized(g.values, format), ggml_reference::dequantized(u.values, format),
                      ggml_reference::dequantized(w2.values, format), norm,
                      GF::Options{GatedForm::swiglu, 1e-5f, WeightFormat::f32});
        expect_same_bits(block, want, "llama " + dtype + " as " + egelu::to_string(format));
        if (format == WeightFormat::mxfp4) continue;  // (no integer kernel)
        // With q16_0 inputs: the block made from the same values by the constructor.
        const GF q16 = GF::from_pretrained(s.dir(), 0, format, egelu::InputFormat::q16_0);
        EXPECT_EQ(q16.input_format(), egelu::InputFormat::q16_0);
        const GF q16_want(g.values, u.values, w2.values, norm,
                          GF::Options{GatedForm::swiglu, 1e-5f, format, egelu::InputFormat::q16_0});
        expect_same_bits(q16, q16_want, "llama " + dtype + " as " + egelu::to_string(format) + " with q16_0 inputs");
      }
    }
    {
      Scratch s("bert");
      Writer file;
      file.add("bert.encoder.layer.0.intermediate.dense.weight", dtype, "[96, 64]", g.bytes);
      file.add("bert.encoder.layer.0.intermediate.dense.bias", "F32", "[96]", f32_bytes(b1));
      file.add("bert.encoder.layer.0.output.dense.weight", dtype, "[64, 96]", w2.bytes);
      file.add("bert.encoder.layer.0.output.dense.bias", "F32", "[64]", f32_bytes(b2));
      file.add("bert.encoder.layer.0.output.LayerNorm.weight", "F32", "[64]", f32_bytes(norm));
      file.add("bert.encoder.layer.0.output.LayerNorm.bias", "F32", "[64]", f32_bytes(beta));
      file.write(s, R"({"model_type": "bert", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,)"
                    R"( "hidden_act": "gelu", "layer_norm_eps": 1e-12})");
      for (WeightFormat format : {WeightFormat::q8_0, WeightFormat::q4_0, WeightFormat::mxfp4}) {
        const FF block = FF::from_pretrained(s.dir(), 0, format);
        EXPECT_EQ(block.weight_format(), format);
        const FF want(ggml_reference::dequantized(g.values, format), b1, ggml_reference::dequantized(w2.values, format),
                      b2, norm, beta, FF::Options{GeluForm::exact, egelu::NormPlacement::post, 1e-12f});
        expect_same_bits(block, want, "bert " + dtype + " as " + egelu::to_string(format));
        if (format == WeightFormat::mxfp4) continue;  // (no integer kernel)
        const FF q16 = FF::from_pretrained(s.dir(), 0, format, egelu::InputFormat::q16_0);
        FF::Options o{GeluForm::exact, egelu::NormPlacement::post, 1e-12f, format};
        o.inputs = egelu::InputFormat::q16_0;
        expect_same_bits(q16, FF(g.values, b1, w2.values, b2, norm, beta, o),
                         "bert " + dtype + " as " + egelu::to_string(format) + " with q16_0 inputs");
      }
    }
  }
  expect_error<std::invalid_argument>(
      [&] { GF::from_pretrained(kHf + "llama", 0, WeightFormat::q8_0); },
      {"model.safetensors", "model.layers.0.mlp.gate_proj.weight", "input dimension, 24", "blocks of 32"});
  expect_error<std::invalid_argument>([&] { FF::from_pretrained(kHf + "gpt2", 1, WeightFormat::q4_0); },
                                      {"model.safetensors", "h.1.mlp.c_fc.weight", "input dimension, 24"});
  expect_error<std::invalid_argument>(
      [&] { GF::from_pretrained(kHf + "llama", 0, WeightFormat::bf16, egelu::InputFormat::q16_0); },
      {"egelu::GatedFeedForward", "q16_0 inputs need q8_0 or q4_0 weights", "bf16"});
}

}  // namespace
