// gelu(A * B + bias) and gelu(A * B) with no heap temporary: Eigen would
// evaluate the product into a temporary first. This Assignment specialisation
// writes the product straight into the destination (Eigen's own GEMM/GEMV, with
// only the packing buffers a bare `dst.noalias() = A * B` uses) and then adds
// the bias and applies GELU one column at a time while it is in cache. If the
// destination overlaps what an operand reads, and only then, the product goes
// through a temporary.
#ifndef EGELU_INTERNAL_FUSED_PRODUCT_HPP
#define EGELU_INTERNAL_FUSED_PRODUCT_HPP

#include <algorithm>
#include <type_traits>

#include "dense_api.hpp"

namespace egelu {
namespace internal {

// The activations whose assignment from a product fuses (gelu(A * B + bias), silu(A * B), ...).
template <typename Op>
struct is_activation_functor : std::false_type {};
template <typename Scalar>
struct is_activation_functor<gelu_tanh_op<Scalar>> : std::true_type {};
template <typename Scalar>
struct is_activation_functor<gelu_erf_op<Scalar>> : std::true_type {};
template <typename Scalar>
struct is_activation_functor<fast::gelu_tanh_op<Scalar>> : std::true_type {};
template <typename Scalar>
struct is_activation_functor<fast::gelu_erf_op<Scalar>> : std::true_type {};
template <typename Scalar>
struct is_activation_functor<silu_op<Scalar>> : std::true_type {};
template <typename Scalar>
struct is_activation_functor<quick_gelu_op<Scalar>> : std::true_type {};
template <typename Scalar>
struct is_activation_functor<swish_op<Scalar>> : std::true_type {};
template <typename Scalar>
struct is_activation_functor<fast::silu_op<Scalar>> : std::true_type {};

// The bytes an object with direct access spans.
struct byte_range {
  const char* begin = nullptr;
  const char* end = nullptr;
};

template <typename Xpr>
struct direct_access_flag
    : std::bool_constant<(unsigned(Eigen::internal::traits<Xpr>::Flags) & Eigen::DirectAccessBit) != 0> {};
template <typename Xpr>
constexpr bool has_direct_access =
    std::conjunction<std::is_base_of<Eigen::DenseBase<Xpr>, Xpr>, direct_access_flag<Xpr>>::value;

template <typename Xpr>
byte_range bytes_of(const Eigen::DenseBase<Xpr>& x) {
  static_assert(has_direct_access<Xpr>, "bytes_of needs an object with direct access");
  if (x.size() == 0) return byte_range{};
  const Xpr& d = x.derived();
  // A Map's strides may be negative: the lowest and highest addresses are
  // then not the first and last coefficients.
  const Eigen::Index inner = (d.innerSize() - 1) * d.innerStride(), outer = (d.outerSize() - 1) * d.outerStride();
  const Eigen::Index lowest = std::min<Eigen::Index>(inner, 0) + std::min<Eigen::Index>(outer, 0);
  const Eigen::Index highest = std::max<Eigen::Index>(inner, 0) + std::max<Eigen::Index>(outer, 0);
  return byte_range{reinterpret_cast<const char*>(d.data() + lowest),
                    reinterpret_cast<const char*>(d.data() + highest + 1)};
}

inline bool overlap(const byte_range& a, const byte_range& b) { return a.begin < b.end && b.begin < a.end; }

// gelu(A * B) has no bias.
struct no_bias {};

// Whether evaluating xpr may read the bytes of target. An object with direct
// access is checked by address, an expression through the objects it reads,
// and anything else is assumed to (the safe answer: a temporary).
template <typename Xpr>
bool may_read(const Xpr& xpr, const byte_range& target);

template <typename Xpr>
bool operands_may_read(const Xpr&, const byte_range&) {
  return true;
}
inline bool operands_may_read(const no_bias&, const byte_range&) { return false; }
template <typename Op, typename Plain>
bool operands_may_read(const Eigen::CwiseNullaryOp<Op, Plain>&, const byte_range&) {
  return false;  // a constant, an identity, a linear space: reads no memory
}
template <typename Op, typename Xpr>
bool operands_may_read(const Eigen::CwiseUnaryOp<Op, Xpr>& xpr, const byte_range& target) {
  return may_read(xpr.nestedExpression(), target);
}
template <typename Op, typename Lhs, typename Rhs>
bool operands_may_read(const Eigen::CwiseBinaryOp<Op, Lhs, Rhs>& xpr, const byte_range& target) {
  return may_read(xpr.lhs(), target) || may_read(xpr.rhs(), target);
}
template <typename Xpr, int RowFactor, int ColFactor>
bool operands_may_read(const Eigen::Replicate<Xpr, RowFactor, ColFactor>& xpr, const byte_range& target) {
  return may_read(xpr.nestedExpression(), target);
}
template <typename Xpr, int Rows, int Cols, bool InnerPanel>
bool operands_may_read(const Eigen::Block<Xpr, Rows, Cols, InnerPanel>& xpr, const byte_range& target) {
  return may_read(xpr.nestedExpression(), target);  // all of it: a safe superset
}
template <typename Xpr>
bool operands_may_read(const Eigen::Transpose<Xpr>& xpr, const byte_range& target) {
  return may_read(xpr.nestedExpression(), target);
}
template <typename Xpr>
bool operands_may_read(const Eigen::ArrayWrapper<Xpr>& xpr, const byte_range& target) {
  return may_read(xpr.nestedExpression(), target);
}
template <typename Xpr>
bool operands_may_read(const Eigen::MatrixWrapper<Xpr>& xpr, const byte_range& target) {
  return may_read(xpr.nestedExpression(), target);
}

template <typename Xpr>
bool may_read(const Xpr& xpr, const byte_range& target) {
  if constexpr (has_direct_access<Xpr>) {
    return overlap(bytes_of(xpr), target);
  } else {
    return operands_may_read(xpr, target);
  }
}

// Adding the bias line by line: a plain bias contributes its own line. Lines
// are written as arrays, so matrix and array-style operands mix.
struct lines_of_any_bias {
  template <typename Line, typename Bias, typename Op>
  static void column(Line line, const Bias& bias, Eigen::Index j, const Op& op) {
    line.array() = (line.array() + bias.col(j).array()).unaryExpr(op);
  }
  template <typename Line, typename Bias, typename Op>
  static void row(Line line, const Bias& bias, Eigen::Index i, const Op& op) {
    line.array() = (line.array() + bias.row(i).array()).unaryExpr(op);
  }
};

template <typename Bias>
struct bias_lines : lines_of_any_bias {};

// colwise() + v, rowwise() + v, v.replicate(r, c): a line of the bias is one of
// v's coefficients, or a line of v repeated along it (b.replicate(1, T) measured
// 1.40x the bare product through Replicate's evaluator, 1.04x this way).
template <typename V, int RowFactor, int ColFactor>
struct bias_lines<Eigen::Replicate<V, RowFactor, ColFactor>> {
  using Bias = Eigen::Replicate<V, RowFactor, ColFactor>;
  template <typename Line, typename Op>
  static void column(Line line, const Bias& bias, Eigen::Index j, const Op& op) {
    const auto& v = bias.nestedExpression();
    if (v.rows() == 1) {
      line.array() = (line.array() + v(0, j % v.cols())).unaryExpr(op);
    } else {
      along(line, v.col(j % v.cols()), op);
    }
  }
  template <typename Line, typename Op>
  static void row(Line line, const Bias& bias, Eigen::Index i, const Op& op) {
    const auto& v = bias.nestedExpression();
    if (v.cols() == 1) {
      line.array() = (line.array() + v(i % v.rows(), 0)).unaryExpr(op);
    } else {
      along(line, v.row(i % v.rows()), op);
    }
  }

