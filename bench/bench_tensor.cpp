// Tensor evaluation on ThreadPoolDevice with 1 and 2 threads, beside two
// baselines that tell the kernel's share of the speed-up from the rest:
// - the same kernel split over persistent spinning threads: what the hardware
//   allows with no dispatch cost;
// - a job that only burns CPU time for as long as one gelu pass at 1M takes,
//   split by the same ThreadPoolDevice::parallelFor: what Eigen's dispatch
//   allows with no memory traffic.
#define EIGEN_USE_THREADS
#include <atomic>
#include <chrono>
#include <egelu/egelu.hpp>
#include <thread>
#include <vector>

#include "bench_common.hpp"

namespace {

// Op: a GELU functor (egelu::gelu_tanh_op, egelu::fast::gelu_erf_op, ...).
template <template <typename> class Op>
void tensor_thread_pool(benchmark::State& state) {
  const Eigen::Index n = state.range(0);
  const int threads = int(state.range(1));
  const Eigen::ArrayXf values = bench::inputs<float>(n);
  Eigen::TensorMap<const Eigen::Tensor<float, 1>> x(values.data(), n);
  Eigen::Tensor<float, 1> y(n);
  y.setZero();  // pages touched before timing
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  bench::time_calls(state, [&] { y.device(device) = x.unaryExpr(Op<float>()); });
  bench::count_elementwise<float>(state, n);
}

template <template <typename> class Op>
void spinning_threads(benchmark::State& state) {
  const Eigen::Index n = state.range(0);
  const int threads = int(state.range(1));
  const Eigen::ArrayXf x = bench::inputs<float>(n);
  Eigen::ArrayXf y = Eigen::ArrayXf::Zero(n);
  const Eigen::Index share = n / threads;
  auto run_share = [&](int k) {
    const Eigen::Index first = k * share, count = k + 1 == threads ? n - first : share;
    y.segment(first, count) = x.segment(first, count).unaryExpr(Op<float>());
  };
  std::atomic<long> round{0}, finished{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int k = 1; k < threads; ++k) {
    workers.emplace_back([&, k] {
      for (long seen = 0; !stop.load();) {
        if (round.load() == seen) continue;  // spin: no wake-up cost
        ++seen;
        run_share(k);
        finished.fetch_add(1);
      }
    });
  }
  bench::time_calls(state, [&] {
    const long target = finished.load() + threads - 1;
    round.fetch_add(1);
    run_share(0);
    while (finished.load() != target) {
    }
  });
  stop = true;
  for (auto& worker : workers) worker.join();
  bench::count_elementwise<float>(state, n);
}

// The blocks busy-wait for their share of 0.7 ms, about one thread's time for
// gelu at 1M floats; the cost is gelu's, so Eigen splits it the same way.
void cpu_only_job(benchmark::State& state) {
  const Eigen::Index n = 1 << 20;
  const int threads = int(state.range(0));
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  const Eigen::Tensor<float, 1> x(n);
  const auto gelu_x = egelu::gelu(x);
  using Evaluator = Eigen::TensorEvaluator<decltype(gelu_x), Eigen::ThreadPoolDevice>;
  const Eigen::TensorOpCost cost = Evaluator(gelu_x, device).costPerCoeff(/*vectorized=*/true);
  const double nanoseconds_per_item = 0.7e6 / double(n);
  bench::time_calls(state, [&] {
    device.parallelFor(n, cost, [&](Eigen::Index first, Eigen::Index last) {
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::nanoseconds(static_cast<long>(double(last - first) * nanoseconds_per_item));
      while (std::chrono::steady_clock::now() < until) {
      }
    });
  });
  bench::count_elementwise<float>(state, n);
}

}  // namespace

BENCHMARK(cpu_only_job)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_TEMPLATE(spinning_threads, egelu::gelu_tanh_op)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
BENCHMARK_TEMPLATE(spinning_threads, egelu::gelu_erf_op)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
BENCHMARK_TEMPLATE(spinning_threads, egelu::fast::gelu_tanh_op)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
BENCHMARK_TEMPLATE(spinning_threads, egelu::fast::gelu_erf_op)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
BENCHMARK_TEMPLATE(tensor_thread_pool, egelu::gelu_tanh_op)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
BENCHMARK_TEMPLATE(tensor_thread_pool, egelu::gelu_erf_op)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
BENCHMARK_TEMPLATE(tensor_thread_pool, egelu::fast::gelu_tanh_op)
    ->Args({1 << 20, 1})
    ->Args({1 << 20, 2})
    ->UseRealTime();
BENCHMARK_TEMPLATE(tensor_thread_pool, egelu::fast::gelu_erf_op)->Args({1 << 20, 1})->Args({1 << 20, 2})->UseRealTime();
