// Tensor evaluation on ThreadPoolDevice with 1 and 2 threads.
#define EIGEN_USE_THREADS
#include <egelu/egelu.hpp>

#include "bench_common.hpp"

namespace {

template <bool Exact>
void tensor_thread_pool(benchmark::State& state) {
  const Eigen::Index n = state.range(0);
  const int threads = int(state.range(1));
  const Eigen::ArrayXf values = bench::inputs<float>(n);
  Eigen::TensorMap<const Eigen::Tensor<float, 1>> x(values.data(), n);
  Eigen::Tensor<float, 1> y(n);
  y.setZero();  // pages touched before timing
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  for (auto _ : state) {
    if (Exact) {
      y.device(device) = egelu::gelu_exact(x);
    } else {
      y.device(device) = egelu::gelu(x);
    }
    benchmark::ClobberMemory();
  }
  bench::count_elementwise<float>(state, n);
}

}  // namespace

BENCHMARK_TEMPLATE(tensor_thread_pool, false)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
BENCHMARK_TEMPLATE(tensor_thread_pool, true)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
