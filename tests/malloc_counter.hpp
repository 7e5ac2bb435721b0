// Counts heap allocations made by code linked into a test (the test links with
// -Wl,--wrap=malloc,--wrap=realloc,--wrap=calloc,--wrap=aligned_alloc): Eigen allocates
// through std::malloc and the blocks' buffers through std::aligned_alloc, so what either
// allocates passes through here. operator new is not counted (libstdc++'s own malloc call
// is not wrapped): the blocks use it only for a new workspace, when none is idle.
#ifndef EGELU_TESTS_MALLOC_COUNTER_HPP
#define EGELU_TESTS_MALLOC_COUNTER_HPP

#include <cstddef>

namespace malloc_counter {

long total();  // allocations so far (malloc_counter.cpp)

// Allocations made while running f.
template <typename F>
long during(F&& f) {
  const long before = total();
  f();
  return total() - before;
}

}  // namespace malloc_counter

#endif  // EGELU_TESTS_MALLOC_COUNTER_HPP
