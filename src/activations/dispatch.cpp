// Which activation passes the blocks run: those of the ISA whose micro-kernels they run,
// chosen once, so that EGELU_ISA=avx2 on an AVX-512 machine tests the AVX2 passes too.
#include <cstring>

#include "activations/passes.hpp"
#include "gemm/micro_kernel.hpp"

namespace egelu {
namespace blocks {

#if !defined(EGELU_GEMM_X86)
const activation_set* avx2_activations() { return nullptr; }
const activation_set* avx512_activations() { return nullptr; }
#endif

namespace {

const activation_set& activations_for(const char* isa) {
  const activation_set* set = std::strncmp(isa, "avx512", 6) == 0 ? avx512_activations()
                              : std::strcmp(isa, "avx2") == 0     ? avx2_activations()
                                                                  : nullptr;
  return set ? *set : *generic_activations();
}

}  // namespace

const activation_set& selected_activations() {
  static const activation_set& set = activations_for(gemm::selected_kernels().isa);
  return set;
}

}  // namespace blocks
}  // namespace egelu
