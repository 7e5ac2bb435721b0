// Timing one of egelu's blocks on `threads` threads (the calling thread one of them), for
// the benchmarks of the blocks and of their weight formats.
#ifndef EGELU_BENCH_BLOCK_TIMING_HPP
#define EGELU_BENCH_BLOCK_TIMING_HPP

#ifndef EIGEN_USE_THREADS
#error "define EIGEN_USE_THREADS before including block_timing.hpp"
#endif

#include <unsupported/Eigen/CXX11/Tensor>

#include "bench_blocks.hpp"

namespace bench {

// A pool for n threads: the calling thread is one of them.
struct Threads {
  explicit Threads(int n) : pool(n > 1 ? n - 1 : 1), device(&pool, n), count(n) {}
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
  int count;
};

// Times block.forward on `tokens` random tokens and `threads` threads; GFLOP/s and tokens/s
// counted from the products' flops per token.
template <typename Block>
void time_forward(benchmark::State& state, const Block& block, Eigen::Index tokens, int threads,
                  double flops_per_token) {
  const Eigen::MatrixXf x = Eigen::MatrixXf::Random(block.d_model(), tokens);
  Eigen::MatrixXf y(block.d_model(), tokens);
  Threads pool(threads);
  time_calls(state, [&] {
    if (pool.count == 1) {
      block.forward(x, y);
    } else {
      block.forward(x, y, pool.device);
    }
  });
  count_block(state, flops_per_token, tokens);
}

}  // namespace bench

#endif  // EGELU_BENCH_BLOCK_TIMING_HPP
