// The machine's single-precision FMA peak, the yardstick bench/report states the blocks'
// GFLOP/s against: 12 independent chains of fused multiply-adds on the widest vector the CPU
// has (AVX-512 if present, else AVX2 + FMA; chosen at run time through cpuid, the kernels
// compiled for their own target whatever the build's flags), on 1 and 2 threads, each
// thread running its own chains. Twelve chains cover the FMA latency (4 cycles) times the
// two FMA ports of recent x86 cores. Argument: threads. Counter: GFLOP/s (2 per FMA lane).
#include <benchmark/benchmark.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

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

// ---- tile_loop_ceiling: what the AVX-512 micro-kernel's depth loop can reach on this core.
//
// The 48 x 8 tile's step (tile_kernel_body.inc) written in assembly, so that the compiler
// adds nothing: three registers of weights loaded, eight tokens broadcast, 24 multiply-adds
// into 24 accumulators; no epilogue, no prefetch but where said. Variants (the argument):
//   0  registers only: weights and tokens in registers (the multiply-adds alone);
//   1  broadcasts only: the tokens broadcast from the panel, the weights in registers;
//   2  the step, its panel in L1 (64 steps, 12 KB), 64-byte aligned;
//   3  the same, the weights 16 bytes off a line (every load splits two);
//   4  the tokens as embedded broadcasts (24 multiply-adds with a memory operand each);
//   5  the step streaming the weights from L2 as the blocks do (4 panels of 256 steps,
//      192 KB, eight token panels of 8 KB), prefetched 4 KB ahead into L1.
// On an Intel Xeon (Sapphire Rapids class, `fma_peak` 214 GFLOP/s) 0 runs at the FMA peak,
// 1 at 0.92-0.94 of it, 2 at 0.86-0.88, 3 at 0.84-0.85, 4 at 0.76-0.77, 5 at 0.85: the loads,
// not the multiply-adds, set the ceiling, and the blocks' kernel cannot pass it (docs/DESIGN.md,
// "Register tiles"). Tiles of 64 x 6 and 96 x 4 written the same way ran as 48 x 8 does.
// (Assembly tables: clang-format does not settle on one layout for them.)
// clang-format off
#define EGELU_ACCUMULATORS                                                                                           \
  "zmm8", "zmm9", "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", \
      "zmm21", "zmm22", "zmm23", "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30", "zmm31", "zmm0",     \
      "zmm1", "zmm2", "zmm3", "zmm4"
#define EGELU_ZERO(r) "vpxord %%" #r ", %%" #r ", %%" #r "\n"
#define EGELU_ZERO_ALL                                                                                \
  EGELU_ZERO(zmm8) EGELU_ZERO(zmm9) EGELU_ZERO(zmm10) EGELU_ZERO(zmm11) EGELU_ZERO(zmm12) EGELU_ZERO(zmm13)     \
  EGELU_ZERO(zmm14) EGELU_ZERO(zmm15) EGELU_ZERO(zmm16) EGELU_ZERO(zmm17) EGELU_ZERO(zmm18) EGELU_ZERO(zmm19)   \
  EGELU_ZERO(zmm20) EGELU_ZERO(zmm21) EGELU_ZERO(zmm22) EGELU_ZERO(zmm23) EGELU_ZERO(zmm24) EGELU_ZERO(zmm25)   \
  EGELU_ZERO(zmm26) EGELU_ZERO(zmm27) EGELU_ZERO(zmm28) EGELU_ZERO(zmm29) EGELU_ZERO(zmm30) EGELU_ZERO(zmm31)
// Token j's three multiply-adds: broadcast into zmm3, from a register (zmm4), or embedded.
#define EGELU_BROADCAST(j, a0, a1, a2)                                                                             \
  "vbroadcastss " #j "*4(%1), %%zmm3\n vfmadd231ps %%zmm3, %%zmm0, %%" #a0 "\n vfmadd231ps %%zmm3, %%zmm1, %%" #a1 \
  "\n vfmadd231ps %%zmm3, %%zmm2, %%" #a2 "\n"
#define EGELU_REGISTER(j, a0, a1, a2)                                                                                  \
  "vfmadd231ps %%zmm4, %%zmm0, %%" #a0 "\n vfmadd231ps %%zmm4, %%zmm1, %%" #a1 "\n vfmadd231ps %%zmm4, %%zmm2, %%" #a2 \
  "\n"
