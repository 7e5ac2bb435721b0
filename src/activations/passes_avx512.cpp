// The activation passes compiled for AVX-512, with the micro-kernels' flags
// (-mavx512f -mavx2 -mfma -mf16c, CMakeLists.txt).
#define EGELU_ISA_EIGEN egelu_avx512_Eigen
#define EGELU_ISA_EGELU egelu_avx512
#define EGELU_ISA_NAME "avx512"
#define EGELU_ISA_SET avx512_activations
#include "activations/passes_for_isa.inc"
