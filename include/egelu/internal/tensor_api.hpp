// egelu's functions on Eigen::Tensor expressions of any rank and layout: lazy,
// shape-preserving, and evaluable on any device (DefaultDevice, ThreadPoolDevice).
// The same names as on dense expressions (dense_api.hpp), built the same way.
#ifndef EGELU_INTERNAL_TENSOR_API_HPP
#define EGELU_INTERNAL_TENSOR_API_HPP

#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "functors.hpp"
#include "gated_functors.hpp"

namespace egelu {
namespace internal {

// The scalar type of a Tensor expression, without the const a map of const data carries
// (Eigen::TensorMap<const Eigen::Tensor<const float, N>> has Scalar const float).
template <typename Derived>
using tensor_scalar = std::remove_const_t<typename Eigen::internal::traits<Derived>::Scalar>;

template <typename Derived>
using tensor_base = Eigen::TensorBase<Derived, Eigen::ReadOnlyAccessors>;

// The dimensions of any Tensor expression, read off a (cheap, non-evaluating) evaluator.
template <typename Derived>
std::vector<Eigen::Index> tensor_dimensions(const Derived& expr) {
  const Eigen::DefaultDevice device;
  const Eigen::TensorEvaluator<const Derived, Eigen::DefaultDevice> evaluator(expr, device);
  const auto& dims = evaluator.dimensions();
  return std::vector<Eigen::Index>(dims.begin(), dims.end());
}

inline std::string shape_string(const std::vector<Eigen::Index>& dims) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << "]";
  return s.str();
}

template <typename A, typename B>
void require_same_tensor_shape(const char* function, const char* a_name, const A& a, const char* b_name, const B& b) {
  const std::vector<Eigen::Index> dims_a = tensor_dimensions(a), dims_b = tensor_dimensions(b);
  if (dims_a != dims_b) {
    throw std::invalid_argument(std::string(function) + ": " + a_name + " is " + shape_string(dims_a) + " but " +
                                b_name + " is " + shape_string(dims_b));
  }
}

template <typename Op, typename Derived>
using tensor_unary = Eigen::TensorCwiseUnaryOp<Op, const Derived>;

// The public functions' return types: const expressions, as Eigen's own.
template <template <typename> class Op, typename Derived>
using tensor_unary_of = const tensor_unary<Op<tensor_scalar<Derived>>, Derived>;

template <typename Op, typename Derived>
EIGEN_STRONG_INLINE tensor_unary<Op, Derived> tensor_apply(const tensor_base<Derived>& x, const Op& op = Op()) {
  return tensor_unary<Op, Derived>(static_cast<const Derived&>(x), op);
}

template <typename GradOp, typename Dy, typename X>
using tensor_backward =
    Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_product_op<tensor_scalar<Dy>, tensor_scalar<X>>, const Dy,
                               const tensor_unary<GradOp, X>>;

// dy * f'(x), after checking that dy and x have the same dimensions.
template <typename GradOp, typename Dy, typename X>
tensor_backward<GradOp, Dy, X> tensor_backward_of(const char* function, const tensor_base<Dy>& dy,
                                                  const tensor_base<X>& x) {
  const Dy& dy_expr = static_cast<const Dy&>(dy);
  require_same_tensor_shape(function, "dy", dy_expr, "x", static_cast<const X&>(x));
  return tensor_backward<GradOp, Dy, X>(dy_expr, tensor_apply<GradOp>(x));
}

template <template <typename> class GradOp, typename Dy, typename X>
using tensor_backward_type = const tensor_backward<GradOp<tensor_scalar<X>>, Dy, X>;

template <typename GatedOp, typename Gate, typename Up>
using tensor_gated = Eigen::TensorCwiseBinaryOp<GatedOp, const Gate, const Up>;

template <template <typename> class GatedOp, typename Gate, typename Up>
using tensor_gated_type = const tensor_gated<GatedOp<tensor_scalar<Gate>>, Gate, Up>;

// act(gate) * up, after checking that gate and up have the same dimensions.
template <typename GatedOp, typename Gate, typename Up>
tensor_gated<GatedOp, Gate, Up> tensor_gated_of(const char* function, const tensor_base<Gate>& gate,
                                                const tensor_base<Up>& up) {
  const Gate& gate_expr = static_cast<const Gate&>(gate);
  const Up& up_expr = static_cast<const Up&>(up);
  require_same_tensor_shape(function, "gate", gate_expr, "up", up_expr);
  return tensor_gated<GatedOp, Gate, Up>(gate_expr, up_expr);
}

}  // namespace internal

/// GELU in its tanh form (gelu_tanh_op), coefficient-wise, of a Tensor expression of any rank and layout.
///
/// Accuracy and special values: those of gelu_tanh_op.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<gelu_tanh_op, Derived> gelu(const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<gelu_tanh_op<internal::tensor_scalar<Derived>>>(x);
}

/// GELU in its exact form (gelu_erf_op), coefficient-wise, of a Tensor expression of any rank and layout.
///
/// Accuracy and special values: those of gelu_erf_op.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<gelu_erf_op, Derived> gelu_exact(
    const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<gelu_erf_op<internal::tensor_scalar<Derived>>>(x);
}

