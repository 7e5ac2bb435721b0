// MoeFeedForward: every mixture-of-experts fixture (tests/make_hf_checkpoints.py: Mixtral,
// its Transformers 5 stacked layout, Qwen2-MoE with its shared expert, Qwen3-MoE, OLMoE,
// DeepSeek-V2 greedy, DeepSeek-V3 noaux_tc) against its float64 reference, every sparse
// layer, 1 and 2 threads, float and double; the constructor's block against a plain double
// computation written here from the definitions (routing, experts, sums), for every routing
// rule, 1 to 300 tokens and 1 to 3 threads (the same bits), in place, without allocating
// after reserve(); the 16-bit formats against the float block on the same rounded weights;
// and the errors: dense layers, missing experts, wrong shapes, k > E, FP8 settings and scales.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <egelu/egelu.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/moe_feed_forward.hpp>
#include <egelu/safetensors.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <unsupported/Eigen/CXX11/Tensor>

#include "ggml_reference.hpp"
#include "malloc_counter.hpp"
#include "npy_tokens.hpp"

namespace {

namespace fs = std::filesystem;
using egelu::GatedForm;
using egelu::GroupRank;
using egelu::RouterScore;
using egelu::WeightFormat;
using MF = egelu::MoeFeedForward<float>;
using MD = egelu::MoeFeedForward<double>;
const std::string kHf = std::string(EGELU_TEST_DATA_DIR) + "/hf/";

template <typename Scalar>
using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;

template <typename Scalar>
double worst(const Matrix<Scalar>& y, const Matrix<double>& want) {
  return ((y.template cast<double>() - want).array().abs() / (1 + want.array().abs())).maxCoeff();
}

struct MoeFixture {
  const char* name;
  std::vector<int> sparse_layers;
  WeightFormat format;
  int experts, per_token;
  Eigen::Index shared_d_ff;
  RouterScore score;
  bool normalize;
  double scale;
  GroupRank rank;
  double output_scale = 1;  // Granite's residual_multiplier
  egelu::GatedNorm norm = egelu::GatedNorm::rms;
};

const MoeFixture kFixtures[] = {
    {"mixtral", {0, 1}, WeightFormat::bf16, 8, 2, 0, RouterScore::softmax, true, 1, GroupRank::none},
    {"mixtral_f32", {0, 1}, WeightFormat::f32, 8, 2, 0, RouterScore::softmax, true, 1, GroupRank::none},
    {"mixtral_stacked", {0, 1}, WeightFormat::f32, 8, 2, 0, RouterScore::softmax, true, 1, GroupRank::none},
    {"qwen2_moe", {0, 2}, WeightFormat::bf16, 8, 2, 20, RouterScore::softmax, false, 1, GroupRank::none},
    {"qwen3_moe", {1, 3}, WeightFormat::f32, 8, 2, 0, RouterScore::softmax, true, 1, GroupRank::none},
    {"olmoe", {0, 1}, WeightFormat::bf16, 8, 2, 0, RouterScore::softmax, false, 1, GroupRank::none},
    {"deepseek_v2", {1, 2}, WeightFormat::bf16, 8, 2, 16, RouterScore::softmax, false, 1.5, GroupRank::none},
    {"deepseek_v3", {1, 2}, WeightFormat::bf16, 8, 3, 8, RouterScore::sigmoid, true, 2.5, GroupRank::top2_sum},
    {"granitemoe", {0, 1}, WeightFormat::bf16, 8, 2, 0, RouterScore::softmax, true, 1, GroupRank::none, 0.22},
    {"granitemoehybrid", {0, 1}, WeightFormat::bf16, 8, 2, 20, RouterScore::softmax, true, 1, GroupRank::none, 0.246},
    {"phimoe",
     {0, 1},
     WeightFormat::bf16,
     8,
     2,
     0,
     RouterScore::sparsemixer,
     false,
     1,
     GroupRank::none,
     1,
     egelu::GatedNorm::layer},
    // Llama 4: the sigmoid of the top-k logits weighs each expert's input (Routing::weigh_input).
    {"llama4", {1}, WeightFormat::bf16, 4, 1, 16, RouterScore::sigmoid, false, 1, GroupRank::none},
    {"llama4_text", {0, 2}, WeightFormat::f32, 8, 2, 12, RouterScore::sigmoid, false, 1, GroupRank::none},
    // Jamba: Mixtral's experts at feed_forward after pre_ff_layernorm, the softmax's top 2 not renormalised.
    {"jamba", {1, 3}, WeightFormat::bf16, 8, 2, 0, RouterScore::softmax, false, 1, GroupRank::none},
    // DeepSeek-V3's FP8 release format: F8_E4M3 weights times their weight_scale_inv per block of
    // weight_block_size (8 x 8 here, 4 x 8 in the second: the last blocks partial), kept in float.
    {"deepseek_v3_fp8", {1}, WeightFormat::f32, 8, 2, 12, RouterScore::sigmoid, true, 2.5, GroupRank::top2_sum},
    {"deepseek_v3_fp8_blocks", {1}, WeightFormat::f32, 8, 2, 12, RouterScore::sigmoid, true, 2.5, GroupRank::top2_sum},
    // gpt-oss: the router's and the experts' biases, the gate and up columns alternating, the clamped SwiGLU.
    {"gpt_oss", {0, 1}, WeightFormat::bf16, 8, 2, 0, RouterScore::softmax, true, 1, GroupRank::none},
    // gpt-oss as released: the experts in MXFP4 (U8 _blocks and _scales), kept as MXFP4 (exact).
    {"gpt_oss_mxfp4", {0, 1}, WeightFormat::mxfp4, 4, 2, 0, RouterScore::softmax, true, 1, GroupRank::none},
    // DBRX: a LayerNorm without bias, the experts' w1, v1, w2 each (E d_ff, d), the settings in ffn_config.
    {"dbrx",
     {0, 1},
     WeightFormat::bf16,
     8,
     2,
     0,
     RouterScore::softmax,
     true,
     1,
     GroupRank::none,
     1,
     egelu::GatedNorm::layer},
};

// The block's output for the fixture's X on one thread and on two, both against the
// reference, and the same bits on both.
template <typename Block>
void check_layer(const Block& block, const std::string& dir, int layer, double tolerance) {
  using Scalar = typename Block::Matrix::Scalar;
  const Matrix<Scalar> x = tokens<Scalar>(dir + "/reference/X.npy");
  const Matrix<double> want = tokens<double>(dir + "/reference/Y_layer" + std::to_string(layer) + ".npy");
  Matrix<Scalar> y = Matrix<Scalar>::Constant(x.rows(), x.cols(), NAN), y2 = y;
  block.forward(x, y);
  EXPECT_LE(worst(y, want), tolerance) << dir << " layer " << layer;
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  block.forward(x, y2, device);
  EXPECT_TRUE(y == y2) << dir << " layer " << layer << ": two threads differ from one";
}

TEST(MoeFromPretrained, EveryModelEverySparseLayerMatchesTheReference) {
  for (const MoeFixture& f : kFixtures) {
    const std::string dir = kHf + f.name;
    SCOPED_TRACE(f.name);
    for (int layer : f.sparse_layers) {
      const MF block = MF::from_pretrained(dir, layer);
      EXPECT_EQ(block.weight_format(), f.format);
      EXPECT_EQ(block.experts(), f.experts);
      EXPECT_EQ(block.experts_per_token(), f.per_token);
      EXPECT_EQ(block.shared_d_ff(), f.shared_d_ff);
      EXPECT_EQ(block.form(),
                std::string(f.name).rfind("gpt_oss", 0) == 0 ? GatedForm::clamped_swiglu : GatedForm::swiglu);
      EXPECT_EQ(block.routing().score, f.score);
      EXPECT_EQ(block.routing().normalize, f.normalize);
      EXPECT_FLOAT_EQ(block.routing().scale, float(f.scale));
      EXPECT_EQ(block.routing().group_rank, f.rank);
      EXPECT_FLOAT_EQ(block.output_scale(), float(f.output_scale));
      EXPECT_EQ(block.norm_type(), f.norm);
      EXPECT_EQ(block.routing().weigh_input, std::string(f.name).rfind("llama4", 0) == 0);
      check_layer(block, dir, layer, 3e-5);
      // (The references route in float, as Transformers does: their weights carry float
      // rounding, about 6e-8, which a double block does not.)
      check_layer(MD::from_pretrained(dir, layer), dir, layer, 1e-6);
      // Converted: a 16-bit checkpoint widened to f32 holds the same numbers.
      if (f.format != WeightFormat::f32)
        check_layer(MF::from_pretrained(dir, layer, WeightFormat::f32), dir, layer, 3e-5);
    }
  }
}

// ---- the constructor's block against the definitions, in double

struct Parts {
  MF::Weights router, gates, ups, downs, shared_gate, shared_up, shared_down, shared_expert_gate;
  MF::Vector norm, norm_bias, bias;
  MF::Biases biases;  // (gpt-oss's; none unless set)
};

Parts random_parts(int E, Eigen::Index d, Eigen::Index f, Eigen::Index g, bool shared_gated, bool bias, unsigned seed) {
  std::srand(seed);
  Parts p;
  p.router = MF::Weights::Random(E, d) * 0.5f;
  p.gates = MF::Weights::Random(E * f, d) * 0.4f;
  p.ups = MF::Weights::Random(E * f, d) * 0.3f;
  p.downs = MF::Weights::Random(E * d, f) * 0.1f;
  p.norm = MF::Vector::Ones(d) + MF::Vector::Random(d) * 0.2f;
  p.norm_bias = MF::Vector::Random(d) * 0.1f;  // (the LayerNorm rules')
  if (bias) p.bias = MF::Vector::Random(E) * 0.1f;
  if (g) {
    p.shared_gate = MF::Weights::Random(g, d) * 0.4f;
    p.shared_up = MF::Weights::Random(g, d) * 0.3f;
    p.shared_down = MF::Weights::Random(d, g) * 0.1f;
    if (shared_gated) p.shared_expert_gate = MF::Weights::Random(1, d) * 0.5f;
  }
  return p;
}

MF make(const Parts& p, const MF::Options& o) {
  if (p.biases.router.size()) return MF(p.router, p.gates, p.ups, p.downs, p.norm, p.biases, o);
  const MF::Vector none;
  return MF(p.router, p.gates, p.ups, p.downs, p.norm, o.norm == egelu::GatedNorm::layer ? p.norm_bias : none, p.bias,
            p.shared_gate, p.shared_up, p.shared_down, p.shared_expert_gate, o);
}

double silu(double v) { return v / (1 + std::exp(-v)); }

// act(gate) * up: SwiGLU, or gpt-oss's quick_gelu(min(gate, 7)) * (clamp(up, -7, 7) + 1).
double gated(GatedForm form, double gate, double up) {
  if (form != GatedForm::clamped_swiglu) return silu(gate) * up;
  gate = std::min(gate, 7.0);
  return gate / (1 + std::exp(-1.702 * gate)) * (std::clamp(up, -7.0, 7.0) + 1);
}

// The block from the definitions, in double: RMSNorm; logits, scores, the top k (among the
// best groups), the weights; each chosen expert; the shared expert; the residual.
Eigen::MatrixXd reference(const Parts& p, const MF::Options& o, const Eigen::MatrixXf& x) {
  const Eigen::Index E = p.router.rows(), f = p.gates.rows() / E, d = x.rows();
  const MF::Routing& r = o.routing;
  Eigen::MatrixXd mlp = Eigen::MatrixXd::Zero(d, x.cols());
  for (Eigen::Index t = 0; t < x.cols(); ++t) {
    Eigen::VectorXd n = x.col(t).cast<double>();
    if (o.norm == egelu::GatedNorm::layer) {  // (x - mean) / sqrt(variance + eps) * weight + bias
      n.array() -= n.mean();
      n = n / std::sqrt(n.squaredNorm() / double(d) + double(o.eps));
      n.array() = n.array() * p.norm.cast<double>().array() + p.norm_bias.cast<double>().array();
    } else {
      n = n / std::sqrt(n.squaredNorm() / double(d) + double(o.eps));
      n.array() *= p.norm.cast<double>().array();
    }
    Eigen::VectorXd logits = p.router.cast<double>() * n;
    if (p.biases.router.size()) logits += p.biases.router.cast<double>();
    Eigen::VectorXd score(E);
    std::vector<int> chosen;
    if (r.score == RouterScore::sparsemixer) {
      // k times: the best logit left, weighed by the softmax over the logits left within a relative
      // 2 jitter of it.
      score.setZero();
      for (int step = 0; step < r.experts_per_token; ++step) {
        const auto left = [&](int e) { return std::find(chosen.begin(), chosen.end(), e) == chosen.end(); };
        int best = -1;
        for (int e = 0; e < E; ++e) {
          if (left(e) && (best < 0 || logits(e) > logits(best))) best = e;
        }
        double sum = 0;
        for (int e = 0; e < E; ++e) {
          const double l = logits(e), m = logits(best), ratio = (m - l) / std::max(std::abs(l), m);
          if (left(e) && !(ratio > 2 * double(r.jitter))) sum += std::exp(l - m);  // (0 / 0: kept)
          // The block compares its float logits: a ratio within their rounding of the threshold
          // could go either way. The draw must have none.
          if (left(e) && e != best && !std::isnan(ratio)) {
            EXPECT_GT(std::abs(ratio / (2 * double(r.jitter)) - 1), 1e-4) << "a logit at the threshold: draw again";
          }
        }
        score(best) = 1 / sum;
        chosen.push_back(best);
      }
    } else if (r.score == RouterScore::softmax) {
      score = (logits.array() - logits.maxCoeff()).exp();
      score /= score.sum();
    } else {
      score = 1 / (1 + (-logits.array()).exp());
    }
    Eigen::VectorXd choice = score;
    if (p.bias.size()) choice += p.bias.cast<double>();
    if (r.group_rank != GroupRank::none) {
      const Eigen::Index per = E / r.groups;
      std::vector<std::pair<double, int>> groups;
      for (int gr = 0; gr < r.groups; ++gr) {
        std::vector<double> s(choice.data() + gr * per, choice.data() + (gr + 1) * per);
        std::sort(s.rbegin(), s.rend());
        groups.push_back({r.group_rank == GroupRank::best ? s[0] : s[0] + s[1], -gr});
      }
      std::sort(groups.rbegin(), groups.rend());
      for (std::size_t i = std::size_t(r.groups_kept); i < groups.size(); ++i) {
        choice.segment(-groups[i].second * per, per).setZero();
      }
    }
    if (chosen.empty()) {
      std::vector<int> order(static_cast<std::size_t>(E));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return choice(a) > choice(b); });
      chosen.assign(order.begin(), order.begin() + r.experts_per_token);
    }
    double sum = 0;
    for (int e : chosen) sum += score(e);
    for (int e : chosen) {
      double w = score(e);
      if (r.normalize) w /= sum;
      w *= double(r.scale);
      // The weight on the expert's input (Llama 4), or on its output.
      const Eigen::VectorXd in = r.weigh_input ? Eigen::VectorXd(w * n) : n;
      Eigen::VectorXd g = p.gates.middleRows(e * f, f).cast<double>() * in,
                      u = p.ups.middleRows(e * f, f).cast<double>() * in;
      if (p.biases.gates.rows()) g += p.biases.gates.row(e).transpose().cast<double>();
      if (p.biases.ups.rows()) u += p.biases.ups.row(e).transpose().cast<double>();
      Eigen::VectorXd h(f);
      for (Eigen::Index i = 0; i < f; ++i) h(i) = gated(o.form, g(i), u(i));
      Eigen::VectorXd down = p.downs.middleRows(e * d, d).cast<double>() * h;
      if (p.biases.downs.rows()) down += p.biases.downs.row(e).transpose().cast<double>();
      mlp.col(t) += (r.weigh_input ? 1.0 : w) * down;
    }
    if (p.shared_gate.rows()) {
      const Eigen::VectorXd g = p.shared_gate.cast<double>() * n, u = p.shared_up.cast<double>() * n;
      Eigen::VectorXd h(g.size());
      for (Eigen::Index i = 0; i < g.size(); ++i) h(i) = silu(g(i)) * u(i);
      double s = 1;
      if (p.shared_expert_gate.rows()) s = 1 / (1 + std::exp(-(p.shared_expert_gate.cast<double>() * n)(0)));
      mlp.col(t) += s * (p.shared_down.cast<double>() * h);
    }
  }
  return x.cast<double>() + double(o.output_scale) * mlp;
}

