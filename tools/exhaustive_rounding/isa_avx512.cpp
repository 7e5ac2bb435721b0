// egelu's float activations compiled with -mavx512f -mavx512dq -mavx512vl -mavx512bw -mavx2 -mfma -mf16c (CMake sets
// the flags), for the exhaustive check.
#define EGELU_TOOL_EIGEN egelu_tool_avx512_Eigen
#define EGELU_TOOL_EGELU egelu_tool_avx512
#define EGELU_TOOL_ISA exhaustive::isa_avx512
#define EGELU_TOOL_NAME "avx512"
#define EGELU_TOOL_FLAGS "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mavx2 -mfma -mf16c"
#include "isa_functions.inc"
