// egelu's float activations compiled with -mno-avx -mno-sse3, plain SSE2 as a portable build (CMake sets
// the flags), for the exhaustive check.
#define EGELU_TOOL_EIGEN egelu_tool_sse2_Eigen
#define EGELU_TOOL_EGELU egelu_tool_sse2
#define EGELU_TOOL_ISA exhaustive::isa_sse2
#define EGELU_TOOL_NAME "sse2"
#define EGELU_TOOL_FLAGS "-mno-avx -mno-sse3"
#include "isa_functions.inc"
