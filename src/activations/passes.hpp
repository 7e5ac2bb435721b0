// The blocks' activation passes -- act(h) over a finished tile of the hidden layer, or
// act(gate) * up -- compiled for each x86 ISA, as the micro-kernels are, so that a
// portable library (SSE2 flags, what a distribution ships) computes them with AVX2 or
// AVX-512 packets on a CPU that has them. Without this the exact GELU of a BERT block
// at T = 128 ran 15% of the block's time slower in the portable build than in a
// -march=native one (docs/PERFORMANCE.md).
//
// Each passes_<isa>.cpp compiles the same functors (egelu's Eigen packet code,
// passes_for_isa.inc) with its ISA's flags. Unlike the micro-kernels they need
// Eigen, whose inline functions would otherwise be merged by the linker with other
// files' copies (an AVX2 copy run by SSE2 code, or the reverse): those files rename the
// Eigen and egelu namespaces while they include them, so that every function they
// instantiate has names of its own. The suite's test_isa_objects checks that no
// ISA-specific object defines a symbol another object also defines.
//
// This header includes no Eigen: the per-ISA files include it first.
#ifndef EGELU_SRC_ACTIVATIONS_PASSES_HPP
#define EGELU_SRC_ACTIVATIONS_PASSES_HPP

#include <cstddef>

namespace egelu {
namespace blocks {

using pass_index = std::ptrdiff_t;

// An ISA's passes over column-major tiles (rows x cols, columns ld apart), in place.
template <typename Scalar>
struct activation_passes {
  // data = gelu(data), by GeluForm's value: tanh, exact, fast_tanh, fast_exact, quick.
  void (*gelu[5])(Scalar* data, pass_index rows, pass_index cols, pass_index ld);
  // gate = act(gate) * up, by GatedForm's value: swiglu, geglu, geglu_exact, clamped_swiglu.
  void (*gated[4])(Scalar* gate, pass_index ld_gate, const Scalar* up, pass_index ld_up, pass_index rows,
                   pass_index cols);
};

struct activation_set {
  const char* isa;
  activation_passes<float> f32;
  activation_passes<double> f64;
};

// The sets compiled into the library; null where the build has none.
const activation_set* avx2_activations();
const activation_set* avx512_activations();
const activation_set* generic_activations();  // the library's own flags: never null

// The set of the ISA whose micro-kernels the blocks run (gemm::selected_kernels(): the
// CPU's best, or EGELU_ISA's), or the library's own flags' for the others.
const activation_set& selected_activations();

template <typename Scalar>
const activation_passes<Scalar>& passes_of(const activation_set& set);
template <>
inline const activation_passes<float>& passes_of<float>(const activation_set& set) {
  return set.f32;
}
template <>
inline const activation_passes<double>& passes_of<double>(const activation_set& set) {
  return set.f64;
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_ACTIVATIONS_PASSES_HPP
