// The blocks' products, out = W in, on the micro-kernels of gemm/ with the weights packed
// once (gemm/packed_weights.hpp); a call packs only its tokens.
//
// The output is cut into a fixed grid of tiles: row blocks of the packed weights by token
// blocks that depend on the number of tokens only. A task computes some row blocks of one
// token block; tasks run on any thread, in any order, and each tile is computed by the
// same kernel calls whatever the number of threads, so the results are the same bits for
// every thread count. Within a task the loops run as BLIS's do: for each depth block, for
// each row block (its weights, mc x kc, stay in L2), for each panel of nt tokens (kc x nt,
// in L1), every panel of mv rows. The first depth block starts each tile from its
// initial value (a bias, the residual, or zero), and a finishing step (an activation, a
// bias) runs on each row block's nt tokens right after the last, while they are in L1.
#ifndef EGELU_SRC_BLOCKS_PRODUCTS_HPP
#define EGELU_SRC_BLOCKS_PRODUCTS_HPP

#include <algorithm>
#include <type_traits>
#include <utility>

#include "blocks/parallel.hpp"
#include "gemm/micro_kernel.hpp"
#include "gemm/packed_weights.hpp"

namespace egelu {
namespace blocks {

using gemm::index;

// Packed weights and the kernel that reads them; for a block format (float only), also
// the function that widens a panel to float and the float kernel that reads it.
template <typename Scalar>
struct weights {
  gemm::packed_weights packed;
  gemm::kernel<Scalar> kernel;
  gemm::widen_function widen = nullptr;
  gemm::kernel<Scalar> widened_kernel;
  // With a block format's integer kernel (InputFormat::q16_0), its set's quantizer of the
  // products' inputs; null otherwise.
  gemm::input_quantizer quantize_inputs = nullptr;
};

// The floats a thread slot needs to widen one row block's depth block of `outputs`
// products with weights w (none unless w is in a block format).
template <typename Scalar>
index widened_size(const weights<Scalar>& w, int outputs) {
  return w.widen ? index(outputs) * w.packed.mc() * w.packed.kc() : 0;
}

// A matrix for the products to read or write: element (i, t) at data + (i - row0) + (t -
// col0) ld. With ld = 0 every column is the first (a bias).
template <typename Scalar>
struct matrix_ref {
  Scalar* data = nullptr;
  index ld = 0, row0 = 0, col0 = 0;
  Scalar* at(index i, index t) const { return data + (i - row0) + (t - col0) * ld; }
};

// The widest token block: the panels of nt tokens that hold 256 (258 tokens for the AVX2 and
// NEON kernels' nt = 6). Rounded down to 252, 512 tokens made three blocks, the last of 8
// tokens reading every weight once more, and on two threads three blocks could not be one
// a thread, so the threads split rows instead: TinyLlama's gated block at T = 512 took
// 0.98x the time in two blocks of 258 and 254 (AVX2 kernels on an Intel Xeon, 1 and 2 threads).
inline index widest_token_block(int nt) {
  constexpr index tokens = 256;
  return (tokens + nt - 1) / nt * nt;
}

// Token blocks: up to widest_token_block(nt) tokens, a whole number of the kernel's panels
// of nt. Cut for `sharing` threads (token_sharing_threads), a call of 64 tokens a thread up to
// a widest block a thread is one block per thread: a task is then a whole token block
// (task_grid), its thread reads all the weights and, in the second product, the hidden layer
// it wrote itself. Split by rows instead, each thread read the other's half of the hidden
// layer, from the other core's cache. (T = 384 on two threads: two blocks of 192, not 256
// and 128 each cut in two by rows.)
constexpr index fewest_tokens_per_thread = 64;
inline index token_block_width(index tokens, int nt, int sharing = 1) {
  const index widest = widest_token_block(nt);
  if (sharing > 1 && tokens >= fewest_tokens_per_thread * sharing) {
    const index share = (tokens + sharing - 1) / sharing, width = (share + nt - 1) / nt * nt;
    if (width <= widest) return width;
  }
  return tokens <= widest ? std::max<index>(tokens, 1) : widest;
}

// How many threads a call's tokens are shared between (token_block_width): all of them when
// the block's weights fit in the last-level cache (as gemm::llc_bytes counts it), so that
// every thread reading all of them costs no more memory traffic; otherwise 1, and the
// threads split the rows. Measured on Zen 5 (32 MB L3), two threads, T = 128, calls
// alternated: BERT-base's block 0.85-0.98x the time in every format; TinyLlama's gated
// block in f32 (138 MB of weights, from memory) 1.09x.
inline int token_sharing_threads(int threads, std::size_t weight_bytes) {
  const std::ptrdiff_t llc = gemm::llc_bytes();
  return llc > 0 && weight_bytes <= std::size_t(llc) ? threads : 1;
}

// How a block's call cuts its tokens into chunks, each run as a call of its own (the same
// kernel calls on each token, so the same bits): a call over all its tokens writes a hidden
// layer and rereads it in the next pass, from the last-level cache once it is larger than
// L2; on an Intel Xeon (2 MB of L2) BERT-base at T = 512 takes 0.88-0.89x the time in
// chunks of 64 tokens on one thread, 0.88-0.96x in chunks of 128 on two (docs/DESIGN.md,
// "Token chunks"). A call is cut into floor(T / c) chunks as equal as can be, c = 64 tokens
// a thread (each thread a whole token block of its own: token_block_width), so none is
// smaller than c and the weights are read at most T / c times, when
// - 64 tokens' hidden layers, `hidden_bytes_per_token` a token (the first pass's tiles and
//   the second product's packed input), fit three quarters of the L2 the OS reports, and
// - the block's weights, read again by every chunk, stay in the last-level cache (gemm::llc_bytes),
// - and are not widened to float by the products (block formats): each chunk would widen them
//   again, and at BERT-base's T = 128 on one thread Q8_0 took 1.03-1.05x the time in chunks,
//   Q4_0 1.06-1.09x (bf16 and f16, read as they are, 0.96-0.98x; f32 0.91-0.95x).
// Otherwise (TinyLlama's gated block; BERT-base's on a 1 MB L2) the call is one chunk.
class token_chunks {
 public:
  token_chunks(index tokens, int threads, std::size_t hidden_bytes_per_token, std::size_t weight_bytes,
               bool weights_widened)
      : tokens_(tokens) {
    const index least = fewest_tokens_per_thread * std::max(threads, 1);
    const std::ptrdiff_t llc = gemm::llc_bytes();
    const bool hidden_fits =
        double(hidden_bytes_per_token) * double(fewest_tokens_per_thread) <= 0.75 * double(gemm::l2_cache_bytes());
    const bool weights_stay = llc > 0 && weight_bytes <= std::size_t(llc);
    if (hidden_fits && weights_stay && !weights_widened) count_ = std::max<index>(1, tokens / least);
  }
  index count() const { return count_; }
  index first(index k) const { return tokens_ * k / count_; }
  index size(index k) const { return first(k + 1) - first(k); }

