// The four GELU functors, usable with unaryExpr on any dense or Tensor expression.
//
// As with Eigen's scalar_logistic_op, operator() runs the packet code on a
// single scalar, so a vectorized loop's lanes and its scalar tail agree bit
// for bit. Eigen::half and Eigen::bfloat16 are computed in float and rounded
// once, packets of them as float packets where Eigen converts packets.
#ifndef EGELU_INTERNAL_FUNCTORS_HPP
#define EGELU_INTERNAL_FUNCTORS_HPP

#include "erf_form.hpp"
#include "fast_form.hpp"
#include "narrow_packets.hpp"
#include "tanh_form.hpp"

namespace egelu {
namespace internal {

template <typename Scalar>
constexpr bool is_vectorized_scalar = std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value;

template <typename Scalar>
constexpr bool is_narrow_scalar =
    std::is_same<Scalar, Eigen::half>::value || std::is_same<Scalar, Eigen::bfloat16>::value;

template <typename Scalar>
constexpr bool is_supported_scalar = is_vectorized_scalar<Scalar> || is_narrow_scalar<Scalar>;

// Kernel tags: the packet function and its cost, in additions and divisions.
struct tanh_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pgelu_tanh(x);
  }
  static constexpr int additions = 55, divisions = 1;
};
struct erf_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pgelu_erf(x);
  }
  static constexpr int additions = 75, divisions = 1;
};
struct tanh_grad_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pgelu_tanh_grad(x);
  }
  static constexpr int additions = 55, divisions = 1;
};
struct erf_grad_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pgelu_erf_grad(x);
  }
  static constexpr int additions = 85, divisions = 1;
};

// The fast kernels: for float (and Eigen::half and bfloat16, computed in float) the
// pieces or the float rational; for double the exact form's double rational, while
// the tanh form keeps its default kernel, fast enough already (fast_form.hpp).
template <typename Form>
struct fast_float_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pgelu_fast<Form>(x);
  }
#if defined(EIGEN_VECTORIZE_AVX512)
  static constexpr int additions = 14, divisions = 0;  // the pieces
#else
  static constexpr int additions = 16, divisions = 1;  // the rational
#endif
};
template <typename Rational>
struct fast_rational_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pgelu_fast_rational<Rational>(x);
  }
  static constexpr int additions = 30, divisions = 1;
};
template <typename Scalar, typename Form>
struct fast_kernel_for {
  using type = fast_float_kernel<Form>;
};
template <>
struct fast_kernel_for<double, fast_tanh_form> {
  using type = tanh_kernel;
};
template <>
struct fast_kernel_for<double, fast_erf_form> {
  using type = fast_rational_kernel<fast_rational_erf_double>;
};
template <typename Scalar, typename Form>
using fast_kernel = typename fast_kernel_for<Scalar, Form>::type;

template <typename Scalar, typename Kernel, typename Enable = void>
struct kernel_op {
  static_assert(is_supported_scalar<Scalar>,
                "egelu: the scalar type must be float, double, Eigen::half or Eigen::bfloat16");
};

template <typename Scalar, typename Kernel>
struct kernel_op<Scalar, Kernel, std::enable_if_t<is_vectorized_scalar<Scalar>>> {
  EIGEN_STRONG_INLINE Scalar operator()(const Scalar& x) const { return Kernel::run(x); }
  template <typename Packet>
  EIGEN_STRONG_INLINE Packet packetOp(const Packet& x) const {
    return Kernel::run(x);
  }
};

template <typename Scalar, typename Kernel>
struct kernel_op<Scalar, Kernel, std::enable_if_t<is_narrow_scalar<Scalar>>> {
  EIGEN_STRONG_INLINE Scalar operator()(const Scalar& x) const { return Scalar(Kernel::run(static_cast<float>(x))); }
  template <typename Packet>
  EIGEN_STRONG_INLINE Packet packetOp(const Packet& x) const {
    return in_float(x, [](const auto& f) { return Kernel::run(f); });
  }
};

template <typename Scalar, typename Kernel>
struct kernel_op_traits {
  using Work = std::conditional_t<is_vectorized_scalar<Scalar>, Scalar, float>;
  enum {
    Cost = Kernel::additions * Eigen::NumTraits<Work>::AddCost +
           Kernel::divisions * scalar_div_cost<Work, true>::value +
           (is_narrow_scalar<Scalar> ? 2 * Eigen::NumTraits<float>::AddCost : 0),
    PacketAccess = packet_traits<Work>::Vectorizable && packet_traits<Work>::HasDiv && packet_traits<Work>::HasExp &&
                   packet_traits<Work>::HasAbs && packet_traits<Work>::HasMin &&
                   (is_vectorized_scalar<Scalar> || has_vectorized_float_cast<Scalar>)
  };
};

}  // namespace internal

/// gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as x * sigmoid(2u).
template <typename Scalar>
struct gelu_tanh_op : internal::kernel_op<Scalar, internal::tanh_kernel> {};

/// gelu_exact(x) = x Phi(x) = 0.5 x erfc(-x / sqrt2).
template <typename Scalar>
struct gelu_erf_op : internal::kernel_op<Scalar, internal::erf_kernel> {};

/// d gelu / dx (tanh form).
template <typename Scalar>
struct gelu_tanh_grad_op : internal::kernel_op<Scalar, internal::tanh_grad_kernel> {};

/// d gelu_exact / dx = Phi(x) + x phi(x).
template <typename Scalar>
struct gelu_erf_grad_op : internal::kernel_op<Scalar, internal::erf_grad_kernel> {};

namespace fast {

/// Opt-in gelu (tanh form): float, half, bfloat16 within 4e-6 |x| absolute; double is the default kernel.
template <typename Scalar>
struct gelu_tanh_op : internal::kernel_op<Scalar, internal::fast_kernel<Scalar, internal::fast_tanh_form>> {};

/// Opt-in gelu_exact: float, half, bfloat16 within 4e-6 |x| absolute; double within 1e-15 |x|.
template <typename Scalar>
struct gelu_erf_op : internal::kernel_op<Scalar, internal::fast_kernel<Scalar, internal::fast_erf_form>> {};

}  // namespace fast
}  // namespace egelu

namespace Eigen {
namespace internal {

template <typename Scalar>
struct functor_traits<egelu::gelu_tanh_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::tanh_kernel> {};
template <typename Scalar>
struct functor_traits<egelu::gelu_erf_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::erf_kernel> {};
template <typename Scalar>
struct functor_traits<egelu::fast::gelu_tanh_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::fast_kernel<Scalar, egelu::internal::fast_tanh_form>> {
};
template <typename Scalar>
struct functor_traits<egelu::fast::gelu_erf_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::fast_kernel<Scalar, egelu::internal::fast_erf_form>> {
};
template <typename Scalar>
struct functor_traits<egelu::gelu_tanh_grad_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::tanh_grad_kernel> {};
template <typename Scalar>
struct functor_traits<egelu::gelu_erf_grad_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::erf_grad_kernel> {};

}  // namespace internal
}  // namespace Eigen

#endif  // EGELU_INTERNAL_FUNCTORS_HPP