/// The derivative of the tanh form, d gelu / dx (gelu_tanh_grad_op), of a Tensor expression.
///
/// Accuracy and special values: those of gelu_tanh_grad_op.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<gelu_tanh_grad_op, Derived> gelu_grad(
    const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<gelu_tanh_grad_op<internal::tensor_scalar<Derived>>>(x);
}

/// The derivative of the exact form, d gelu_exact / dx (gelu_erf_grad_op), of a Tensor expression.
///
/// Accuracy and special values: those of gelu_erf_grad_op.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<gelu_erf_grad_op, Derived> gelu_exact_grad(
    const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<gelu_erf_grad_op<internal::tensor_scalar<Derived>>>(x);
}

/// silu(x) = x sigmoid(x) (silu_op), coefficient-wise, of a Tensor expression of any rank and layout.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<silu_op, Derived> silu(const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<silu_op<internal::tensor_scalar<Derived>>>(x);
}

/// d silu / dx (silu_grad_op), coefficient-wise, of a Tensor expression.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<silu_grad_op, Derived> silu_grad(
    const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<silu_grad_op<internal::tensor_scalar<Derived>>>(x);
}

/// quick_gelu(x) = x sigmoid(1.702 x) (quick_gelu_op), coefficient-wise, of a Tensor expression of any rank
/// and layout.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<quick_gelu_op, Derived> quick_gelu(
    const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<quick_gelu_op<internal::tensor_scalar<Derived>>>(x);
}

/// d quick_gelu / dx (quick_gelu_grad_op), coefficient-wise, of a Tensor expression.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<quick_gelu_grad_op, Derived> quick_gelu_grad(
    const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<quick_gelu_grad_op<internal::tensor_scalar<Derived>>>(x);
}

/// swish(x, alpha) = x sigmoid(alpha x) (ONNX Swish, swish_op), coefficient-wise, of a Tensor expression.
/// @param x the input expression, of any rank and layout.
/// @param alpha the slope; alpha = 1 gives silu()'s values bit for bit.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
/// @throws std::invalid_argument unless 2^-24 <= |alpha| <= 2^24 (when the expression is made).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<swish_op, Derived> swish(const internal::tensor_base<Derived>& x,
                                                                       internal::tensor_scalar<Derived> alpha) {
  using Op = swish_op<internal::tensor_scalar<Derived>>;
  return internal::tensor_apply<Op>(x, Op(alpha));
}

/// The backward pass dy * gelu'(x) (gelu_tanh_grad_op), coefficient-wise, of Tensor expressions.
/// @param dy the gradient with respect to the output, of x's dimensions.
/// @param x the input the forward pass saw.
/// @return a lazy `const Eigen::TensorCwiseBinaryOp` of x's dimensions.
/// @throws std::invalid_argument naming both dimensions when they differ (when the expression is made).
template <typename Dy, typename X>
internal::tensor_backward_type<gelu_tanh_grad_op, Dy, X> gelu_backward(const internal::tensor_base<Dy>& dy,
                                                                       const internal::tensor_base<X>& x) {
  return internal::tensor_backward_of<gelu_tanh_grad_op<internal::tensor_scalar<X>>>("egelu::gelu_backward", dy, x);
}

/// The backward pass dy * gelu_exact'(x) (gelu_erf_grad_op), coefficient-wise, of Tensor expressions.
/// @param dy the gradient with respect to the output, of x's dimensions.
/// @param x the input the forward pass saw.
/// @return a lazy `const Eigen::TensorCwiseBinaryOp` of x's dimensions.
/// @throws std::invalid_argument naming both dimensions when they differ (when the expression is made).
template <typename Dy, typename X>
internal::tensor_backward_type<gelu_erf_grad_op, Dy, X> gelu_exact_backward(const internal::tensor_base<Dy>& dy,
                                                                            const internal::tensor_base<X>& x) {
  return internal::tensor_backward_of<gelu_erf_grad_op<internal::tensor_scalar<X>>>("egelu::gelu_exact_backward", dy,
                                                                                    x);
}

/// The backward pass dy * silu'(x) (silu_grad_op), coefficient-wise, of Tensor expressions.
/// @param dy the gradient with respect to the output, of x's dimensions.
/// @param x the input the forward pass saw.
/// @return a lazy `const Eigen::TensorCwiseBinaryOp` of x's dimensions.
/// @throws std::invalid_argument naming both dimensions when they differ (when the expression is made).
template <typename Dy, typename X>
internal::tensor_backward_type<silu_grad_op, Dy, X> silu_backward(const internal::tensor_base<Dy>& dy,
                                                                  const internal::tensor_base<X>& x) {
  return internal::tensor_backward_of<silu_grad_op<internal::tensor_scalar<X>>>("egelu::silu_backward", dy, x);
}

