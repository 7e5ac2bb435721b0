// The contract between the blocks' products and the micro-kernels that compute them.
//
// A product is out = W in: W the weights (rows x depth), packed once when a block is
// made; in the tokens (depth x T, one token a column). A micro-kernel computes one tile
// of out -- mv rows (its vector registers' lanes) by up to nt tokens -- over one depth
// block, from
//   - a weight panel: the depth block's k steps, each the mv weights of the panel's rows
//     at that depth (rows past the matrix's last are zero), in the stored type (a block
//     format's in groups of 32 steps, block_formats.hpp);
//   - a token panel: the same k steps, each the nt tokens' values at that depth (tokens
//     past the last are zero);
// and stores c = src + W in (or c = W in without src). src is the tile's starting value:
// c itself to accumulate depth blocks, the residual, or a bias with ld_src = 0 (one
// column for every token). Only the tile's m rows and n tokens are read and written.
//
// Each ISA has one file of kernels (kernels_<isa>.cpp), compiled with that ISA's flags
// and no Eigen, and the library picks the best set the CPU has when it is first used
// (dispatch.cpp): one portable library runs AVX-512, AVX2 + FMA or SSE2 kernels, as MLAS
// and BLIS do. Everything else -- packing, the tile grid, the threads, the epilogues --
// is generic code that knows a kernel only by its mv and nt.
#ifndef EGELU_SRC_GEMM_MICRO_KERNEL_HPP
#define EGELU_SRC_GEMM_MICRO_KERNEL_HPP

#include <cstddef>
#include <cstdint>  // (these three for tile_kernel_body.inc, included inside a namespace)
#include <cstring>
#include <type_traits>

#include "stored_types.hpp"

