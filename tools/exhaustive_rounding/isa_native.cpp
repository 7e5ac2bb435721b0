// egelu's float activations compiled with the build's own flags (on aarch64: NEON), for the
// exhaustive check on targets other than x86-64.
#define EGELU_TOOL_EIGEN egelu_tool_native_Eigen
#define EGELU_TOOL_EGELU egelu_tool_native
#define EGELU_TOOL_ISA exhaustive::isa_native
#define EGELU_TOOL_NAME "native"
#define EGELU_TOOL_FLAGS "the build's own"
#include "isa_functions.inc"
