// egelu's functions on dense Eigen expressions: lazy, shape-preserving.
//
// Each function is a name for a functor: unary ones wrap the expression in a
// CwiseUnaryOp, backward ones multiply dy by the derivative, gated ones combine
// gate and up in a CwiseBinaryOp. Two-operand functions check that the shapes
// agree (Eigen's own check is an eigen_assert, gone in a release build).
#ifndef EGELU_INTERNAL_DENSE_API_HPP
#define EGELU_INTERNAL_DENSE_API_HPP

#include <sstream>
#include <stdexcept>
#include <string>

#include "functors.hpp"
#include "gated_functors.hpp"

namespace egelu {
namespace internal {

template <typename Derived>
std::string shape_of(const Eigen::EigenBase<Derived>& x) {
  std::ostringstream s;
  s << x.rows() << "x" << x.cols();
  return s.str();
}

template <typename A, typename B>
void require_same_shape(const char* function, const char* a_name, const Eigen::DenseBase<A>& a, const char* b_name,
                        const Eigen::DenseBase<B>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    throw std::invalid_argument(std::string(function) + ": " + a_name + " is " + shape_of(a) + " but " + b_name +
                                " is " + shape_of(b));
  }
}

template <typename Op, typename Derived>
using dense_unary = Eigen::CwiseUnaryOp<Op, const Derived>;

// The public functions' return types: const expressions, as Eigen's own.
template <template <typename> class Op, typename Derived>
using unary_of = const dense_unary<Op<typename Derived::Scalar>, Derived>;

template <typename Op, typename Derived>
EIGEN_STRONG_INLINE dense_unary<Op, Derived> dense_apply(const Eigen::DenseBase<Derived>& x, const Op& op = Op()) {
  return dense_unary<Op, Derived>(x.derived(), op);
}

template <typename GradOp, typename Dy, typename X>
using dense_backward = Eigen::CwiseBinaryOp<Eigen::internal::scalar_product_op<typename Dy::Scalar, typename X::Scalar>,
                                            const Dy, const dense_unary<GradOp, X>>;

// dy * f'(x), after checking that dy and x have one shape.
template <typename GradOp, typename Dy, typename X>
dense_backward<GradOp, Dy, X> dense_backward_of(const char* function, const Eigen::DenseBase<Dy>& dy,
                                                const Eigen::DenseBase<X>& x) {
  require_same_shape(function, "dy", dy, "x", x);
  return dense_backward<GradOp, Dy, X>(dy.derived(), dense_apply<GradOp>(x));
}

template <template <typename> class GradOp, typename Dy, typename X>
using backward_of = const dense_backward<GradOp<typename X::Scalar>, Dy, X>;

template <typename GatedOp, typename Gate, typename Up>
using dense_gated = Eigen::CwiseBinaryOp<GatedOp, const Gate, const Up>;

template <template <typename> class GatedOp, typename Gate, typename Up>
using gated_of = const dense_gated<GatedOp<typename Gate::Scalar>, Gate, Up>;

// act(gate) * up, after checking that gate and up have one shape.
template <typename GatedOp, typename Gate, typename Up>
dense_gated<GatedOp, Gate, Up> dense_gated_of(const char* function, const Eigen::DenseBase<Gate>& gate,
                                              const Eigen::DenseBase<Up>& up) {
  require_same_shape(function, "gate", gate, "up", up);
  return dense_gated<GatedOp, Gate, Up>(gate.derived(), up.derived());
}

}  // namespace internal

/// GELU in its tanh form (gelu_tanh_op), coefficient-wise, of any dense expression.
///
/// Accuracy and special values: those of gelu_tanh_op.
///
/// Assigned to a dense destination, `gelu(A * B + bias)` and the other product forms write the
/// product straight into the destination (@ref fused "Fused products"), and throw
/// std::invalid_argument naming both shapes when they do not fit.
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_tanh_op, Derived> gelu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_tanh_op<typename Derived::Scalar>>(x);
}

/// GELU in its exact form (gelu_erf_op), coefficient-wise, of any dense expression.
///
/// Accuracy and special values: those of gelu_erf_op.
///
/// Assigned to a dense destination, `gelu_exact(A * B + bias)` and the other product forms write the
/// product straight into the destination (@ref fused "Fused products"), and throw
/// std::invalid_argument naming both shapes when they do not fit.
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_erf_op, Derived> gelu_exact(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_erf_op<typename Derived::Scalar>>(x);
}

/// The derivative of the tanh form, d gelu / dx (gelu_tanh_grad_op), of any dense expression.
///
/// Accuracy and special values: those of gelu_tanh_grad_op.
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_tanh_grad_op, Derived> gelu_grad(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_tanh_grad_op<typename Derived::Scalar>>(x);
}

/// The derivative of the exact form, d gelu_exact / dx (gelu_erf_grad_op), of any dense expression.
///
/// Accuracy and special values: those of gelu_erf_grad_op.
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_erf_grad_op, Derived> gelu_exact_grad(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_erf_grad_op<typename Derived::Scalar>>(x);
}