 private:
  // line = op(line + [piece piece ...]): the bias line is piece repeated.
  template <typename Line, typename Piece, typename Op>
  static void along(Line line, const Piece& piece, const Op& op) {
    const Eigen::Index n = piece.size();
    for (Eigen::Index start = 0; start < line.size(); start += n) {
      auto segment = line.segment(start, n);
      segment.array() = (segment.array() + piece.array()).unaryExpr(op);
    }
  }
};

template <>
struct bias_lines<no_bias> {
  template <typename Line, typename Op>
  static void column(Line line, const no_bias&, Eigen::Index, const Op& op) {
    line = line.unaryExpr(op);
  }
  template <typename Line, typename Op>
  static void row(Line line, const no_bias&, Eigen::Index, const Op& op) {
    line = line.unaryExpr(op);
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

template <typename Bias>
const char* expression_name() {
  return std::is_same<Bias, no_bias>::value ? "gelu(A * B)" : "gelu(A * B + bias)";
}

// Eigen checks an expression's shapes with eigen_assert only, so in a release
// build a mismatch would be read past an operand's end.
template <typename Product, typename Bias>
void require_shapes_fit(const Product& product, const Bias& bias) {
  if (product.lhs().cols() != product.rhs().rows()) {
    throw std::invalid_argument(std::string("egelu: ") + expression_name<Bias>() + ": A is " + shape_of(product.lhs()) +
                                " but B is " + shape_of(product.rhs()));
  }
  if constexpr (!std::is_same<Bias, no_bias>::value) {
    if (bias.rows() != product.rows() || bias.cols() != product.cols()) {
      throw std::invalid_argument("egelu: gelu(A * B + bias): A * B is " + shape_of(product) + " but the bias is " +
                                  bias_shape(bias));
    }
  }
}

// Whether Eigen's resize_if_allowed can give dst this shape: a Matrix or Array in the
// dimensions its type leaves free, within its maximum size, seen through the wrappers that
// pass a resize on to it (Transpose, which Eigen also puts around a row-vector destination of
// a column-vector expression; ArrayWrapper, MatrixWrapper). Any other destination (a block,
// a Map, a Ref) must have the shape already. Asked before resizing: resizing one to another
// shape is an eigen_assert, which stops a debug build before a check after it throws.
template <typename Dst>
struct resize_wrapper {  // none: the destination is what is resized, or not at all
  static constexpr bool is_one = false, transposes = false;
};
template <typename Nested>
struct resize_wrapper<Eigen::Transpose<Nested>> {
  static constexpr bool is_one = true, transposes = true;
};
template <typename Nested>
struct resize_wrapper<Eigen::ArrayWrapper<Nested>> {
  static constexpr bool is_one = true, transposes = false;
};
template <typename Nested>
struct resize_wrapper<Eigen::MatrixWrapper<Nested>> {
  static constexpr bool is_one = true, transposes = false;
};

template <typename Dst>
bool destination_can_take(const Dst& dst, Eigen::Index rows, Eigen::Index cols) {
  if constexpr (resize_wrapper<Dst>::is_one) {
    return resize_wrapper<Dst>::transposes ? destination_can_take(dst.nestedExpression(), cols, rows)
                                           : destination_can_take(dst.nestedExpression(), rows, cols);
  } else if constexpr (std::is_base_of<Eigen::PlainObjectBase<Dst>, Dst>::value) {
    const auto fits = [](int fixed, int max, Eigen::Index n) {
      return (fixed == Eigen::Dynamic || fixed == n) && (max == Eigen::Dynamic || n <= max);
    };
    return fits(Dst::RowsAtCompileTime, Dst::MaxRowsAtCompileTime, rows) &&
           fits(Dst::ColsAtCompileTime, Dst::MaxColsAtCompileTime, cols);
  } else {
    return dst.rows() == rows && dst.cols() == cols;
  }
}

// A destination that cannot be resized (a block, a Map) must already have the shape of the
// product, whose expression (`expression`, for the message) is assigned to it.
template <typename Dst, typename Product>
void require_destination_fits(const std::string& expression, const Dst& dst, const Product& product) {
  if (!destination_can_take(dst, product.rows(), product.cols())) {
    throw std::invalid_argument("egelu: " + expression + " is " + shape_of(product) + " but the destination is " +
                                shape_of(dst));
  }
}

// The destination as a matrix: Eigen lets an Array be constructed from a matrix
// expression, but the product is written with a matrix operation.
template <typename Dst>
Dst& as_matrix(Eigen::MatrixBase<Dst>& dst) {
  return dst.derived();
}
template <typename Dst>
Eigen::MatrixWrapper<Dst> as_matrix(Eigen::ArrayBase<Dst>& dst) {
  return dst.matrix();
}

// Whether writing the destination could change what the operands read.
template <typename Dst, typename... Operands>
bool is_read_by_any(const Dst& dst, const Operands&... operands) {
  const byte_range target = bytes_of(dst);
  return (may_read(operands, target) || ...);
}

template <typename Dst, typename Product, typename Bias, typename Op>
void assign_activation_of_product_plus_bias(Dst& dst, const Product& product, const Bias& bias, const Op& op) {
  auto&& out = as_matrix(dst);
  const auto& lhs = product.lhs();
  const auto& rhs = product.rhs();
  // A destination without direct access (a Reverse, say) cannot take Eigen's
  // GEMM/GEMV output either: it goes through the temporary.
  if constexpr (has_direct_access<Dst>) {
    if (!is_read_by_any(dst, lhs, rhs, bias)) {
      out.noalias() = lhs * rhs;
      add_bias_and_activate(out, bias, op);
      return;
    }
  }
  typename Product::PlainObject temporary = lhs * rhs;
  add_bias_and_activate(temporary, bias, op);
  out = temporary;
}

// What a fused assignment takes apart: `A * B`, or `product + bias` in either
// order. A bias that Eigen evaluates into a temporary before use (a product such
// as C * D, an inverse, or an expression holding one: Eigen's EvalBeforeNestingBit)
// would be evaluated again for every line, so such sums keep Eigen's own evaluation,
// except a broadcast of one, which the fused pass evaluates once (bias_to_read).
template <typename T>
struct is_dense_product : std::false_type {};
template <typename Lhs, typename Rhs>
struct is_dense_product<Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>> : std::true_type {};
template <typename Lhs, typename Rhs>  // (A * B).array()
struct is_dense_product<Eigen::ArrayWrapper<const Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>>> : std::true_type {};

template <typename Lhs, typename Rhs>
const Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>& product_in(
    const Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>& product) {
  return product;
}
template <typename Lhs, typename Rhs>
const Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>& product_in(
    const Eigen::ArrayWrapper<const Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>>& product) {
  return product.nestedExpression();
}

template <typename Xpr>
constexpr bool evaluates_into_temporary = (unsigned(Eigen::internal::evaluator<Xpr>::Flags) &
                                           Eigen::EvalBeforeNestingBit) != 0;

template <typename Product, typename Bias>
constexpr bool is_product_and_bias = is_dense_product<Product>::value && !evaluates_into_temporary<Bias>;

// A broadcast of something Eigen evaluates into a temporary, `colwise() + C * d`.
// Replicate's own flags do not say so (its evaluator evaluates what it broadcasts
// once), but the line pass reads the broadcast object line by line: it must
// evaluate that once itself, then broadcast the result.
template <typename Bias>
struct is_broadcast_of_temporary : std::false_type {};
template <typename V, int RowFactor, int ColFactor>
struct is_broadcast_of_temporary<Eigen::Replicate<V, RowFactor, ColFactor>>
    : std::bool_constant<evaluates_into_temporary<V>> {};

// The bias as the line pass reads it: itself, or for a broadcast of a temporary
// the broadcast of that temporary, evaluated once, before the destination is written.
template <typename Bias, typename Enable = void>
struct bias_to_read {
  const Bias& bias;
  explicit bias_to_read(const Bias& b) : bias(b) {}
};
template <typename V, int RowFactor, int ColFactor>
struct bias_to_read<Eigen::Replicate<V, RowFactor, ColFactor>,
                    std::enable_if_t<is_broadcast_of_temporary<Eigen::Replicate<V, RowFactor, ColFactor>>::value>> {
  const typename V::PlainObject v;
  const Eigen::Replicate<const typename V::PlainObject, RowFactor, ColFactor> bias;  // refers to v
  explicit bias_to_read(const Eigen::Replicate<V, RowFactor, ColFactor>& b)
      : v(b.nestedExpression()),
        bias(v, v.rows() == 0 ? 1 : b.rows() / v.rows(), v.cols() == 0 ? 1 : b.cols() / v.cols()) {}
  bias_to_read(const bias_to_read&) = delete;
  bias_to_read& operator=(const bias_to_read&) = delete;
};

template <typename Inner, typename Enable = void>
struct fused_operands : std::false_type {};

template <typename Lhs, typename Rhs>
struct fused_operands<Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>> : std::true_type {
  using Product = Eigen::Product<Lhs, Rhs, Eigen::DefaultProduct>;
  static const Product& product(const Product& p) { return p; }
  static no_bias bias(const Product&) { return no_bias{}; }
};

template <typename Scalar, typename A, typename B>
struct fused_operands<Eigen::CwiseBinaryOp<Eigen::internal::scalar_sum_op<Scalar, Scalar>, const A, const B>,
                      std::enable_if_t<is_product_and_bias<A, B> || is_product_and_bias<B, A>>> : std::true_type {
  using Sum = Eigen::CwiseBinaryOp<Eigen::internal::scalar_sum_op<Scalar, Scalar>, const A, const B>;
  static const auto& product(const Sum& sum) {
    if constexpr (is_dense_product<A>::value)
      return product_in(sum.lhs());
    else
      return product_in(sum.rhs());
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

// dst = gelu(A * B), gelu(A * B + bias) or gelu(bias + A * B)
template <typename Dst, typename Op, typename Inner>
struct Assignment<Dst, CwiseUnaryOp<Op, const Inner>, assign_op<typename Dst::Scalar, typename Dst::Scalar>,
                  Dense2Dense,
                  std::enable_if_t<egelu::internal::is_activation_functor<Op>::value &&
                                   egelu::internal::fused_operands<Inner>::value &&
                                   std::is_same<typename Inner::Scalar, typename Dst::Scalar>::value>> {
  template <typename Src, typename Func>
  static void run(Dst& dst, const Src& src, const Func& func) {
    using Parts = egelu::internal::fused_operands<Inner>;
    const Inner& inner = src.nestedExpression();
    const auto& product = Parts::product(inner);
    const auto& bias = Parts::bias(inner);
    using Bias = std::decay_t<decltype(bias)>;
    egelu::internal::require_shapes_fit(product, bias);
    egelu::internal::require_destination_fits(egelu::internal::expression_name<Bias>(), dst, product);
    resize_if_allowed(dst, src, func);
    const egelu::internal::bias_to_read<Bias> read(bias);
    egelu::internal::assign_activation_of_product_plus_bias(dst, product, read.bias, src.functor());
  }
};

}  // namespace internal
}  // namespace Eigen

#endif  // EGELU_INTERNAL_FUSED_PRODUCT_HPP
