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

// A block's means of running on threads: its task team and each thread's packed input.
template <typename Scalar>
struct block_threads {
  std::vector<packed_input<Scalar>> inputs = {};
  internal::owned_task_team team = internal::owned_task_team();

  // The runner of one call over `tokens` tokens with these weights: the calling thread
  // alone, or the device's threads too. Sizes every thread's packed input for the
  // largest of the products first, so that the call allocates nothing once a call with
  // as many tokens has run on this device (whichever pool threads run its tasks).
  template <typename... Weights>
  task_runner runner(const Eigen::ThreadPoolDevice* device, Eigen::Index tokens, const Weights&... weights) {
    const task_runner r = device ? task_runner(*device, *team) : task_runner();
    if (inputs.size() < std::size_t(r.slots())) inputs.resize(std::size_t(r.slots()));
    const Eigen::Index size = std::max({weights.kc()...}) * token_block<Scalar>(tokens);
    for (auto& input : inputs) {
      if (input.size() < size) input.resize(size);
    }
    return r;
  }
};

// out = W in over every tile: init(i, j, rows, cols) before a tile's first product,
// finish(i, j, rows, cols) after its last, on the thread that computes it.
template <typename Scalar, typename In, typename Out, typename Init, typename Finish>
void multiply(const task_runner& runner, const packed_weights<Scalar>& w, const In& in, Out& out,
              block_threads<Scalar>& threads, const Init& init, const Finish& finish) {
  const task_grid grid(w, in.cols(), runner.threads());
  runner.run(grid.tasks(), [&](int task, int slot) {
    multiply_tiles(w, in.data(), in.outerStride(), out.data(), out.outerStride(), in.cols(), grid.token_block_of(task),
                   grid.first_row_block(task), grid.last_row_block(task), threads.inputs[std::size_t(slot)], init,
                   finish);
  });
}

// pass(first, last) over the tokens, cut into two parts per thread.
template <typename Pass>
void over_tokens(const task_runner& runner, Eigen::Index tokens, const Pass& pass) {
  const int parts = int(std::min<Eigen::Index>(tokens, 2 * runner.threads()));
  runner.run(parts, [&](int k, int) { pass(part_begin(tokens, parts, k), part_begin(tokens, parts, k + 1)); });
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCK_PASSES_HPP