struct Rule {
  const char* name;
  MF::Routing routing;
  bool bias, shared_gated;
  Eigen::Index shared;
  float output_scale = 1;
  egelu::GatedNorm norm = egelu::GatedNorm::rms;
  bool biases = false;  // gpt-oss's, with its form
  GatedForm form = GatedForm::swiglu;
};

std::vector<Rule> rules() {
  MF::Routing mixtral;  // softmax, top 2, renormalised
  MF::Routing qwen = mixtral;
  qwen.experts_per_token = 3;
  qwen.normalize = false;
  MF::Routing v2 = qwen;
  v2.scale = 1.5f;
  v2.group_rank = GroupRank::best;
  v2.groups = 4;
  v2.groups_kept = 2;
  MF::Routing phimoe;  // two experts, unnormalised; a wide threshold so that each softmax spans several
  phimoe.score = RouterScore::sparsemixer;
  phimoe.normalize = false;
  phimoe.jitter = 0.3f;
  MF::Routing llama4;  // the sigmoid of the top-k logits on the experts' inputs (two here; Llama 4 has one)
  llama4.score = RouterScore::sigmoid;
  llama4.normalize = false;
  llama4.weigh_input = true;
  MF::Routing v3;
  v3.score = RouterScore::sigmoid;
  v3.experts_per_token = 3;
  v3.scale = 2.5f;
  v3.group_rank = GroupRank::top2_sum;
  v3.groups = 4;
  v3.groups_kept = 2;
  return {{"mixtral", mixtral, false, false, 0},
          {"qwen2_moe", qwen, false, true, 40},
          {"deepseek_v2 group-limited", v2, false, false, 48},
          {"deepseek_v3", v3, true, false, 24},
          {"granitemoehybrid, its output scaled", mixtral, false, false, 40, 0.246f},
          {"phimoe: sparsemixer, LayerNorm", phimoe, false, false, 0, 1, egelu::GatedNorm::layer},
          {"llama4: the inputs weighed", llama4, false, false, 40},
          // (Groups rank and mask the sigmoid scores, not the logits, without a bias too.)
          {"deepseek_v3 without its bias", v3, false, false, 0},
          // The softmax of the top-k logits is Mixtral's renormalised top k of the softmax.
          {"gpt_oss: biases, the clamped SwiGLU", mixtral, false, false, 0, 1, egelu::GatedNorm::rms, true,
           GatedForm::clamped_swiglu}};
}

