// oneDNN's feed-forward blocks, built as a user of oneDNN would build them, on 1 and 2
// threads (OpenMP), with the weights reordered once into oneDNN's preferred layout:
// - BERT: a matmul with bias and a gelu_tanh post-op, a matmul with bias and a sum
//   post-op onto the residual (copied into the output first), then layer normalisation
//   with scale and shift, in place;
// - gated (TinyLlama, SwiGLU): the gate matmul with an eltwise_swish post-op, the up
//   matmul with a binary_mul post-op against it, the down matmul with a sum post-op.
//   oneDNN 2.6 has no RMSNorm, so its gated block does less than egelu's, which
//   normalises its input first.
// Argument pairs as in bench_blocks.cpp: (tokens, threads). Decoding from memory (one token a
// call over a model's worth of distinct layers, decode_memory.hpp) as egelu's in
// bench_decode.cpp: (model, threads), model 0 BERT-base, 2 TinyLlama, f32 weights.
#define EIGEN_USE_THREADS
#include <dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "bench_blocks.hpp"
#include "decode_memory.hpp"

extern "C" void omp_set_num_threads(int);  // libgomp, which Debian's oneDNN runs on

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct Session {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

dnnl::memory::desc matrix(Eigen::Index rows, Eigen::Index cols, tag t = tag::ab) {
  return dnnl::memory::desc({rows, cols}, dt::f32, t);
}

// dst (M x N) = src (M x K) W^T (+ bias), with post-ops; W is PyTorch's (N x K) row-major,
// that is oneDNN's K x N weights in format "ba", reordered once into the layout the
// primitive prefers.
struct Linear {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory weights, bias;

  Linear(Session& s, const bench::RowMajor& w, const Eigen::VectorXf* b, Eigen::Index m, const dnnl::post_ops& ops) {
    const Eigen::Index n = w.rows(), k = w.cols();
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    const dnnl::memory::desc bias_md = b ? matrix(1, n) : dnnl::memory::desc();
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(matrix(m, k), matrix(k, n, tag::any), bias_md, matrix(m, n)),
                                      attr, s.engine);
    primitive = dnnl::matmul(pd);
    weights = reordered(s, w);
    if (b) bias = dnnl::memory(bias_md, s.engine, const_cast<float*>(b->data()));
  }

  // A copy of w in the primitive's layout: one layer's weights (decoding from memory keeps many).
  dnnl::memory reordered(Session& s, const bench::RowMajor& w) const {
    dnnl::memory user(matrix(w.cols(), w.rows(), tag::ba), s.engine, const_cast<float*>(w.data()));
    dnnl::memory copy(pd.weights_desc(), s.engine);
    dnnl::reorder(user, copy).execute(s.stream, user, copy);
    s.stream.wait();
    return copy;
  }

  // layer_weights: another layer's copy (reordered()), else this one's.
  void run(Session& s, const dnnl::memory& src, const dnnl::memory& dst, const dnnl::memory* binary = nullptr,
           const dnnl::memory* layer_weights = nullptr) {
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, layer_weights ? *layer_weights : weights}, {DNNL_ARG_DST, dst}};
    if (bias) args[DNNL_ARG_BIAS] = bias;
    if (binary) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = *binary;
    primitive.execute(s.stream, args);
  }
};

dnnl::post_ops eltwise(dnnl::algorithm algorithm) {
  dnnl::post_ops ops;
  ops.append_eltwise(1.f, algorithm, 1.f, 0.f);
  return ops;
}

dnnl::post_ops sum() {
  dnnl::post_ops ops;
  ops.append_sum(1.f);
  return ops;
}

dnnl::post_ops multiply(const dnnl::memory::desc& other) {
  dnnl::post_ops ops;
  ops.append_binary(dnnl::algorithm::binary_mul, other);
  return ops;
}

// A layer's weights in the primitives' layouts, product by product (Linear::reordered).
using LayerWeights = std::vector<dnnl::memory>;