/// The backward pass dy * quick_gelu'(x) (quick_gelu_grad_op), coefficient-wise, of Tensor expressions.
/// @param dy the gradient with respect to the output, of x's dimensions.
/// @param x the input the forward pass saw.
/// @return a lazy `const Eigen::TensorCwiseBinaryOp` of x's dimensions.
/// @throws std::invalid_argument naming both dimensions when they differ (when the expression is made).
template <typename Dy, typename X>
internal::tensor_backward_type<quick_gelu_grad_op, Dy, X> quick_gelu_backward(const internal::tensor_base<Dy>& dy,
                                                                              const internal::tensor_base<X>& x) {
  return internal::tensor_backward_of<quick_gelu_grad_op<internal::tensor_scalar<X>>>("egelu::quick_gelu_backward", dy,
                                                                                      x);
}

/// SwiGLU, silu(gate) * up (swiglu_op), coefficient-wise, of Tensor expressions.
/// @param gate the gate's pre-activation.
/// @param up the other branch, of gate's dimensions.
/// @return a lazy `const Eigen::TensorCwiseBinaryOp` of gate's dimensions.
/// @throws std::invalid_argument naming both dimensions when they differ (when the expression is made).
template <typename Gate, typename Up>
internal::tensor_gated_type<swiglu_op, Gate, Up> swiglu(const internal::tensor_base<Gate>& gate,
                                                        const internal::tensor_base<Up>& up) {
  return internal::tensor_gated_of<swiglu_op<internal::tensor_scalar<Gate>>>("egelu::swiglu", gate, up);
}

/// GeGLU, gelu(gate) * up with the tanh form (geglu_op), coefficient-wise, of Tensor expressions.
/// @param gate the gate's pre-activation.
/// @param up the other branch, of gate's dimensions.
/// @return a lazy `const Eigen::TensorCwiseBinaryOp` of gate's dimensions.
/// @throws std::invalid_argument naming both dimensions when they differ (when the expression is made).
template <typename Gate, typename Up>
internal::tensor_gated_type<geglu_op, Gate, Up> geglu(const internal::tensor_base<Gate>& gate,
                                                      const internal::tensor_base<Up>& up) {
  return internal::tensor_gated_of<geglu_op<internal::tensor_scalar<Gate>>>("egelu::geglu", gate, up);
}

/// GeGLU with the exact GELU, gelu_exact(gate) * up (geglu_exact_op), coefficient-wise, of Tensor expressions.
/// @param gate the gate's pre-activation.
/// @param up the other branch, of gate's dimensions.
/// @return a lazy `const Eigen::TensorCwiseBinaryOp` of gate's dimensions.
/// @throws std::invalid_argument naming both dimensions when they differ (when the expression is made).
template <typename Gate, typename Up>
internal::tensor_gated_type<geglu_exact_op, Gate, Up> geglu_exact(const internal::tensor_base<Gate>& gate,
                                                                  const internal::tensor_base<Up>& up) {
  return internal::tensor_gated_of<geglu_exact_op<internal::tensor_scalar<Gate>>>("egelu::geglu_exact", gate, up);
}

/// gpt-oss's clamped SwiGLU, quick_gelu(min(gate, 7)) * (clamp(up, -7, 7) + 1) (clamped_swiglu_op),
/// coefficient-wise, of Tensor expressions of float or double.
/// @param gate the gate's pre-activation.
/// @param up the other branch, of gate's dimensions.
/// @return a lazy `const Eigen::TensorCwiseBinaryOp` of gate's dimensions.
/// @throws std::invalid_argument naming both dimensions when they differ (when the expression is made).
template <typename Gate, typename Up>
internal::tensor_gated_type<clamped_swiglu_op, Gate, Up> clamped_swiglu(const internal::tensor_base<Gate>& gate,
                                                                        const internal::tensor_base<Up>& up) {
  return internal::tensor_gated_of<clamped_swiglu_op<internal::tensor_scalar<Gate>>>("egelu::clamped_swiglu", gate, up);
}

namespace fast {

/// Opt-in fast GELU, tanh form (fast::gelu_tanh_op), of a Tensor expression: |error| <= 4e-6 |x| in float.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<gelu_tanh_op, Derived> gelu(const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<gelu_tanh_op<internal::tensor_scalar<Derived>>>(x);
}

/// Opt-in fast GELU, exact form (fast::gelu_erf_op), of a Tensor expression: |error| <= 4e-6 |x| in float,
/// 1e-15 |x| in double.
/// @return a lazy `const Eigen::TensorCwiseUnaryOp` of x's dimensions, for any device: nothing is computed
/// until it is assigned (@ref threads "Threads" for a ThreadPoolDevice).
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<gelu_erf_op, Derived> gelu_exact(
    const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<gelu_erf_op<internal::tensor_scalar<Derived>>>(x);
}

/// Opt-in fast silu of a Tensor expression: float arithmetic alone, within 4 ulp, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE internal::tensor_unary_of<silu_op, Derived> silu(const internal::tensor_base<Derived>& x) {
  return internal::tensor_apply<silu_op<internal::tensor_scalar<Derived>>>(x);
}

}  // namespace fast
}  // namespace egelu

#endif  // EGELU_INTERNAL_TENSOR_API_HPP