TEST(MoeFeedForward, EveryRoutingRuleAgainstTheDefinitionsOnEveryThreadCount) {
  const int E = 8;
  const Eigen::Index d = 72, f = 200;  // two row blocks of an expert's first product, a short last one
  for (const Rule& rule : rules()) {
    SCOPED_TRACE(rule.name);
    Parts p = random_parts(E, d, f, rule.shared, rule.shared_gated, rule.bias, 7);
    if (rule.biases) {  // wide enough for the clamps to act: gates above 7, ups beyond +-7
      p.biases.router = MF::Vector::Random(E) * 0.5f;
      p.biases.gates = MF::Weights::Random(E, f) * 8.f;
      p.biases.ups = MF::Weights::Random(E, f) * 9.f;
      p.biases.downs = MF::Weights::Random(E, d) * 0.5f;
    }
    MF::Options o;
    o.eps = 1e-5f;
    o.form = rule.form;
    o.routing = rule.routing;
    o.output_scale = rule.output_scale;
    o.norm = rule.norm;
    const MF block = make(p, o);
    EXPECT_EQ(block.d_model(), d);
    EXPECT_EQ(block.d_ff(), f);
    EXPECT_EQ(block.shared_d_ff(), rule.shared);
    for (Eigen::Index tokens : {1, 2, 9, 33, 300}) {
      const Eigen::MatrixXf x = Eigen::MatrixXf::Random(d, tokens) * 2;
      Eigen::MatrixXf serial = Eigen::MatrixXf::Constant(d, tokens, NAN);
      block.forward(x, serial);
      EXPECT_LE(worst(serial, reference(p, o, x)), 2e-5) << tokens << " tokens";
      for (int threads : {2, 3}) {
        Eigen::ThreadPool pool(threads);
        const Eigen::ThreadPoolDevice device(&pool, threads);
        Eigen::MatrixXf y = Eigen::MatrixXf::Constant(d, tokens, NAN);
        block.forward(x, y, device);
        EXPECT_TRUE(y == serial) << tokens << " tokens, " << threads << " threads";
      }
      Eigen::MatrixXf in_place = x;
      block.forward(in_place, in_place);
      EXPECT_TRUE(in_place == serial) << tokens << " tokens, in place";
    }
  }
}

