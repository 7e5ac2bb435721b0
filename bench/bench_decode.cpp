// Decoding as a model runs it: one token a call, each call on the next of a model's worth
// of distinct layers, cycled, whose weights total at least four times the last-level cache
// (and 1 GiB), so that every call reads its weights from memory, as a model's forward pass
// does -- one layer called again and again would stay in a server CPU's 32-500 MB cache and
// time the cache. After the timed calls, a streaming read of as many bytes (a buffer of the
// same total size, summed as floats, on as many threads) in the same process: the floor a
// product that reads its weights once can reach, and the block's bytes / time against it.
// Arguments: (model, format, threads); model 0: BERT-base, 2: TinyLlama (bench_formats.cpp's
// numbering); format: f32, bf16, f16, q8_0, q4_0, and q8_0 and q4_0 with q16_0 inputs.
// Counters: weights_GB/s, stream_GB/s, stream_fraction (their ratio), layers, weight_bytes.
#define EIGEN_USE_THREADS
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <fstream>
#include <memory>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "block_timing.hpp"

namespace {

using egelu::WeightFormat;
constexpr WeightFormat kFormats[] = {WeightFormat::f32,  WeightFormat::bf16, WeightFormat::f16, WeightFormat::q8_0,
                                     WeightFormat::q4_0, WeightFormat::q8_0, WeightFormat::q4_0};
// Formats 5 and 6: q8_0 and q4_0 with q16_0 inputs (the integer kernels, opt-in).
egelu::InputFormat inputs_of(long format) { return format >= 5 ? egelu::InputFormat::q16_0 : egelu::InputFormat::f32; }
std::string label_of(long format) {
  return std::string(egelu::to_string(kFormats[format])) + (format >= 5 ? "+q16_0" : "");
}

// The last-level cache's bytes: the largest sysfs or the C library (cpuid) reports, 32 MiB
// when neither says. (A VM may show the socket's whole L3, 512 MiB on a Zen 5 EPYC, where
// its threads reach one complex's 32 MiB: the larger figure makes the larger model.)
std::size_t last_level_cache() {
  std::size_t largest = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) largest = std::size_t(l3);
#endif
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string size;
    if (!(in >> size) || size.empty()) continue;
    std::size_t value = std::stoul(size);
    if (size.back() == 'K') value <<= 10;
    if (size.back() == 'M') value <<= 20;
    largest = std::max(largest, value);
  }
  return largest ? largest : std::size_t(32) << 20;
}

// The bytes the layers must total: four times the cache, at least 1 GiB (EGELU_DECODE_MIB
// overrides it, for quick trials).
std::size_t model_bytes() {
  if (const char* mib = std::getenv("EGELU_DECODE_MIB")) return std::size_t(std::atol(mib)) << 20;
  return std::max(4 * last_level_cache(), std::size_t(1) << 30);
}

// The layers of one (model, format), kept between the thread counts' runs.
struct Layers {
  long model = -1, format = -1;
  std::vector<std::unique_ptr<egelu::FeedForward<float>>> bert;
  std::vector<std::unique_ptr<egelu::GatedFeedForward<float>>> llama;
  std::size_t layer_bytes = 0;
  std::size_t count() const { return bert.size() + llama.size(); }
};

Layers& layers_of(long model, long format) {
  static Layers layers;
  if (layers.model == model && layers.format == format) return layers;
  layers = Layers();
  layers.model = model, layers.format = format;
  const WeightFormat f = kFormats[format];
  const egelu::InputFormat in = inputs_of(format);
  if (model == 0) {
    using FF = egelu::FeedForward<float>;
    const bench::BertWeights w;
    const FF::Options o{egelu::GeluForm::exact, egelu::NormPlacement::post, 1e-12f, f, in};
    do {
      layers.bert.emplace_back(new FF(w.w1, w.b1, w.w2, w.b2, w.gamma, w.beta, o));
      layers.layer_bytes = layers.bert.back()->weight_bytes();
    } while (layers.count() * layers.layer_bytes < model_bytes());
  } else {
    using GF = egelu::GatedFeedForward<float>;
    const bench::LlamaWeights w;
    do {
      layers.llama.emplace_back(
          new GF(w.gate, w.up, w.down, w.norm, GF::Options{egelu::GatedForm::swiglu, 1e-5f, f, in}));
      layers.layer_bytes = layers.llama.back()->weight_bytes();
    } while (layers.count() * layers.layer_bytes < model_bytes());
  }
  return layers;
}

// GB/s of a streaming read of `bytes` on `threads` threads (each its half), best of three.
double stream_read_GBps(std::size_t bytes, int threads) {
  bench::StreamRead reader(bytes, threads);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    reader.run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, double(bytes) / s * 1e-9);
  }
  return best;
}

void egelu_decode_from_memory(benchmark::State& state) {
  const Layers& layers = layers_of(state.range(0), state.range(1));
  const int threads = int(state.range(2));
  bench::Threads pool(threads);
  const Eigen::Index d = layers.bert.empty() ? layers.llama.front()->d_model() : layers.bert.front()->d_model();
  const Eigen::MatrixXf x = Eigen::MatrixXf::Random(d, 1);
  Eigen::MatrixXf y(d, 1);
  std::size_t next = 0;
  const auto call = [&] {
    const std::size_t i = next++ % layers.count();
    if (!layers.bert.empty()) {
      pool.count == 1 ? layers.bert[i]->forward(x, y) : layers.bert[i]->forward(x, y, pool.device);
    } else {
      pool.count == 1 ? layers.llama[i]->forward(x, y) : layers.llama[i]->forward(x, y, pool.device);
    }
  };
  // Every layer's workspace made, and every layer read twice, before the timing.
  for (std::size_t i = 0; i < 2 * layers.count(); ++i) call();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) call();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double weights_GBps = double(layers.layer_bytes) * double(state.iterations()) / seconds * 1e-9;
  const double stream_GBps = stream_read_GBps(layers.count() * layers.layer_bytes, threads);
  state.counters["weights_GB/s"] = weights_GBps;
  state.counters["stream_GB/s"] = stream_GBps;
  state.counters["stream_fraction"] = weights_GBps / stream_GBps;
  state.counters["weight_bytes"] = double(layers.layer_bytes);
  state.counters["layers"] = double(layers.count());
  state.SetLabel(label_of(state.range(1)));
}

void decode_arguments(benchmark::internal::Benchmark* b) {
  for (long model : {2L, 0L})
    for (long format : {0L, 1L, 3L, 4L, 5L, 6L})
      for (long threads : {1L, 2L}) b->Args({model, format, threads});
}

}  // namespace

// At least a second a point whatever --benchmark_min_time says: several passes over the layers.
BENCHMARK(egelu_decode_from_memory)
    ->Apply(decode_arguments)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);
