// The blocks' per-token normalisations over the columns [first, last) of d x T matrices.
#ifndef EGELU_SRC_BLOCKS_NORMS_HPP
#define EGELU_SRC_BLOCKS_NORMS_HPP

#include <Eigen/Core>
#include <cmath>

namespace egelu {
namespace blocks {

// out = (in + bias - mean) / sqrt(variance + eps) * gamma + beta, per column: PyTorch's
// nn.LayerNorm, after the residual's bias when there is one (bias may be null; out may
// be in).
template <typename In, typename Out, typename Vector>
void layer_norm(const In& in, Out& out, Eigen::Index first, Eigen::Index last, const Vector* bias, const Vector& gamma,
                const Vector& beta, typename Vector::Scalar eps) {
  using Scalar = typename Vector::Scalar;
  const Scalar inv_d = Scalar(1) / Scalar(in.rows());
  for (Eigen::Index t = first; t < last; ++t) {
    auto column = out.col(t).array();
    if (bias) {
      column = in.col(t).array() + bias->array();
    } else {
      column = in.col(t).array();
    }
    const Scalar mean = column.sum() * inv_d;
    column -= mean;
    const Scalar variance = column.square().sum() * inv_d;
    column = column * (gamma.array() / std::sqrt(variance + eps)) + beta.array();
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
    const Scalar inverse_root = Scalar(1) / std::sqrt(x.col(t).squaredNorm() * inv_d + eps);
    out.col(t).array() = (x.col(t).array() * inverse_root) * weight.array();
  }
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_NORMS_HPP