// The sparsemixer where PyTorch's arithmetic decides: all logits 0 (each ratio 0 / 0, which is not
// above the threshold: every expert kept, the first two chosen, weighed 1/E and 1/(E - 1)) and two
// equal best logits (the lower number first, each weighed at most 1/2), against the definitions.
TEST(MoeFeedForward, SparsemixerZeroAndTiedLogitsAsPyTorch) {
  Parts p = random_parts(4, 16, 24, 0, false, false, 17);
  MF::Options o;
  o.norm = egelu::GatedNorm::layer;
  o.routing.score = RouterScore::sparsemixer;
  o.routing.normalize = false;
  const Eigen::MatrixXf x = Eigen::MatrixXf::Random(16, 9) * 2;
  for (const bool zero : {true, false}) {
    if (zero) {
      p.router.setZero();
    } else {
      p.router = MF::Weights::Random(4, 16) * 0.5f;
      p.router.row(2) = p.router.row(1);
    }
    const MF block = make(p, o);
    Eigen::MatrixXf y = Eigen::MatrixXf::Constant(16, 9, NAN);
    block.forward(x, y);
    EXPECT_LE(worst(y, reference(p, o, x)), 2e-5) << (zero ? "zero logits" : "tied logits");
  }
}

// Sigmoid scores without a correction bias are chosen on the logits, as Llama 4's router chooses:
// logits of about 20 and 30 both have the float sigmoid 1 (a tie the lower number would win), and
// the larger is chosen; with the weight on the output and on the input.
TEST(MoeFeedForward, SigmoidScoresWithoutBiasChooseOnTheLogits) {
  const Eigen::Index d = 8;
  Parts p = random_parts(4, d, 16, 0, false, false, 19);
  p.norm.setOnes();
  p.router.setZero();
  p.router.row(0).setConstant(20.f / float(d));
  p.router.row(2).setConstant(30.f / float(d));
  const Eigen::MatrixXf x = Eigen::MatrixXf::Ones(d, 3);  // RMSNorm: ones, the logits 20 and 30
  for (const bool on_input : {false, true}) {
    MF::Options o;
    o.routing.score = RouterScore::sigmoid;
    o.routing.normalize = false;
    o.routing.experts_per_token = 1;
    o.routing.weigh_input = on_input;
    const MF block = make(p, o);
    Eigen::MatrixXf y = Eigen::MatrixXf::Constant(d, 3, NAN);
    block.forward(x, y);
    EXPECT_LE(worst(y, reference(p, o, x)), 2e-5) << (on_input ? "weighed input" : "weighed output");
  }
}

// After reserve(), any routing of as many tokens allocates nothing, on one thread or three:
// float experts, and Q8_0 experts reading q16_0 inputs (quantized in place).
TEST(MoeFeedForward, AllocatesNothingAfterReserveWhateverTheRouting) {
  const Rule rule = rules()[1];
  for (const bool q16 : {false, true}) {
    const Eigen::Index d = q16 ? 64 : 40;
    const Parts p = random_parts(8, d, 64, q16 ? 96 : rule.shared, true, false, 11);
    MF::Options o;
    o.routing = rule.routing;
    if (q16) {
      o.weights = WeightFormat::q8_0;
      o.inputs = egelu::InputFormat::q16_0;
    }
    const MF block = make(p, o);
    Eigen::ThreadPool pool(3);
    const Eigen::ThreadPoolDevice device(&pool, 3);
    block.reserve(64, 1, 3);
    for (int round = 0; round < 4; ++round) {
      // Every token routed alike (one expert's share at its largest), then at random.
      Eigen::MatrixXf x = round == 0 ? Eigen::MatrixXf(Eigen::MatrixXf::Ones(d, 64)) : Eigen::MatrixXf::Random(d, 64);
      Eigen::MatrixXf y(d, 64);
      EXPECT_EQ(malloc_counter::during([&] { block.forward(x, y); }), 0) << round << (q16 ? ", q16_0" : "");
      EXPECT_EQ(malloc_counter::during([&] { block.forward(x.leftCols(17), y.leftCols(17), device); }), 0)
          << round << (q16 ? ", q16_0" : "");
    }
  }
}

// A 16-bit block gives the float block's bits on the same rounded weights.
TEST(MoeFeedForward, SixteenBitExpertsGiveTheFloatBlocksBitsOnTheRoundedWeights) {
  const Rule rule = rules()[3];
  Parts p = random_parts(8, 48, 72, rule.shared, false, true, 13);
  for (WeightFormat format : {WeightFormat::bf16, WeightFormat::f16}) {
    MF::Options o;
    o.routing = rule.routing;
    o.weights = format;
    const MF narrow = make(p, o);
    EXPECT_EQ(narrow.weight_format(), format);
    Parts rounded = p;
    for (MF::Weights* w : {&rounded.gates, &rounded.ups, &rounded.downs, &rounded.shared_gate, &rounded.shared_up,
                           &rounded.shared_down}) {
      for (Eigen::Index i = 0; i < w->size(); ++i) {
        (*w)(i) = format == WeightFormat::bf16 ? float(Eigen::bfloat16((*w)(i))) : float(Eigen::half((*w)(i)));
      }
    }
    o.weights = WeightFormat::f32;
    const MF wide = make(rounded, o);
    EXPECT_LT(narrow.weight_bytes(), wide.weight_bytes());
    for (Eigen::Index tokens : {1, 9, 130}) {
      const Eigen::MatrixXf x = Eigen::MatrixXf::Random(48, tokens);
      Eigen::MatrixXf a(48, tokens), b(48, tokens);
      narrow.forward(x, a);
      wide.forward(x, b);
      EXPECT_TRUE(a == b) << to_string(format) << ", " << tokens << " tokens";
    }
  }
}

// Q8_0, Q4_0 and MXFP4 experts (the shared expert's too; the router stays float) give the float
// block's bits on the weights quantized and dequantized by the specification's reference.
TEST(MoeFeedForward, BlockFormatExpertsGiveTheFloatBlocksBitsOnTheDequantizedWeights) {
  const Rule rule = rules()[3];
  Parts p = random_parts(8, 64, 96, 64, true, true, 17);
  for (WeightFormat format : {WeightFormat::q8_0, WeightFormat::q4_0, WeightFormat::mxfp4}) {
    MF::Options o;
    o.routing = rule.routing;
    o.weights = format;
    const MF narrow = make(p, o);
    EXPECT_EQ(narrow.weight_format(), format);
    Parts dequantized = p;
    for (MF::Weights* w : {&dequantized.gates, &dequantized.ups, &dequantized.downs, &dequantized.shared_gate,
                           &dequantized.shared_up, &dequantized.shared_down}) {
      *w = ggml_reference::dequantized(*w, format);
    }
    o.weights = WeightFormat::f32;
    const MF wide = make(dequantized, o);
    EXPECT_LT(narrow.weight_bytes(), wide.weight_bytes() / 3);
    Eigen::ThreadPool pool(2);
    const Eigen::ThreadPoolDevice device(&pool, 2);
    for (Eigen::Index tokens : {1, 9, 130}) {
      const Eigen::MatrixXf x = Eigen::MatrixXf::Random(64, tokens);
      Eigen::MatrixXf a = Eigen::MatrixXf::Constant(64, tokens, NAN), b = a, c = a;
      narrow.forward(x, a);
      narrow.forward(x, c, device);
      wide.forward(x, b);
      EXPECT_TRUE(a == b) << to_string(format) << ", " << tokens << " tokens";
      EXPECT_TRUE(a == c) << to_string(format) << ", " << tokens << " tokens, two threads";
    }
  }
}

