// egelu's float activations compiled with -mavx512f -mavx2 -mfma -mf16c (CMake sets the flags), for the exhaustive
// check.
#define EGELU_TOOL_EIGEN egelu_tool_avx512f_Eigen
#define EGELU_TOOL_EGELU egelu_tool_avx512f
#define EGELU_TOOL_ISA exhaustive::isa_avx512f
#define EGELU_TOOL_NAME "avx512f"
#define EGELU_TOOL_FLAGS "-mavx512f -mavx2 -mfma -mf16c"
#include "isa_functions.inc"
