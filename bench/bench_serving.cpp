// Serving throughput: requests of T tokens answered by one block, from callers that each
// run on one thread (several calling forward() at once) against one caller with a
// device of as many threads. At T = 8 and 32 a request's products are too small to
// split well over threads; independent callers need no synchronisation between them.
// Arguments: (model, tokens, mode): model 0 BERT-base (exact GELU), 1 TinyLlama (SwiGLU);
// mode 0 one caller on one thread, 1 two callers on one thread each, 2 one caller with a
// two-thread device. Counter: requests/s.
#define EIGEN_USE_THREADS
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <memory>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "bench_blocks.hpp"

namespace {

constexpr int kRequestsPerRound = 4;  // per caller and benchmark iteration

template <typename Block>
void serve(benchmark::State& state, const Block& block) {
  const Eigen::Index tokens = state.range(1);
  const int mode = int(state.range(2)), callers = mode == 1 ? 2 : 1;
  std::vector<Eigen::MatrixXf> x(2, Eigen::MatrixXf::Random(block.d_model(), tokens)), y = x;
  Eigen::ThreadPool pool(1);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  const auto requests = [&](int caller) {
    for (int r = 0; r < kRequestsPerRound; ++r) {
      if (mode == 2) {
        block.forward(x[std::size_t(caller)], y[std::size_t(caller)], device);
      } else {
        block.forward(x[std::size_t(caller)], y[std::size_t(caller)]);
      }
    }
  };
  block.reserve(tokens, callers, mode == 2 ? 2 : 1);
  // The second caller: a thread started once, released each round.
  std::unique_ptr<bench::Partner> second;
  if (callers == 2) second.reset(new bench::Partner([&] { requests(1); }));
  requests(0);
  for (auto _ : state) {
    if (second) second->start();
    requests(0);
    if (second) second->wait();
  }
  state.counters["requests/s"] =
      benchmark::Counter(double(callers * kRequestsPerRound) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void egelu_serving(benchmark::State& state) {
  if (state.range(0) == 0) {
    using FF = egelu::FeedForward<float>;
    const bench::BertWeights w;
    serve(state, FF(w.w1, w.b1, w.w2, w.b2, w.gamma, w.beta, egelu::GeluForm::exact));
  } else {
    using GF = egelu::GatedFeedForward<float>;
    const bench::LlamaWeights w;
    serve(state, GF(w.gate, w.up, w.down, w.norm, egelu::GatedForm::swiglu, 1e-5f));
  }
}

void serving_arguments(benchmark::internal::Benchmark* b) {
  for (long model : {0L, 1L})
    for (long tokens : {1L, 8L, 32L})
      for (long mode : {0L, 1L, 2L}) b->Args({model, tokens, mode});
}

}  // namespace

BENCHMARK(egelu_serving)->Apply(serving_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