// ---- errors

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

TEST(MoeFeedForward, WrongShapesAndRoutingsAreNamed) {
  const Parts p = random_parts(4, 16, 24, 0, false, false, 3);
  MF::Options o;
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups.topRows(70), p.downs, p.norm, o); },
                                      {"ups", "70x16", "96x16"});
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs.leftCols(20), p.norm, o); },
                                      {"downs", "64x20", "64x24"});
  MF::Biases b;  // gpt-oss's: E, E x d_ff, E x d_ff, E x d_model
  b.router = MF::Vector::Zero(3);
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, b, o); },
                                      {"biases.router", "3x1", "4x1"});
  b.router = MF::Vector::Zero(4);
  b.ups = MF::Weights::Zero(4, 16);
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, b, o); },
                                      {"biases.ups", "4x16", "4x24"});
  b.ups.resize(0, 0);
  b.downs = MF::Weights::Zero(4, 24);
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, b, o); },
                                      {"biases.downs", "4x24", "4x16"});
  o.routing.experts_per_token = 5;
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, o); },
                                      {"experts_per_token", "5", "4"});
  o.routing.experts_per_token = 2;
  o.routing.group_rank = GroupRank::best;
  o.routing.groups = 3;
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, o); }, {"groups"});
  o.routing = MF::Routing();
  o.weights = WeightFormat::f64;
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, o); }, {"f64"});
  o.weights = WeightFormat::f32;
  o.output_scale = std::numeric_limits<float>::infinity();
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, o); },
                                      {"egelu::MoeFeedForward", "output_scale must be finite", "inf"});
  o.output_scale = 1;
  // The norm: none is refused; a LayerNorm's bias must be d_model long, and RMSNorm has none.
  o.norm = egelu::GatedNorm::none;
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, o); },
                                      {"egelu::MoeFeedForward", "GatedNorm::none"});
  const MF::Vector short_bias = MF::Vector::Zero(15), none;
  const MF::Weights no_weights;
  o.norm = egelu::GatedNorm::layer;
  expect_error<std::invalid_argument>(
      [&] {
        MF(p.router, p.gates, p.ups, p.downs, p.norm, short_bias, none, no_weights, no_weights, no_weights, no_weights,
           o);
      },
      {"norm_bias", "15x1", "16x1"});
  o.norm = egelu::GatedNorm::rms;
  expect_error<std::invalid_argument>(
      [&] {
        MF(p.router, p.gates, p.ups, p.downs, p.norm, MF::Vector::Zero(16), none, no_weights, no_weights, no_weights,
           no_weights, o);
      },
      {"norm_bias", "GatedNorm::rms has no bias"});
  // The sparsemixer: no groups, no correction bias, a threshold that is a number.
  o.routing.score = RouterScore::sparsemixer;
  o.routing.group_rank = GroupRank::best;
  o.routing.groups = 2;
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, o); },
                                      {"sparsemixer", "no groups"});
  o.routing.group_rank = GroupRank::none;
  o.routing.jitter = -0.1f;
  expect_error<std::invalid_argument>([&] { MF(p.router, p.gates, p.ups, p.downs, p.norm, o); }, {"jitter"});
  o.routing.jitter = 0.01f;
  expect_error<std::invalid_argument>(
      [&] {
        MF(p.router, p.gates, p.ups, p.downs, p.norm, MF::Vector::Zero(4), no_weights, no_weights, no_weights,
           no_weights, o);
      },
      {"correction_bias", "sparsemixer"});
  o.routing = MF::Routing();
  const MF block(p.router, p.gates, p.ups, p.downs, p.norm, MF::Options());
  Eigen::MatrixXf x(15, 3), y(16, 3);
  expect_error<std::invalid_argument>([&] { block.forward(x, y); }, {"x", "15x3", "16x3"});
}

// A copy of a fixture to break.
class Scratch {
 public:
  explicit Scratch(const std::string& fixture) : dir_(fs::path(testing::TempDir()) / ("egelu_moe_" + fixture)) {
    fs::remove_all(dir_);
    fs::copy(kHf + fixture, dir_, fs::copy_options::recursive);
  }
  ~Scratch() { fs::remove_all(dir_); }
  std::string dir() const { return dir_.string(); }
  // In `file`, the bytes `from` replaced by `to` (the same length: a safetensors header
  // keeps its size), which must be there.
  void replace(const std::string& file, const std::string& from, const std::string& to) const {
    const std::string path = (dir_ / file).string();
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    std::string bytes = s.str();
    const std::size_t at = bytes.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bytes.replace(at, from.size(), to);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

 private:
  fs::path dir_;
};

// Sets byte `at` of tensor `name`'s data in a safetensors file to `value` (its header read as text).
void set_tensor_byte(const std::string& path, const std::string& name, std::size_t at, unsigned char value) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  unsigned char length[8];
  f.read(reinterpret_cast<char*>(length), 8);
  std::size_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | length[i];
  std::string text(header, ' ');
  f.read(&text[0], std::streamsize(header));
  const std::size_t entry = text.find("\"" + name + "\"");
  ASSERT_NE(entry, std::string::npos) << name;
  const std::size_t offsets = text.find("\"data_offsets\":[", entry);
  ASSERT_NE(offsets, std::string::npos) << name;
  const std::size_t begin = std::stoull(text.substr(offsets + 16));
  f.seekp(std::streamoff(8 + header + begin + at));
  f.put(char(value));
}

