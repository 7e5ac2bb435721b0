// egelu's blocks decoding from memory (decode_memory.hpp: a model's worth of distinct layers,
// cycled, one token a call, against a streaming read of as many bytes).
// Arguments: (model, format, threads); model 0: BERT-base, 2: TinyLlama (bench_formats.cpp's
// numbering); format: f32, bf16, f16, q8_0, q4_0, q8_0 and q4_0 with q16_0 inputs, and mxfp4.
// Counters: time_decode's. oneDNN's f32 blocks decode the same way in bench_dnnl_blocks.cpp.
#define EIGEN_USE_THREADS
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <memory>
#include <vector>

#include "decode_memory.hpp"

namespace {

using egelu::WeightFormat;
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
  const WeightFormat f = bench::kWeightFormats[format];
  const egelu::InputFormat in = bench::inputs_of(format);
  if (model == 0) {
    using FF = egelu::FeedForward<float>;
    const bench::BertWeights w;
    const FF::Options o{egelu::GeluForm::exact, egelu::NormPlacement::post, 1e-12f, f, in};
    do {
      layers.bert.emplace_back(new FF(w.w1, w.b1, w.w2, w.b2, w.gamma, w.beta, o));
      layers.layer_bytes = layers.bert.back()->weight_bytes();
    } while (layers.count() * layers.layer_bytes < bench::model_bytes());
  } else {
    using GF = egelu::GatedFeedForward<float>;
    const bench::LlamaWeights w;
    do {
      layers.llama.emplace_back(
          new GF(w.gate, w.up, w.down, w.norm, GF::Options{egelu::GatedForm::swiglu, 1e-5f, f, in}));
      layers.layer_bytes = layers.llama.back()->weight_bytes();
    } while (layers.count() * layers.layer_bytes < bench::model_bytes());
  }
  return layers;
}

void egelu_decode_from_memory(benchmark::State& state) {
  const Layers& layers = layers_of(state.range(0), state.range(1));
  const int threads = int(state.range(2));
  bench::Threads pool(threads);
  const Eigen::Index d = layers.bert.empty() ? layers.llama.front()->d_model() : layers.bert.front()->d_model();
  const Eigen::MatrixXf x = Eigen::MatrixXf::Random(d, 1);
  Eigen::MatrixXf y(d, 1);
  bench::time_decode(state, layers.count(), layers.layer_bytes, threads, [&](std::size_t i) {
    if (!layers.bert.empty()) {
      pool.count == 1 ? layers.bert[i]->forward(x, y) : layers.bert[i]->forward(x, y, pool.device);
    } else {
      pool.count == 1 ? layers.llama[i]->forward(x, y) : layers.llama[i]->forward(x, y, pool.device);
    }
  });
  state.SetLabel(bench::format_label(state.range(1)));
}

void decode_arguments(benchmark::internal::Benchmark* b) {
  for (long model : {2L, 0L})
    for (long format : {0L, 1L, 3L, 4L, 5L, 6L, 7L})
      for (long threads : {1L, 2L}) b->Args({model, format, threads});
}

}  // namespace

// At least a second a point whatever --benchmark_min_time says: several passes over the layers.
BENCHMARK(egelu_decode_from_memory)
    ->Apply(decode_arguments)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);
