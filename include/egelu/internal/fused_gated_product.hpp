// H = swiglu(Wg * X, Wu * X) (and geglu, geglu_exact, clamped_swiglu) with the gate product written
// straight into H: Eigen would evaluate both products into temporaries and then
// combine them. Here the up operand is evaluated first -- into one temporary if it is
// a product, or if H overlaps what it reads -- then the gate product goes into H
// (Eigen's own GEMM/GEMV, with the packing buffers a bare product uses), and one pass
// applies the activation and the product. If H overlaps what the gate product reads,
// and only then, the gate goes through a temporary too.
#ifndef EGELU_INTERNAL_FUSED_GATED_PRODUCT_HPP
#define EGELU_INTERNAL_FUSED_GATED_PRODUCT_HPP

#include "fused_product.hpp"
#include "gated_functors.hpp"

namespace egelu {
namespace internal {

template <typename Product, typename Up>
void require_gated_shapes_fit(const char* name, const Product& gate, const Up& up) {
  if (gate.lhs().cols() != gate.rhs().rows()) {
    throw std::invalid_argument(std::string("egelu: ") + name + "(A * B, up): A is " + shape_of(gate.lhs()) +
                                " but B is " + shape_of(gate.rhs()));
  }
  if (gate.rows() != up.rows() || gate.cols() != up.cols()) {
    throw std::invalid_argument(std::string("egelu: ") + name + "(A * B, up): A * B is " + shape_of(gate) +
                                " but up is " + shape_of(up));
  }
}

// The fused gated products: gated_op's, and gpt-oss's clamped_swiglu_op.
template <typename Op>
struct fused_gated : std::false_type {};
template <typename Activation>
struct fused_gated<gated_op<Activation>> : std::true_type {};
template <typename Scalar>
struct fused_gated<clamped_swiglu_op<Scalar>> : std::true_type {};

template <typename Activation>
const char* gated_name(const gated_op<Activation>*) {
  using Scalar = typename kernel_scalar<Activation>::type;
  if (std::is_same<Activation, silu_op<Scalar>>::value) return "swiglu";
  if (std::is_same<Activation, gelu_tanh_op<Scalar>>::value) return "geglu";
  if (std::is_same<Activation, gelu_erf_op<Scalar>>::value) return "geglu_exact";
  return "gated";
}
template <typename Scalar>
const char* gated_name(const clamped_swiglu_op<Scalar>*) {
  return "clamped_swiglu";
}

// dst = act(gate) * up_values, the gate product written into dst unless dst overlaps
// what it reads.
template <typename Dst, typename Gate, typename UpValues, typename Op>
void assign_gate_then_combine(Dst& dst, const Gate& gate, const UpValues& up_values, const Op& op) {
  auto&& out = as_matrix(dst);
  if constexpr (has_direct_access<Dst>) {
    if (!is_read_by_any(dst, gate.lhs(), gate.rhs())) {
      out.noalias() = gate;
      out.array() = out.array().binaryExpr(up_values.array(), op);
      return;
    }
  }
  const typename Gate::PlainObject gate_values = gate;
  out.array() = gate_values.array().binaryExpr(up_values.array(), op);
}

// up is read as it is where it has direct access and dst does not overlap it; else its
// value is evaluated once, before dst is written (a product, say: the one temporary).
template <typename Dst, typename Gate, typename Up, typename Op>
void assign_gated_product(Dst& dst, const Gate& gate, const Up& up, const Op& op) {
  if constexpr (has_direct_access<Up> && has_direct_access<Dst>) {
    if (!may_read(up, bytes_of(dst))) return assign_gate_then_combine(dst, gate, up, op);
  }
  const typename Up::PlainObject up_values = up;
  assign_gate_then_combine(dst, gate, up_values, op);
}

}  // namespace internal
}  // namespace egelu

namespace Eigen {
namespace internal {

// dst = act(A * B) * up
template <typename Dst, typename GatedOp, typename GateXpr, typename Up>
struct Assignment<Dst, CwiseBinaryOp<GatedOp, const GateXpr, const Up>,
                  assign_op<typename Dst::Scalar, typename Dst::Scalar>, Dense2Dense,
                  std::enable_if_t<egelu::internal::fused_gated<GatedOp>::value &&
                                   egelu::internal::is_dense_product<GateXpr>::value &&
                                   std::is_same<typename GateXpr::Scalar, typename Dst::Scalar>::value &&
                                   std::is_same<typename Up::Scalar, typename Dst::Scalar>::value>> {
  template <typename Src, typename Func>
  static void run(Dst& dst, const Src& src, const Func& func) {
    const auto& gate = egelu::internal::product_in(src.lhs());
    const char* name = egelu::internal::gated_name(static_cast<const GatedOp*>(nullptr));
    egelu::internal::require_gated_shapes_fit(name, gate, src.rhs());
    egelu::internal::require_destination_fits(std::string(name) + "(A * B, up)", dst, gate);
    resize_if_allowed(dst, src, func);
    egelu::internal::assign_gated_product(dst, gate, src.rhs(), src.functor());
  }
};

}  // namespace internal
}  // namespace Eigen

#endif  // EGELU_INTERNAL_FUSED_GATED_PRODUCT_HPP