// oneDNN's BERT block on `tokens` tokens (the GELU a post-op of the first matmul): forward()
// runs it on its own weights, or on another layer's copies of them.
struct BertBlock {
  using W = bench::BertWeights;
  const W& w;
  Linear first, second;
  dnnl::layer_normalization_forward norm;
  const Eigen::MatrixXf x;  // (T, d) row-major, as oneDNN takes tokens
  Eigen::MatrixXf h, y;
  dnnl::memory x_mem, h_mem, y_mem, gamma, beta;

  BertBlock(Session& s, const W& weights, Eigen::Index t, dnnl::algorithm gelu)
      : w(weights),
        first(s, w.w1, &w.b1, t, eltwise(gelu)),
        second(s, w.w2, &w.b2, t, sum()),
        norm(dnnl::layer_normalization_forward::primitive_desc(
            dnnl::layer_normalization_forward::desc(
                dnnl::prop_kind::forward_inference, matrix(t, W::d), 1e-12f,
                dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
            s.engine)),
        x(Eigen::MatrixXf::Random(W::d, t)),
        h(W::d_ff, t),
        y(W::d, t),
        x_mem(matrix(t, W::d), s.engine, const_cast<float*>(x.data())),
        h_mem(matrix(t, W::d_ff), s.engine, h.data()),
        y_mem(matrix(t, W::d), s.engine, y.data()),
        gamma(dnnl::memory::desc({W::d}, dt::f32, tag::a), s.engine, const_cast<float*>(w.gamma.data())),
        beta(dnnl::memory::desc({W::d}, dt::f32, tag::a), s.engine, const_cast<float*>(w.beta.data())) {}

  std::vector<std::pair<const Linear*, const bench::RowMajor*>> products() const {
    return {{&first, &w.w1}, {&second, &w.w2}};
  }
  void forward(Session& s, const LayerWeights* layer = nullptr) {
    y = x;  // the residual, for the sum post-op
    first.run(s, x_mem, h_mem, nullptr, layer ? &(*layer)[0] : nullptr);
    second.run(s, h_mem, y_mem, nullptr, layer ? &(*layer)[1] : nullptr);
    norm.execute(s.stream,
                 {{DNNL_ARG_SRC, y_mem}, {DNNL_ARG_DST, y_mem}, {DNNL_ARG_SCALE, gamma}, {DNNL_ARG_SHIFT, beta}});
    s.stream.wait();
  }
};

// oneDNN's gated block (SwiGLU) on `tokens` tokens, as BertBlock.
struct GatedBlock {
  using W = bench::LlamaWeights;
  const W& w;
  Linear gate, up, down;
  const Eigen::MatrixXf x;
  Eigen::MatrixXf g, h, y;
  dnnl::memory x_mem, g_mem, h_mem, y_mem;

  GatedBlock(Session& s, const W& weights, Eigen::Index t)
      : w(weights),
        gate(s, w.gate, nullptr, t, eltwise(dnnl::algorithm::eltwise_swish)),
        up(s, w.up, nullptr, t, multiply(matrix(t, W::d_ff))),
        down(s, w.down, nullptr, t, sum()),
        x(Eigen::MatrixXf::Random(W::d, t)),
        g(W::d_ff, t),
        h(W::d_ff, t),
        y(W::d, t),
        x_mem(matrix(t, W::d), s.engine, const_cast<float*>(x.data())),
        g_mem(matrix(t, W::d_ff), s.engine, g.data()),
        h_mem(matrix(t, W::d_ff), s.engine, h.data()),
        y_mem(matrix(t, W::d), s.engine, y.data()) {}