namespace egelu {
namespace gemm {

using index = std::ptrdiff_t;

template <typename Scalar>
struct tile {
  index k;            // depth steps
  const void* a;      // the weight panel: k x mv, in the stored type
  const Scalar* b;    // the token panel: k x nt
  Scalar* c;          // the tile: m x n, column-major
  index ldc;          //
  const Scalar* src;  // c = src + a b (src may be c), or c = a b when null
  index ld_src;       // 0: src is one column, added to every token
  int m, n;           // rows (<= mv) and tokens (<= nt) of the tile
  // Bytes to fetch into L2 while the tile computes, spread over its depth steps, at most a
  // line a step (the next row block's weights at prefill: docs/DESIGN.md, "Loops and
  // blocking"); none if null. The float kernels with more than one token read it; the
  // others (one token, the integer kernels) ignore it.
  const void* fetch = nullptr;
  index fetch_bytes = 0;
};

template <typename Scalar>
using tile_function = void (*)(const tile<Scalar>&);
template <typename Scalar>
using tile_pair_function = void (*)(const tile<Scalar>&, const tile<Scalar>&);

// One kernel: its tile shape and its functions. run_pair computes two tiles of one token
// (n = 1) with the same depth and token panel (k and b) side by side, each to the bits run
// gives it: at one token a tile's sums are mv / lanes chains of dependent multiply-adds,
// and two tiles give the core twice as many to overlap (decoding with block formats,
// whose weights take more work to widen than the multiply-add that uses them), and two
// streams of weights from memory where one left the integer kernels at 0.7 of a read.
template <typename Scalar>
struct kernel {
  int mv = 0, nt = 0;
  tile_function<Scalar> run = nullptr;
  tile_pair_function<Scalar> run_pair = nullptr;
  // Whether it reads panels with their steps in pairs (packed_weights' paired_steps): the
  // AVX-512 bfloat16 kernel (tile_kernel_body.inc, bf16_pairs) and the Q8_0 integer kernels.
  bool paired_steps = false;
};

// A panel of a block format (k depth steps, a whole number of groups) widened to a float
// panel of the same rows: each weight q d, exactly (block_formats.hpp).
using widen_function = void (*)(const void* panel, index k, float* out);

// The kernels of a block format: one that reads its panels (a single panel of tokens, as
// decoding: the weights stream through once and are widened in registers), and one that
// widens a panel to float, for products that reuse each weight over several panels of
// tokens (they run the float kernel on the widened panels). Both give the float kernel's
// bits on the widened weights. The third, `integer`, reads the same panels with a token
// panel of quantized inputs (quantized_inputs.hpp) in place of floats: integer sums over
// each group of 32 steps, scaled and added in float, the same bits on every set with FMA.
// Quantizes a token panel of k steps (a whole number of groups of 32) by nt tokens in place,
// its first n tokens, for the integer kernels (quantized_inputs.hpp's quantize_input_panel,
// the specification; a set may carry a vectorized one giving the same words).
using input_quantizer = void (*)(float* panel, index k, int nt, int n);

struct block_kernel {
  kernel<float> direct;
  widen_function widen = nullptr;
  kernel<float> integer;
};

// An ISA's kernels: float tokens with float, bfloat16, half, Q8_0, Q4_0 or MXFP4 weights,
// and double. The block formats' kernels have the float kernel's mv and nt; MXFP4 has no
// integer kernel (q16_0 inputs read Q8_0 and Q4_0 only).
struct kernel_set {
  const char* isa;
  kernel<float> f32, bf16, f16;
  kernel<double> f64;
  block_kernel q8_0, q4_0, mxfp4;
  input_quantizer quantize_inputs = nullptr;  // null: quantized_inputs.hpp's
};

// No inline functions in this header: the per-ISA files include it (stored_types.hpp).
// The set's float kernel for weights stored as s (f32, bf16 or f16; a block format's direct kernel).
const kernel<float>& float_kernel(const kernel_set& set, stored s);
// The set's kernels of block format s (q8_0, q4_0 or mxfp4; std::invalid_argument for another type).
const block_kernel& block_kernel_of(const kernel_set& set, stored s);

// The sets compiled into the library, by ISA name; null where the build has none.
const kernel_set* sse2_kernels();
const kernel_set* avx2_kernels();
const kernel_set* avx512_kernels();
const kernel_set* avx512_vnni_kernels();  // avx512's, with AVX512-VNNI's integer kernels
const kernel_set* neon_kernels();
const kernel_set& portable_kernels();  // plain C++: the fallback, and the reference's shape

// Whether this CPU runs the set (cpuid on x86).
bool cpu_has(const kernel_set& set);

// The core's L2 cache in bytes (the OS's figure, read once; 512 KB where it gives none):
// how much of the next row block's weights a product fetches ahead, and whether a block's
// call runs in chunks of tokens (blocks/products.hpp, token_chunks).
std::ptrdiff_t l2_cache_bytes();

// The last-level (L3) cache in bytes as the OS gives it, read once, at most one core
// complex's where each core reaches only its own complex's L3 (llc_bytes_to_count_on); 0
// where the OS gives none (blocks/products.hpp: whether a block's weights stay in it, for
// token_sharing_threads and token_chunks).
std::ptrdiff_t llc_bytes();

// The last-level cache a core can count on, of `reported` bytes: at most
// llc_complex_bytes where the CPU's L3 is one per core complex (AMD's Zen: up to 96 MB a
// complex, with 3D V-Cache), the report elsewhere (an Intel Xeon's L3 serves the whole
// socket). A VM's cpuid may report its host socket's whole L3: 508 MB on a 2-vCPU AMD EPYC
// Zen 5 VM, whose cores reach one complex's 32 MB; taken at its word, it made TinyLlama's
// gated block in f32 (138 MB) share its tokens between two threads, each then streaming all
// the weights from memory (docs/DESIGN.md, "Tokens shared between threads").
constexpr std::ptrdiff_t llc_complex_bytes = std::ptrdiff_t(96) << 20;
std::ptrdiff_t llc_bytes_to_count_on(std::ptrdiff_t reported, bool per_core_complex);

// The set the blocks use: the best this CPU has, or the one EGELU_ISA names (sse2, avx2,
// avx512, avx512_vnni, neon, portable) when the CPU has it. Chosen once, at the first call.
const kernel_set& selected_kernels();

}  // namespace gemm
}  // namespace egelu

#endif  // EGELU_SRC_GEMM_MICRO_KERNEL_HPP
