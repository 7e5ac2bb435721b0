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

void onednn_ffn_block(benchmark::State& state) {
  const Eigen::Index tokens = state.range(0);
  omp_set_num_threads(int(state.range(1)));
  const bench::BertWeights w;
  using W = bench::BertWeights;
  Session s;
  Linear first(s, w.w1, &w.b1, tokens, eltwise(dnnl::algorithm::eltwise_gelu_tanh));
  Linear second(s, w.w2, &w.b2, tokens, sum());
  const dnnl::layer_normalization_forward::primitive_desc norm_pd(
      dnnl::layer_normalization_forward::desc(
          dnnl::prop_kind::forward_inference, matrix(tokens, W::d), 1e-12f,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
      s.engine);
  dnnl::layer_normalization_forward norm(norm_pd);
  const Eigen::MatrixXf x = Eigen::MatrixXf::Random(W::d, tokens);  // (T, d) row-major, as oneDNN takes tokens
  Eigen::MatrixXf h(W::d_ff, tokens), y(W::d, tokens);
  dnnl::memory x_mem(matrix(tokens, W::d), s.engine, const_cast<float*>(x.data())),
      h_mem(matrix(tokens, W::d_ff), s.engine, h.data()), y_mem(matrix(tokens, W::d), s.engine, y.data());
  const dnnl::memory::desc vector_md({W::d}, dt::f32, tag::a);
  dnnl::memory gamma(vector_md, s.engine, const_cast<float*>(w.gamma.data())),
      beta(vector_md, s.engine, const_cast<float*>(w.beta.data()));
  bench::time_calls(state, [&] {
    y = x;  // the residual, for the sum post-op
    first.run(s, x_mem, h_mem);
    second.run(s, h_mem, y_mem);
    norm.execute(s.stream,
                 {{DNNL_ARG_SRC, y_mem}, {DNNL_ARG_DST, y_mem}, {DNNL_ARG_SCALE, gamma}, {DNNL_ARG_SHIFT, beta}});
    s.stream.wait();
  });
  bench::count_block(state, W::flops_per_token, tokens);
}

void onednn_gated_block(benchmark::State& state) {
  const Eigen::Index tokens = state.range(0);
  omp_set_num_threads(int(state.range(1)));
  const bench::LlamaWeights w;
  using W = bench::LlamaWeights;
  Session s;
  Linear gate(s, w.gate, nullptr, tokens, eltwise(dnnl::algorithm::eltwise_swish));
  Linear up(s, w.up, nullptr, tokens, multiply(matrix(tokens, W::d_ff)));
  Linear down(s, w.down, nullptr, tokens, sum());
  const Eigen::MatrixXf x = Eigen::MatrixXf::Random(W::d, tokens);
  Eigen::MatrixXf g(W::d_ff, tokens), h(W::d_ff, tokens), y(W::d, tokens);
  dnnl::memory x_mem(matrix(tokens, W::d), s.engine, const_cast<float*>(x.data())),
      g_mem(matrix(tokens, W::d_ff), s.engine, g.data()), h_mem(matrix(tokens, W::d_ff), s.engine, h.data()),
      y_mem(matrix(tokens, W::d), s.engine, y.data());
  bench::time_calls(state, [&] {
    y = x;
    gate.run(s, x_mem, g_mem);
    up.run(s, x_mem, h_mem, &g_mem);
    down.run(s, h_mem, y_mem);
    s.stream.wait();
  });
  bench::count_block(state, W::flops_per_token, tokens);
}

// oneDNN's f32 blocks decoding from memory, as egelu_decode_from_memory (bench_decode.cpp): the
// primitives for one token, and as many copies of the weights, each reordered into the
// primitive's layout, as make decode_memory.hpp's model. Biases and norm parameters (a few KB)
// are shared between the layers.
void onednn_decode_from_memory(benchmark::State& state) {
  const long model = state.range(0);
  const int threads = int(state.range(1));
  omp_set_num_threads(threads);
  Session s;
  std::vector<std::vector<dnnl::memory>> layers;  // each layer's weights, product by product
  const auto make_layers = [&](std::vector<Linear*> products, std::vector<const bench::RowMajor*> weights) {
    std::size_t bytes = 0;
    for (const Linear* product : products) bytes += product->pd.weights_desc().get_size();
    do {
      layers.emplace_back();
      for (std::size_t p = 0; p < products.size(); ++p) layers.back().push_back(products[p]->reordered(s, *weights[p]));
    } while (layers.size() * bytes < bench::model_bytes());
    return bytes;
  };
  if (model == 0) {
    const bench::BertWeights w;
    using W = bench::BertWeights;
    Linear first(s, w.w1, &w.b1, 1, eltwise(dnnl::algorithm::eltwise_gelu_erf));
    Linear second(s, w.w2, &w.b2, 1, sum());
    const dnnl::layer_normalization_forward::primitive_desc norm_pd(
        dnnl::layer_normalization_forward::desc(
            dnnl::prop_kind::forward_inference, matrix(1, W::d), 1e-12f,
            dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
        s.engine);
    dnnl::layer_normalization_forward norm(norm_pd);
    const std::size_t layer_bytes = make_layers({&first, &second}, {&w.w1, &w.w2});
    const Eigen::VectorXf x = Eigen::VectorXf::Random(W::d);
    Eigen::VectorXf h(W::d_ff), y(W::d);
    dnnl::memory x_mem(matrix(1, W::d), s.engine, const_cast<float*>(x.data())),
        h_mem(matrix(1, W::d_ff), s.engine, h.data()), y_mem(matrix(1, W::d), s.engine, y.data());
    const dnnl::memory::desc vector_md({W::d}, dt::f32, tag::a);
    dnnl::memory gamma(vector_md, s.engine, const_cast<float*>(w.gamma.data())),
        beta(vector_md, s.engine, const_cast<float*>(w.beta.data()));
    bench::time_decode(state, layers.size(), layer_bytes, threads, [&](std::size_t i) {
      y = x;
      first.run(s, x_mem, h_mem, nullptr, &layers[i][0]);
      second.run(s, h_mem, y_mem, nullptr, &layers[i][1]);
      norm.execute(s.stream,
                   {{DNNL_ARG_SRC, y_mem}, {DNNL_ARG_DST, y_mem}, {DNNL_ARG_SCALE, gamma}, {DNNL_ARG_SHIFT, beta}});
      s.stream.wait();
    });
  } else {
    const bench::LlamaWeights w;
    using W = bench::LlamaWeights;
    Linear gate(s, w.gate, nullptr, 1, eltwise(dnnl::algorithm::eltwise_swish));
    Linear up(s, w.up, nullptr, 1, multiply(matrix(1, W::d_ff)));
    Linear down(s, w.down, nullptr, 1, sum());
    const std::size_t layer_bytes = make_layers({&gate, &up, &down}, {&w.gate, &w.up, &w.down});
    const Eigen::VectorXf x = Eigen::VectorXf::Random(W::d);
    Eigen::VectorXf g(W::d_ff), h(W::d_ff), y(W::d);
    dnnl::memory x_mem(matrix(1, W::d), s.engine, const_cast<float*>(x.data())),
        g_mem(matrix(1, W::d_ff), s.engine, g.data()), h_mem(matrix(1, W::d_ff), s.engine, h.data()),
        y_mem(matrix(1, W::d), s.engine, y.data());
    bench::time_decode(state, layers.size(), layer_bytes, threads, [&](std::size_t i) {
      y = x;
      gate.run(s, x_mem, g_mem, nullptr, &layers[i][0]);
      up.run(s, x_mem, h_mem, &g_mem, &layers[i][1]);
      down.run(s, h_mem, y_mem, nullptr, &layers[i][2]);
      s.stream.wait();
    });
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
