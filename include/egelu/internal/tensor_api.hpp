// egelu::gelu & co. on Eigen::Tensor expressions of any rank and layout: lazy,
// shape-preserving, and evaluable on any device (DefaultDevice, ThreadPoolDevice).
#ifndef EGELU_INTERNAL_TENSOR_API_HPP
#define EGELU_INTERNAL_TENSOR_API_HPP

#include <sstream>
#include <stdexcept>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "functors.hpp"

namespace egelu {
namespace internal {

template <typename Derived>
using tensor_scalar = typename Eigen::internal::traits<Derived>::Scalar;

template <template <typename> class Op, typename Derived>
using tensor_unary = Eigen::TensorCwiseUnaryOp<Op<tensor_scalar<Derived>>, const Derived>;

template <template <typename> class Op, typename Dy, typename X>
using tensor_backward =
    Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_product_op<tensor_scalar<Dy>, tensor_scalar<X>>, const Dy,
                               const tensor_unary<Op, X>>;

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
void require_same_tensor_shape(const char* function, const A& a, const B& b) {
  const std::vector<Eigen::Index> dims_a = tensor_dimensions(a), dims_b = tensor_dimensions(b);
  if (dims_a != dims_b) {
    throw std::invalid_argument(std::string(function) + ": dy is " + shape_string(dims_a) + " but x is " +
                                shape_string(dims_b));
  }
}

}  // namespace internal

/// gelu (tanh form) of a Tensor expression, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::tensor_unary<gelu_tanh_op, Derived> gelu(
    const Eigen::TensorBase<Derived, Eigen::ReadOnlyAccessors>& x) {
  return internal::tensor_unary<gelu_tanh_op, Derived>(static_cast<const Derived&>(x));
}

/// gelu (exact erf form) of a Tensor expression, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::tensor_unary<gelu_erf_op, Derived> gelu_exact(
    const Eigen::TensorBase<Derived, Eigen::ReadOnlyAccessors>& x) {
  return internal::tensor_unary<gelu_erf_op, Derived>(static_cast<const Derived&>(x));
}

/// d gelu / dx (tanh form) of a Tensor expression.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::tensor_unary<gelu_tanh_grad_op, Derived> gelu_grad(
    const Eigen::TensorBase<Derived, Eigen::ReadOnlyAccessors>& x) {
  return internal::tensor_unary<gelu_tanh_grad_op, Derived>(static_cast<const Derived&>(x));
}

/// d gelu_exact / dx of a Tensor expression.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::tensor_unary<gelu_erf_grad_op, Derived> gelu_exact_grad(
    const Eigen::TensorBase<Derived, Eigen::ReadOnlyAccessors>& x) {
  return internal::tensor_unary<gelu_erf_grad_op, Derived>(static_cast<const Derived&>(x));
}

/// dy * gelu'(x) for Tensor expressions. Throws std::invalid_argument when the dimensions differ.
template <typename Dy, typename X>
const internal::tensor_backward<gelu_tanh_grad_op, Dy, X> gelu_backward(
    const Eigen::TensorBase<Dy, Eigen::ReadOnlyAccessors>& dy,
    const Eigen::TensorBase<X, Eigen::ReadOnlyAccessors>& x) {
  const Dy& dy_expr = static_cast<const Dy&>(dy);
  const X& x_expr = static_cast<const X&>(x);
  internal::require_same_tensor_shape("egelu::gelu_backward", dy_expr, x_expr);
  return internal::tensor_backward<gelu_tanh_grad_op, Dy, X>(dy_expr, gelu_grad(x));
}

/// dy * gelu_exact'(x) for Tensor expressions. Throws std::invalid_argument when the dimensions differ.
template <typename Dy, typename X>
const internal::tensor_backward<gelu_erf_grad_op, Dy, X> gelu_exact_backward(
    const Eigen::TensorBase<Dy, Eigen::ReadOnlyAccessors>& dy,
    const Eigen::TensorBase<X, Eigen::ReadOnlyAccessors>& x) {
  const Dy& dy_expr = static_cast<const Dy&>(dy);
  const X& x_expr = static_cast<const X&>(x);
  internal::require_same_tensor_shape("egelu::gelu_exact_backward", dy_expr, x_expr);
  return internal::tensor_backward<gelu_erf_grad_op, Dy, X>(dy_expr, gelu_exact_grad(x));
}

namespace fast {

/// Opt-in fast gelu (tanh form) of a Tensor expression: absolute error bound, lazy.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::tensor_unary<gelu_tanh_op, Derived> gelu(
    const Eigen::TensorBase<Derived, Eigen::ReadOnlyAccessors>& x) {
  return internal::tensor_unary<gelu_tanh_op, Derived>(static_cast<const Derived&>(x));
}

/// Opt-in fast gelu_exact of a Tensor expression: absolute error bound, lazy.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::tensor_unary<gelu_erf_op, Derived> gelu_exact(
    const Eigen::TensorBase<Derived, Eigen::ReadOnlyAccessors>& x) {
  return internal::tensor_unary<gelu_erf_op, Derived>(static_cast<const Derived&>(x));
}

}  // namespace fast
}  // namespace egelu

#endif  // EGELU_INTERNAL_TENSOR_API_HPP
