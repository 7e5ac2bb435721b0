// Inputs and counters shared by the benchmarks.
#ifndef EGELU_BENCH_COMMON_HPP
#define EGELU_BENCH_COMMON_HPP

#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <atomic>
#include <functional>
#include <random>
#include <thread>

// Built with OpenMP, Eigen's GEMM would take as many threads as oneDNN's last
// benchmark set through omp_set_num_threads, and the one-thread Eigen figures
// would be wrong without a word; bench/CMakeLists.txt links libgomp alone.
#ifdef _OPENMP
#error "egelu's benchmarks must not be compiled with -fopenmp"
#endif

namespace bench {

// Inputs of one kind. The bulk, uniform in [-5, 5], is the range the speed
// targets are stated for; the others feed the throughput-by-input-range table
// (the kernels are branch-free, so only subnormal intermediates, an x86
// microcode assist, could make one range slower than another).
enum class InputRange { bulk, tiny, large_negative, large_positive, subnormal };

template <typename T>
Eigen::Array<T, Eigen::Dynamic, 1> inputs(Eigen::Index n, InputRange range = InputRange::bulk) {
  if constexpr (sizeof(T) < 4) {  // Eigen::half, bfloat16: float's inputs, rounded
    return inputs<float>(n, range).template cast<T>();
  } else {
    constexpr bool is_float = sizeof(T) == 4;
    const T tiny = is_float ? T(1e-20) : T(1e-160);                                    // the square is subnormal
    const T subnormal = is_float ? T(1e-39) : T(1e-310);                               // the input is
    const T large_lo = is_float ? T(10) : T(25), large_hi = is_float ? T(30) : T(45);  // the far tail and beyond
    std::mt19937 rng(42);
    std::uniform_real_distribution<T> unit(0, 1);
    Eigen::Array<T, Eigen::Dynamic, 1> x(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const T u = unit(rng), signed_u = 2 * u - 1;
      switch (range) {
        case InputRange::bulk:
          x(i) = 5 * signed_u;
          break;
        case InputRange::tiny:
          x(i) = tiny * signed_u;
          break;
        case InputRange::large_negative:
          x(i) = -(large_lo + (large_hi - large_lo) * u);
          break;
        case InputRange::large_positive:
          x(i) = large_lo + (large_hi - large_lo) * u;
          break;
        case InputRange::subnormal:
          x(i) = subnormal * signed_u;
          break;
      }
    }
    return x;
  }
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

// A second thread, started once, that runs `work` once for each start(): a benchmark of
// two threads (two callers, two halves of a read) then times no thread's start.
class Partner {
 public:
  explicit Partner(std::function<void()> work)
      : work_(std::move(work)), thread_([this] {
          for (long seen = 0;;) {
            while (round_.load() == seen && !stop_.load()) std::this_thread::yield();
            if (stop_.load()) return;
            seen = round_.load();
            work_();
            ++done_;
          }
        }) {}
  Partner(const Partner&) = delete;
  Partner& operator=(const Partner&) = delete;
  ~Partner() {
    stop_ = true;
    thread_.join();
  }
  void start() { ++round_; }
  void wait() const {
    while (done_.load() < round_.load()) std::this_thread::yield();
  }

 private:
  std::function<void()> work_;
  std::atomic<long> round_{0}, done_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// 4K, 64K, 1M, 16M, 64M elements.
inline void sizes(benchmark::internal::Benchmark* b) {
  for (long n : {1L << 12, 1L << 16, 1L << 20, 1L << 24, 1L << 26}) b->Arg(n);
}

}  // namespace bench

#endif  // EGELU_BENCH_COMMON_HPP
