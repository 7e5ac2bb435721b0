// GELU and SiLU over arrays, side by side with the floor (y = x, memcpy) and with
// what a user can write today: Eigen's composed expressions and a scalar loop.
#include <cmath>
#include <cstring>
#include <egelu/egelu.hpp>
#include <unsupported/Eigen/SpecialFunctions>

#include "bench_common.hpp"

namespace {

template <typename T>
using Array = Eigen::Array<T, Eigen::Dynamic, 1>;

// Times pass(x, y) over the given inputs.
template <typename T, typename F>
void run_on(benchmark::State& state, const Array<T>& x, F&& pass) {
  Array<T> y = Array<T>::Zero(x.size());  // pages touched before timing
  bench::time_calls(state, [&] {
    pass(x, y);
    benchmark::DoNotOptimize(y.data());
  });
  bench::count_elementwise<T>(state, x.size());
}

// state.range(0) elements uniform in [-5, 5].
template <typename T, typename F>
void run(benchmark::State& state, F&& pass) {
  run_on<T>(state, bench::inputs<T>(state.range(0)), pass);
}

// 64K elements of one input range (bench::InputRange, the benchmark's argument).
template <typename T, typename F>
void by_input_range(benchmark::State& state, F&& pass) {
  run_on<T>(state, bench::inputs<T>(1 << 16, bench::InputRange(state.range(0))), pass);
}

// The GELU passes measured both over sizes and over input ranges.
template <typename T>
void egelu_tanh_pass(const Array<T>& x, Array<T>& y) {
  y = egelu::gelu(x);
}
template <typename T>
void egelu_erf_pass(const Array<T>& x, Array<T>& y) {
  y = egelu::gelu_exact(x);
}
template <typename T>
void egelu_fast_tanh_pass(const Array<T>& x, Array<T>& y) {
  y = egelu::fast::gelu(x);
}
template <typename T>
void egelu_fast_erf_pass(const Array<T>& x, Array<T>& y) {
  y = egelu::fast::gelu_exact(x);
}
template <typename T>
void eigen_composed_tanh_pass(const Array<T>& x, Array<T>& y) {
  y = T(0.5) * x * (T(1) + (T(0.7978845608028654) * (x + T(0.044715) * x * x * x)).tanh());
}
template <typename T>
void eigen_composed_erf_pass(const Array<T>& x, Array<T>& y) {
  y = T(0.5) * x * (T(1) + (x * T(0.7071067811865476)).erf());
}

template <typename T>
void egelu_silu(benchmark::State& s) {
  run<T>(s, [](const Array<T>& x, Array<T>& y) { y = egelu::silu(x); });
}
template <typename T>
void egelu_fast_silu(benchmark::State& s) {
  run<T>(s, [](const Array<T>& x, Array<T>& y) { y = egelu::fast::silu(x); });
}
template <typename T>
void egelu_quick_gelu(benchmark::State& s) {
  run<T>(s, [](const Array<T>& x, Array<T>& y) { y = egelu::quick_gelu(x); });
}
// What Eigen offers for SiLU: x times its logistic.
template <typename T>
void eigen_composed_silu(benchmark::State& s) {
  run<T>(s, [](const Array<T>& x, Array<T>& y) { y = x * x.logistic(); });
}
template <typename T>
void copy(benchmark::State& s) {
  run<T>(s, [](const auto& x, auto& y) { y = x; });
}
template <typename T>
void memcpy_(benchmark::State& s) {
  run<T>(s, [](const auto& x, auto& y) { std::memcpy(y.data(), x.data(), sizeof(T) * std::size_t(x.size())); });
}
template <typename T>
void egelu_tanh(benchmark::State& s) {
  run<T>(s, egelu_tanh_pass<T>);
}
template <typename T>
void egelu_erf(benchmark::State& s) {
  run<T>(s, egelu_erf_pass<T>);
}
template <typename T>
void egelu_fast_tanh(benchmark::State& s) {
  run<T>(s, egelu_fast_tanh_pass<T>);
}
template <typename T>
void egelu_fast_erf(benchmark::State& s) {
  run<T>(s, egelu_fast_erf_pass<T>);
}
template <typename T>
void eigen_composed_tanh(benchmark::State& s) {
  run<T>(s, eigen_composed_tanh_pass<T>);
}
template <typename T>
void eigen_composed_erf(benchmark::State& s) {
  run<T>(s, eigen_composed_erf_pass<T>);
}
// The rewrite a careful user makes for double: x * sigmoid(2u) with Eigen's vectorized exp.
template <typename T>
void eigen_composed_sigmoid(benchmark::State& s) {
  run<T>(s, [](const auto& x, auto& y) {
    y = x / (T(1) + (T(-1.5957691216057308) * (x + T(0.044715) * x * x * x)).exp());
  });
}
template <typename T>
void scalar_loop_tanh(benchmark::State& s) {
  run<T>(s, [](const auto& x, auto& y) {
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      const T v = x(i);
      y(i) = T(0.5) * v * (T(1) + std::tanh(T(0.7978845608028654) * (v + T(0.044715) * v * v * v)));
    }
  });
}
template <typename T>
void scalar_loop_erf(benchmark::State& s) {
  run<T>(s, [](const auto& x, auto& y) {
    for (Eigen::Index i = 0; i < x.size(); ++i) y(i) = T(0.5) * x(i) * (T(1) + std::erf(x(i) * T(0.7071067811865476)));
  });
}

