// The blocks with their weights in f32, bf16, f16, q8_0, q4_0 and mxfp4 (a block's WeightFormat), beside a
// plain streaming read of as many bytes as the block's weights, in the same process: at
// one token a block streams its weights once, so the read is its floor. Three blocks:
// BERT-base (768 / 3072, post-norm, exact GELU), GPT-2 large's MLP (1280 / 5120, pre-norm,
// tanh GELU) and TinyLlama-1.1B's gated MLP (2048 / 5632, SwiGLU).
// Arguments: (model, format, tokens, threads); the stream: (bytes / 2^20, threads).
// Counters: GFLOP/s, weight_bytes, and GB/s of weights streamed.
#define EIGEN_USE_THREADS
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <memory>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "block_timing.hpp"

namespace {

using egelu::WeightFormat;

template <typename Block>
void run(benchmark::State& state, const Block& block, double flops_per_token) {
  const long format = state.range(1);
  bench::time_forward(state, block, state.range(2), int(state.range(3)), flops_per_token);
  state.counters["weight_bytes"] = double(block.weight_bytes());
  state.counters["weights_GB/s"] = benchmark::Counter(double(block.weight_bytes()) * double(state.iterations()),
                                                      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.SetLabel(bench::format_label(format));
}

// model 0: BERT-base, 1: GPT-2 large, 2: TinyLlama.
void egelu_block_format(benchmark::State& state) {
  const WeightFormat f = bench::kWeightFormats[state.range(1)];
  const egelu::InputFormat in = bench::inputs_of(state.range(1));
  using FF = egelu::FeedForward<float>;
  if (state.range(0) == 0) {
    const bench::BertWeights w;
    const FF block(w.w1, w.b1, w.w2, w.b2, w.gamma, w.beta,
                   FF::Options{egelu::GeluForm::exact, egelu::NormPlacement::post, 1e-12f, f, in});
    run(state, block, bench::BertWeights::flops_per_token);
  } else if (state.range(0) == 1) {
    constexpr Eigen::Index d = 1280, d_ff = 5120;
    std::srand(7);
    const bench::RowMajor w1 = bench::RowMajor::Random(d_ff, d) / 36.f, w2 = bench::RowMajor::Random(d, d_ff) / 72.f;
    const FF block(w1, Eigen::VectorXf::Random(d_ff) * 0.1f, w2, Eigen::VectorXf::Random(d) * 0.1f,
                   Eigen::VectorXf::Ones(d), Eigen::VectorXf::Zero(d),
                   FF::Options{egelu::GeluForm::tanh, egelu::NormPlacement::pre, 1e-5f, f, in});
    run(state, block, 4.0 * d * d_ff);
  } else {
    using GF = egelu::GatedFeedForward<float>;
    const bench::LlamaWeights w;
    const GF block(w.gate, w.up, w.down, w.norm, GF::Options{egelu::GatedForm::swiglu, 1e-5f, f, in});
    run(state, block, bench::LlamaWeights::flops_per_token);
  }
}

// A streaming read of n bytes (summed as floats, four chains), on `threads` threads each
// reading its share: the floor of a product that reads its weights once.
void stream_read(benchmark::State& state) {
  const std::size_t bytes = std::size_t(state.range(0)) << 20;
  bench::StreamRead reader(bytes, int(state.range(1)));
  for (auto _ : state) reader.run();
  state.counters["GB/s"] = benchmark::Counter(double(bytes) * double(state.iterations()), benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
}

// f32, bf16 and f16 at 1, 32, 128 and 512 tokens; q8_0, q4_0 and mxfp4 (and f32 and bf16, their
// baselines) at 1, 8, 32 and 128.
void format_arguments(benchmark::internal::Benchmark* b) {
  for (long model : {0L, 1L, 2L}) {
    for (long format : {0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L}) {
      for (long tokens : {1L, 8L, 32L, 128L, 512L}) {
        const bool block_format = format >= 3, baseline = format <= 1;
        if (tokens == 512 && block_format) continue;
        if (tokens == 8 && !block_format && !baseline) continue;
        for (long threads : {1L, 2L}) b->Args({model, format, tokens, threads});
      }
    }
  }
}

// The weights' bytes of each block in f32, in 16 bits, in q8_0 and in q4_0, MiB: BERT-base
// 18 / 9 / 5 / 3, GPT-2 large 50 / 25 / 13 / 7, TinyLlama 132 / 66 / 35 / 19.
void stream_arguments(benchmark::internal::Benchmark* b) {
  for (long mb : {3L, 5L, 7L, 9L, 13L, 18L, 19L, 25L, 35L, 50L, 66L, 132L})
    for (long threads : {1L, 2L}) b->Args({mb, threads});
}

}  // namespace

BENCHMARK(egelu_block_format)->Apply(format_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(stream_read)->Apply(stream_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
