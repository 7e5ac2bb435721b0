// What both blocks do with their weights when they are made: check the format against
// the block's scalar, pack each matrix for the kernels this CPU runs (from an Eigen
// matrix or a checkpoint's tensor in place), and name the matrix when a value does not
// fit. Shared so that a block is its passes and nothing else.
#ifndef EGELU_SRC_BLOCKS_WEIGHTS_HPP
#define EGELU_SRC_BLOCKS_WEIGHTS_HPP

#include <cmath>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/weight_format.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "blocks/products.hpp"
#include "checkpoints/hf_checkpoint.hpp"
#include "gemm/quantized_inputs.hpp"

namespace egelu {
namespace blocks {

inline gemm::stored stored_of(WeightFormat f) {
  switch (f) {
    case WeightFormat::f32:
      return gemm::stored::f32;
    case WeightFormat::bf16:
      return gemm::stored::bf16;
    case WeightFormat::f16:
      return gemm::stored::f16;
    case WeightFormat::f64:
      return gemm::stored::f64;
    case WeightFormat::q8_0:
      return gemm::stored::q8_0;
    case WeightFormat::q4_0:
      return gemm::stored::q4_0;
    case WeightFormat::mxfp4:
      return gemm::stored::mxfp4;
  }
  return gemm::stored::f32;
}

inline WeightFormat format_of(gemm::stored s) {
  switch (s) {
    case gemm::stored::f32:
      return WeightFormat::f32;
    case gemm::stored::bf16:
      return WeightFormat::bf16;
    case gemm::stored::f16:
      return WeightFormat::f16;
    case gemm::stored::f64:
      return WeightFormat::f64;
    case gemm::stored::q8_0:
      return WeightFormat::q8_0;
    case gemm::stored::q4_0:
      return WeightFormat::q4_0;
    case gemm::stored::mxfp4:
      return WeightFormat::mxfp4;
    case gemm::stored::f8_e4m3:  // (read, never kept: kept_format)
    case gemm::stored::e2m1:
    case gemm::stored::e8m0:
      return WeightFormat::f32;
  }
  return WeightFormat::f32;
}

// The format a Scalar block can hold: float f32, bf16, f16, q8_0, q4_0 or mxfp4 (widened to
// float in the kernels); double f64 only.
template <typename Scalar>
void check_format(const char* block, WeightFormat f) {
  const bool ok = std::is_same<Scalar, double>::value ? f == WeightFormat::f64 : f != WeightFormat::f64;
  if (!ok) {
    throw std::invalid_argument(std::string(block) + "<" + (std::is_same<Scalar, double>::value ? "double" : "float") +
                                "> cannot hold " + to_string(f) +
                                " weights (float blocks hold f32, bf16, f16, q8_0, q4_0 or mxfp4; double blocks f64)");
  }
}

// Inputs in q16_0 read q8_0 or q4_0 weights only (the integer kernels); refused by name otherwise.
inline void check_inputs(const char* block, WeightFormat weights, InputFormat inputs) {
  if (inputs == InputFormat::q16_0 && weights != WeightFormat::q8_0 && weights != WeightFormat::q4_0) {
    throw std::invalid_argument(
        std::string(block) + ": q16_0 inputs need q8_0 or q4_0 weights (integer products), not " + to_string(weights));
  }
}

// The format of a Scalar's own precision: f32 for float, f64 for double (a router's).
template <typename Scalar>
constexpr WeightFormat own_format() {
  return std::is_same<Scalar, double>::value ? WeightFormat::f64 : WeightFormat::f32;
}

// from_pretrained(path, layer)'s "keep the checkpoint's precision", apart from every
// WeightFormat a caller can name.
constexpr WeightFormat checkpoint_format = WeightFormat(-1);

// "model.safetensors: tensor 'model.layers.0.mlp.up_proj.weight'", for messages.
inline std::string tensor_name(const hf::tensor_ref& t) { return t.name(); }

// The format a checkpoint's tensor keeps in a Scalar block: BF16 and F16 stay 16-bit and
// MXFP4 stays MXFP4 in a float block, F32, F64 and FP8 become f32; a double block holds f64.
template <typename Scalar>
WeightFormat kept_format(const hf::tensor_ref& t) {
  if (std::is_same<Scalar, double>::value) return WeightFormat::f64;
  const gemm::stored s = t.matrix().type;
  // Double weights, and FP8 codes times their scales (not exact in 16 bits), kept in float; MXFP4
  // as MXFP4 (its values exactly: block_formats.hpp).
  if (s == gemm::stored::e2m1) return WeightFormat::mxfp4;
  return s == gemm::stored::f64 || s == gemm::stored::f8_e4m3 ? WeightFormat::f32 : format_of(s);
}

// Row blocks of 192 rows (a multiple of every kernel's mv), so that threads share a
// product even at one token, and depth blocks of 256: a row block's weights (192 KB in
// float) stay in L2 while a panel of tokens (256 x nt) stays in L1. Measured on Zen 5
// (AVX-512), depth blocks of 128 and 512 and row blocks of 96 were no better.
inline gemm::blocking default_blocking() { return gemm::blocking{256, 192}; }

// source packed in format f for this CPU's kernels, read by products whose inputs are in
// format `inputs` (q16_0: a block format's integer kernel, checked by check_inputs);
// `name` names it when a value does not fit a 16-bit format or a block format's scale, or
// its shape a block format.
template <typename Scalar>
weights<Scalar> pack(const gemm::matrix_view& source, WeightFormat f, const std::string& name,
                     InputFormat inputs = InputFormat::f32) {
  const gemm::kernel_set& set = gemm::selected_kernels();
  weights<Scalar> w;
  if constexpr (std::is_same<Scalar, double>::value) {
    w.kernel = set.f64;
  } else if (inputs == InputFormat::q16_0) {
    w.kernel = gemm::block_kernel_of(set, stored_of(f)).integer;  // (check_inputs: q8_0 or q4_0)
    w.quantize_inputs = set.quantize_inputs ? set.quantize_inputs : &gemm::quantize_input_panel;
  } else {
    w.kernel = gemm::float_kernel(set, stored_of(f));
    if (gemm::is_block_format(stored_of(f))) {
      w.widen = gemm::block_kernel_of(set, stored_of(f)).widen;
      w.widened_kernel = set.f32;
    }
  }
  try {
    w.packed = gemm::packed_weights(source, stored_of(f), w.kernel.mv, default_blocking(), w.kernel.paired_steps);
  } catch (const gemm::out_of_range& e) {
    throw std::invalid_argument(name + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + e.what());
  }
  return w;
}

// A row-major Eigen matrix (nn.Linear's layout) as a view to pack.
template <typename Scalar, typename Matrix>
gemm::matrix_view view_of(const Matrix& m) {
  return gemm::matrix_view{m.data(),        std::is_same<Scalar, double>::value ? gemm::stored::f64 : gemm::stored::f32,
                           m.rows(),        m.cols(),
                           m.outerStride(), 1};
}

// A checkpoint's vector in Scalar.
template <typename Vector>
Vector vector_of(const hf::tensor_ref& t) {
  Vector v(Eigen::Index(t.tensor->size()));
  t.tensor->copy_to(v.data());
  return v;
}

// A checkpoint's vector viewed as a matrix of one column (one expert's row of a stacked bias,
// gpt-oss's interleaved ones every second value), in Scalar: each value read and rounded once.
template <typename Scalar>
std::vector<Scalar> column_of(const hf::tensor_ref& t) {
  const gemm::matrix_view view = t.matrix();
  std::vector<Scalar> v(std::size_t(view.rows));
  for (gemm::index i = 0; i < view.rows; ++i) v[std::size_t(i)] = Scalar(gemm::detail::value_at(view, i, 0));
  return v;
}

// A checkpoint's RMSNorm weight; plus_one: stored as weight - 1 (Gemma's RMSNorm
// multiplies by 1 + weight, computed in float as GemmaRMSNorm does).
template <typename Vector>
Vector norm_of(const hf::tensor_ref& t, bool plus_one) {
  Vector v = vector_of<Vector>(t);
  if (plus_one) v.array() += typename Vector::Scalar(1);
  return v;
}

// A checkpoint's factor on the MLP's output (Granite's residual_multiplier) in Scalar, which
// must hold it.
template <typename Scalar>
Scalar output_scale_of(const hf::mlp_layer& m) {
  const Scalar scale = Scalar(m.output_scale);
  if (!std::isfinite(scale)) {  // (a factor beyond float's range, in a float block)
    throw std::invalid_argument(m.output_scale_from + " is " + std::to_string(m.output_scale) +
                                ", beyond the range of the block's " + (sizeof(Scalar) == 4 ? "float" : "double"));
  }
  return scale;
}

// The gated block's form for a checkpoint's activation (QuickGELU is refused by the
// reader for gated blocks).
inline GatedForm gated_form(hf::activation a) {
  return a == hf::activation::silu             ? GatedForm::swiglu
         : a == hf::activation::gelu_tanh      ? GatedForm::geglu
         : a == hf::activation::clamped_swiglu ? GatedForm::clamped_swiglu
                                               : GatedForm::geglu_exact;
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_WEIGHTS_HPP
