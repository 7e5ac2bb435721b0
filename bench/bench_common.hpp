// Inputs and counters shared by the benchmarks.
#ifndef EGELU_BENCH_COMMON_HPP
#define EGELU_BENCH_COMMON_HPP

#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <random>

namespace bench {

// Uniform in [-5, 5], the range the speed targets are stated for.
template <typename T>
Eigen::Array<T, Eigen::Dynamic, 1> inputs(Eigen::Index n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<T> uniform(-5, 5);
  Eigen::Array<T, Eigen::Dynamic, 1> x(n);
  for (Eigen::Index i = 0; i < n; ++i) x(i) = uniform(rng);
  return x;
}

// items/s and bytes/s for a pass that reads and writes n elements.
template <typename T>
void count_elementwise(benchmark::State& state, Eigen::Index n) {
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * Eigen::Index(2 * sizeof(T)));
}

// Times repeated calls of body after one untimed call, so that first-touch page
// faults and the allocator's growth (Eigen's GEMM packing buffers) stay out of
// the figures: bench/report runs short, interleaved repetitions, each of which
// starts cold.
template <typename Body>
void time_calls(benchmark::State& state, Body&& body) {
  body();
  for (auto _ : state) {
    body();
    benchmark::ClobberMemory();
  }
}

// 4K, 64K, 1M, 16M, 64M elements.
inline void sizes(benchmark::internal::Benchmark* b) {
  for (long n : {1L << 12, 1L << 16, 1L << 20, 1L << 24, 1L << 26}) b->Arg(n);
}

}  // namespace bench

#endif  // EGELU_BENCH_COMMON_HPP