#define EGELU_EMBEDDED(j, a0, a1, a2)                                                                        \
  "vfmadd231ps " #j "*4(%1)%{1to16%}, %%zmm0, %%" #a0 "\n vfmadd231ps " #j "*4(%1)%{1to16%}, %%zmm1, %%" #a1 \
  "\n vfmadd231ps " #j "*4(%1)%{1to16%}, %%zmm2, %%" #a2 "\n"
#define EGELU_TOKENS(M)                                                                               \
  M(0, zmm8, zmm9, zmm10) M(1, zmm11, zmm12, zmm13) M(2, zmm14, zmm15, zmm16) M(3, zmm17, zmm18, zmm19)       \
  M(4, zmm20, zmm21, zmm22) M(5, zmm23, zmm24, zmm25) M(6, zmm26, zmm27, zmm28) M(7, zmm29, zmm30, zmm31)
#define EGELU_LOAD_WEIGHTS "vmovups (%0), %%zmm0\n vmovups 64(%0), %%zmm1\n vmovups 128(%0), %%zmm2\n"
#define EGELU_PREFETCH "prefetcht0 4096(%0)\n prefetcht0 4160(%0)\n prefetcht0 4224(%0)\n"
// Loads the weights and token 0 into registers first, for the variants that keep them there.
#define EGELU_TILE_LOOP(name, per_step, M)                                                                        \
  __attribute__((target("avx512f"), noinline)) void name(const float* a, const float* b, long steps) {            \
    __asm__ volatile(EGELU_ZERO_ALL EGELU_LOAD_WEIGHTS                                                            \
                     "vbroadcastss (%1), %%zmm4\n"                                                                \
                     ".p2align 6\n1:\n" per_step EGELU_TOKENS(M) "add $192, %0\n add $32, %1\n dec %2\n jnz 1b\n" \
                     : "+r"(a), "+r"(b), "+r"(steps)                                                              \
                     :                                                                                            \
                     : EGELU_ACCUMULATORS, "memory");                                                             \
  }
// clang-format on
EGELU_TILE_LOOP(registers_only, "", EGELU_REGISTER)
EGELU_TILE_LOOP(broadcasts_only, "", EGELU_BROADCAST)
EGELU_TILE_LOOP(tile_step, EGELU_LOAD_WEIGHTS, EGELU_BROADCAST)
EGELU_TILE_LOOP(embedded_broadcasts, EGELU_LOAD_WEIGHTS, EGELU_EMBEDDED)
EGELU_TILE_LOOP(tile_step_prefetching, EGELU_LOAD_WEIGHTS EGELU_PREFETCH, EGELU_BROADCAST)

void tile_loop_ceiling(benchmark::State& state) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512");
    return;
  }
  const int variant = int(state.range(0));
  static const char* const names[] = {"registers only",         "broadcasts only",     "L1, aligned",
                                      "L1, weights off a line", "embedded broadcasts", "L2, as the blocks"};
  state.SetLabel(names[variant]);
  const bool streaming = variant == 5;
  const long depth = streaming ? 256 : 64, panels = streaming ? 4 : 1, token_panels = streaming ? 8 : 1;
  // Weights near 0.001 and tokens 0.5: the sums stay normal numbers.
  std::vector<float> weights(std::size_t(depth * 48 * panels + 4096 / 4 + 64), 0.001f);
  std::vector<float> tokens(std::size_t(depth * 8 * token_panels + 16), 0.5f);
  const auto line = [](float* p) {
    return reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(p) + 63) & ~std::uintptr_t(63));
  };
  const float* a = line(weights.data()) + (variant == 3 ? 4 : 0);
  const float* b = line(tokens.data());
  void (*loop)(const float*, const float*, long) = variant == 0   ? registers_only
                                                   : variant == 1 ? broadcasts_only
                                                   : variant == 4 ? embedded_broadcasts
                                                   : variant == 5 ? tile_step_prefetching
                                                                  : tile_step;
  const long passes = streaming ? 4 : 512;  // 32768 steps of 24 multiply-adds either way
  for (auto _ : state) {
    for (long r = 0; r < passes; ++r)
      for (long t = 0; t < token_panels; ++t)
        for (long p = 0; p < panels; ++p) loop(a + p * depth * 48, b + t * depth * 8, depth);
  }
  const double flops = 2.0 * 48 * 8 * depth * double(passes * token_panels * panels);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

}  // namespace

BENCHMARK(fma_peak)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(tile_loop_ceiling)->DenseRange(0, 5)->Unit(benchmark::kMicrosecond)->UseRealTime();

#endif  // x86-64 with GCC or Clang
