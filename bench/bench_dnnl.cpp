// oneDNN's eltwise gelu_tanh / gelu_erf (JIT kernels), when libdnnl-dev is found, on
// one thread (the block benchmarks set two for theirs).
#include <dnnl.hpp>

#include "bench_common.hpp"

extern "C" void omp_set_num_threads(int);  // libgomp, which Debian's oneDNN runs on

namespace {

void onednn(benchmark::State& state, dnnl::algorithm algorithm) {
  omp_set_num_threads(1);
  const Eigen::Index n = state.range(0);
  const Eigen::ArrayXf x = bench::inputs<float>(n);
  Eigen::ArrayXf y = Eigen::ArrayXf::Zero(n);  // pages touched before timing
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  dnnl::memory src(md, engine, const_cast<float*>(x.data())), dst(md, engine, y.data());
  const auto pd = dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, algorithm, md, 0.f, 0.f), engine);
  dnnl::eltwise_forward primitive(pd);
  bench::time_calls(state, [&] {
    primitive.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    stream.wait();
  });
  bench::count_elementwise<float>(state, n);
}

void onednn_gelu_tanh(benchmark::State& s) { onednn(s, dnnl::algorithm::eltwise_gelu_tanh); }
void onednn_gelu_erf(benchmark::State& s) { onednn(s, dnnl::algorithm::eltwise_gelu_erf); }

}  // namespace

BENCHMARK(onednn_gelu_tanh)->Apply(bench::sizes);
BENCHMARK(onednn_gelu_erf)->Apply(bench::sizes);
