// The types a block's weights are stored in: float, double, and bfloat16 and half as
// their bits. Types only, no functions: the per-ISA kernel files include this, and an
// inline function compiled there with that ISA's flags could be merged by the linker
// with a portable file's copy (docs/DESIGN.md, "The compiled library").
#ifndef EGELU_SRC_GEMM_STORED_TYPES_HPP
#define EGELU_SRC_GEMM_STORED_TYPES_HPP

#include <cstdint>

namespace egelu {
namespace gemm {

enum class stored { f32, bf16, f16, f64 };

struct bf16 {
  std::uint16_t bits;
};
struct f16 {
  std::uint16_t bits;
};

}  // namespace gemm
}  // namespace egelu

#endif  // EGELU_SRC_GEMM_STORED_TYPES_HPP