  // f(x's columns, y's columns) for each chunk, in order.
  template <typename X, typename Y, typename F>
  void for_each(const X& x, Y& y, const F& f) const {
    for (index k = 0; k < count_; ++k) {
      auto y_chunk = y.middleCols(first(k), size(k));
      f(x.middleCols(first(k), size(k)), y_chunk);
    }
  }

 private:
  index tokens_, count_ = 1;
};

// The tokens of one call as a product's kernels read them: token blocks of panels of nt.
class token_layout {
 public:
  token_layout(index tokens, int nt, int sharing = 1)
      : tokens_(tokens), nt_(nt), width_(token_block_width(tokens, nt, sharing)) {}

  index tokens() const { return tokens_; }
  int nt() const { return nt_; }
  index blocks() const { return (tokens_ + width_ - 1) / width_; }
  index first(index c) const { return c * width_; }
  index block_of(index t) const { return t / width_; }
  index size(index c) const { return std::min(width_, tokens_ - c * width_); }
  index panels(index c) const { return (size(c) + nt_ - 1) / nt_; }
  // Values of the packed input: every token block's panels, padded to nt tokens.
  index packed_size(index depth) const { return (tokens_ + nt_ - 1) / nt_ * nt_ * depth; }
  // Where token block c's depth block [d0, d0 + kc) starts in the packed input, and its panel j within it.
  index packed_offset(index depth, index c, index d0, index kc, index j) const {
    return first(c) * depth + d0 * panels(c) * nt_ + j * nt_ * kc;
  }