template <typename T>
void range_egelu_tanh(benchmark::State& s) {
  by_input_range<T>(s, egelu_tanh_pass<T>);
}
template <typename T>
void range_egelu_erf(benchmark::State& s) {
  by_input_range<T>(s, egelu_erf_pass<T>);
}
template <typename T>
void range_eigen_composed_tanh(benchmark::State& s) {
  by_input_range<T>(s, eigen_composed_tanh_pass<T>);
}
template <typename T>
void range_eigen_composed_erf(benchmark::State& s) {
  by_input_range<T>(s, eigen_composed_erf_pass<T>);
}

// Eigen::half and bfloat16 at 64K (in cache) and 16M elements.
void narrow_sizes(benchmark::internal::Benchmark* b) { b->Arg(1 << 16)->Arg(1 << 24); }

void input_ranges(benchmark::internal::Benchmark* b) {
  for (int r = 0; r <= int(bench::InputRange::subnormal); ++r) b->Arg(r);
}

}  // namespace

BENCHMARK_TEMPLATE(copy, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(memcpy_, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_tanh, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_erf, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_fast_tanh, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_fast_erf, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_silu, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_fast_silu, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_quick_gelu, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(eigen_composed_silu, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(eigen_composed_tanh, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(eigen_composed_erf, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(scalar_loop_tanh, float)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(scalar_loop_erf, float)->Apply(bench::sizes);

BENCHMARK_TEMPLATE(copy, double)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_tanh, double)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_erf, double)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(egelu_fast_erf, double)->Apply(bench::sizes);  // fast::gelu is the default for double
BENCHMARK_TEMPLATE(eigen_composed_tanh, double)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(eigen_composed_sigmoid, double)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(eigen_composed_erf, double)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(scalar_loop_tanh, double)->Apply(bench::sizes);
BENCHMARK_TEMPLATE(scalar_loop_erf, double)->Apply(bench::sizes);

BENCHMARK_TEMPLATE(range_egelu_tanh, float)->Apply(input_ranges);
BENCHMARK_TEMPLATE(range_egelu_erf, float)->Apply(input_ranges);
BENCHMARK_TEMPLATE(range_eigen_composed_tanh, float)->Apply(input_ranges);
BENCHMARK_TEMPLATE(range_eigen_composed_erf, float)->Apply(input_ranges);
BENCHMARK_TEMPLATE(range_egelu_tanh, double)->Apply(input_ranges);
BENCHMARK_TEMPLATE(range_egelu_erf, double)->Apply(input_ranges);

BENCHMARK_TEMPLATE(copy, Eigen::half)->Apply(narrow_sizes);
BENCHMARK_TEMPLATE(egelu_tanh, Eigen::half)->Apply(narrow_sizes);
BENCHMARK_TEMPLATE(egelu_erf, Eigen::half)->Apply(narrow_sizes);
BENCHMARK_TEMPLATE(copy, Eigen::bfloat16)->Apply(narrow_sizes);
BENCHMARK_TEMPLATE(egelu_tanh, Eigen::bfloat16)->Apply(narrow_sizes);
BENCHMARK_TEMPLATE(egelu_erf, Eigen::bfloat16)->Apply(narrow_sizes);
