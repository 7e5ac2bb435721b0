// The blocks' products: out = W in, W packed once, when the block is made, into the
// layout Eigen's GEMM micro-kernel (gebp) consumes, so that a call packs only its
// input -- as oneDNN does with weights reordered once. The packing routines and the
// micro-kernel are Eigen's own, instantiated exactly as Eigen's GEMM instantiates
// them, so a build against Eigen 5 gets its AVX-512 kernels (nr = 8).
//
// The output is cut into a fixed grid of tiles: row blocks of the packed weights and
// token blocks that depend on the number of tokens only. A task computes some tiles of
// one token block; tasks run on any thread, in any order, and each tile is computed by
// the same calls whatever the number of threads, so results are the same bits for every
// thread count. A tile is initialised before its first depth block (zero, or the
// residual) and finished (bias, activation) right after its last, while in cache.
#ifndef EGELU_SRC_PACKED_GEMM_HPP
#define EGELU_SRC_PACKED_GEMM_HPP

#include <Eigen/Core>
#include <algorithm>
#include <vector>

namespace egelu {
namespace blocks {

using Eigen::Index;

// Eigen's packing routines and micro-kernel for res (col-major) += lhs (row-major) * rhs (col-major).
template <typename Scalar>
struct gemm_kernels {
  using Traits = Eigen::internal::gebp_traits<Scalar, Scalar>;
  using LhsMapper = Eigen::internal::const_blas_data_mapper<Scalar, Index, Eigen::RowMajor>;
  using RhsMapper = Eigen::internal::const_blas_data_mapper<Scalar, Index, Eigen::ColMajor>;
  using ResMapper = Eigen::internal::blas_data_mapper<Scalar, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
  using PackLhs = Eigen::internal::gemm_pack_lhs<Scalar, Index, LhsMapper, Traits::mr, Traits::LhsProgress,
                                                 typename Traits::LhsPacket4Packing, Eigen::RowMajor>;
  using PackRhs = Eigen::internal::gemm_pack_rhs<Scalar, Index, RhsMapper, Traits::nr, Eigen::ColMajor>;
  using Gebp = Eigen::internal::gebp_kernel<Scalar, Scalar, Index, ResMapper, Traits::mr, Traits::nr, false, false>;
  static constexpr int nr = Traits::nr;
};

// How a matrix is cut for the micro-kernel: depth blocks of kc, row blocks of mc.
struct blocking {
  Index kc = 1, mc = 1;
};

// Eigen's own heuristic for the L1 and L2 caches at a typical number of tokens (kc), with
// row blocks no taller than 192 rows, so that threads share a product even at one token;
// mc a multiple of the micro-kernel's rows and of `multiple`.
template <typename Scalar>
blocking default_blocking(Index rows, Index depth, Index multiple = 1) {
  Index kc = depth, mc = rows, nc = 128;
  Eigen::internal::computeProductBlockingSizes<Scalar, Scalar, 1, Index>(kc, mc, nc, 1);
  const Index unit = std::max<Index>(multiple, gemm_kernels<Scalar>::Traits::mr);
  const Index tall = std::max<Index>(unit, std::min<Index>(mc, 192) / unit * unit);
  return blocking{std::max<Index>(kc, 1), (tall + multiple - 1) / multiple * multiple};
}

// A row-major matrix (rows x depth) in gebp's layout: for each row block, its depth
// blocks, each packed by gemm_pack_lhs.
template <typename Scalar>
class packed_weights {
 public:
  packed_weights() = default;

  // w(i, k) = data[i * row_stride + k]
  packed_weights(const Scalar* data, Index rows, Index depth, Index row_stride, blocking b)
      : rows_(rows), depth_(depth), kc_(b.kc), mc_(b.mc) {
    packed_.resize(rows * depth);
    const typename gemm_kernels<Scalar>::LhsMapper w(data, row_stride);
    typename gemm_kernels<Scalar>::PackLhs pack;
    for (Index r = 0; r < row_blocks(); ++r) {
      for (Index k = 0; k < depth_blocks(); ++k) {
        pack(packed_.data() + offset(r, k), w.getSubMapper(row_start(r), depth_start(k)), depth_size(k), row_size(r));
      }
    }
  }

  Index rows() const { return rows_; }
  Index depth() const { return depth_; }
  Index kc() const { return kc_; }
  Index row_blocks() const { return (rows_ + mc_ - 1) / mc_; }
  Index depth_blocks() const { return (depth_ + kc_ - 1) / kc_; }
  Index row_start(Index r) const { return r * mc_; }
  Index row_size(Index r) const { return std::min(mc_, rows_ - r * mc_); }
  Index depth_start(Index k) const { return k * kc_; }
  Index depth_size(Index k) const { return std::min(kc_, depth_ - k * kc_); }
  const Scalar* block(Index r, Index k) const { return packed_.data() + offset(r, k); }

 private:
  Index offset(Index r, Index k) const { return row_start(r) * depth_ + depth_start(k) * row_size(r); }

