// Which kernels the blocks run: the best set the CPU has, chosen once. One portable
// library thus runs AVX-512 kernels on an AVX-512 CPU (with VNNI's integer products where
// it has them), AVX2 + FMA ones on Haswell and Zen, SSE2 elsewhere (the kernels_<isa>.cpp files that CMake compiled in:
// x86 or NEON).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "micro_kernel.hpp"

namespace egelu {
namespace gemm {

#if !defined(EGELU_GEMM_X86)
const kernel_set* sse2_kernels() { return nullptr; }
const kernel_set* avx2_kernels() { return nullptr; }
const kernel_set* avx512_kernels() { return nullptr; }
const kernel_set* avx512_vnni_kernels() { return nullptr; }
#endif
#if !defined(EGELU_GEMM_NEON)
const kernel_set* neon_kernels() { return nullptr; }
#endif

namespace {
// A cache's size as sysconf reports it (glibc: from cpuid on x86, from sysfs elsewhere), or
// `otherwise` where it reports none (0, or a system without the name).
#ifdef _SC_LEVEL3_CACHE_SIZE
constexpr int l2_name = _SC_LEVEL2_CACHE_SIZE, l3_name = _SC_LEVEL3_CACHE_SIZE;
#else
constexpr int l2_name = -1, l3_name = -1;
#endif
std::ptrdiff_t reported_cache_bytes(int name, std::ptrdiff_t otherwise) {
  const long reported = name >= 0 ? sysconf(name) : 0;
  return reported > 0 ? std::ptrdiff_t(reported) : otherwise;
}
// Whether each core reaches only its own core complex's L3 (AMD's: cpuid's vendor).
bool llc_per_core_complex() {
#if defined(EGELU_GEMM_X86)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}
}  // namespace

std::ptrdiff_t l2_cache_bytes() {
  static const std::ptrdiff_t bytes = reported_cache_bytes(l2_name, 512 * 1024);
  return bytes;
}

std::ptrdiff_t llc_bytes_to_count_on(std::ptrdiff_t reported, bool per_core_complex) {
  return per_core_complex ? std::min(reported, llc_complex_bytes) : reported;
}

std::ptrdiff_t llc_bytes() {
  static const std::ptrdiff_t bytes = llc_bytes_to_count_on(reported_cache_bytes(l3_name, 0), llc_per_core_complex());
  return bytes;
}

const kernel<float>& float_kernel(const kernel_set& set, stored s) {
  switch (s) {
    case stored::bf16:
      return set.bf16;
    case stored::f16:
      return set.f16;
    case stored::q8_0:
    case stored::q4_0:
    case stored::mxfp4:
      return block_kernel_of(set, s).direct;
    default:
      return set.f32;
  }
}

const block_kernel& block_kernel_of(const kernel_set& set, stored s) {
  switch (s) {
    case stored::q8_0:
      return set.q8_0;
    case stored::q4_0:
      return set.q4_0;
    case stored::mxfp4:
      return set.mxfp4;
    default:
      throw std::invalid_argument("block_kernel_of: not a block format");
  }
}

bool cpu_has(const kernel_set& set) {
  const std::string isa = set.isa;
#if defined(EGELU_GEMM_X86)
  // GCC's and clang's checks read cpuid and whether the OS saves the registers (xgetbv).
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  if (isa == "avx512_vnni") return avx512 && __builtin_cpu_supports("avx512vnni");
  if (isa == "avx512") return avx512;
  if (isa == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == "sse2") return true;
#endif
#if defined(EGELU_GEMM_NEON)
  if (isa == "neon") return true;
#endif
  return isa == "portable";
}

namespace {

const kernel_set& best_kernels() {
  const char* wanted = std::getenv("EGELU_ISA");
  const kernel_set* candidates[] = {avx512_vnni_kernels(), avx512_kernels(), avx2_kernels(),
                                    neon_kernels(),        sse2_kernels(),   &portable_kernels()};
  for (const kernel_set* set : candidates) {
    if (set && cpu_has(*set) && (!wanted || !*wanted || std::strcmp(wanted, set->isa) == 0)) return *set;
  }
  // An EGELU_ISA this build or CPU has not: say so rather than run something else.
  throw std::runtime_error(std::string("egelu: EGELU_ISA=") + wanted +
                           " names no kernels this library and CPU have (avx512, avx2, sse2, neon, portable)");
}

}  // namespace

const kernel_set& selected_kernels() {
  static const kernel_set& set = best_kernels();
  return set;
}

}  // namespace gemm
}  // namespace egelu
