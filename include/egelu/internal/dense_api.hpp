// egelu::gelu & co. on dense Eigen expressions: lazy, shape-preserving.
#ifndef EGELU_INTERNAL_DENSE_API_HPP
#define EGELU_INTERNAL_DENSE_API_HPP

#include <sstream>
#include <stdexcept>
#include <string>

#include "functors.hpp"

namespace egelu {
namespace internal {

template <typename Derived>
std::string shape_of(const Eigen::EigenBase<Derived>& x) {
  std::ostringstream s;
  s << x.rows() << "x" << x.cols();
  return s.str();
}

template <typename A, typename B>
void require_same_shape(const char* function, const Eigen::DenseBase<A>& a, const Eigen::DenseBase<B>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    throw std::invalid_argument(std::string(function) + ": dy is " + shape_of(a) + " but x is " + shape_of(b));
  }
}

template <template <typename> class Op, typename Derived>
using dense_unary = Eigen::CwiseUnaryOp<Op<typename Derived::Scalar>, const Derived>;

template <template <typename> class Op, typename Dy, typename X>
using dense_backward = Eigen::CwiseBinaryOp<Eigen::internal::scalar_product_op<typename Dy::Scalar, typename X::Scalar>,
                                            const Dy, const dense_unary<Op, X>>;

}  // namespace internal

/// gelu (tanh form) of a dense expression, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::dense_unary<gelu_tanh_op, Derived> gelu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_unary<gelu_tanh_op, Derived>(x.derived());
}

/// gelu (exact erf form) of a dense expression, evaluated lazily.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::dense_unary<gelu_erf_op, Derived> gelu_exact(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_unary<gelu_erf_op, Derived>(x.derived());
}

/// d gelu / dx (tanh form).
template <typename Derived>
EIGEN_STRONG_INLINE const internal::dense_unary<gelu_tanh_grad_op, Derived> gelu_grad(
    const Eigen::DenseBase<Derived>& x) {
  return internal::dense_unary<gelu_tanh_grad_op, Derived>(x.derived());
}

/// d gelu_exact / dx.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::dense_unary<gelu_erf_grad_op, Derived> gelu_exact_grad(
    const Eigen::DenseBase<Derived>& x) {
  return internal::dense_unary<gelu_erf_grad_op, Derived>(x.derived());
}

/// dy * gelu'(x), coefficient-wise and lazy. Throws std::invalid_argument when the shapes differ.
template <typename Dy, typename X>
const internal::dense_backward<gelu_tanh_grad_op, Dy, X> gelu_backward(const Eigen::DenseBase<Dy>& dy,
                                                                       const Eigen::DenseBase<X>& x) {
  internal::require_same_shape("egelu::gelu_backward", dy, x);
  return internal::dense_backward<gelu_tanh_grad_op, Dy, X>(dy.derived(), gelu_grad(x));
}

/// dy * gelu_exact'(x), coefficient-wise and lazy. Throws std::invalid_argument when the shapes differ.
template <typename Dy, typename X>
const internal::dense_backward<gelu_erf_grad_op, Dy, X> gelu_exact_backward(const Eigen::DenseBase<Dy>& dy,
                                                                            const Eigen::DenseBase<X>& x) {
  internal::require_same_shape("egelu::gelu_exact_backward", dy, x);
  return internal::dense_backward<gelu_erf_grad_op, Dy, X>(dy.derived(), gelu_exact_grad(x));
}

namespace fast {

/// Opt-in fast gelu (tanh form) of a dense expression: absolute error bound, lazy.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::dense_unary<gelu_tanh_op, Derived> gelu(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_unary<gelu_tanh_op, Derived>(x.derived());
}

/// Opt-in fast gelu_exact of a dense expression: absolute error bound, lazy.
template <typename Derived>
EIGEN_STRONG_INLINE const internal::dense_unary<gelu_erf_op, Derived> gelu_exact(const Eigen::DenseBase<Derived>& x) {
  return internal::dense_unary<gelu_erf_op, Derived>(x.derived());
}

}  // namespace fast
}  // namespace egelu

#endif  // EGELU_INTERNAL_DENSE_API_HPP
