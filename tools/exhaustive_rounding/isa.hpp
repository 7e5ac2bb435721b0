// One instruction set's build of egelu's float activations, as plain functions: each
// isa_<name>.cpp includes isa_functions.inc, compiled with that ISA's flags and with
// Eigen and egelu under names of its own (as src/activations does), so that one program
// holds every build and one reference pass checks them all.
#ifndef EGELU_TOOLS_EXHAUSTIVE_ROUNDING_ISA_HPP
#define EGELU_TOOLS_EXHAUSTIVE_ROUNDING_ISA_HPP

#include <cstddef>
#include <cstdint>

namespace exhaustive {

// The library's functions under test, and the exact function each computes.
enum class Function { gelu, gelu_exact, silu, quick_gelu, swish_1, swish_1702 };
constexpr int kFunctionCount = 6;

// The ways a float reaches the kernel: a full packet, the half and quarter packets
// (fixed-size objects, AVX-512's 8 and 4 floats), and one float (the scalar tail).
enum class Path { packet, half_packet, quarter_packet, scalar };
constexpr int kPathCount = 4;

// Which rounding stage decided an input (correct_rounding.hpp), or none in a build
// without stages.
enum class Stage : std::uint8_t { fast, medium, slow };

struct Isa {
  const char* name;
  const char* flags;
  int lanes[kPathCount];  // floats per call on each path; 0 where the path repeats a wider one
  void (*run)(Function f, Path path, const float* x, float* y, std::size_t n);
  // Eigen::half (bf16 false) or Eigen::bfloat16 bit patterns through an array expression
  // (vectorized where Eigen converts their packets) or one at a time (scalar true).
  void (*run_narrow)(Function f, bool bf16, bool scalar, const std::uint16_t* x, std::uint16_t* y, std::size_t n);
  // The stage that decides each input, and the fast and medium stages' double results;
  // null in a build without stages (today's headers).
  void (*stages)(Function f, const float* x, Stage* stage, double* fast, double* medium, std::size_t n);
  // A stage's rounding window (medium false: the fast stage's): its half-width in units in the
  // last place of the stage's double result; null as stages.
  double (*window)(Function f, bool medium);
  // The slow stage alone (the Taylor rule or double-double) on every input; null as stages.
  void (*slow)(Function f, const float* x, float* y, std::size_t n);
};

Isa isa_sse2();
Isa isa_avx2();
Isa isa_avx512f();
Isa isa_avx512();
Isa isa_native();  // non-x86 builds: the compiler's own target (NEON on aarch64)

}  // namespace exhaustive

#endif  // EGELU_TOOLS_EXHAUSTIVE_ROUNDING_ISA_HPP