/// silu(x) = x sigmoid(x) (silu_op), coefficient-wise, of any dense expression.
///
/// Assigned from a product (`silu(A * B + bias)`), it fuses as gelu() does (@ref fused "Fused products").
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<silu_op, Derived> silu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<silu_op<typename Derived::Scalar>>(x);
}

/// d silu / dx (silu_grad_op), coefficient-wise, of any dense expression.
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<silu_grad_op, Derived> silu_grad(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<silu_grad_op<typename Derived::Scalar>>(x);
}

/// quick_gelu(x) = x sigmoid(1.702 x) (quick_gelu_op), coefficient-wise, of any dense expression.
///
/// Assigned from a product (`quick_gelu(A * B + bias)`), it fuses as gelu() does
/// (@ref fused "Fused products").
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<quick_gelu_op, Derived> quick_gelu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<quick_gelu_op<typename Derived::Scalar>>(x);
}

/// d quick_gelu / dx (quick_gelu_grad_op), coefficient-wise, of any dense expression.
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<quick_gelu_grad_op, Derived> quick_gelu_grad(
    const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<quick_gelu_grad_op<typename Derived::Scalar>>(x);
}

/// swish(x, alpha) = x sigmoid(alpha x) (ONNX Swish, swish_op), coefficient-wise, of any dense expression.
///
/// Assigned from a product (`swish(A * B + bias, alpha)`), it fuses as gelu() does
/// (@ref fused "Fused products").
/// @param x the input expression.
/// @param alpha the slope; alpha = 1 gives silu()'s values bit for bit.
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
/// @throws std::invalid_argument unless 2^-24 <= |alpha| <= 2^24 (when the expression is made).
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<swish_op, Derived> swish(const Eigen::DenseBase<Derived>& x,
                                                                typename Derived::Scalar alpha) {
  using Op = swish_op<typename Derived::Scalar>;
  return internal::dense_apply<Op>(x, Op(alpha));
}

/// The backward pass dy * gelu'(x) (gelu_tanh_grad_op), coefficient-wise, of dense expressions.
/// @param dy the gradient with respect to the output, of x's shape.
/// @param x the input the forward pass saw.
/// @return a lazy `const Eigen::CwiseBinaryOp` of x's shape.
/// @throws std::invalid_argument naming both shapes when they differ (when the expression is made).
template <typename Dy, typename X>
internal::backward_of<gelu_tanh_grad_op, Dy, X> gelu_backward(const Eigen::DenseBase<Dy>& dy,
                                                              const Eigen::DenseBase<X>& x) {
  return internal::dense_backward_of<gelu_tanh_grad_op<typename X::Scalar>>("egelu::gelu_backward", dy, x);
}

/// The backward pass dy * gelu_exact'(x) (gelu_erf_grad_op), coefficient-wise, of dense expressions.
/// @param dy the gradient with respect to the output, of x's shape.
/// @param x the input the forward pass saw.
/// @return a lazy `const Eigen::CwiseBinaryOp` of x's shape.
/// @throws std::invalid_argument naming both shapes when they differ (when the expression is made).
template <typename Dy, typename X>
internal::backward_of<gelu_erf_grad_op, Dy, X> gelu_exact_backward(const Eigen::DenseBase<Dy>& dy,
                                                                   const Eigen::DenseBase<X>& x) {
  return internal::dense_backward_of<gelu_erf_grad_op<typename X::Scalar>>("egelu::gelu_exact_backward", dy, x);
}

/// The backward pass dy * silu'(x) (silu_grad_op), coefficient-wise, of dense expressions.
/// @param dy the gradient with respect to the output, of x's shape.
/// @param x the input the forward pass saw.
/// @return a lazy `const Eigen::CwiseBinaryOp` of x's shape.
/// @throws std::invalid_argument naming both shapes when they differ (when the expression is made).
template <typename Dy, typename X>
internal::backward_of<silu_grad_op, Dy, X> silu_backward(const Eigen::DenseBase<Dy>& dy, const Eigen::DenseBase<X>& x) {
  return internal::dense_backward_of<silu_grad_op<typename X::Scalar>>("egelu::silu_backward", dy, x);
}

/// The backward pass dy * quick_gelu'(x) (quick_gelu_grad_op), coefficient-wise, of dense expressions.
/// @param dy the gradient with respect to the output, of x's shape.
/// @param x the input the forward pass saw.
/// @return a lazy `const Eigen::CwiseBinaryOp` of x's shape.
/// @throws std::invalid_argument naming both shapes when they differ (when the expression is made).
template <typename Dy, typename X>
internal::backward_of<quick_gelu_grad_op, Dy, X> quick_gelu_backward(const Eigen::DenseBase<Dy>& dy,
                                                                     const Eigen::DenseBase<X>& x) {
  return internal::dense_backward_of<quick_gelu_grad_op<typename X::Scalar>>("egelu::quick_gelu_backward", dy, x);
}