  std::vector<std::pair<const Linear*, const bench::RowMajor*>> products() const {
    return {{&gate, &w.gate}, {&up, &w.up}, {&down, &w.down}};
  }
  void forward(Session& s, const LayerWeights* layer = nullptr) {
    y = x;
    gate.run(s, x_mem, g_mem, nullptr, layer ? &(*layer)[0] : nullptr);
    up.run(s, x_mem, h_mem, &g_mem, layer ? &(*layer)[1] : nullptr);
    down.run(s, h_mem, y_mem, nullptr, layer ? &(*layer)[2] : nullptr);
    s.stream.wait();
  }
};

void onednn_ffn_block(benchmark::State& state) {
  const Eigen::Index tokens = state.range(0);
  omp_set_num_threads(int(state.range(1)));
  const bench::BertWeights w;
  Session s;
  BertBlock block(s, w, tokens, dnnl::algorithm::eltwise_gelu_tanh);
  bench::time_calls(state, [&] { block.forward(s); });
  bench::count_block(state, bench::BertWeights::flops_per_token, tokens);
}

void onednn_gated_block(benchmark::State& state) {
  const Eigen::Index tokens = state.range(0);
  omp_set_num_threads(int(state.range(1)));
  const bench::LlamaWeights w;
  Session s;
  GatedBlock block(s, w, tokens);
  bench::time_calls(state, [&] { block.forward(s); });
  bench::count_block(state, bench::LlamaWeights::flops_per_token, tokens);
}

// Decodes with `block` (one token) over as many copies of its weights, each reordered into the
// primitives' layout, as make decode_memory.hpp's model; biases and norm parameters (a few KB)
// are shared between the layers.
template <typename Block>
void decode_layers(benchmark::State& state, Session& s, Block& block, int threads) {
  std::size_t layer_bytes = 0;
  for (const auto& product : block.products()) layer_bytes += product.first->pd.weights_desc().get_size();
  std::vector<LayerWeights> layers;
  do {
    layers.emplace_back();
    for (const auto& product : block.products()) layers.back().push_back(product.first->reordered(s, *product.second));
  } while (layers.size() * layer_bytes < bench::model_bytes());
  bench::time_decode(state, layers.size(), layer_bytes, threads, [&](std::size_t i) { block.forward(s, &layers[i]); });
}

// oneDNN's f32 blocks decoding from memory, as egelu_decode_from_memory (bench_decode.cpp); the
// BERT block with gelu_erf, as egelu's exact GELU there.
void onednn_decode_from_memory(benchmark::State& state) {
  const int threads = int(state.range(1));
  omp_set_num_threads(threads);
  Session s;
  if (state.range(0) == 0) {
    const bench::BertWeights w;
    BertBlock block(s, w, 1, dnnl::algorithm::eltwise_gelu_erf);
    decode_layers(state, s, block, threads);
  } else {
    const bench::LlamaWeights w;
    GatedBlock block(s, w, 1);
    decode_layers(state, s, block, threads);
  }
  state.SetLabel("f32");
}

// The element-wise swish (silu) beside egelu's silu (bench_elementwise.cpp).
void onednn_swish(benchmark::State& state) {
  omp_set_num_threads(1);
  const Eigen::Index n = state.range(0);
  const Eigen::ArrayXf x = bench::inputs<float>(n);
  Eigen::ArrayXf y = Eigen::ArrayXf::Zero(n);
  Session s;
  const dnnl::memory::desc md({n}, dt::f32, tag::a);
  dnnl::memory src(md, s.engine, const_cast<float*>(x.data())), dst(md, s.engine, y.data());
  const auto pd = dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_swish, md, 1.f, 0.f),
      s.engine);
  dnnl::eltwise_forward primitive(pd);
  bench::time_calls(state, [&] {
    primitive.execute(s.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    s.stream.wait();
  });
  bench::count_elementwise<float>(state, n);
}

}  // namespace

BENCHMARK(onednn_ffn_block)->Apply(bench::block_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(onednn_gated_block)->Apply(bench::gated_arguments)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(onednn_swish)->Apply(bench::sizes);
// At least a second a point, as egelu_decode_from_memory: several passes over the layers.
BENCHMARK(onednn_decode_from_memory)
    ->ArgsProduct({{2, 0}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);
