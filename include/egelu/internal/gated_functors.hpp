// act(gate) * up as a binary functor: the gated linear units of the feed-forward
// blocks of LLaMA, Mistral and Qwen (SwiGLU, act = silu) and of Gemma and T5 v1.1
// (GeGLU, act = gelu in its tanh form). The activation's own functor does the work,
// so lanes and the scalar tail agree as they do for it.
#ifndef EGELU_INTERNAL_GATED_FUNCTORS_HPP
#define EGELU_INTERNAL_GATED_FUNCTORS_HPP

#include "functors.hpp"

namespace egelu {

/// Binary functor act(gate) * up for an activation functor: a gated linear unit.
///
/// For `gate.binaryExpr(up, op)` on dense or Tensor expressions (egelu::swiglu(), egelu::geglu() and
/// egelu::geglu_exact() name its instances). The activation's own functor does the work, so the lanes
/// of a vectorized loop and its scalar tail agree as they do for it, and the accuracy is the
/// activation's followed by one rounded product.
/// @tparam Activation an egelu activation functor: silu_op, gelu_tanh_op, gelu_erf_op, swish_op, ...
template <typename Activation>
struct gated_op : Activation {
  /// With a default-constructed activation (every one but swish_op).
  gated_op() = default;
  /// With a copy of `activation`, for a functor that holds state (swish_op and its alpha).
  explicit gated_op(const Activation& activation) : Activation(activation) {}

  /// act(gate) * up for one coefficient.
  template <typename Scalar>
  EIGEN_STRONG_INLINE Scalar operator()(const Scalar& gate, const Scalar& up) const {
    return Activation::operator()(gate) * up;
  }
  /// act(gate) * up for a packet (Eigen calls it on vectorized paths).
  template <typename Packet>
  EIGEN_STRONG_INLINE Packet packetOp(const Packet& gate, const Packet& up) const {
    return Eigen::internal::pmul(Activation::packetOp(gate), up);
  }
};

/// Functor for SwiGLU: silu(gate) * up (LLaMA, Mistral, Qwen).
template <typename Scalar>
using swiglu_op = gated_op<silu_op<Scalar>>;

/// Functor for GeGLU: gelu(gate) * up with the tanh form (Gemma's gelu_pytorch_tanh, T5's gelu_new).
template <typename Scalar>
using geglu_op = gated_op<gelu_tanh_op<Scalar>>;

/// Functor for GeGLU with the exact GELU: gelu_exact(gate) * up.
template <typename Scalar>
using geglu_exact_op = gated_op<gelu_erf_op<Scalar>>;

}  // namespace egelu

namespace Eigen {
namespace internal {

template <typename Activation>
struct functor_traits<egelu::gated_op<Activation>> {
  using Scalar = typename egelu::internal::kernel_scalar<Activation>::type;
  enum {
    Cost = functor_traits<Activation>::Cost + NumTraits<Scalar>::MulCost,
    PacketAccess = functor_traits<Activation>::PacketAccess && packet_traits<Scalar>::HasMul
  };
};

}  // namespace internal
}  // namespace Eigen

#endif  // EGELU_INTERNAL_GATED_FUNCTORS_HPP