/// SwiGLU, silu(gate) * up (swiglu_op), coefficient-wise, of dense expressions.
///
/// `H.noalias() = swiglu(Wg * X, Wu * X)` writes the gate product straight into H and the up product
/// into one temporary (@ref fused "Fused products").
/// @param gate the gate's pre-activation, `W_gate * X` say.
/// @param up the other branch, `W_up * X` say, of gate's shape.
/// @return a lazy `const Eigen::CwiseBinaryOp` of gate's shape.
/// @throws std::invalid_argument naming both shapes when they differ (when the expression is made).
template <typename Gate, typename Up>
internal::gated_of<swiglu_op, Gate, Up> swiglu(const Eigen::DenseBase<Gate>& gate, const Eigen::DenseBase<Up>& up) {
  return internal::dense_gated_of<swiglu_op<typename Gate::Scalar>>("egelu::swiglu", gate, up);
}

/// GeGLU, gelu(gate) * up with the tanh form (geglu_op), coefficient-wise, of dense expressions.
///
/// `H.noalias() = geglu(Wg * X, Wu * X)` writes the gate product straight into H and the up product
/// into one temporary (@ref fused "Fused products").
/// @param gate the gate's pre-activation, `W_gate * X` say.
/// @param up the other branch, `W_up * X` say, of gate's shape.
/// @return a lazy `const Eigen::CwiseBinaryOp` of gate's shape.
/// @throws std::invalid_argument naming both shapes when they differ (when the expression is made).
template <typename Gate, typename Up>
internal::gated_of<geglu_op, Gate, Up> geglu(const Eigen::DenseBase<Gate>& gate, const Eigen::DenseBase<Up>& up) {
  return internal::dense_gated_of<geglu_op<typename Gate::Scalar>>("egelu::geglu", gate, up);
}

/// GeGLU with the exact GELU, gelu_exact(gate) * up (geglu_exact_op), coefficient-wise, of dense expressions.
///
/// `H.noalias() = geglu_exact(Wg * X, Wu * X)` writes the gate product straight into H and the up product
/// into one temporary (@ref fused "Fused products").
/// @param gate the gate's pre-activation, `W_gate * X` say.
/// @param up the other branch, `W_up * X` say, of gate's shape.
/// @return a lazy `const Eigen::CwiseBinaryOp` of gate's shape.
/// @throws std::invalid_argument naming both shapes when they differ (when the expression is made).
template <typename Gate, typename Up>
internal::gated_of<geglu_exact_op, Gate, Up> geglu_exact(const Eigen::DenseBase<Gate>& gate,
                                                         const Eigen::DenseBase<Up>& up) {
  return internal::dense_gated_of<geglu_exact_op<typename Gate::Scalar>>("egelu::geglu_exact", gate, up);
}

/// gpt-oss's clamped SwiGLU, quick_gelu(min(gate, 7)) * (clamp(up, -7, 7) + 1) (clamped_swiglu_op),
/// coefficient-wise, of dense expressions of float or double.
///
/// `H.noalias() = clamped_swiglu(Wg * X, Wu * X)` writes the gate product straight into H and the up
/// product into one temporary (@ref fused "Fused products").
/// @param gate the gate's pre-activation, `W_gate * X` say.
/// @param up the other branch, `W_up * X` say, of gate's shape.
/// @return a lazy `const Eigen::CwiseBinaryOp` of gate's shape.
/// @throws std::invalid_argument naming both shapes when they differ (when the expression is made).
template <typename Gate, typename Up>
internal::gated_of<clamped_swiglu_op, Gate, Up> clamped_swiglu(const Eigen::DenseBase<Gate>& gate,
                                                               const Eigen::DenseBase<Up>& up) {
  return internal::dense_gated_of<clamped_swiglu_op<typename Gate::Scalar>>("egelu::clamped_swiglu", gate, up);
}

namespace fast {

/// Opt-in fast GELU, tanh form (fast::gelu_tanh_op), of any dense expression: |error| <= 4e-6 |x| in float.
///
/// Fuses with a product as egelu::gelu() does (@ref fused "Fused products").
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_tanh_op, Derived> gelu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_tanh_op<typename Derived::Scalar>>(x);
}

/// Opt-in fast GELU, exact form (fast::gelu_erf_op), of any dense expression: |error| <= 4e-6 |x| in
/// float, 1e-15 |x| in double.
///
/// Fuses with a product as egelu::gelu_exact() does (@ref fused "Fused products").
/// @return a lazy `const Eigen::CwiseUnaryOp` of x's shape: nothing is computed until it is assigned.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_erf_op, Derived> gelu_exact(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_erf_op<typename Derived::Scalar>>(x);
}

/// Opt-in fast silu of a dense expression: float arithmetic alone, within 4 ulp, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<silu_op, Derived> silu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<silu_op<typename Derived::Scalar>>(x);
}

}  // namespace fast
}  // namespace egelu

#endif  // EGELU_INTERNAL_DENSE_API_HPP
