// The activation passes compiled for AVX2 + FMA (Haswell on, Zen), with the micro-kernels' flags
// (-mavx2 -mfma -mf16c -mno-avx512f, CMakeLists.txt).
#define EGELU_ISA_EIGEN egelu_avx2_Eigen
#define EGELU_ISA_EGELU egelu_avx2
#define EGELU_ISA_NAME "avx2"
#define EGELU_ISA_SET avx2_activations
#include "activations/passes_for_isa.inc"
