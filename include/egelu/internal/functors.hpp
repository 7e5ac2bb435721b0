// The activation functors -- GELU in both forms, SiLU, QuickGELU, swish -- and their
// derivatives, usable with unaryExpr on any dense or Tensor expression, and the gated
// products act(gate) * up as binary functors.
//
// As with Eigen's scalar_logistic_op, operator() runs the packet code on a
// single scalar, so a vectorized loop's lanes and its scalar tail agree bit
// for bit. Eigen::half and Eigen::bfloat16 are computed in float and rounded
// once, packets of them as float packets where Eigen converts packets.
//
// A functor is a kernel and a name: kernel_op runs a kernel tag (its packet
// function and its cost) for every scalar type, and the names below pick one.
#ifndef EGELU_INTERNAL_FUNCTORS_HPP
#define EGELU_INTERNAL_FUNCTORS_HPP

#include <stdexcept>
#include <string>

#include "erf_form.hpp"
#include "fast_form.hpp"
#include "narrow_packets.hpp"
#include "swish_form.hpp"
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

// The scalar type of a functor name<Scalar>.
template <typename Functor>
struct kernel_scalar;
template <template <typename> class Op, typename Scalar>
struct kernel_scalar<Op<Scalar>> {
  using type = Scalar;
};

// The type the kernels compute in: the scalar itself, or float for the narrow types.
template <typename Scalar>
using work_scalar = std::conditional_t<is_vectorized_scalar<Scalar>, Scalar, float>;

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

// x sigmoid(alpha x) for a fixed alpha: SiLU (1) and QuickGELU (1.702 in the scalar type).
struct silu_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return plogistic_product(x, silu_argument<scalar_of<Packet>>);
  }
  static constexpr int additions = 50, divisions = 1;
};
struct silu_grad_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return plogistic_product_grad(x, silu_argument<scalar_of<Packet>>);
  }
  static constexpr int additions = 52, divisions = 1;
};
struct quick_gelu_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return plogistic_product(x, quick_gelu_argument<scalar_of<Packet>>);
  }
  static constexpr int additions = 50, divisions = 1;
};
struct quick_gelu_grad_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return plogistic_product_grad(x, quick_gelu_argument<scalar_of<Packet>>);
  }
  static constexpr int additions = 52, divisions = 1;
};

// x sigmoid(alpha x) for an alpha given at run time (ONNX Swish): the same kernel with
// the constants made when the functor is. A negative alpha is the reflection
// swish_alpha(x) = -swish_|alpha|(-x).
template <typename Work>
struct swish_kernel {
  swish_argument<Work> t;
  bool reflected;

  explicit swish_kernel(Work alpha) : t(make_swish_argument(checked(alpha))), reflected(alpha < 0) {}

  template <typename Packet>
  EIGEN_STRONG_INLINE Packet run(const Packet& x) const {
    return reflected ? negate(plogistic_product(negate(x), t)) : plogistic_product(x, t);
  }
  static constexpr int additions = 51, divisions = 1;

 private:
  static Work checked(Work alpha) {
    const double magnitude = std::abs(double(alpha));
    if (!(magnitude >= swish_argument<Work>::min_alpha && magnitude <= swish_argument<Work>::max_alpha)) {
      throw std::invalid_argument("egelu::swish: alpha is " + std::to_string(double(alpha)) +
                                  " but its magnitude must lie in [2^-24, 2^24]");
    }
    return Work(magnitude);
  }
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

// The kernel is a base (empty for the fixed ones), so a functor holds what a kernel
// made at run time needs.
template <typename Scalar, typename Kernel>
struct kernel_op<Scalar, Kernel, std::enable_if_t<is_vectorized_scalar<Scalar>>> : Kernel {
  kernel_op() = default;
  explicit kernel_op(const Kernel& kernel) : Kernel(kernel) {}
  EIGEN_STRONG_INLINE Scalar operator()(const Scalar& x) const { return this->run(x); }
  template <typename Packet>
  EIGEN_STRONG_INLINE Packet packetOp(const Packet& x) const {
    return this->run(x);
  }
};

template <typename Scalar, typename Kernel>
struct kernel_op<Scalar, Kernel, std::enable_if_t<is_narrow_scalar<Scalar>>> : Kernel {
  kernel_op() = default;
  explicit kernel_op(const Kernel& kernel) : Kernel(kernel) {}
  EIGEN_STRONG_INLINE Scalar operator()(const Scalar& x) const { return Scalar(this->run(static_cast<float>(x))); }
  template <typename Packet>
  EIGEN_STRONG_INLINE Packet packetOp(const Packet& x) const {
    return in_float(x, [this](const auto& f) { return this->run(f); });
  }
};

template <typename Scalar, typename Kernel>
struct kernel_op_traits {
  using Work = work_scalar<Scalar>;
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

/// silu(x) = x sigmoid(x), also called swish-1 (LLaMA, Mistral, Qwen).
template <typename Scalar>
struct silu_op : internal::kernel_op<Scalar, internal::silu_kernel> {};

/// d silu / dx = sigmoid(x) (1 + x (1 - sigmoid(x))).
template <typename Scalar>
struct silu_grad_op : internal::kernel_op<Scalar, internal::silu_grad_kernel> {};

/// quick_gelu(x) = x sigmoid(1.702 x) (CLIP), 1.702 rounded to the scalar type as PyTorch does.
template <typename Scalar>
struct quick_gelu_op : internal::kernel_op<Scalar, internal::quick_gelu_kernel> {};

/// d quick_gelu / dx.
template <typename Scalar>
struct quick_gelu_grad_op : internal::kernel_op<Scalar, internal::quick_gelu_grad_kernel> {};

/// swish(x) = x sigmoid(alpha x), ONNX Swish, for 2^-24 <= |alpha| <= 2^24 (else the
/// constructor throws std::invalid_argument). alpha = 1 gives silu's values bit for bit.
template <typename Scalar>
struct swish_op : internal::kernel_op<Scalar, internal::swish_kernel<internal::work_scalar<Scalar>>> {
  using Kernel = internal::swish_kernel<internal::work_scalar<Scalar>>;
  explicit swish_op(Scalar alpha) : internal::kernel_op<Scalar, Kernel>(Kernel(internal::work_scalar<Scalar>(alpha))) {}
};

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
template <typename Scalar>
struct functor_traits<egelu::silu_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::silu_kernel> {};
template <typename Scalar>
struct functor_traits<egelu::silu_grad_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::silu_grad_kernel> {};
template <typename Scalar>
struct functor_traits<egelu::quick_gelu_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::quick_gelu_kernel> {};
template <typename Scalar>
struct functor_traits<egelu::quick_gelu_grad_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, egelu::internal::quick_gelu_grad_kernel> {};
template <typename Scalar>
struct functor_traits<egelu::swish_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar, typename egelu::swish_op<Scalar>::Kernel> {};

}  // namespace internal
}  // namespace Eigen

#endif  // EGELU_INTERNAL_FUNCTORS_HPP