 private:
  index tokens_;
  int nt_;
  index width_;
};

// The pieces of packing a product's input for `threads` threads: a token block's depth
// block, cut into runs of panels when there are fewer blocks than two a thread. Small
// inputs are one piece, packed by the calling thread: a round of tasks would cost more.
class pack_pieces {
 public:
  pack_pieces(const gemm::packed_weights& w, const token_layout& tokens, int threads)
      : depth_blocks_(w.depth_blocks()), blocks_(tokens.blocks() * depth_blocks_), panels_(tokens.panels(0)) {
    constexpr index small = index(1) << 16;
    split_ = threads > 1 && w.depth() * tokens.tokens() > small;
    runs_ = split_ && blocks_ < 2 * threads ? std::min(panels_, (2 * threads + blocks_ - 1) / blocks_) : 1;
  }
  int tasks() const { return split_ ? int(blocks_ * runs_) : 1; }

  // f(c, k, first panel, end panel) for task `task`'s piece, or for every piece if there is one task.
  template <typename F>
  void for_each(int task, const F& f) const {
    const index first = split_ ? task : 0, last = split_ ? task + 1 : blocks_ * runs_;
    for (index p = first; p < last; ++p) {
      const index block = p / runs_, run = p % runs_;
      f(block / depth_blocks_, block % depth_blocks_, panels_ * run / runs_, panels_ * (run + 1) / runs_);
    }
  }

