// Decoding as a model runs it, shared by egelu's and oneDNN's decode benchmarks: one token a
// call, each call on the next of a model's worth of distinct layers, cycled, whose weights
// total at least four times the last-level cache (and 1 GiB), so that every call reads its
// weights from memory as a model's forward pass does -- one layer called again and again
// would stay in a server CPU's 32-500 MB cache and time the cache. After the timed calls, a
// streaming read of as many bytes (a buffer of the same total size, summed as floats, on as
// many threads) in the same process: the floor a product that reads its weights once can
// reach, and the block's bytes / time against it.
#ifndef EGELU_BENCH_DECODE_MEMORY_HPP
#define EGELU_BENCH_DECODE_MEMORY_HPP

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "block_timing.hpp"

namespace bench {

// The last-level cache's bytes: the largest sysfs or the C library (cpuid) reports, 32 MiB
// when neither says. (A VM may show the socket's whole L3, 512 MiB on a Zen 5 EPYC, where
// its threads reach one complex's 32 MiB: the larger figure makes the larger model.)
inline std::size_t last_level_cache() {
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
inline std::size_t model_bytes() {
  if (const char* mib = std::getenv("EGELU_DECODE_MIB")) return std::size_t(std::atol(mib)) << 20;
  return std::max(4 * last_level_cache(), std::size_t(1) << 30);
}

// GB/s of a streaming read of `bytes` on `threads` threads (each its half), best of three.
inline double stream_read_GBps(std::size_t bytes, int threads) {
  StreamRead reader(bytes, threads);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    reader.run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, double(bytes) / s * 1e-9);
  }
  return best;
}

// Times decode(i), the forward call of one token on layer i, cycling over `layers` layers of
// `layer_bytes` weight bytes each, after every layer has been called twice (workspaces made,
// weights paged in); then the streaming read of as many bytes on as many threads. Counters:
// weights_GB/s, stream_GB/s, stream_fraction (their ratio), layers, weight_bytes.
template <typename Decode>
void time_decode(benchmark::State& state, std::size_t layers, std::size_t layer_bytes, int threads, Decode&& decode) {
  std::size_t next = 0;
  for (std::size_t i = 0; i < 2 * layers; ++i) decode(i % layers);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) decode(next++ % layers);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double weights_GBps = double(layer_bytes) * double(state.iterations()) / seconds * 1e-9;
  const double stream_GBps = stream_read_GBps(layers * layer_bytes, threads);
  state.counters["weights_GB/s"] = weights_GBps;
  state.counters["stream_GB/s"] = stream_GBps;
  state.counters["stream_fraction"] = weights_GBps / stream_GBps;
  state.counters["weight_bytes"] = double(layer_bytes);
  state.counters["layers"] = double(layers);
}

}  // namespace bench

#endif  // EGELU_BENCH_DECODE_MEMORY_HPP
