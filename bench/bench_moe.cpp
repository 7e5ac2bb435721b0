// The mixture-of-experts block at OLMoE-1B-7B's shape (d_model 2048, 64 experts of 1024,
// top 8, SwiGLU) in bf16, against the same experts run as dense GatedFeedForward calls: at
// T = 1 the token's 8 experts, each a one-token call; at T = 128 every expert a call on the
// tokens routed to it (gathered beforehand, not timed). The ratios are issue 32's targets:
// the MoE call should cost little more than its experts' products (routing, grouping and
// the weighted sum are the difference), and scale on two threads. Argument pairs: (tokens,
// threads). The weights (805 MB in bf16, twice: the MoE block's and the dense blocks') are
// made once, on the first benchmark that needs them.
#define EIGEN_USE_THREADS
#include <algorithm>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/moe_feed_forward.hpp>
#include <memory>
#include <numeric>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "decode_memory.hpp"

namespace {

using RowMajor = bench::RowMajor;
constexpr Eigen::Index kModel = 2048, kExpertWidth = 1024, kExperts = 64;
constexpr int kChosen = 8;
constexpr double kFlopsPerToken = 6.0 * kModel * kExpertWidth * kChosen;

struct Olmoe {
  using Moe = egelu::MoeFeedForward<float>;
  using Gated = egelu::GatedFeedForward<float>;
  std::unique_ptr<Moe> moe;
  std::vector<Gated> experts;  // expert e as a dense block with the same weights and norm
  RowMajor router;
  Eigen::VectorXf norm = Eigen::VectorXf::Ones(kModel);

  Olmoe() {
    router = RowMajor::Random(kExperts, kModel);
    RowMajor gates = RowMajor::Random(kExperts * kExpertWidth, kModel) / 22.f;
    RowMajor ups = RowMajor::Random(kExperts * kExpertWidth, kModel) / 45.f;
    RowMajor downs = RowMajor::Random(kExperts * kModel, kExpertWidth) / 32.f;
    Moe::Options options{egelu::GatedForm::swiglu, 1e-5f, egelu::WeightFormat::bf16, {}};
    options.routing.experts_per_token = kChosen;
    options.routing.normalize = false;  // OLMoE's norm_topk_prob
    moe = std::make_unique<Moe>(router, gates, ups, downs, norm, options);
    experts.reserve(kExperts);
    for (Eigen::Index e = 0; e < kExperts; ++e) {
      experts.emplace_back(gates.middleRows(e * kExpertWidth, kExpertWidth),
                           ups.middleRows(e * kExpertWidth, kExpertWidth), downs.middleRows(e * kModel, kModel), norm,
                           Gated::Options{egelu::GatedForm::swiglu, 1e-5f, egelu::WeightFormat::bf16});
    }
  }

  // The experts each token picks, as the router does (RMSNorm, logits, top k; softmax keeps
  // the order): columns of `x` per expert.
  std::vector<std::vector<Eigen::Index>> routed(const Eigen::MatrixXf& x) const {
    std::vector<std::vector<Eigen::Index>> tokens_of(kExperts);
    for (Eigen::Index t = 0; t < x.cols(); ++t) {
      const Eigen::VectorXf n = x.col(t) / std::sqrt(x.col(t).squaredNorm() / float(kModel) + 1e-5f);
      const Eigen::VectorXf logits = router * n;
      std::vector<Eigen::Index> order(kExperts);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + kChosen, order.end(),
                        [&](Eigen::Index a, Eigen::Index b) { return logits[a] > logits[b]; });
      for (int j = 0; j < kChosen; ++j) tokens_of[std::size_t(order[std::size_t(j)])].push_back(t);
    }
    return tokens_of;
  }
};

const Olmoe& olmoe() {
  static const Olmoe weights;
  return weights;
}

void egelu_moe_block(benchmark::State& state) {
  const Olmoe& w = olmoe();
  bench::time_forward(state, *w.moe, state.range(0), int(state.range(1)), kFlopsPerToken);
}

// The same experts as dense calls on their tokens: the products the MoE block cannot avoid.
void egelu_moe_experts_as_dense(benchmark::State& state) {
  const Olmoe& w = olmoe();
  const Eigen::Index tokens = state.range(0);
  const Eigen::MatrixXf x = Eigen::MatrixXf::Random(kModel, tokens);
  const auto tokens_of = w.routed(x);
  std::vector<Eigen::MatrixXf> inputs(kExperts), outputs(kExperts);
  for (Eigen::Index e = 0; e < kExperts; ++e) {
    const auto& mine = tokens_of[std::size_t(e)];
    inputs[std::size_t(e)].resize(kModel, Eigen::Index(mine.size()));
    for (std::size_t j = 0; j < mine.size(); ++j) inputs[std::size_t(e)].col(Eigen::Index(j)) = x.col(mine[j]);
    outputs[std::size_t(e)].resize(kModel, Eigen::Index(mine.size()));
  }
  bench::Threads pool(int(state.range(1)));
  bench::time_calls(state, [&] {
    for (Eigen::Index e = 0; e < kExperts; ++e) {
      const auto i = std::size_t(e);
      if (inputs[i].cols() == 0) continue;
      if (pool.count == 1) {
        w.experts[i].forward(inputs[i], outputs[i]);
      } else {
        w.experts[i].forward(inputs[i], outputs[i], pool.device);
      }
    }
  });
  bench::count_block(state, kFlopsPerToken, tokens);
}