  Index rows_ = 0, depth_ = 0, kc_ = 1, mc_ = 1;
  Eigen::Matrix<Scalar, Eigen::Dynamic, 1> packed_;
};

// Token blocks: as wide as Eigen would take them, a multiple of the micro-kernel's nr.
template <typename Scalar>
Index token_block(Index tokens) {
  constexpr Index nr = gemm_kernels<Scalar>::nr, widest = 256;
  return std::max<Index>(1, tokens <= widest ? tokens : widest / nr * nr);
}

// The input of one product packed for gebp once per call, for every task to read: token
// block c's depth block k at first(c) * depth + depth_start(k) * n(c), where gemm_pack_rhs
// lays it out as panels of nr tokens (then the few left over), each depth_size(k) long.
// Packing it once, rather than in every task that reads it, keeps the threads' work the
// product alone: at 512 tokens and two threads, the per-task copies had packed the
// hidden layer four times over.
template <typename Scalar>
using packed_input = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

// The part of the packed input a pack task writes: token block c, depth block k, tokens
// [first + j0, first + j1) of it, with j0 a multiple of nr so that its panels are the
// whole pack's panels.
struct input_piece {
  Index c, k, j0, j1;
};

// How the input of a product over `tokens` tokens is cut for `threads` threads: into
// token blocks, depth blocks and, when these are fewer than two per thread, runs of whole
// panels. Small inputs are packed in one piece, on the calling thread: a second round of
// tasks would cost more than it saves.
class input_pieces {
 public:
  template <typename Scalar>
  input_pieces(const packed_weights<Scalar>& w, Index tokens, int threads)
      : tokens_(tokens), width_(token_block<Scalar>(tokens)), depth_blocks_(w.depth_blocks()) {
    constexpr Index nr = gemm_kernels<Scalar>::nr, small = Index(1) << 16;
    blocks_ = (tokens + width_ - 1) / width_ * depth_blocks_;
    split_ = threads > 1 && w.depth() * tokens > small;
    if (split_ && blocks_ < 2 * threads) {
      const Index panels = (width_ + nr - 1) / nr, runs = std::min(panels, (2 * threads + blocks_ - 1) / blocks_);
      run_ = (panels + runs - 1) / runs * nr;
    }
    runs_ = (width_ + run_ - 1) / run_;
  }

  int tasks() const { return split_ ? int(blocks_ * runs_) : 1; }

  // f(piece) for the piece of task `task`, or for every piece if there is one task.
  template <typename F>
  void for_each(int task, const F& f) const {
    const Index first = split_ ? task : 0, last = split_ ? task + 1 : blocks_ * runs_;
    for (Index p = first; p < last; ++p) {
      const Index block = p / runs_, c = block / depth_blocks_, j0 = p % runs_ * run_;
      const Index n = std::min(width_, tokens_ - c * width_);
      if (j0 < n) f(input_piece{c, block % depth_blocks_, j0, std::min(n, j0 + run_)});
    }
  }

 private:
  Index tokens_, width_, depth_blocks_, blocks_ = 0, run_ = width_, runs_ = 1;
  bool split_ = false;
};

// Packs one piece of in (depth x tokens, col-major) into packed.
template <typename Scalar>
void pack_input(const packed_weights<Scalar>& w, const Scalar* in, Index in_stride, Index tokens,
                const input_piece& piece, Scalar* packed) {
  using K = gemm_kernels<Scalar>;
  const Index width = token_block<Scalar>(tokens), first = piece.c * width, n = std::min(width, tokens - first);
  const typename K::RhsMapper input(in, in_stride);
  typename K::PackRhs pack;
  pack(packed + first * w.depth() + w.depth_start(piece.k) * n + piece.j0 * w.depth_size(piece.k),
       input.getSubMapper(w.depth_start(piece.k), first + piece.j0), w.depth_size(piece.k), piece.j1 - piece.j0);
}

// One task's tiles: token block c, row blocks [r0, r1), from the packed input (above).
// out: rows x tokens (col-major, its own stride). init(tile rows, first token, rows,
// tokens) runs before a tile's first product, finish(...) after its last.
template <typename Scalar, typename Init, typename Finish>
void multiply_tiles(const packed_weights<Scalar>& w, const Scalar* packed, Scalar* out, Index out_stride, Index tokens,
                    Index c, Index r0, Index r1, const Init& init, const Finish& finish) {
  using K = gemm_kernels<Scalar>;
  const Index width = token_block<Scalar>(tokens), first = c * width, n = std::min(width, tokens - first);
  const typename K::ResMapper output(out, out_stride);
  typename K::Gebp gebp;
  for (Index r = r0; r < r1; ++r) init(w.row_start(r), first, w.row_size(r), n);
  for (Index k = 0; k < w.depth_blocks(); ++k) {
    const Scalar* rhs = packed + first * w.depth() + w.depth_start(k) * n;
    for (Index r = r0; r < r1; ++r) {
      gebp(output.getSubMapper(w.row_start(r), first), w.block(r, k), rhs, w.row_size(r), w.depth_size(k), n,
           Scalar(1));
      if (k + 1 == w.depth_blocks()) finish(w.row_start(r), first, w.row_size(r), n);
    }
  }
}

// The grid of tasks for a product over `tokens` tokens on `threads` threads: every token
// block, its row blocks cut into `parts` ranges, enough for four tasks a thread, so that
// threads claiming them finish close together.
struct task_grid {
  Index token_blocks = 0, row_blocks = 0, parts = 1;

  template <typename Scalar>
  task_grid(const packed_weights<Scalar>& w, Index tokens, int threads)
      : token_blocks((tokens + token_block<Scalar>(tokens) - 1) / token_block<Scalar>(tokens)),
        row_blocks(w.row_blocks()) {
    if (threads > 1) parts = std::min<Index>(row_blocks, (4 * threads + token_blocks - 1) / token_blocks);
  }
  int tasks() const { return int(token_blocks * parts); }
  Index token_block_of(int task) const { return task / parts; }
  Index first_row_block(int task) const { return row_blocks * (task % parts) / parts; }
  Index last_row_block(int task) const { return row_blocks * (task % parts + 1) / parts; }
};

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_PACKED_GEMM_HPP
