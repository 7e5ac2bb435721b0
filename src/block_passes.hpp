// The passes the feed-forward blocks are made of, each split into tasks for the
// threads of a call: a product with the packed weights, tile by tile (packed_gemm.hpp),
// and a per-token pass. What a block keeps for its threads lives in block_threads.
#ifndef EGELU_SRC_BLOCK_PASSES_HPP
#define EGELU_SRC_BLOCK_PASSES_HPP

#include <vector>

#include "packed_gemm.hpp"
#include "parallel.hpp"

namespace egelu {
namespace blocks {

// A block's means of running on threads: its task team and the packed input its products share.
template <typename Scalar>
struct block_threads {
  packed_input<Scalar> input = {};
  internal::owned_task_team team = internal::owned_task_team();

  // Sizes the packed input for `tokens` tokens through the deepest of these products, so
  // that no call with as many tokens allocates it (the blocks' reserve()).
  template <typename... Weights>
  void reserve(Eigen::Index tokens, const Weights&... weights) {
    const Eigen::Index size = std::max({weights.depth()...}) * tokens;
    if (input.size() < size) input.resize(size);
  }

  // The runner of one call over `tokens` tokens with these weights: the calling thread
  // alone, or the device's threads too; reserves first.
  template <typename... Weights>
  task_runner runner(const Eigen::ThreadPoolDevice* device, Eigen::Index tokens, const Weights&... weights) {
    reserve(tokens, weights...);
    return device ? task_runner(*device, *team) : task_runner();
  }
};

// out = W in over every tile: in packed once (a round of tasks of its own when it is
// large), then init(i, j, rows, cols) before a tile's first product and finish(i, j,
// rows, cols) after its last, on the thread that computes it.
template <typename Scalar, typename In, typename Out, typename Init, typename Finish>
void multiply(const task_runner& runner, const packed_weights<Scalar>& w, const In& in, Out& out,
              block_threads<Scalar>& threads, const Init& init, const Finish& finish) {
  const Eigen::Index tokens = in.cols();
  Scalar* packed = threads.input.data();
  const input_pieces pieces(w, tokens, runner.threads());
  runner.run(pieces.tasks(), [&](int task) {
    pieces.for_each(
        task, [&](const input_piece& piece) { pack_input(w, in.data(), in.outerStride(), tokens, piece, packed); });
  });
  const task_grid grid(w, tokens, runner.threads());
  runner.run(grid.tasks(), [&](int task) {
    multiply_tiles(w, packed, out.data(), out.outerStride(), tokens, grid.token_block_of(task),
                   grid.first_row_block(task), grid.last_row_block(task), init, finish);
  });
}

// pass(first, last) over the tokens, cut into two parts per thread.
template <typename Pass>
void over_tokens(const task_runner& runner, Eigen::Index tokens, const Pass& pass) {
  const int parts = int(std::min<Eigen::Index>(tokens, 2 * runner.threads()));
  runner.run(parts, [&](int k) { pass(part_begin(tokens, parts, k), part_begin(tokens, parts, k + 1)); });
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCK_PASSES_HPP
