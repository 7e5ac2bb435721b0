// gelu(A * B + bias) with no heap temporary: Eigen would evaluate the product
// into a temporary before adding the bias. These Assignment specialisations
// write the product straight into the destination (Eigen's own GEMM/GEMV, with
// only the packing buffers a bare `dst.noalias() = A * B` uses) and then add
// the bias and apply GELU one column at a time while it is in cache. If the
// destination overlaps an operand, and only then, the product goes through a
// temporary.
#ifndef EGELU_INTERNAL_FUSED_PRODUCT_HPP
#define EGELU_INTERNAL_FUSED_PRODUCT_HPP

#include <algorithm>
#include <type_traits>

#include "dense_api.hpp"

namespace egelu {
namespace internal {

template <typename Op>
struct is_gelu_functor : std::false_type {};
template <typename Scalar>
struct is_gelu_functor<gelu_tanh_op<Scalar>> : std::true_type {};
template <typename Scalar>
struct is_gelu_functor<gelu_erf_op<Scalar>> : std::true_type {};

// The bytes an expression reads, when it has direct access; unknown otherwise.
struct byte_range {
  const char* begin = nullptr;
  const char* end = nullptr;
  bool known = false;
};

template <typename Xpr>
byte_range bytes_of(const Eigen::DenseBase<Xpr>& x) {
  if constexpr (bool(Eigen::internal::traits<Xpr>::Flags & Eigen::DirectAccessBit)) {
    byte_range r;
    r.known = true;
    if (x.size() == 0) return r;
    const Xpr& d = x.derived();
    // A Map's strides may be negative: the lowest and highest addresses are
    // then not the first and last coefficients.
    const Eigen::Index inner = (d.innerSize() - 1) * d.innerStride(), outer = (d.outerSize() - 1) * d.outerStride();
    const Eigen::Index lowest = std::min<Eigen::Index>(inner, 0) + std::min<Eigen::Index>(outer, 0);
    const Eigen::Index highest = std::max<Eigen::Index>(inner, 0) + std::max<Eigen::Index>(outer, 0);
    r.begin = reinterpret_cast<const char*>(d.data() + lowest);
    r.end = reinterpret_cast<const char*>(d.data() + highest + 1);
    return r;
  } else {
    return byte_range{};
  }
}

template <typename V, int RowFactor, int ColFactor>
byte_range bytes_of(const Eigen::Replicate<V, RowFactor, ColFactor>& x) {
  return bytes_of(x.nestedExpression());
}

inline bool may_overlap(const byte_range& a, const byte_range& b) {
  if (!a.known || !b.known) return true;
  return a.begin < b.end && b.begin < a.end;
}

// Adding the bias line by line: a plain bias contributes its own line; a
// replicated vector (colwise() + v, rowwise() + v) contributes v or v(k), which
// keeps the pass vectorized (Replicate's evaluator would not).
template <typename Bias>
struct bias_lines {
  template <typename Line, typename Op>
  static void column(Line line, const Bias& bias, Eigen::Index j, const Op& op) {
    line = (line + bias.col(j)).unaryExpr(op);
  }
  template <typename Line, typename Op>
  static void row(Line line, const Bias& bias, Eigen::Index i, const Op& op) {
    line = (line + bias.row(i)).unaryExpr(op);
  }
};

template <typename V>
struct bias_lines<Eigen::Replicate<V, 1, Eigen::Dynamic>> {  // (A * B).colwise() + v
  using Bias = Eigen::Replicate<V, 1, Eigen::Dynamic>;
  template <typename Line, typename Op>
  static void column(Line line, const Bias& bias, Eigen::Index, const Op& op) {
    line = (line + bias.nestedExpression()).unaryExpr(op);
  }
  template <typename Line, typename Op>
  static void row(Line line, const Bias& bias, Eigen::Index i, const Op& op) {
    line = (line.array() + bias.nestedExpression()(i)).matrix().unaryExpr(op);
  }
};

template <typename V>
struct bias_lines<Eigen::Replicate<V, Eigen::Dynamic, 1>> {  // (A * B).rowwise() + v
  using Bias = Eigen::Replicate<V, Eigen::Dynamic, 1>;
  template <typename Line, typename Op>
  static void column(Line line, const Bias& bias, Eigen::Index j, const Op& op) {
    line = (line.array() + bias.nestedExpression()(j)).matrix().unaryExpr(op);
  }
  template <typename Line, typename Op>
  static void row(Line line, const Bias& bias, Eigen::Index, const Op& op) {
    line = (line + bias.nestedExpression()).unaryExpr(op);
  }
};

// dst = op(dst + bias), one contiguous line of dst at a time.
template <typename Dst, typename Bias, typename Op>
void add_bias_and_activate(Dst& dst, const Bias& bias, const Op& op) {
  if (Dst::IsRowMajor) {
    for (Eigen::Index i = 0; i < dst.rows(); ++i) bias_lines<Bias>::row(dst.row(i), bias, i, op);
  } else {
    for (Eigen::Index j = 0; j < dst.cols(); ++j) bias_lines<Bias>::column(dst.col(j), bias, j, op);
  }
}

template <typename Bias>
std::string bias_shape(const Eigen::DenseBase<Bias>& bias) {
  return shape_of(bias);
}

template <typename V, int RowFactor, int ColFactor>
std::string bias_shape(const Eigen::Replicate<V, RowFactor, ColFactor>& bias) {
  return shape_of(bias.nestedExpression()) + " (broadcast to " + shape_of(bias) + ")";
}

// Eigen checks an expression's shapes with eigen_assert only, so in a release
// build a mismatch would be read past an operand's end.
template <typename Product, typename Bias>
void require_shapes_fit(const Product& product, const Bias& bias) {
  if (product.lhs().cols() != product.rhs().rows()) {
    throw std::invalid_argument("egelu: gelu(A * B + bias): A is " + shape_of(product.lhs()) + " but B is " +
                                shape_of(product.rhs()));
  }
  if (bias.rows() != product.rows() || bias.cols() != product.cols()) {
    throw std::invalid_argument("egelu: gelu(A * B + bias): A * B is " + shape_of(product) + " but the bias is " +
                                bias_shape(bias));
  }
}

// A destination that cannot be resized (a block, a Map) must already have the shape.
template <typename Dst, typename Product>
void require_destination_fits(const Dst& dst, const Product& product) {
  if (dst.rows() != product.rows() || dst.cols() != product.cols()) {
    throw std::invalid_argument("egelu: gelu(A * B + bias) is " + shape_of(product) + " but the destination is " +
                                shape_of(dst));
  }
}

template <typename Dst, typename Product, typename Bias, typename Op>
void assign_activation_of_product_plus_bias(Dst& dst, const Product& product, const Bias& bias, const Op& op) {
  const byte_range target = bytes_of(dst);
  const auto& lhs = product.lhs();
  const auto& rhs = product.rhs();
  if (may_overlap(target, bytes_of(lhs)) || may_overlap(target, bytes_of(rhs)) || may_overlap(target, bytes_of(bias))) {
    typename Product::PlainObject temporary = lhs * rhs;
    add_bias_and_activate(temporary, bias, op);
    dst = temporary;
  } else {
    dst.noalias() = lhs * rhs;
    add_bias_and_activate(dst, bias, op);
  }
}

// `product + bias` in either order, with exactly one side a product (A * B + C * D keeps
// Eigen's own evaluation: as a per-line bias, C * D would be re-evaluated line by line).
template <typename T>
struct is_dense_product : std::false_type {};
template <typename Lhs, typename Rhs>
struct is_dense_product<Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>> : std::true_type {};

template <typename Sum, typename Enable = void>
struct product_plus_bias : std::false_type {};

template <typename Scalar, typename A, typename B>
struct product_plus_bias<Eigen::CwiseBinaryOp<Eigen::internal::scalar_sum_op<Scalar, Scalar>, const A, const B>,
                         std::enable_if_t<is_dense_product<A>::value != is_dense_product<B>::value>> : std::true_type {
  using Sum = Eigen::CwiseBinaryOp<Eigen::internal::scalar_sum_op<Scalar, Scalar>, const A, const B>;
  static const auto& product(const Sum& sum) {
    if constexpr (is_dense_product<A>::value)
      return sum.lhs();
    else
      return sum.rhs();
  }
  static const auto& bias(const Sum& sum) {
    if constexpr (is_dense_product<A>::value)
      return sum.rhs();
    else
      return sum.lhs();
  }
};

}  // namespace internal
}  // namespace egelu

namespace Eigen {
namespace internal {

// dst = gelu(A * B + bias) or gelu(bias + A * B)
template <typename Dst, typename Op, typename Sum>
struct Assignment<
    Dst, CwiseUnaryOp<Op, const Sum>, assign_op<typename Dst::Scalar, typename Dst::Scalar>, Dense2Dense,
    std::enable_if_t<egelu::internal::is_gelu_functor<Op>::value && egelu::internal::product_plus_bias<Sum>::value &&
                     std::is_same<typename Sum::Scalar, typename Dst::Scalar>::value>> {
  template <typename Src, typename Func>
  static void run(Dst& dst, const Src& src, const Func& func) {
    using Parts = egelu::internal::product_plus_bias<Sum>;
    const Sum& sum = src.nestedExpression();
    egelu::internal::require_shapes_fit(Parts::product(sum), Parts::bias(sum));
    resize_if_allowed(dst, src, func);
    egelu::internal::require_destination_fits(dst, Parts::product(sum));
    egelu::internal::assign_activation_of_product_plus_bias(dst, Parts::product(sum), Parts::bias(sum), src.functor());
  }
};

}  // namespace internal
}  // namespace Eigen

#endif  // EGELU_INTERNAL_FUSED_PRODUCT_HPP