TEST(MoeFromPretrained, DenseLayersMissingExpertsWrongShapesAndFp8AreNamed) {
  // A dense layer of a MoE model is GatedFeedForward's, and a routed layer not.
  expect_error<std::invalid_argument>([&] { MF::from_pretrained(kHf + "qwen2_moe", 1); },
                                      {"layer 1", "qwen2_moe", "egelu::GatedFeedForward"});
  expect_error<std::invalid_argument>([&] { MF::from_pretrained(kHf + "deepseek_v3", 0); },
                                      {"layer 0", "egelu::GatedFeedForward"});
  expect_error<std::invalid_argument>([&] { egelu::GatedFeedForward<float>::from_pretrained(kHf + "mixtral", 0); },
                                      {"mixture of experts", "egelu::MoeFeedForward"});
  expect_error<std::invalid_argument>([&] { MF::from_pretrained(kHf + "llama", 0); },
                                      {"gated MLP", "egelu::GatedFeedForward"});
  // q16_0 inputs need experts with integer kernels, checked before the checkpoint is read.
  expect_error<std::invalid_argument>(
      [&] { MF::from_pretrained(kHf + "mixtral", 0, WeightFormat::bf16, egelu::InputFormat::q16_0); },
      {"egelu::MoeFeedForward", "q16_0 inputs need q8_0 or q4_0 weights", "bf16"});
  {
    Scratch s("mixtral");  // expert 5's up projection renamed away
    s.replace("model.safetensors", "layers.0.block_sparse_moe.experts.5.w3", "layers.0.block_sparse_moe.experts.5.w4");
    expect_error<egelu::safetensors::format_error>([&] { MF::from_pretrained(s.dir(), 0); }, {"experts.5.w3"});
  }
  {
    Scratch s("mixtral");  // more experts than the file has
    s.replace("config.json", "\"num_local_experts\": 8", "\"num_local_experts\": 9");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(s.dir(), 0); },
                                        {"block_sparse_moe.gate.weight", "(8, 24)", "(9, 24)"});
  }
  {
    Scratch s("olmoe");
    s.replace("config.json", "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 9");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(s.dir(), 0); }, {"num_experts_per_tok", "9", "8"});
  }
  {
    // Granite 4's configs say 0 experts for a dense model: its layers are the shared MLP alone
    // (GatedFeedForward's); Granite 3's (granitemoe) always has experts.
    Scratch s("granitemoehybrid");
    s.replace("config.json", "\"num_local_experts\": 8", "\"num_local_experts\": 0");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(s.dir(), 1); },
                                        {"layer 1", "granitemoehybrid", "egelu::GatedFeedForward"});
    EXPECT_EQ(egelu::GatedFeedForward<float>::from_pretrained(s.dir(), 1).d_ff(), 20);
    Scratch g("granitemoe");
    g.replace("config.json", "\"num_local_experts\": 8", "\"num_local_experts\": 0");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(g.dir(), 1); }, {"num_local_experts", "0"});
  }
  {
    // The same layer read as Granite 3's types: granitemoeshared takes the shared MLP as
    // granitemoehybrid does (the same bits), granitemoe has none (its modeling code builds none).
    const std::string hybrid = kHf + "granitemoehybrid";
    const Eigen::MatrixXf x = tokens<float>(hybrid + "/reference/X.npy");
    Eigen::MatrixXf want(x.rows(), x.cols()), y = Eigen::MatrixXf::Constant(x.rows(), x.cols(), NAN);
    MF::from_pretrained(hybrid, 1).forward(x, want);
    Scratch shared("granitemoehybrid");
    shared.replace("config.json", "\"granitemoehybrid\"", "\"granitemoeshared\"");
    const MF as_shared = MF::from_pretrained(shared.dir(), 1);
    EXPECT_EQ(as_shared.shared_d_ff(), 20);
    as_shared.forward(x, y);
    EXPECT_TRUE(y == want);
    Scratch plain("granitemoehybrid");
    plain.replace("config.json", "\"granitemoehybrid\"", "\"granitemoe\"");
    EXPECT_EQ(MF::from_pretrained(plain.dir(), 1).shared_d_ff(), 0);
  }
  {
    // Transformers' defaults where a Granite config leaves a key out: shared_intermediate_size 1024
    // for granitemoehybrid (the file's shared MLP is 20 wide: a shape error naming the default), 0 for
    // granitemoeshared; residual_multiplier 1.
    Scratch hybrid("granitemoehybrid");
    hybrid.replace("config.json", "\"shared_intermediate_size\": 20,", "");
    expect_error<std::invalid_argument>(
        [&] { MF::from_pretrained(hybrid.dir(), 1); },
        {"shared_mlp.input_linear.weight", "(40, 24)", "(2048, 24)", "1024", "Transformers' default"});
    hybrid.replace("config.json", "\"granitemoehybrid\"", "\"granitemoeshared\"");
    EXPECT_EQ(MF::from_pretrained(hybrid.dir(), 1).shared_d_ff(), 0);
    hybrid.replace("config.json", "\"residual_multiplier\": 0.246,", "");
    EXPECT_EQ(MF::from_pretrained(hybrid.dir(), 1).output_scale(), 1.f);
    // A factor beyond float's range: refused by a float block, kept by a double one.
    Scratch big("granitemoe");
    big.replace("config.json", "\"residual_multiplier\": 0.22", "\"residual_multiplier\": 1e39");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(big.dir(), 0); },
                                        {"residual_multiplier", "beyond the range of the block's float"});
    EXPECT_EQ(MD::from_pretrained(big.dir(), 0).output_scale(), 1e39);
    // Granite's stacked experts missing: named, as any missing tensor.
    Scratch missing("granitemoe");
    missing.replace("model.safetensors", "layers.0.block_sparse_moe.input_linear",
                    "layers.0.block_sparse_moe.input_linbar");
    expect_error<egelu::safetensors::format_error>([&] { MF::from_pretrained(missing.dir(), 0); },
                                                   {"block_sparse_moe.input_linear.weight"});
  }
  {
    // Phi-3.5-MoE: its router_jitter_noise (0.01 by default), and two experts a token whatever
    // num_experts_per_tok says, so any other count is refused.
    EXPECT_FLOAT_EQ(MF::from_pretrained(kHf + "phimoe", 0).routing().jitter, 0.25f);
    Scratch s("phimoe");
    s.replace("config.json", "\"router_jitter_noise\": 0.25,", "");
    EXPECT_FLOAT_EQ(MF::from_pretrained(s.dir(), 0).routing().jitter, 0.01f);
    s.replace("config.json", "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 3");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(s.dir(), 0); },
                                        {"num_experts_per_tok", "3", "sparsemixer", "2 experts"});
  }
  {
    // Llama 4: moe_layers when the config lists them (layer 1 is dense, though interleave_moe_layer_step
    // is 1), else every interleave_moe_layer_step-th layer; a stacked tensor of the wrong shape is
    // named with the layout it must have (Llama 4's, for bmm).
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(kHf + "llama4_text", 1); },
                                        {"layer 1", "llama4_text", "egelu::GatedFeedForward"});
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(kHf + "llama4", 0); },
                                        {"layer 0", "llama4", "egelu::GatedFeedForward"});
    Scratch listed("llama4_text");
    listed.replace("config.json", "\"moe_layers\": [", "\"moe_layers\": 2, \"was\": [");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(listed.dir(), 0); },
                                        {"\"moe_layers\"", "not a list of layers"});
    Scratch fractional("llama4_text");  // (1.0 is not a layer's number)
    fractional.replace("config.json", "\"moe_layers\": [", "\"moe_layers\": [1.0, ");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(fractional.dir(), 0); },
                                        {"\"moe_layers\" is [1.0,0,2]", "not a list of layers"});
    Scratch step("llama4");  // every layer a MoE layer: layer 0's router is not in the file
    step.replace("config.json", "\"interleave_moe_layer_step\": 2", "\"interleave_moe_layer_step\": 1");
    expect_error<egelu::safetensors::format_error>([&] { MF::from_pretrained(step.dir(), 0); },
                                                   {"layers.0.feed_forward.router.weight"});
    Scratch wide("llama4");
    wide.replace("config.json", "\"intermediate_size\": 16,", "");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(wide.dir(), 1); },
                                        {"feed_forward.experts.gate_up_proj", "(4, 24, 32)", "(4, 24, 16384)",
                                         "(E, d_model, 2 d_ff)", "Transformers' default"});
  }
  {
    // Jamba: the experts in every expert_layer_period-th layer from expert_layer_offset (an offset not
    // below the period refused, as JambaConfig refuses it), none with num_experts 1; saved per expert.
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(kHf + "jamba", 2); },
                                        {"layer 2", "jamba", "egelu::GatedFeedForward"});
    Scratch offset("jamba");
    offset.replace("config.json", "\"expert_layer_offset\": 1", "\"expert_layer_offset\": 2");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(offset.dir(), 1); },
                                        {"\"expert_layer_offset\" is 2", "\"expert_layer_period\"", "JambaConfig"});
    Scratch first("jamba");  // every even layer then: (i + 1) % period would pick the same odd ones
    first.replace("config.json", "\"expert_layer_offset\": 1", "\"expert_layer_offset\": 0");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(first.dir(), 1); },
                                        {"layer 1", "jamba", "egelu::GatedFeedForward"});
    expect_error<egelu::safetensors::format_error>([&] { MF::from_pretrained(first.dir(), 0); },
                                                   {"layers.0.feed_forward.router.weight"});
    Scratch one("jamba");
    one.replace("config.json", "\"num_experts\": 8", "\"num_experts\": 1");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(one.dir(), 1); },
                                        {"layer 1", "jamba", "egelu::GatedFeedForward"});
    Scratch missing("jamba");
    missing.replace("model.safetensors", "layers.3.feed_forward.experts.7.down_proj",
                    "layers.3.feed_forward.experts.7.down_prox");
    expect_error<egelu::safetensors::format_error>([&] { MF::from_pretrained(missing.dir(), 3); },
                                                   {"layers.3.feed_forward.experts.7.down_proj.weight"});
  }
  {
    // U8 is read as MXFP4's blocks and scales only: anywhere else (a 2-D weight here) it is refused by name.
    Scratch bytes("mixtral");
    bytes.replace("model.safetensors",
                  "\"model.layers.0.block_sparse_moe.experts.0.w1.weight\":{\"dtype\":\"BF16\",\"shape\":[16,24]",
                  "\"model.layers.0.block_sparse_moe.experts.0.w1.weight\":{\"dtype\":\"U8\",  \"shape\":[32,24]");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(bytes.dir(), 0); },
                                        {"experts.0.w1.weight' is U8", "MXFP4"});
  }
  {
    // gpt-oss: the clamped SwiGLU's limit and alpha are gpt-oss's or refused by name (later releases read
    // them from the config); the biases are required and shaped as the weights; MXFP4 experts need
    // quant_method "mxfp4", their blocks of 32 and finite scales.
    Scratch limit("gpt_oss");
    limit.replace("config.json", "\"swiglu_limit\": 7.0", "\"swiglu_limit\": 8.0");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(limit.dir(), 0); },
                                        {"\"swiglu_limit\" is 8.0", "clamped_swiglu", "7.0"});
    Scratch alpha("gpt_oss");
    alpha.replace("config.json", "\"swiglu_limit\": 7.0", "\"swiglu_alpha\": 1.5");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(alpha.dir(), 0); },
                                        {"\"swiglu_alpha\" is 1.5", "1.702"});
    Scratch default_limit("gpt_oss");  // GptOssConfig's 7.0
    default_limit.replace("config.json", "\"swiglu_limit\": 7.0,", "");
    EXPECT_EQ(MF::from_pretrained(default_limit.dir(), 0).form(), GatedForm::clamped_swiglu);
    for (const auto& missing : {std::pair<int, std::string>{1, "layers.1.mlp.experts.down_proj_bias"},
                                std::pair<int, std::string>{0, "layers.0.mlp.experts.gate_up_proj_bias"},
                                std::pair<int, std::string>{0, "layers.0.mlp.router.bias"}}) {
      const int layer = missing.first;
      const std::string& bias = missing.second;
      Scratch no_bias("gpt_oss");  // (the name's last letters changed)
      no_bias.replace("model.safetensors", bias, bias.substr(0, bias.size() - 2) + "xs");
      expect_error<egelu::safetensors::format_error>([&] { MF::from_pretrained(no_bias.dir(), layer); }, {bias});
    }
    Scratch alias("gpt_oss");  // GptOssConfig's attribute_map: num_experts sets num_local_experts
    alias.replace("config.json", "\"num_local_experts\": 8", "\"num_experts\": 8");
    EXPECT_EQ(MF::from_pretrained(alias.dir(), 0).experts(), 8);
    Scratch both("gpt_oss");  // (the alias is set last: it wins)
    both.replace("config.json", "\"num_local_experts\": 8", "\"num_local_experts\": 4, \"num_experts\": 8");
    EXPECT_EQ(MF::from_pretrained(both.dir(), 0).experts(), 8);
    Scratch any_act("gpt_oss");  // GptOssExperts reads no hidden_act
    any_act.replace("config.json", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"quick_gelu\"");
    EXPECT_EQ(MF::from_pretrained(any_act.dir(), 0).form(), GatedForm::clamped_swiglu);
    Scratch wide("gpt_oss");  // the biases' shapes follow the experts' width
    wide.replace("config.json", "\"intermediate_size\": 16", "\"intermediate_size\": 12");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(wide.dir(), 0); },
                                        {"mlp.experts.gate_up_proj", "(8, 24, 32)", "(8, 24, 24)"});
    Scratch dequantized("gpt_oss");  // (Transformers keeps the config's quantization_config when it dequantizes)
    dequantized.replace("config.json", "\"pad_token_id\": 199999,",
                        "\"quantization_config\": {\"quant_method\": \"mxfp4\"}, \"pad_token_id\": 199999,");
    EXPECT_EQ(MF::from_pretrained(dequantized.dir(), 0).weight_format(), WeightFormat::bf16);
    Scratch unsaid("gpt_oss_mxfp4");
    unsaid.replace("config.json", "\"quant_method\": \"mxfp4\"", "\"quant_method\": \"gptq\"");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(unsaid.dir(), 0); },
                                        {"quant_method \"gptq\"", "\"mxfp4\"", "dequantize"});
    Scratch none("gpt_oss_mxfp4");
    none.replace("config.json", "\"quantization_config\"", "\"quantization_configs\"");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(none.dir(), 1); },
                                        {"model.layers.1.mlp.experts.gate_up_proj_blocks", "holds MXFP4 weights",
                                         "no quantization_config with quant_method \"mxfp4\""});
    Scratch wider("gpt_oss_mxfp4");  // the blocks' shape follows d_ff and d_model
    wider.replace("config.json", "\"intermediate_size\": 64", "\"intermediate_size\": 96");
    expect_error<std::invalid_argument>(
        [&] { MF::from_pretrained(wider.dir(), 0); },
        {"gate_up_proj_blocks' is (4, 128, 2, 16) but must be (4, 192, 2, 16)", "MXFP4 blocks of 32 codes"});
    Scratch nan_scale("gpt_oss_mxfp4");
    set_tensor_byte(nan_scale.dir() + "/model.safetensors", "model.layers.1.mlp.experts.down_proj_scales", 5, 255);
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(nan_scale.dir(), 1); },
                                        {"down_proj_scales' has the E8M0 scale 255 (NaN) at its value 5"});
    EXPECT_NO_THROW(MF::from_pretrained(nan_scale.dir(), 0));
    // Kept as MXFP4 (the default) or as bfloat16, the same values: the same bits, at one token
    // (the pair kernels reading the codes), a few, and prefill (panels widened), on 1 and 2 threads.
    for (int layer : {0, 1}) {
      const MF kept = MF::from_pretrained(kHf + "gpt_oss_mxfp4", layer);
      const MF bf16 = MF::from_pretrained(kHf + "gpt_oss_mxfp4", layer, WeightFormat::bf16);
      EXPECT_EQ(kept.weight_format(), WeightFormat::mxfp4);
      EXPECT_LT(kept.weight_bytes() * 2, bf16.weight_bytes());  // (the experts 17 / 64 the bytes; the router in float)
      Eigen::ThreadPool pool(2);
      const Eigen::ThreadPoolDevice device(&pool, 2);
      for (Eigen::Index tokens : {1, 3, 130}) {
        const Eigen::MatrixXf x = Eigen::MatrixXf::Random(kept.d_model(), tokens);
        Eigen::MatrixXf a = Eigen::MatrixXf::Constant(x.rows(), tokens, NAN), b = a, c = a;
        kept.forward(x, a);
        kept.forward(x, c, device);
        bf16.forward(x, b);
        EXPECT_TRUE(a == b) << "layer " << layer << ", " << tokens << " tokens";
        EXPECT_TRUE(a == c) << "layer " << layer << ", " << tokens << " tokens, two threads";
      }
    }
    Scratch huge_scale("gpt_oss_mxfp4");  // 2^127: codes of 2 and more are beyond float's range
    set_tensor_byte(huge_scale.dir() + "/model.safetensors", "model.layers.0.mlp.experts.down_proj_scales", 0, 254);
    for (WeightFormat f : {WeightFormat::mxfp4, WeightFormat::f32, WeightFormat::bf16}) {
      expect_error<std::invalid_argument>(
          [&] { MF::from_pretrained(huge_scale.dir(), 0, f); },
          {"down_proj_blocks", f == WeightFormat::bf16 ? "is beyond bfloat16's range" : "is beyond float32's range"});
    }
  }
  {
    // DBRX: ffn_config's moe_normalize_expert_weights, 1.0 when absent (the top k divided by their sum),
    // null for none; another p-norm refused by name. A wrong expert width names the stacked rows.
    Scratch none("dbrx");
    none.replace("config.json", "\"moe_jitter_eps\": 0.01,", "\"moe_normalize_expert_weights\": null,");
    EXPECT_FALSE(MF::from_pretrained(none.dir(), 0).routing().normalize);
    Scratch two("dbrx");
    two.replace("config.json", "\"moe_jitter_eps\": 0.01,", "\"moe_normalize_expert_weights\": 2.0,");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(two.dir(), 0); },
                                        {"\"ffn_config.moe_normalize_expert_weights\" is 2.0", "sum"});
    Scratch flat("dbrx");  // (Transformers fails on a string's .get)
    flat.replace("config.json", "\"ffn_config\": {", "\"ffn_config\": 5, \"was\": {");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(flat.dir(), 0); },
                                        {"config.json's \"ffn_config\" is 5, not an object"});
    Scratch wide("dbrx");
    wide.replace("config.json", "\"ffn_hidden_size\": 16", "\"ffn_hidden_size\": 12");
    expect_error<std::invalid_argument>(
        [&] { MF::from_pretrained(wide.dir(), 0); },
        {"ffn.experts.mlp.w1", "(128, 24)", "(96, 24)", "(E d_ff, d_model)", "\"ffn_config.ffn_hidden_size\""});
  }
  {
    // FP8 (DeepSeek-V3's release format): quantization_config's quant_method "fp8" and weight_block_size,
    // each weight's weight_scale_inv of that many blocks; any other method refused by name.
    Scratch plain("deepseek_v3_fp8");
    plain.replace("config.json", "\"quantization_config\"", "\"quantization_notes\"");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(plain.dir(), 1); },
                                        {"model.layers.1.mlp.experts.0.gate_proj.weight' is F8_E4M3",
                                         "no quantization_config with quant_method \"fp8\""});
    Scratch gptq("deepseek_v3_fp8");
    gptq.replace("config.json", "\"quant_method\": \"fp8\"", "\"quant_method\": \"gptq\"");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(gptq.dir(), 1); },
                                        {"\"quantization_config\" has quant_method \"gptq\"", "dequantize"});
    expect_error<std::invalid_argument>([&] { egelu::GatedFeedForward<float>::from_pretrained(gptq.dir(), 0); },
                                        {"quant_method \"gptq\""});
    Scratch blocks("deepseek_v3_fp8");  // [16, 8]: one scale row for 12 rows, not two
    blocks.replace("config.json", "\"weight_block_size\": [\n      8,", "\"weight_block_size\": [\n      16,");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(blocks.dir(), 1); },
                                        {"gate_proj.weight_scale_inv' is (2, 3) but must be (1, 3)", "[16, 8]"});
    Scratch fmt("deepseek_v3_fp8");
    fmt.replace("config.json", "\"fmt\": \"e4m3\"", "\"fmt\": \"e5m2\"");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(fmt.dir(), 1); }, {"fmt \"e5m2\"", "e4m3 only"});
    Scratch size("deepseek_v3_fp8");
    size.replace("config.json", "\"weight_block_size\": [\n      8,", "\"weight_block_size\": [\n      0,");
    expect_error<std::invalid_argument>([&] { MF::from_pretrained(size.dir(), 1); },
                                        {"weight_block_size [0,8]", "both positive"});
    // Converted as they load: from each code times its scale, to bf16 and f16 (within their roundings).
    for (const WeightFormat format : {WeightFormat::bf16, WeightFormat::f16}) {
      const MF block = MF::from_pretrained(kHf + "deepseek_v3_fp8", 1, format);
      EXPECT_EQ(block.weight_format(), format);
      check_layer(block, kHf + "deepseek_v3_fp8", 1, 2e-2);
    }
    Scratch missing("deepseek_v3_fp8");
    missing.replace("model.safetensors", "layers.1.mlp.experts.5.up_proj.weight_scale_inv",
                    "layers.1.mlp.experts.5.up_proj.weight_scale_inx");
    expect_error<egelu::safetensors::format_error>([&] { MF::from_pretrained(missing.dir(), 1); },
                                                   {"experts.5.up_proj.weight_scale_inv"});
  }
}

}  // namespace
