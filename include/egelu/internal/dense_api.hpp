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

/// gelu (tanh form) of a dense expression, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_tanh_op, Derived> gelu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_tanh_op<typename Derived::Scalar>>(x);
}

/// gelu (exact erf form) of a dense expression, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_erf_op, Derived> gelu_exact(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_erf_op<typename Derived::Scalar>>(x);
}

/// d gelu / dx (tanh form).
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_tanh_grad_op, Derived> gelu_grad(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_tanh_grad_op<typename Derived::Scalar>>(x);
}

/// d gelu_exact / dx.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_erf_grad_op, Derived> gelu_exact_grad(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_erf_grad_op<typename Derived::Scalar>>(x);
}

/// silu(x) = x sigmoid(x) of a dense expression, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<silu_op, Derived> silu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<silu_op<typename Derived::Scalar>>(x);
}

/// d silu / dx.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<silu_grad_op, Derived> silu_grad(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<silu_grad_op<typename Derived::Scalar>>(x);
}

/// quick_gelu(x) = x sigmoid(1.702 x) of a dense expression, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<quick_gelu_op, Derived> quick_gelu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<quick_gelu_op<typename Derived::Scalar>>(x);
}

/// d quick_gelu / dx.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<quick_gelu_grad_op, Derived> quick_gelu_grad(
    const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<quick_gelu_grad_op<typename Derived::Scalar>>(x);
}

/// swish(x, alpha) = x sigmoid(alpha x) (ONNX Swish); throws std::invalid_argument unless
/// 2^-24 <= |alpha| <= 2^24.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<swish_op, Derived> swish(const Eigen::DenseBase<Derived>& x,
                                                                typename Derived::Scalar alpha) {
  using Op = swish_op<typename Derived::Scalar>;
  return internal::dense_apply<Op>(x, Op(alpha));
}

/// dy * gelu'(x), coefficient-wise and lazy. Throws std::invalid_argument when the shapes differ.
template <typename Dy, typename X>
internal::backward_of<gelu_tanh_grad_op, Dy, X> gelu_backward(const Eigen::DenseBase<Dy>& dy,
                                                              const Eigen::DenseBase<X>& x) {
  return internal::dense_backward_of<gelu_tanh_grad_op<typename X::Scalar>>("egelu::gelu_backward", dy, x);
}

/// dy * gelu_exact'(x), coefficient-wise and lazy. Throws std::invalid_argument when the shapes differ.
template <typename Dy, typename X>
internal::backward_of<gelu_erf_grad_op, Dy, X> gelu_exact_backward(const Eigen::DenseBase<Dy>& dy,
                                                                   const Eigen::DenseBase<X>& x) {
  return internal::dense_backward_of<gelu_erf_grad_op<typename X::Scalar>>("egelu::gelu_exact_backward", dy, x);
}

/// dy * silu'(x), coefficient-wise and lazy. Throws std::invalid_argument when the shapes differ.
template <typename Dy, typename X>
internal::backward_of<silu_grad_op, Dy, X> silu_backward(const Eigen::DenseBase<Dy>& dy, const Eigen::DenseBase<X>& x) {
  return internal::dense_backward_of<silu_grad_op<typename X::Scalar>>("egelu::silu_backward", dy, x);
}

/// dy * quick_gelu'(x), coefficient-wise and lazy. Throws std::invalid_argument when the shapes differ.
template <typename Dy, typename X>
internal::backward_of<quick_gelu_grad_op, Dy, X> quick_gelu_backward(const Eigen::DenseBase<Dy>& dy,
                                                                     const Eigen::DenseBase<X>& x) {
  return internal::dense_backward_of<quick_gelu_grad_op<typename X::Scalar>>("egelu::quick_gelu_backward", dy, x);
}

/// SwiGLU: silu(gate) * up, lazy. Throws std::invalid_argument when the shapes differ.
template <typename Gate, typename Up>
internal::gated_of<swiglu_op, Gate, Up> swiglu(const Eigen::DenseBase<Gate>& gate, const Eigen::DenseBase<Up>& up) {
  return internal::dense_gated_of<swiglu_op<typename Gate::Scalar>>("egelu::swiglu", gate, up);
}

/// GeGLU: gelu(gate) * up with the tanh form, lazy. Throws std::invalid_argument when the shapes differ.
template <typename Gate, typename Up>
internal::gated_of<geglu_op, Gate, Up> geglu(const Eigen::DenseBase<Gate>& gate, const Eigen::DenseBase<Up>& up) {
  return internal::dense_gated_of<geglu_op<typename Gate::Scalar>>("egelu::geglu", gate, up);
}

/// GeGLU with the exact GELU: gelu_exact(gate) * up, lazy. Throws std::invalid_argument when the shapes differ.
template <typename Gate, typename Up>
internal::gated_of<geglu_exact_op, Gate, Up> geglu_exact(const Eigen::DenseBase<Gate>& gate,
                                                         const Eigen::DenseBase<Up>& up) {
  return internal::dense_gated_of<geglu_exact_op<typename Gate::Scalar>>("egelu::geglu_exact", gate, up);
}

namespace fast {

/// Opt-in fast gelu (tanh form) of a dense expression: absolute error bound, lazy.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_tanh_op, Derived> gelu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_tanh_op<typename Derived::Scalar>>(x);
}

/// Opt-in fast gelu_exact of a dense expression: absolute error bound, lazy.
template <typename Derived>
EIGEN_STRONG_INLINE internal::unary_of<gelu_erf_op, Derived> gelu_exact(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_apply<gelu_erf_op<typename Derived::Scalar>>(x);
}

}  // namespace fast
}  // namespace egelu

#endif  // EGELU_INTERNAL_DENSE_API_HPP
