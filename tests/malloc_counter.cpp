// The --wrap=malloc side of malloc_counter.hpp (and aligned_alloc's: the blocks' workspace
// buffers and packed weights start on a cache line).
#include "malloc_counter.hpp"

#include <atomic>
#include <cstddef>

namespace {
std::atomic<long> allocations{0};
}

long malloc_counter::total() { return allocations.load(); }

extern "C" {
void* __real_malloc(std::size_t);
void* __real_realloc(void*, std::size_t);
void* __real_calloc(std::size_t, std::size_t);
void* __real_aligned_alloc(std::size_t, std::size_t);

void* __wrap_malloc(std::size_t n) {
  ++allocations;
  return __real_malloc(n);
}
void* __wrap_realloc(void* p, std::size_t n) {
  ++allocations;
  return __real_realloc(p, n);
}
void* __wrap_calloc(std::size_t k, std::size_t n) {
  ++allocations;
  return __real_calloc(k, n);
}
void* __wrap_aligned_alloc(std::size_t alignment, std::size_t n) {
  ++allocations;
  return __real_aligned_alloc(alignment, n);
}
}
