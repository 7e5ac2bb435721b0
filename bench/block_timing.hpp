// Timing one of egelu's blocks on `threads` threads (the calling thread one of them), for
// the benchmarks of the blocks and of their weight formats.
#ifndef EGELU_BENCH_BLOCK_TIMING_HPP
#define EGELU_BENCH_BLOCK_TIMING_HPP

#ifndef EIGEN_USE_THREADS
#error "define EIGEN_USE_THREADS before including block_timing.hpp"
#endif

#include <chrono>
#include <cstdlib>
#include <egelu/threads.hpp>
#include <egelu/weight_format.hpp>
#include <memory>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "bench_blocks.hpp"

namespace bench {

// The benchmarks' weight formats by number (bench_formats.cpp, bench_decode.cpp, bench/report):
// 0 f32, 1 bf16, 2 f16, 3 q8_0, 4 q4_0, 5 and 6 q8_0 and q4_0 with q16_0 inputs (the integer
// kernels, opt-in), 7 mxfp4.
constexpr egelu::WeightFormat kWeightFormats[] = {
    egelu::WeightFormat::f32,  egelu::WeightFormat::bf16, egelu::WeightFormat::f16,  egelu::WeightFormat::q8_0,
    egelu::WeightFormat::q4_0, egelu::WeightFormat::q8_0, egelu::WeightFormat::q4_0, egelu::WeightFormat::mxfp4};
inline bool quantized_inputs(long format) { return format == 5 || format == 6; }
inline egelu::InputFormat inputs_of(long format) {
  return quantized_inputs(format) ? egelu::InputFormat::q16_0 : egelu::InputFormat::f32;
}
inline std::string format_label(long format) {
  return std::string(egelu::to_string(kWeightFormats[format])) + (quantized_inputs(format) ? "+q16_0" : "");
}

// A pool for n threads: the calling thread is one of them. EGELU_THREAD_LINGER_US, when
// set, is egelu::set_thread_linger's setting (default 300; 0: no linger), for comparisons.
struct Threads {
  explicit Threads(int n) : pool(n > 1 ? n - 1 : 1), device(&pool, n), count(n) {
    if (const char* linger = std::getenv("EGELU_THREAD_LINGER_US"))
      egelu::set_thread_linger(std::chrono::microseconds(std::atol(linger)));
  }
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

// A streaming read of `bytes` (summed as floats), on one thread or two each reading its
// half: the floor of a product that reads its weights once. run() reads them all once.
class StreamRead {
 public:
  StreamRead(std::size_t bytes, int threads) : data_(bytes / sizeof(float), 1.f) {
    const std::size_t n = data_.size();
    if (threads > 1) second_.reset(new Partner([this, n] { read(n / 2, n); }));
    read(0, n);
  }
  StreamRead(const StreamRead&) = delete;  // the partner's work points at this object
  StreamRead& operator=(const StreamRead&) = delete;
  void run() {
    const std::size_t n = data_.size();
    if (second_) {
      second_->start();
      read(0, n / 2);
      second_->wait();
    } else {
      read(0, n);
    }
  }

 private:
  void read(std::size_t first, std::size_t last) const {
    const Eigen::Map<const Eigen::ArrayXf> part(data_.data() + first, Eigen::Index(last - first));
    float sum = part.sum();
    benchmark::DoNotOptimize(sum);
  }
  std::vector<float> data_;
  std::unique_ptr<Partner> second_;  // after data_: destroyed (joined) before it
};

}  // namespace bench

#endif  // EGELU_BENCH_BLOCK_TIMING_HPP
