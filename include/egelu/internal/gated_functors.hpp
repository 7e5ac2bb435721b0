// act(gate) * up as a binary functor: the gated linear units of the feed-forward
// blocks of LLaMA, Mistral and Qwen (SwiGLU, act = silu) and of Gemma and T5 v1.1
// (GeGLU, act = gelu in its tanh form); gpt-oss's clamped form. The activation's own functor does the work,
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

/// Functor for gpt-oss's clamped SwiGLU: quick_gelu(min(gate, 7)) * (clamp(up, -7, 7) + 1).
///
/// For `gate.binaryExpr(up, op)` on dense or Tensor expressions (egelu::clamped_swiglu() names it).
/// GptOssExperts' activation: the gate clamped above and the up clamped on both sides at its
/// swiglu_limit, 7, then glu = gate sigmoid(1.702 gate) (quick_gelu_op, correctly rounded in float on
/// x86 and aarch64) times up + 1. Accuracy: quick_gelu_op's, then the rounded sum up + 1 and the rounded
/// product. Clamping makes every infinity finite: -Inf gates give -0 times the up, never NaN (PyTorch's
/// -inf * sigmoid(-inf) is NaN); a NaN in either stays NaN (the clamps take the value first, and Eigen's
/// pmin and pmax return a NaN first operand on SSE, AVX, AVX-512, NEON and the scalar path, as std::min
/// and std::max do).
/// @tparam Scalar float or double.
template <typename Scalar>
struct clamped_swiglu_op : quick_gelu_op<Scalar> {
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "egelu::clamped_swiglu_op: float or double");
  /// gpt-oss's swiglu_limit.
  static constexpr double limit = 7.0;

  /// The result for one coefficient: the packet code on a scalar, so the lanes and the tail agree.
  EIGEN_STRONG_INLINE Scalar operator()(const Scalar& gate, const Scalar& up) const { return packetOp(gate, up); }
  /// The result for a packet (Eigen calls it on vectorized paths).
  template <typename Packet>
  EIGEN_STRONG_INLINE Packet packetOp(const Packet& gate, const Packet& up) const {
    using Eigen::internal::padd;
    using Eigen::internal::pmax;
    using Eigen::internal::pmin;
    using Eigen::internal::pset1;
    const Packet high = pset1<Packet>(Scalar(limit)), low = pset1<Packet>(Scalar(-limit));
    const Packet glu = quick_gelu_op<Scalar>::packetOp(pmin(gate, high));
    return Eigen::internal::pmul(glu, padd(pmax(pmin(up, high), low), pset1<Packet>(Scalar(1))));
  }
};

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

template <typename Scalar>
struct functor_traits<egelu::clamped_swiglu_op<Scalar>> {
  enum {
    Cost = functor_traits<egelu::quick_gelu_op<Scalar>>::Cost + 4 * NumTraits<Scalar>::AddCost +
           NumTraits<Scalar>::MulCost,  // (three clamps and up + 1; the product)
    PacketAccess = functor_traits<egelu::quick_gelu_op<Scalar>>::PacketAccess && packet_traits<Scalar>::HasMul &&
                   packet_traits<Scalar>::HasMin && packet_traits<Scalar>::HasMax
  };
};
}  // namespace internal
}  // namespace Eigen

#endif  // EGELU_INTERNAL_GATED_FUNCTORS_HPP
