// egelu's float activations compiled with -mavx2 -mfma -mf16c -mno-avx512f (CMake sets the flags), for the exhaustive
// check.
#define EGELU_TOOL_EIGEN egelu_tool_avx2_Eigen
#define EGELU_TOOL_EGELU egelu_tool_avx2
#define EGELU_TOOL_ISA exhaustive::isa_avx2
#define EGELU_TOOL_NAME "avx2"
#define EGELU_TOOL_FLAGS "-mavx2 -mfma -mf16c -mno-avx512f"
#include "isa_functions.inc"