// gpt-oss-20b's mixture of experts decoding from memory: d_model 2880, 32 experts of 2880, top 4,
// the clamped SwiGLU, biases (random weights). Eight tokens, each routed to four experts no
// other token has (a router reading one coordinate an expert, each token large on its four),
// called in turn: each call reads its four experts' weights, 1/8 of the layer's, which the
// seven calls between two of its own have pushed out of the last-level cache (the layer: 423
// MB in mxfp4, 1.6 GB in bf16), as a model's 24 layers between two tokens do. The streaming
// read: the eight calls' bytes. Arguments: (format, threads), bench::kWeightFormats' numbers.
struct GptOss {
  using Moe = egelu::MoeFeedForward<float>;
  static constexpr Eigen::Index d = 2880, width = 2880;
  static constexpr int experts = 32, chosen = 4, tokens = experts / chosen;
  long format = -1;
  std::unique_ptr<Moe> moe;
  std::vector<Eigen::MatrixXf> x;  // token i: large on coordinates 4i ... 4i + 3
};

const GptOss& gpt_oss(long format) {
  static GptOss layer;
  if (layer.format == format) return layer;
  layer.moe.reset();
  layer.format = format;
  using Moe = GptOss::Moe;
  Moe::Options o;
  o.form = egelu::GatedForm::clamped_swiglu;
  o.eps = 1e-5f;
  o.weights = bench::kWeightFormats[format];
  o.routing.experts_per_token = GptOss::chosen;
  Moe::Weights router = Moe::Weights::Zero(GptOss::experts, GptOss::d);
  for (int e = 0; e < GptOss::experts; ++e) router(e, e) = 1.f;
  Moe::Biases b;
  b.router = Moe::Vector::Zero(GptOss::experts);
  b.gates = Moe::Weights::Random(GptOss::experts, GptOss::width) * 0.1f;
  b.ups = Moe::Weights::Random(GptOss::experts, GptOss::width) * 0.1f;
  b.downs = Moe::Weights::Random(GptOss::experts, GptOss::d) * 0.1f;
  const Moe::Weights gates = Moe::Weights::Random(GptOss::experts * GptOss::width, GptOss::d) * 0.02f;
  const Moe::Weights ups = Moe::Weights::Random(GptOss::experts * GptOss::width, GptOss::d) * 0.02f;
  const Moe::Weights downs = Moe::Weights::Random(GptOss::experts * GptOss::d, GptOss::width) * 0.02f;
  layer.moe = std::make_unique<Moe>(router, gates, ups, downs, Moe::Vector::Ones(GptOss::d), b, o);
  layer.x.clear();
  for (int t = 0; t < GptOss::tokens; ++t) {
    Eigen::MatrixXf x = Eigen::MatrixXf::Random(GptOss::d, 1) * 0.01f;
    for (int e = 0; e < GptOss::chosen; ++e) x(t * GptOss::chosen + e, 0) = 1.f + 0.1f * float(e);
    layer.x.push_back(x);
  }
  return layer;
}

void egelu_moe_decode_from_memory(benchmark::State& state) {
  const GptOss& layer = gpt_oss(state.range(0));
  const int threads = int(state.range(1));
  bench::Threads pool(threads);
  Eigen::MatrixXf y(GptOss::d, 1);
  // (The router's bytes, 0.1% of the layer's, counted with the experts'.)
  const std::size_t call_bytes = layer.moe->weight_bytes() / GptOss::tokens;
  bench::time_decode(state, GptOss::tokens, call_bytes, threads, [&](std::size_t i) {
    pool.count == 1 ? layer.moe->forward(layer.x[i], y) : layer.moe->forward(layer.x[i], y, pool.device);
  });
  state.SetLabel(bench::format_label(state.range(0)));
}

void moe_arguments(benchmark::internal::Benchmark* b) {
  for (long tokens : {1L, 128L})
    for (long threads : {1L, 2L}) b->Args({tokens, threads});
}

}  // namespace

BENCHMARK(egelu_moe_block)->Apply(moe_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(egelu_moe_experts_as_dense)->Apply(moe_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
// At least a second a point: many passes over the eight tokens.
BENCHMARK(egelu_moe_decode_from_memory)
    ->ArgsProduct({{7, 4, 3, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);
