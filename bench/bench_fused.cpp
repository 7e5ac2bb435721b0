// The linear layer + bias + GELU of a BERT-base feed-forward block (d_model 768,
// d_ff 3072, one thread), and the whole block per token.
#include <egelu/egelu.hpp>
#include <egelu/feed_forward.hpp>

#include "bench_common.hpp"

namespace {

constexpr Eigen::Index kModel = 768, kHidden = 3072;

struct Layer {
  Eigen::MatrixXf W = Eigen::MatrixXf::Random(kHidden, kModel) / 28.f;
  Eigen::VectorXf b = Eigen::VectorXf::Random(kHidden);
  Eigen::MatrixXf X, Y;
  explicit Layer(Eigen::Index tokens) : X(Eigen::MatrixXf::Random(kModel, tokens) * 2.f), Y(kHidden, tokens) {}
};

void count_flops(benchmark::State& state, Eigen::Index tokens) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kHidden * kModel * double(tokens) * double(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void product_bare(benchmark::State& state) {
  Layer l(state.range(0));
  bench::time_calls(state, [&] { l.Y.noalias() = l.W * l.X; });
  count_flops(state, state.range(0));
}

void product_bias_gelu_fused(benchmark::State& state) {
  Layer l(state.range(0));
  bench::time_calls(state, [&] { l.Y.noalias() = egelu::gelu((l.W * l.X).colwise() + l.b); });
  count_flops(state, state.range(0));
}

void product_bias_gelu_exact_fused(benchmark::State& state) {
  Layer l(state.range(0));
  bench::time_calls(state, [&] { l.Y.noalias() = egelu::gelu_exact((l.W * l.X).colwise() + l.b); });
  count_flops(state, state.range(0));
}

// The opt-in fast kernel, fused the same way.
void product_bias_gelu_fast_fused(benchmark::State& state) {
  Layer l(state.range(0));
  bench::time_calls(state, [&] { l.Y.noalias() = egelu::fast::gelu((l.W * l.X).colwise() + l.b); });
  count_flops(state, state.range(0));
}

// The two-pass form: the product into a temporary, then bias + GELU into Y.
void product_bias_gelu_unfused(benchmark::State& state) {
  Layer l(state.range(0));
  bench::time_calls(state, [&] {
    const Eigen::MatrixXf H = l.W * l.X;
    for (Eigen::Index j = 0; j < H.cols(); ++j) l.Y.col(j) = egelu::gelu(H.col(j) + l.b);
  });
  count_flops(state, state.range(0));
}

// The second pass alone, from the product (not in place: repeated in place, it
// would feed GELU its own output, which drifts out of the range a layer sees).
void gelu_pass_only(benchmark::State& state) {
  Layer l(state.range(0));
  const Eigen::MatrixXf product = l.W * l.X;
  bench::time_calls(state, [&] {
    for (Eigen::Index j = 0; j < l.Y.cols(); ++j) l.Y.col(j) = egelu::gelu(product.col(j) + l.b);
  });
  bench::count_elementwise<float>(state, l.Y.size());
}

// The same layer as a Tensor contraction, bare and with the output kernel.
template <bool WithKernel>
void contraction(benchmark::State& state) {
  Layer l(state.range(0));
  Eigen::TensorMap<const Eigen::Tensor<float, 2>> W(l.W.data(), kHidden, kModel), X(l.X.data(), kModel, l.X.cols());
  Eigen::TensorMap<Eigen::Tensor<float, 2>> Y(l.Y.data(), kHidden, l.Y.cols());
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
  bench::time_calls(state, [&] {
    if (WithKernel) {
      Y = W.contract(X, dims, egelu::BiasGeluOutputKernel<float>(l.b));
    } else {
      Y = W.contract(X, dims);
    }
  });
  count_flops(state, state.range(0));
}

void gemv_bare(benchmark::State& state) {
  Layer l(1);
  Eigen::VectorXf x = l.X.col(0), y(kHidden);
  bench::time_calls(state, [&] { y.noalias() = l.W * x; });
  count_flops(state, 1);
}

void gemv_bias_gelu_fused(benchmark::State& state) {
  Layer l(1);
  Eigen::VectorXf x = l.X.col(0), y(kHidden);
  bench::time_calls(state, [&] { y.noalias() = egelu::gelu(l.W * x + l.b); });
  count_flops(state, 1);
}

template <egelu::GeluForm Form>
void feed_forward_block(benchmark::State& state) {
  using FF = egelu::FeedForward<float>;
  const Eigen::Index tokens = state.range(0);
  FF block(FF::Weights::Random(kHidden, kModel) / 28.f, FF::Vector::Random(kHidden),
           FF::Weights::Random(kModel, kHidden) / 55.f, FF::Vector::Random(kModel), FF::Vector::Ones(kModel),
           FF::Vector::Zero(kModel), Form);
  const FF::Matrix x = FF::Matrix::Random(kModel, tokens);
  FF::Matrix y(kModel, tokens);
  bench::time_calls(state, [&] { block.forward(x, y); });
  state.counters["tokens/s"] =
      benchmark::Counter(double(tokens) * double(state.iterations()), benchmark::Counter::kIsRate);
  count_flops(state, 2 * tokens);
}

}  // namespace

BENCHMARK(product_bare)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(product_bias_gelu_fused)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(product_bias_gelu_exact_fused)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(product_bias_gelu_fast_fused)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(product_bias_gelu_unfused)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(gelu_pass_only)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(contraction, false)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(contraction, true)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(gemv_bare)->Unit(benchmark::kMicrosecond);
BENCHMARK(gemv_bias_gelu_fused)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(feed_forward_block, egelu::GeluForm::tanh)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(feed_forward_block, egelu::GeluForm::exact)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(feed_forward_block, egelu::GeluForm::fast_tanh)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(feed_forward_block, egelu::GeluForm::fast_exact)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
