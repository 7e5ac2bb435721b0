// The blocks' per-token normalisations over the columns [first, last) of d x T matrices.
#ifndef EGELU_SRC_BLOCKS_NORMS_HPP
#define EGELU_SRC_BLOCKS_NORMS_HPP

#include <Eigen/Core>
#include <cmath>
#include <cstddef>
#include <egelu/gated_feed_forward.hpp>

namespace egelu {
namespace blocks {

// The sum of f(v[i]) over a column, in one order whatever the build's SIMD flags: sixteen
// partial sums (lane j takes i = j mod 16), then added pairwise (j and j + 8, then + 4, + 2,
// + 1), then the tail in order. Eigen's sum() follows the packet size (4, 8 or 16 floats)
// and so gave each build its own last bits; this order is what test_block_bits holds every
// build and kernel set to. Sixteen independent sums still vectorize (no reassociation is
// needed), and a norm is a few hundred additions against the products' millions.
template <typename Column, typename F>
typename Column::Scalar fixed_order_sum(const Column& v, F f) {
  using Scalar = typename Column::Scalar;
  constexpr Eigen::Index lanes = 16;
  Scalar partial[lanes] = {};
  const Eigen::Index n = v.size(), whole = n - n % lanes;
  for (Eigen::Index i = 0; i < whole; i += lanes) {
    for (Eigen::Index j = 0; j < lanes; ++j) partial[j] += f(v.coeff(i + j));
  }
  for (Eigen::Index width = lanes / 2; width >= 1; width /= 2) {
    for (Eigen::Index j = 0; j < width; ++j) partial[j] += partial[j + width];
  }
  Scalar sum = partial[0];
  for (Eigen::Index i = whole; i < n; ++i) sum += f(v.coeff(i));
  return sum;
}

// out = (in + bias - mean) / sqrt(variance + eps) * gamma + beta, per column: PyTorch's
// nn.LayerNorm, after the residual's bias when there is one (bias may be null; out may
// be in). beta may be null too (a LayerNorm without bias: ModernBERT, Cohere, OLMo), which
// adds nothing, as CohereLayerNorm's arithmetic does (PyTorch's layer_norm kernel adds 0,
// making a -0 +0: the products after the norm give the same sums either way).
template <typename In, typename Out, typename Vector>
void layer_norm(const In& in, Out& out, Eigen::Index first, Eigen::Index last, const Vector* bias, const Vector& gamma,
                const Vector* beta, typename Vector::Scalar eps) {
  using Scalar = typename Vector::Scalar;
  const Scalar inv_d = Scalar(1) / Scalar(in.rows());
  for (Eigen::Index t = first; t < last; ++t) {
    auto column = out.col(t).array();
    if (bias) {
      column = in.col(t).array() + bias->array();
    } else {
      column = in.col(t).array();
    }
    const Scalar mean = fixed_order_sum(out.col(t), [](Scalar v) { return v; }) * inv_d;
    column -= mean;
    const Scalar variance = fixed_order_sum(out.col(t), [](Scalar v) { return v * v; }) * inv_d;
    column = column * (gamma.array() / std::sqrt(variance + eps));
    if (beta) column += beta->array();
  }
}

// out = x / sqrt(mean(x^2) + eps) * weight, per column: LLaMA's RMSNorm, as Hugging Face's
// LlamaRMSNorm orders it (x times the reciprocal root, then the weight).
template <typename In, typename Out, typename Vector>
void rms_norm(const In& x, Out& out, Eigen::Index first, Eigen::Index last, const Vector& weight,
              typename Vector::Scalar eps) {
  using Scalar = typename Vector::Scalar;
  const Scalar inv_d = Scalar(1) / Scalar(x.rows());
  for (Eigen::Index t = first; t < last; ++t) {
    const Scalar sum_of_squares = fixed_order_sum(x.col(t), [](Scalar v) { return v * v; });
    const Scalar inverse_root = Scalar(1) / std::sqrt(sum_of_squares * inv_d + eps);
    out.col(t).array() = (x.col(t).array() * inverse_root) * weight.array();
  }
}

// N(x) before a gated MLP or a mixture of experts, as `kind` says: RMSNorm, LayerNorm with
// weight `weight` and bias `bias` (an empty vector: none), or none (a copy: x may have an
// outer stride of its own, n has d).
template <typename In, typename Out, typename Vector>
void norm_before(GatedNorm kind, const In& x, Out& n, Eigen::Index first, Eigen::Index last, const Vector& weight,
                 const Vector& bias, typename Vector::Scalar eps) {
  switch (kind) {
    case GatedNorm::rms:
      rms_norm(x, n, first, last, weight, eps);
      break;
    case GatedNorm::layer:
      layer_norm(x, n, first, last, static_cast<const Vector*>(nullptr), weight, bias.size() ? &bias : nullptr, eps);
      break;
    case GatedNorm::none:
      n.middleCols(first, last - first) = x.middleCols(first, last - first);
      break;
  }
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_NORMS_HPP
