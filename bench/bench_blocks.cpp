// The whole feed-forward blocks on 1 and 2 threads: egelu::FeedForward at BERT-base
// shape (768 / 3072) and egelu::GatedFeedForward at TinyLlama-1.1B's (2048 / 5632,
// SwiGLU), and the gated block's three bare products (Eigen's own GEMM, one thread),
// which its time is compared with. bench_dnnl_blocks.cpp times oneDNN's blocks.
// Argument pairs: (tokens, threads).
#define EIGEN_USE_THREADS
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <memory>
#include <unsupported/Eigen/CXX11/Tensor>

#include "block_timing.hpp"

namespace {

template <typename Block>
void run_block(benchmark::State& state, const Block& block, double flops) {
  bench::time_forward(state, block, state.range(0), int(state.range(1)), flops);
}

void egelu_ffn_block(benchmark::State& state) {
  using FF = egelu::FeedForward<float>;
  const bench::BertWeights w;
  FF block(w.w1, w.b1, w.w2, w.b2, w.gamma, w.beta, egelu::GeluForm::tanh);
  run_block(state, block, bench::BertWeights::flops_per_token);
}

// The same block with the exact (erf) GELU: what bench/onnxruntime's BERT model computes
// (com.microsoft.BiasGelu), ONNX Runtime's comparison in bench/report.
void egelu_ffn_block_exact(benchmark::State& state) {
  using FF = egelu::FeedForward<float>;
  const bench::BertWeights w;
  FF block(w.w1, w.b1, w.w2, w.b2, w.gamma, w.beta, egelu::GeluForm::exact);
  run_block(state, block, bench::BertWeights::flops_per_token);
}

void egelu_gated_block(benchmark::State& state) {
  using GF = egelu::GatedFeedForward<float>;
  const bench::LlamaWeights w;
  GF block(w.gate, w.up, w.down, w.norm, egelu::GatedForm::swiglu, 1e-5f);
  run_block(state, block, bench::LlamaWeights::flops_per_token);
}

// The gated block's three products alone, each a bare Eigen GEMM (one thread): the
// time the block's extra work (RMSNorm, act(gate) * up, the residual) is judged against.
void eigen_gated_three_products(benchmark::State& state) {
  const bench::LlamaWeights w;
  const Eigen::Index tokens = state.range(0);
  const Eigen::MatrixXf x = Eigen::MatrixXf::Random(w.gate.cols(), tokens);
  Eigen::MatrixXf g(w.gate.rows(), tokens), u(w.gate.rows(), tokens), y(w.down.rows(), tokens);
  bench::time_calls(state, [&] {
    g.noalias() = w.gate * x;
    u.noalias() = w.up * x;
    y.noalias() = w.down * g;
  });
  bench::count_block(state, bench::LlamaWeights::flops_per_token, tokens);
}

// Small BERT-shaped blocks (d_ff = 4 d_model, exact GELU) at one token: where sharing a
// call between threads costs more than it saves (egelu::set_min_work_per_thread).
// Arguments: (d_model, threads).
void egelu_small_block(benchmark::State& state) {
  using FF = egelu::FeedForward<float>;
  const Eigen::Index d = state.range(0), f = 4 * d;
  const Eigen::MatrixXf w1 = Eigen::MatrixXf::Random(f, d) * 0.05f, w2 = Eigen::MatrixXf::Random(d, f) * 0.05f;
  const Eigen::VectorXf b1 = Eigen::VectorXf::Random(f), b2 = Eigen::VectorXf::Random(d);
  const Eigen::VectorXf gamma = Eigen::VectorXf::Ones(d), beta = Eigen::VectorXf::Zero(d);
  FF block(w1, b1, w2, b2, gamma, beta, egelu::GeluForm::exact);
  bench::time_forward(state, block, 1, int(state.range(1)), 4.0 * double(d) * double(f));
}

}  // namespace

BENCHMARK(egelu_small_block)
    ->ArgsProduct({{64, 128, 256, 384, 512}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(egelu_ffn_block)->Apply(bench::block_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(egelu_ffn_block_exact)->Apply(bench::block_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
// BERT's longest common inputs (SQuAD's 384 tokens): on two threads one token block a thread.
BENCHMARK(egelu_ffn_block_exact)->Args({384, 1})->Args({384, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(egelu_gated_block)->Apply(bench::gated_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(eigen_gated_three_products)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();
