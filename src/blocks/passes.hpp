// The passes the feed-forward blocks are made of, each a round of tasks for the threads
// of a call: packing a product's input, the product's tiles (products.hpp), and passes
// over the tokens (parallel.hpp).
#ifndef EGELU_SRC_BLOCKS_PASSES_HPP
#define EGELU_SRC_BLOCKS_PASSES_HPP

#include <memory>
#include <new>
#include <vector>

#include "blocks/parallel.hpp"
#include "blocks/pass_timing.hpp"
#include "blocks/products.hpp"
#include "gemm/kernel_memory.hpp"
#include "gemm/quantized_inputs.hpp"

namespace egelu {
namespace blocks {

// Packs in (depth x T, column-major) for the products with weights w: one piece on the
// calling thread when small, else a round of tasks.
template <typename Scalar>
void pack_input(const task_runner& runner, const gemm::packed_weights& w, const token_layout& tokens, const Scalar* in,
                index ld_in, Scalar* packed) {
  const pack_pieces pieces(w, tokens, runner.threads());
  runner.run(pieces.tasks(), [&](int task, int) {
    pieces.for_each(
        task, [&](index c, index k, index j0, index j1) { pack_tokens(w, tokens, in, ld_in, c, k, j0, j1, packed); });
  });
}

// Token block c's depth block k, panels of tokens [j0, j1), of a product's packed input
// (weights w), quantized in place (gemm/quantized_inputs.hpp).
inline void quantize_panels(const weights<float>& weights, const token_layout& tokens, float* packed, index c, index k,
                            index j0, index j1) {
  const gemm::packed_weights& w = weights.packed;
  const int nt = tokens.nt();
  const index kc = w.depth_size(k);
  for (index j = j0; j < std::min(j1, tokens.panels(c)); ++j) {
    weights.quantize_inputs(packed + tokens.packed_offset(w.depth(), c, w.depth_start(k), kc, j), kc, nt,
                            int(std::min<index>(nt, tokens.size(c) - j * nt)));
  }
}

// The whole input of the products with weights `weights`, packed, quantized in place when
// their kernel is an integer one (InputFormat::q16_0, gemm/quantized_inputs.hpp), in
// pack_input's pieces, and timed as pass 4; nothing otherwise.
template <typename Scalar>
void quantize_input(const task_runner& runner, const weights<Scalar>& weights, const token_layout& tokens,
                    Scalar* packed, pass_clock& clock) {
  if constexpr (std::is_same<Scalar, float>::value) {
    if (!weights.quantize_inputs) return;
    const pack_pieces pieces(weights.packed, tokens, runner.threads());
    runner.run(pieces.tasks(), [&](int task, int) {
      pieces.for_each(
          task, [&](index c, index k, index j0, index j1) { quantize_panels(weights, tokens, packed, c, k, j0, j1); });
    });
    clock.mark(4, "inputs quantized");
  }
}

// The same on the calling thread, for the whole input (one piece): a mixture of experts'
// expert, a task each (blocks/moe_feed_forward.cpp).
template <typename Scalar>
void quantize_whole_input(const weights<Scalar>& weights, const token_layout& tokens, Scalar* packed) {
  if constexpr (std::is_same<Scalar, float>::value) {
    if (!weights.quantize_inputs) return;
    pack_pieces(weights.packed, tokens, 1).for_each(0, [&](index c, index k, index j0, index j1) {
      quantize_panels(weights, tokens, packed, c, k, j0, j1);
    });
  }
}

// task(tile_task, slot) for every task of the grid.
template <typename Task>
void for_each_tile_task(const task_runner& runner, const task_grid& grid, const Task& task) {
  runner.run(grid.tasks(), [&](int k, int slot) { task(grid.task(k), slot); });
}

// Columns [t, t + n), rows [i, i + rows), of a finished tile of `out` (a product's
// output, columns ld apart), written packed as the input of the next product, with
// weights `next`: t is the first token of a panel of nt, n <= nt, and the panel's other
// tokens are written as zeros. Each depth block's run is packed as pack_tokens packs a
// panel, row by row, so that the stores run through it once, in order, rather than nt
// times a column, each storing every nt-th value. (On an Intel Xeon, BERT-base at
// T = 512, this packing is 8-10% of the call; the row order took about 1 ms of it off
// the first pass's 21-23, within the whole call's noise: docs/DESIGN.md, "Where the
// first product loses".)
template <typename Scalar>
void pack_tile(const gemm::packed_weights& next, const token_layout& tokens, const Scalar* out, index ld, index i,
               index rows, index t, index n, Scalar* packed) {
  const int nt = tokens.nt();
  const index c = tokens.block_of(t), j = (t - tokens.first(c)) / nt;
  for (index d = i; d < i + rows;) {
    const index k = next.depth_block_of(d), d0 = next.depth_start(k), kc = next.depth_size(k);
    const index end = std::min(i + rows, d0 + kc);
    pack_panel(nt, out + d + t * ld, ld, int(n), end - d,
               packed + tokens.packed_offset(next.depth(), c, d0, kc, j) + (d - d0) * nt);
    d = end;
  }
}

// One gated MLP, packed: W_gate and W_up (d_ff x d_model), W_down (d_model x d_ff), and the
// biases its products start from (gpt-oss's experts), empty where it has none.
template <typename Scalar>
struct gated_weights {
  weights<Scalar> gate, up, down;
  std::vector<Scalar> gate_bias = {}, up_bias = {}, down_bias = {};
  std::size_t bytes() const {
    return gate.packed.bytes() + up.packed.bytes() + down.packed.bytes() +
           (gate_bias.size() + up_bias.size() + down_bias.size()) * sizeof(Scalar);
  }
};

// A bias as a product's initial value, the same column for every token (ld 0); none if empty.
template <typename Scalar>
matrix_ref<const Scalar> bias_init(const std::vector<Scalar>& bias) {
  return bias.empty() ? matrix_ref<const Scalar>{} : matrix_ref<const Scalar>{bias.data(), 0};
}

// The up product's tiles of the largest task of a gated MLP's first pass on `threads`
// threads: a thread slot's scratch.
template <typename Scalar>
index gated_scratch_size(const gated_weights<Scalar>& w, const token_layout& tokens, int threads) {
  const task_grid grid(w.gate.packed, tokens, threads);
  return grid.rows_per_task(w.gate.packed) * grid.tokens_per_task();
}

// One task of a gated MLP's first pass, h = act(W_gate in + b_gate) * (W_up in + b_up) (the biases
// where it has them), `in` packed: the
// gate's tiles into h (d_ff x T, columns ld_h apart), the up's into the slot's scratch
// (the task's rows by its tokens), combined by gated(h, ld_h, up, ld_up, rows, cols) per
// finished tile while both are in cache, and written packed as the down product's input.
// `widened`: the slot's widened_size(w.gate, 2) floats for block formats.
// The gated block's first pass, and each expert's in a mixture of experts.
template <typename Scalar, typename Gated>
void gated_tiles(const gated_weights<Scalar>& w, const token_layout& tokens, const Scalar* in, Scalar* h, index ld_h,
                 Scalar* scratch, Scalar* widened, const Gated& gated, Scalar* packed_hidden, const tile_task& task) {
  const gemm::packed_weights& g = w.gate.packed;
  const index row0 = task.first_row(g), rows = task.rows(g);
  const matrix_ref<Scalar> up{scratch, rows, row0, tokens.first(task.c) + task.j0 * tokens.nt()};
  const product_output<Scalar> out[] = {{&w.gate, {h, ld_h}, bias_init(w.gate_bias)},
                                        {&w.up, up, bias_init(w.up_bias)}};
  multiply_tiles(out, tokens, in, widened, task, [&](index i, index tile_rows, index t, index n) {
    gated(h + i + t * ld_h, ld_h, up.at(i, t), rows, tile_rows, n);
    pack_tile(w.down.packed, tokens, h, ld_h, i, tile_rows, t, n, packed_hidden);
  });
}

// One task of y = init + W in, `in` packed: each tile of y starts from init (null: zero),
// and finish(i, rows, t, n) runs on it when done. `widened`: the slot's
// widened_size(w, 1) floats for block formats.
template <typename Scalar, typename Finish>
void product_tiles(const weights<Scalar>& w, const token_layout& tokens, const Scalar* in,
                   const matrix_ref<const Scalar>& init, const matrix_ref<Scalar>& y, const Finish& finish,
                   Scalar* widened, const tile_task& task) {
  const product_output<Scalar> out[] = {{&w, y, init}};
  multiply_tiles(out, tokens, in, widened, task, finish);
}

// y = init + W in, every task of the product's grid; `widened`: widened_size(w, 1) floats
// for each thread slot.
template <typename Scalar, typename Y, typename Finish>
void product(const task_runner& runner, const weights<Scalar>& w, const token_layout& tokens, const Scalar* in,
             const matrix_ref<const Scalar>& init, Y& y, Scalar* widened, const Finish& finish) {
  const task_grid grid(w.packed, tokens, runner);
  for_each_tile_task(runner, grid, [&](const tile_task& task, int slot) {
    product_tiles(w, tokens, in, init, matrix_ref<Scalar>{y.data(), y.outerStride()}, finish,
                  widened + slot * widened_size(w, 1), task);
  });
}

// y = x + W in, `in` packed: each tile of y starts from the residual x (y may be x) and
// finish(i, rows, t, n) runs on it when done. The blocks' last product.
template <typename Scalar, typename X, typename Y, typename Finish>
void residual_product(const task_runner& runner, const weights<Scalar>& w, const token_layout& tokens, const Scalar* in,
                      const X& x, Y& y, Scalar* widened, const Finish& finish) {
  product(runner, w, tokens, in, matrix_ref<const Scalar>{x.data(), x.outerStride()}, y, widened, finish);
}

// A buffer that grows and never shrinks, so that a workspace sized once allocates no
// more; in the kernels' memory (gemm/kernel_memory.hpp), aligned to a 64-byte line whatever
// the build's vectors, and on huge pages from 2 MiB up. For speed: the kernels load whole
// 64-byte registers of the weights widened here (block formats at prefill), and with
// Eigen's alignment a build without -march=native had 16 bytes (a native AVX2 build 32),
// so that every such load split two lines (portable build on an Intel Xeon: Q8_0 and Q4_0
// blocks at T = 32 took 0.84-0.96x the time aligned; docs/DESIGN.md, "Alignment"); and a
// gated block's first pass, which writes three of these buffers a column of tokens apart,
// took 0.97-0.98x the time on huge pages. And for the bits: Eigen peels a vectorized
// reduction (a norm's sum) to the data's alignment, so a buffer aligned differently from one
// workspace to the next would sum in another order and change the last bit between callers
// (the concurrency test found it, -march=native).
template <typename Scalar>
class growing_buffer {
 public:
  Scalar* reserve(index size) {
    if (size > size_) {
      // (Allocated before the old buffer goes: a failure leaves the buffer as it was.)
      if (std::size_t(size) > std::size_t(-1) / sizeof(Scalar)) throw std::bad_alloc();
      Scalar* grown = static_cast<Scalar*>(gemm::allocate_kernel_memory(std::size_t(size) * sizeof(Scalar)));
      data_.reset(grown);
      size_ = size;
    }
    return data_.get();
  }
  Scalar* data() const { return data_.get(); }

 private:
  std::unique_ptr<Scalar, gemm::free_kernel_memory> data_;
  index size_ = 0;
};

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_PASSES_HPP
