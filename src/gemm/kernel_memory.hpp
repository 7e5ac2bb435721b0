// Memory the micro-kernels read and write: the packed weights (packed_weights.hpp) and the
// blocks' workspaces (blocks::growing_buffer: the packed tokens, the hidden layers, the
// widened weights).
//
// Aligned to a 64-byte line below 2 MiB (malloc gives 16 bytes, Eigen's alignment in a
// portable build too): the kernels load whole 64-byte registers, and a load across two
// lines costs more. From 2 MiB up, aligned to 2 MiB and, on Linux, advised into transparent
// huge pages where the system allows them (THP "madvise" is Debian's default):
// - a decoding product streams every weight once, and with 4 KiB pages it walks the page
//   tables every 4 KiB;
// - a gated block's first pass at prefill writes its gate tiles, its up tiles and the
//   packed hidden layer, each a column of 8 tokens d_ff floats apart (TinyLlama at 256
//   tokens a block: 5.8 MB each, some 4,200 pages of 4 KiB, 4,700 with the packed input:
//   twice what the second-level TLB holds). On huge pages that pass took 0.97-0.98x the time
//   on an Intel Xeon (docs/DESIGN.md, "Alignment").
#ifndef EGELU_SRC_GEMM_KERNEL_MEMORY_HPP
#define EGELU_SRC_GEMM_KERNEL_MEMORY_HPP

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace egelu {
namespace gemm {

// `bytes` (at least 1) of memory for the kernels, uninitialized; release with std::free.
// From 2 MiB up it is rounded up to whole huge pages: up to 2 MiB more a buffer, of address
// space and, where the system gives huge pages, of memory once its last page is touched.
inline void* allocate_kernel_memory(std::size_t bytes) {
  constexpr std::size_t huge = std::size_t(1) << 21, line = 64;
  if (bytes > std::size_t(-1) - huge) throw std::bad_alloc();  // (the rounding below would wrap)
  const std::size_t alignment = bytes >= huge ? huge : line;
  // (aligned_alloc wants a whole number of alignments.)
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= huge) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

struct free_kernel_memory {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace gemm
}  // namespace egelu

#endif  // EGELU_SRC_GEMM_KERNEL_MEMORY_HPP
