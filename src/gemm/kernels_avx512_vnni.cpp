// The AVX-512 set with AVX512-VNNI (Cascade Lake, Ice Lake, Sapphire Rapids, Zen 4 on): the
// same kernels but the integer ones (InputFormat::q16_0), whose pair products and sums are one
// vpdpwssd each in place of vpmaddwd + vpaddd. A portable build thus runs them where the CPU
// has VNNI (TinyLlama q4_0+q16_0 prefill about a quarter faster); the sums are the same exact
// 32-bit integers, so the bits are the AVX-512 set's. Compiled with -mavx512vnni; only the
// integer kernels are instantiated here, the rest is the AVX-512 set's.
#include <immintrin.h>

#include "micro_kernel.hpp"

#ifndef __AVX512VNNI__
#error "kernels_avx512_vnni.cpp is compiled with -mavx512vnni (src/CMakeLists.txt)"
#endif

namespace egelu {
namespace gemm {
namespace avx512_vnni {

#include "avx512_vectors.inc"
#include "tile_kernel_body.inc"

kernel_set with_vnni(const kernel_set& avx512) {
  kernel_set set = avx512;
  set.isa = "avx512_vnni";
  set.q8_0.integer = make_integer_kernel<f32, q8_0_panel, 3, 8>();
  set.q4_0.integer = make_integer_kernel<f32, q4_0_panel, 3, 8>();
  return set;
}

}  // namespace avx512_vnni

const kernel_set* avx512_vnni_kernels() {
  static const kernel_set set = avx512_vnni::with_vnni(*avx512_kernels());
  return &set;
}

}  // namespace gemm
}  // namespace egelu
