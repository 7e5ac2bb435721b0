// The machine's single-precision FMA peak, the yardstick bench/report states the blocks'
// GFLOP/s against: 12 independent chains of fused multiply-adds on the widest vector the CPU
// has (AVX-512 if present, else AVX2 + FMA; chosen at run time through cpuid, the kernels
// compiled for their own target whatever the build's flags), on 1 and 2 threads, each
// thread running its own chains. Twelve chains cover the FMA latency (4 cycles) times the
// two FMA ports of recent x86 cores. Argument: threads. Counter: GFLOP/s (2 per FMA lane).
#include <benchmark/benchmark.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <thread>

namespace {

constexpr int chains = 12;
constexpr long steps = 1L << 21;  // per thread and benchmark iteration: ~8 ms at 100 GFLOP/s

__attribute__((target("avx512f"))) float fma_chains_avx512(float seed) {
  __m512 acc[chains];
  for (int k = 0; k < chains; ++k) acc[k] = _mm512_set1_ps(seed + 0.001f * float(k));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);  // x -> m x + c stays near 1
  for (long i = 0; i < steps; ++i) {
    for (int k = 0; k < chains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, c);
  }
  alignas(64) float lanes[16];
  __m512 sum = acc[0];
  for (int k = 1; k < chains; ++k) sum = _mm512_add_ps(sum, acc[k]);
  _mm512_store_ps(lanes, sum);  // not _mm512_reduce_add_ps: GCC 12 warns inside it
  float s = 0.f;
  for (float v : lanes) s += v;
  return s;
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(float seed) {
  __m256 acc[chains];
  for (int k = 0; k < chains; ++k) acc[k] = _mm256_set1_ps(seed + 0.001f * float(k));
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  for (long i = 0; i < steps; ++i) {
    for (int k = 0; k < chains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], m, c);
  }
  alignas(32) float lanes[8];
  __m256 sum = acc[0];
  for (int k = 1; k < chains; ++k) sum = _mm256_add_ps(sum, acc[k]);
  _mm256_store_ps(lanes, sum);
  float s = 0.f;
  for (float v : lanes) s += v;
  return s;
}

void fma_peak(benchmark::State& state) {
  const int threads = int(state.range(0));
  float (*kernel)(float) = nullptr;
  int lanes = 0;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    kernel = fma_chains_avx512, lanes = 16;
    state.SetLabel("AVX-512");
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    kernel = fma_chains_avx2, lanes = 8;
    state.SetLabel("AVX2");
  } else {
    state.SkipWithError("no AVX2 + FMA");
    return;
  }
  float sink = 0.f;
  for (auto _ : state) {
    float other = 0.f;
    std::thread helper;
    if (threads > 1) helper = std::thread([&] { other = kernel(1.5f); });
    sink += kernel(1.0f);
    if (threads > 1) helper.join();
    sink += other;
  }
  benchmark::DoNotOptimize(sink);
  const double flops = 2.0 * lanes * chains * double(steps) * threads;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

}  // namespace

BENCHMARK(fma_peak)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

#endif  // x86-64 with GCC or Clang
