// The activation passes compiled with the library's own flags: SSE2 in a portable x86-64
// build, NEON on aarch64, the CPU's best with -DEGELU_NATIVE=ON. The blocks run them when
// the micro-kernels they run are not AVX2's or AVX-512's (activations/dispatch.cpp).
#define EGELU_ISA_EIGEN egelu_generic_Eigen
#define EGELU_ISA_EGELU egelu_generic
#define EGELU_ISA_NAME "generic"
#define EGELU_ISA_SET generic_activations
#include "activations/passes_for_isa.inc"