 private:
  index depth_blocks_, blocks_, panels_, runs_ = 1;
  bool split_ = false;
};

// One panel of NT tokens over kc depths: out[d NT + t] = column t's value at depth d,
// the columns past `n` zero. A whole panel goes row by row, NT a constant, so that the
// compiler keeps the column pointers in registers; a partial one (the last) is zeroed,
// then its columns copied.
template <int NT, typename Scalar>
void pack_panel(const Scalar* first_column, index ld, int n, index kc, Scalar* out) {
  if (n == NT) {
    const Scalar* columns[NT];
    for (int t = 0; t < NT; ++t) columns[t] = first_column + t * ld;
    for (index d = 0; d < kc; ++d, out += NT) {
#pragma GCC unroll 16
      for (int t = 0; t < NT; ++t) out[t] = columns[t][d];
    }
  } else {
    std::fill(out, out + kc * NT, Scalar(0));
    for (int t = 0; t < n; ++t) {
      const Scalar* column = first_column + t * ld;
      for (index d = 0; d < kc; ++d) out[d * NT + t] = column[d];
    }
  }
}

// pack_panel for the kernels' nt (micro_kernel.hpp), a compile-time constant where it is one.
template <typename Scalar>
void pack_panel(int nt, const Scalar* first_column, index ld, int n, index kc, Scalar* out) {
  switch (nt) {
    case 4:
      return pack_panel<4>(first_column, ld, n, kc, out);
    case 6:
      return pack_panel<6>(first_column, ld, n, kc, out);
    case 8:
      return pack_panel<8>(first_column, ld, n, kc, out);
    default:
      for (index d = 0; d < kc; ++d) {
        for (int t = 0; t < nt; ++t) out[d * nt + t] = t < n ? first_column[t * ld + d] : Scalar(0);
      }
  }
}

// Packs token block c's depth block k, panels [j0, j1), of in (depth x T, column-major).
template <typename Scalar>
void pack_tokens(const gemm::packed_weights& w, const token_layout& tokens, const Scalar* in, index ld_in, index c,
                 index k, index j0, index j1, Scalar* packed) {
  const int nt = tokens.nt();
  const index d0 = w.depth_start(k), kc = w.depth_size(k), n = tokens.size(c);
  j1 = std::min(j1, tokens.panels(c));
  for (index j = j0; j < j1; ++j) {
    Scalar* out = packed + tokens.packed_offset(w.depth(), c, d0, kc, j);
    const Scalar* first = in + (tokens.first(c) + j * nt) * ld_in + d0;
    pack_panel(nt, first, ld_in, int(std::min<index>(nt, n - j * nt)), kc, out);
  }
}

// Writes values[0, rows) (each times `factor`: exact when it is 1) as rows [i, i + rows)
// of input column t of the product with weights w, where its packed input keeps them: a run
// per depth block, nt values apart. So a pass that produces a product's input (a norm, the
// previous product's finished tiles, a mixture's weighed input) writes it packed, and the
// product needs no packing round of its own.
template <typename Scalar>
void pack_column(const gemm::packed_weights& w, const token_layout& tokens, const Scalar* values, index i, index rows,
                 index t, Scalar* packed, Scalar factor = Scalar(1)) {
  const int nt = tokens.nt();
  const index c = tokens.block_of(t), in_block = t - tokens.first(c), j = in_block / nt, lane = in_block % nt;
  for (index d = i; d < i + rows;) {
    const index k = w.depth_block_of(d), d0 = w.depth_start(k), end = std::min(i + rows, d0 + w.depth_size(k));
    Scalar* out = packed + tokens.packed_offset(w.depth(), c, d0, w.depth_size(k), j) + (d - d0) * nt + lane;
    for (; d < end; ++d, out += nt) *out = values[d - i] * factor;
  }
}

// Columns [first, last) of a depth x T matrix (`values`, columns ld apart) where the packed
// input of the product with weights w keeps them: what pack_column does column by column,
// but each panel's columns together, row by row (pack_tile's order), so that the stores run
// through each depth block's run once, in order, rather than once a column, each storing
// every nt-th value (TinyLlama's RMSNorm pass, which packs 2048 values a token, took 4-5x
// as long a value as BERT-base's packing of its input). Only the columns' lanes are written:
// a panel's other tokens may be another thread's.
template <typename Scalar>
void pack_columns(const gemm::packed_weights& w, const token_layout& tokens, const Scalar* values, index ld,
                  index first, index last, Scalar* packed) {
  const int nt = tokens.nt();
  for (index t = first; t < last;) {
    const index c = tokens.block_of(t), in_block = t - tokens.first(c), j = in_block / nt, lane = in_block % nt;
    const index n = std::min(last - t, index(nt) - lane);
    for (index k = 0; k < w.depth_blocks(); ++k) {
      const index d0 = w.depth_start(k), kc = w.depth_size(k);
      Scalar* out = packed + tokens.packed_offset(w.depth(), c, d0, kc, j) + lane;
      const Scalar* in = values + t * ld + d0;
      if (n == nt) {
        pack_panel(nt, in, ld, nt, kc, out);
      } else {
        for (index d = 0; d < kc; ++d, out += nt) {
          for (index l = 0; l < n; ++l) out[l] = in[l * ld + d];
        }
      }
    }
    t += n;
  }
}

// Slice `slice` of `slices` of a range of `bytes` bytes, in whole 64-byte lines: the
// slices cover the range's whole lines once, in order.
struct byte_range {
  std::ptrdiff_t from, to;
};
inline byte_range line_slice(std::ptrdiff_t bytes, index slices, index slice) {
  const std::ptrdiff_t lines = bytes / 64;
  return {lines * slice / slices * 64, lines * (slice + 1) / slices * 64};
}

// What one product writes: the tiles of `out`, each starting from `init` (null: zero).
template <typename Scalar>
struct product_output {
  const weights<Scalar>* w;
  matrix_ref<Scalar> out;
  matrix_ref<const Scalar> init;
};

// What one task computes: token block c's panels of rows [p0, p1) (mv rows each, counted
// over the whole matrix: row blocks hold mc / mv of them) for its panels of tokens [j0, j1).
struct tile_task {
  index c, p0, p1, j0, j1;
  index first_row(const gemm::packed_weights& w) const { return p0 * w.mv(); }
  index rows(const gemm::packed_weights& w) const { return std::min(w.rows(), p1 * w.mv()) - first_row(w); }
};

// One task's tiles: token block c, panels of rows [p0, p1), panels of tokens [j0, j1), of
// every output in `outputs` (products of the same shape from the same packed input, such
// as the gated block's gate and up). The loops run as BLIS's do: for each depth block,
// for each row block (its weights, mc x kc, stay in L2), for each panel of nt tokens
// (kc x nt, in L1), every panel of mv rows. finish(i, rows, t, n) runs after a row
// block's panel of tokens is done, while it is in L1.
//
// Weights in a block format are read by their own kernel when the task has one panel of
// tokens (decoding: each weight is used once, widened in registers); with more, each row
// block's depth block is widened to float once, into `widened` (widened_size floats),
// and read by the float kernel by every panel of tokens, so that prefill costs what float
// weights do. Both compute the float kernel's bits on the widened weights.
template <typename Scalar, int Outputs, typename Finish>
void multiply_tiles(const product_output<Scalar> (&outputs)[Outputs], const token_layout& tokens, const Scalar* packed,
                    Scalar* widened, const tile_task& task, const Finish& finish) {
  const gemm::packed_weights& w = outputs[0].w->packed;
  const int nt = tokens.nt(), mv = w.mv();
  // The row blocks the task's panels of rows meet, and in each the panels it computes: a
  // task may start or end inside a row block, so that tasks can be of equal size.
  const index block_panels = w.mc() / mv, r0 = task.p0 / block_panels, r1 = (task.p1 + block_panels - 1) / block_panels;
  const auto first_panel = [&](index r) { return std::max<index>(0, task.p0 - r * block_panels); };
  const auto end_panel = [&](index r) { return std::min(w.panels(r), task.p1 - r * block_panels); };
  const index c = task.c, first = tokens.first(c), n = tokens.size(c);
  const index token_panels = task.j1 - task.j0;
  // One panel of tokens (decoding) reuses no weights: then the row blocks go outside the
  // depth blocks, so that the weights are read in the order they lie in memory, one
  // stream the prefetchers follow. Either order computes each tile by the same calls.
  const bool streaming = token_panels == 1;
  const bool widen = outputs[0].w->widen && !streaming;
  const index widened_stride = w.mc() * w.kc();
  const index depth_blocks = w.depth_blocks(), outer = streaming ? r1 - r0 : depth_blocks,
              inner = streaming ? depth_blocks : r1 - r0;
  for (index u = 0; u < outer; ++u) {
    for (index v = 0; v < inner; ++v) {
      const index k = streaming ? v : u, r = r0 + (streaming ? u : v);
      const index kc = w.depth_size(k);
      if (widen) {
        if constexpr (std::is_same<Scalar, float>::value) {
          for (int o = 0; o < Outputs; ++o) {
            for (index p = first_panel(r); p < end_panel(r); ++p) {
              outputs[o].w->widen(outputs[o].w->packed.panel(r, k, p), kc, widened + o * widened_stride + p * mv * kc);
            }
          }
        }
      }
      // With several panels of tokens, each row block's weights come from memory for the
      // first panel and from L2 for the others: the first took three times as long as the
      // others (TinyLlama's gated block at T = 128: 11% of the call). So the tiles of the
      // later panels fetch the weights the task reads next (depth block k's next row block,
      // or the next depth block's first) into L2, a slice a tile, spread over its depth
      // steps (gemm::tile::fetch): as much as L2 holds beside the row block's own weights
      // (all of it with a 1 MB L2; a 512 KB one, as Zen 3's, takes a third of a gated
      // block's next f32 row block).
      const char* next_weights[Outputs] = {};
      std::ptrdiff_t next_bytes[Outputs] = {};
      if (!streaming) {
        const bool last_row_block = r + 1 == r1;
        const index next_k = last_row_block ? k + 1 : k, next_r = last_row_block ? r0 : r + 1;
        // Where the task's panels of row block r2 at depth block k2 of output o start, and their bytes.
        const auto task_panels = [&](int o, index r2, index k2) {
          const gemm::packed_weights& packed_o = outputs[o].w->packed;
          const char* begin = static_cast<const char*>(packed_o.panel(r2, k2, first_panel(r2)));
          return std::make_pair(begin, static_cast<const char*>(packed_o.panel(r2, k2, end_panel(r2))) - begin);
        };
        if (next_k < depth_blocks) {
          std::ptrdiff_t room = gemm::l2_cache_bytes();
          for (int o = 0; o < Outputs; ++o) room -= task_panels(o, r, k).second;
          for (int o = 0; o < Outputs && room > 0; ++o) {
            const auto next = task_panels(o, next_r, next_k);
            next_weights[o] = next.first;
            next_bytes[o] = std::min(room / Outputs, next.second);
          }
        }
      }
      for (index j = task.j0; j < task.j1; ++j) {
        const Scalar* b = packed + tokens.packed_offset(w.depth(), c, w.depth_start(k), kc, j);
        const index t = first + j * nt;
        const int tile_tokens = int(std::min<index>(nt, n - j * nt));
        // The row block's tiles, panel by panel and each panel's outputs in turn; at one
        // token two at a time (the pair kernel: the same bits, twice the independent sums).
        const index p0 = first_panel(r), tiles = (end_panel(r) - p0) * Outputs;
        const auto tile_at = [&](index q) {
          const index p = p0 + q / Outputs, i = w.row_start(r) + p * mv;
          const product_output<Scalar>& o = outputs[q % Outputs];
          Scalar* tile = o.out.at(i, t);
          const Scalar* src = k > 0 ? tile : o.init.data ? o.init.at(i, t) : nullptr;
          const index ld_src = k > 0 ? o.out.ld : o.init.ld;
          const void* panel = widen ? static_cast<const void*>(widened + (q % Outputs) * widened_stride + p * mv * kc)
                                    : o.w->packed.panel(r, k, p);
          gemm::tile<Scalar> tile_q{
              kc, panel, b, tile, o.out.ld, src, ld_src, int(std::min<index>(mv, w.rows() - i)), tile_tokens};
          if (j > task.j0 && next_weights[q % Outputs]) {
            const index per_panel = tiles / Outputs;  // this output's tiles in a panel of tokens
            const byte_range slice = line_slice(next_bytes[q % Outputs], (token_panels - 1) * per_panel,
                                                (j - task.j0 - 1) * per_panel + q / Outputs);
            tile_q.fetch = next_weights[q % Outputs] + slice.from;
            tile_q.fetch_bytes = slice.to - slice.from;
          }
          return tile_q;
        };
        const gemm::kernel<Scalar>& kernel = widen ? outputs[0].w->widened_kernel : outputs[0].w->kernel;
        const bool pairs = tile_tokens == 1 && kernel.run_pair;
        for (index q = 0; q < tiles;) {
          if (pairs && q + 1 < tiles) {
            kernel.run_pair(tile_at(q), tile_at(q + 1));
            q += 2;
          } else {
            kernel.run(tile_at(q));
            q += 1;
          }
        }
        if (k + 1 == w.depth_blocks()) {
          const index i = w.row_start(r) + p0 * mv;
          finish(i, std::min(w.rows(), w.row_start(r) + end_panel(r) * mv) - i, t, index(tile_tokens));
        }
      }
    }
  }
}

// The grid of tasks for a product on `threads` threads: as few tasks as share the work
// evenly, since a task re-reads the packed input its rows meet and, measured, more and
// smaller tasks cost more than the imbalance they save (below). When the token blocks have
// as many panels of tokens each and are a multiple of the threads in number, a task is a
// whole token block; otherwise each token block's panels of rows are cut into `threads`
// ranges of equal size (within a panel), and when there are too few of those, its panels
// of tokens too. A tile's kernel calls are the same whichever task computes it, so the
// grid may depend on the number of threads and the results do not.
//
// (Four tasks a thread, claimed by whichever thread was free, were meant to let threads
// finish close together; on two threads each was idle 6-9% of a call at T >= 32, and one
// task a thread made both blocks 3-7% faster at T = 1 to 512, every point, calls of the two
// grids interleaved: docs/DESIGN.md, "Tiles".)
class task_grid {
 public:
  task_grid(const gemm::packed_weights& w, const token_layout& tokens, int threads)
      : tokens_(tokens), token_blocks_(tokens.blocks()), row_panels_((w.rows() + w.mv() - 1) / w.mv()), mv_(w.mv()) {
    if (threads > 1) {
      // (The last block may be short of a whole panel of tokens: as many tiles, as much work.)
      const bool whole_blocks = token_blocks_ % threads == 0 && tokens.panels(token_blocks_ - 1) == tokens.panels(0);
      const index wanted = whole_blocks ? 1 : threads;  // tasks per token block
      row_parts_ = std::min(row_panels_, wanted);
      panel_parts_ = std::min(tokens.panels(0), (wanted + row_parts_ - 1) / row_parts_);
    }
  }
  // The grid of a call's product: cut for as many of the runner's threads as its work is
  // worth (task_runner::threads_for). Only for products whose tasks need no per-slot
  // scratch sized by the grid: any of the call's threads may run a task.
  task_grid(const gemm::packed_weights& w, const token_layout& tokens, const task_runner& runner)
      : task_grid(w, tokens, runner.threads_for(double(w.rows()) * double(w.depth()) * double(tokens.tokens()))) {}
  int tasks() const { return int(token_blocks_ * row_parts_ * panel_parts_); }
  tile_task task(int k) const {
    const index per_block = row_parts_ * panel_parts_, c = k / per_block, rest = k % per_block;
    const index rp = rest / panel_parts_, pp = rest % panel_parts_, panels = tokens_.panels(c);
    return tile_task{c, row_panels_ * rp / row_parts_, row_panels_ * (rp + 1) / row_parts_, panels * pp / panel_parts_,
                     panels * (pp + 1) / panel_parts_};
  }
  // The most rows and tokens one task computes (a scratch tile's size).
  index rows_per_task(const gemm::packed_weights& w) const {
    return std::min(w.rows(), (row_panels_ + row_parts_ - 1) / row_parts_ * mv_);
  }
  index tokens_per_task() const {
    return std::min(tokens_.size(0), (tokens_.panels(0) + panel_parts_ - 1) / panel_parts_ * tokens_.nt());
  }

 private:
  token_layout tokens_;
  index token_blocks_, row_panels_, mv_, row_parts_ = 1, panel_parts_ = 1;
};

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_PRODUCTS_HPP
