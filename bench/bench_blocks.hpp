// The blocks' weights, shapes and counters, shared by egelu's and oneDNN's block
// benchmarks so that both run the same block on the same numbers.
#ifndef EGELU_BENCH_BLOCKS_HPP
#define EGELU_BENCH_BLOCKS_HPP

#include <Eigen/Core>

#include "bench_common.hpp"

namespace bench {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// BERT-base's feed-forward block: PyTorch nn.Linear layouts (out x in, row-major).
struct BertWeights {
  static constexpr Eigen::Index d = 768, d_ff = 3072;
  static constexpr double flops_per_token = 4.0 * d * d_ff;
  RowMajor w1 = RowMajor::Random(d_ff, d) / 28.f, w2 = RowMajor::Random(d, d_ff) / 55.f;
  Eigen::VectorXf b1 = Eigen::VectorXf::Random(d_ff), b2 = Eigen::VectorXf::Random(d) * 0.1f;
  Eigen::VectorXf gamma = Eigen::VectorXf::Ones(d), beta = Eigen::VectorXf::Zero(d);
};

// TinyLlama-1.1B's gated feed-forward block (SwiGLU).
struct LlamaWeights {
  static constexpr Eigen::Index d = 2048, d_ff = 5632;
  static constexpr double flops_per_token = 6.0 * d * d_ff;
  RowMajor gate = RowMajor::Random(d_ff, d) / 22.f, up = RowMajor::Random(d_ff, d) / 45.f,
           down = RowMajor::Random(d, d_ff) / 75.f;
  Eigen::VectorXf norm = Eigen::VectorXf::Ones(d);
};

// (tokens, threads): T = 1 (decoding, a GEMV), 32, 128, 512 on 1 and 2 threads.
inline void block_arguments(benchmark::internal::Benchmark* b) {
  for (long tokens : {1L, 32L, 128L, 512L})
    for (long threads : {1L, 2L}) b->Args({tokens, threads});
}
inline void gated_arguments(benchmark::internal::Benchmark* b) {
  for (long tokens : {1L, 32L, 128L, 512L})
    for (long threads : {1L, 2L}) b->Args({tokens, threads});
}

// GFLOP/s of the block's products and tokens per second, for calls of `tokens` tokens.
inline void count_block(benchmark::State& state, double flops_per_token, Eigen::Index tokens) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_token * double(tokens) * double(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.counters["tokens/s"] =
      benchmark::Counter(double(tokens) * double(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace bench

#endif  // EGELU_BENCH_BLOCKS_HPP
