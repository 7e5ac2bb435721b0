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
#include "fast_swish_form.hpp"
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
// rounding_form(): float's correctly rounded form (correct_rounding.hpp), for the tools.
struct tanh_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pgelu_tanh(x);
  }
  static logistic_rounding_form<tanh_argument, tanh_argument> rounding_form() { return tanh_rounding_form(); }
  static constexpr int additions = 55, divisions = 1;
};
struct erf_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pgelu_erf(x);
  }
  static erf_rounding_form rounding_form() { return {}; }
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
// Float's medium stage holds float's alpha in double (correct_rounding.hpp).
struct silu_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return plogistic_product(x, silu_argument<scalar_of<Packet>>, silu_argument<double>);
  }
  static logistic_rounding_form<swish_argument<float>, swish_argument<double>> rounding_form() {
    return {silu_argument<float>, silu_argument<double>};
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
    if constexpr (std::is_same<scalar_of<Packet>, float>::value) {
      return plogistic_product(x, quick_gelu_argument<float>, quick_gelu_float_argument_in_double);
    } else {
      return plogistic_product(x, quick_gelu_argument<double>, quick_gelu_argument<double>);
    }
  }
  static logistic_rounding_form<swish_argument<float>, swish_argument<double>> rounding_form() {
    return {quick_gelu_argument<float>, quick_gelu_float_argument_in_double};
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
// the constants made when the functor is (and, for float's medium stage, alpha in
// double). A negative alpha is the reflection swish_alpha(x) = -swish_|alpha|(-x).
template <typename Work>
struct swish_kernel {
  swish_argument<Work> t;
  swish_argument<double> t_double;
  bool reflected;

  explicit swish_kernel(Work alpha)
      : t(make_swish_argument(checked(alpha))), t_double(make_swish_argument(double(t.alpha))), reflected(alpha < 0) {}

  template <typename Packet>
  EIGEN_STRONG_INLINE Packet run(const Packet& x) const {
    return reflected ? negate(plogistic_product(negate(x), t, t_double)) : plogistic_product(x, t, t_double);
  }
  // |alpha|'s form (the reflection negates around it).
  logistic_rounding_form<swish_argument<Work>, swish_argument<double>> rounding_form() const { return {t, t_double}; }
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

// The fast SiLU: float's own kernel (fast_swish_form.hpp); double keeps the default one.
struct fast_float_silu_kernel {
  template <typename Packet>
  static EIGEN_STRONG_INLINE Packet run(const Packet& x) {
    return pswish_fast(x, silu_argument<float>);
  }
  static constexpr int additions = 28, divisions = 1;
};
template <typename Scalar>
using fast_silu_kernel = std::conditional_t<std::is_same<Scalar, double>::value, silu_kernel, fast_float_silu_kernel>;

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

/// Functor for GELU in its tanh form (GPT-2, original BERT; egelu's default):
/// gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as x * sigmoid(2u).
///
/// For `unaryExpr` on any dense or Tensor expression (egelu::gelu() names it). Accuracy: float is
/// correctly rounded (the float nearest the exact value, ties to even, subnormal results included) on
/// x86 (SSE2, AVX2, AVX-512) and aarch64, on every path, checked for every float input
/// (tools/exhaustive_rounding); <= 2 ulp on targets whose float packets have no double twins; double
/// <= 2 ulp; Eigen::half and Eigen::bfloat16 are the float result rounded once (docs/ACCURACY.md lists
/// the few inputs where that differs from rounding the exact value). Special values:
/// see @ref rules.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct gelu_tanh_op : internal::kernel_op<Scalar, internal::tanh_kernel> {};

/// Functor for GELU in its exact form (PyTorch's default, HF BERT):
/// gelu_exact(x) = x Phi(x) = 0.5 x erfc(-x / sqrt2).
///
/// For `unaryExpr` on any dense or Tensor expression (egelu::gelu_exact() names it). Accuracy: float is
/// correctly rounded on x86 and aarch64, as gelu_tanh_op; <= 2 ulp on targets whose float packets have no
/// double twins; double <= 2 ulp; Eigen::half and Eigen::bfloat16 are the float result rounded once. Special
/// values: see @ref rules.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct gelu_erf_op : internal::kernel_op<Scalar, internal::erf_kernel> {};

/// Functor for the derivative of the tanh form, d gelu / dx (egelu::gelu_grad() names it).
///
/// Accuracy: float |error| <= 3.0e-8 (1 + |gelu'|) on x86 and aarch64 (computed in double), <= 1.5e-7
/// (1 + |gelu'|) on other targets; double <= 5e-16 (1 + |gelu'|). +Inf -> 1, -Inf -> 0, 0 -> 0.5.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct gelu_tanh_grad_op : internal::kernel_op<Scalar, internal::tanh_grad_kernel> {};

/// Functor for the derivative of the exact form, d gelu_exact / dx = Phi(x) + x phi(x)
/// (egelu::gelu_exact_grad() names it).
///
/// Accuracy: float |error| <= 3.0e-8 (1 + |gelu'|) on x86 and aarch64 (computed in double), <= 1.5e-7
/// (1 + |gelu'|) on other targets; double <= 5e-16 (1 + |gelu'|). +Inf -> 1, -Inf -> 0, 0 -> 0.5.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct gelu_erf_grad_op : internal::kernel_op<Scalar, internal::erf_grad_kernel> {};

/// Functor for silu(x) = x sigmoid(x), also called swish-1 (LLaMA, Mistral, Qwen).
///
/// The kernel of gelu_tanh_op with the sigmoid's argument x instead of 2u (egelu::silu() names it); float
/// is correctly rounded on x86 and aarch64, as gelu_tanh_op.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct silu_op : internal::kernel_op<Scalar, internal::silu_kernel> {};

/// Functor for d silu / dx = sigmoid(x) (1 + x (1 - sigmoid(x))) (egelu::silu_grad() names it).
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct silu_grad_op : internal::kernel_op<Scalar, internal::silu_grad_kernel> {};

/// Functor for quick_gelu(x) = x sigmoid(1.702 x) (CLIP), 1.702 rounded to the scalar type as
/// PyTorch does (egelu::quick_gelu() names it); float (x sigmoid(1.702f x)) is correctly rounded on x86
/// and aarch64, as gelu_tanh_op.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct quick_gelu_op : internal::kernel_op<Scalar, internal::quick_gelu_kernel> {};

/// Functor for d quick_gelu / dx (egelu::quick_gelu_grad() names it).
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct quick_gelu_grad_op : internal::kernel_op<Scalar, internal::quick_gelu_grad_kernel> {};

/// Functor for swish(x) = x sigmoid(alpha x), ONNX Swish, with alpha given at run time
/// (egelu::swish() names it).
///
/// alpha = 1 gives silu_op's values bit for bit, and alpha = 1.702f quick_gelu_op's: correctly rounded
/// float on x86 and aarch64, checked for every float. Other alphas run the same kernel and rounding
/// test, whose bounds hold for any alpha, but only the bound stated before correct rounding is promised
/// for them: 1 ulp in float where float runs in double (x86, aarch64), 2 elsewhere. A negative alpha
/// is computed as the reflection swish_alpha(x) = -swish_|alpha|(-x). It has no default constructor:
/// make it with its alpha.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct swish_op : internal::kernel_op<Scalar, internal::swish_kernel<internal::work_scalar<Scalar>>> {
  using Kernel = internal::swish_kernel<internal::work_scalar<Scalar>>;
  /// The functor for one alpha; the kernel's constants are derived from it here, once.
  /// @throws std::invalid_argument unless 2^-24 <= |alpha| <= 2^24.
  explicit swish_op(Scalar alpha) : internal::kernel_op<Scalar, Kernel>(Kernel(internal::work_scalar<Scalar>(alpha))) {}
};

/// The opt-in fast GELU kernels: faster, with an absolute error bound instead of a ULP bound.
///
/// In float they compute gelu = x h(x), h a cubic on each of 32 pieces of [-6, 6] (AVX-512) or a
/// rational function in x^2 (other targets); |error| <= 4e-6 |x|, so below about -4 no digit of the
/// result is right. Use them for inference when the tail does not matter (@ref fast "Fast variants").
namespace fast {

/// Opt-in fast functor for the tanh form of GELU (egelu::fast::gelu() names it).
///
/// float: |error| <= 4e-6 |x| (the 32 cubic pieces with AVX-512, a rational function elsewhere);
/// Eigen::half and Eigen::bfloat16: the float result rounded once; double: egelu::gelu_tanh_op's
/// kernel (2 ulp), fast enough already.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct gelu_tanh_op : internal::kernel_op<Scalar, internal::fast_kernel<Scalar, internal::fast_tanh_form>> {};

/// Opt-in fast functor for the exact form of GELU (egelu::fast::gelu_exact() names it).
///
/// float: |error| <= 4e-6 |x| (the 32 cubic pieces with AVX-512, a rational function elsewhere);
/// Eigen::half and Eigen::bfloat16: the float result rounded once; double: a rational function of
/// degrees (12, 12) in x^2, |error| <= 1e-15 |x|, about 3.5 times the default kernel's speed.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct gelu_erf_op : internal::kernel_op<Scalar, internal::fast_kernel<Scalar, internal::fast_erf_form>> {};

/// Opt-in fast functor for SiLU (egelu::fast::silu() names it).
///
/// float: float arithmetic alone, within 4 ulp over the whole range, where the default silu_op
/// runs in double (correctly rounded) at about half the speed on Intel's AVX-512; Eigen::half and
/// Eigen::bfloat16: the float result rounded once; double: the default kernel.
/// @tparam Scalar float, double, Eigen::half or Eigen::bfloat16.
template <typename Scalar>
struct silu_op : internal::kernel_op<Scalar, internal::fast_silu_kernel<internal::work_scalar<Scalar>>> {};

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
struct functor_traits<egelu::fast::silu_op<Scalar>>
    : egelu::internal::kernel_op_traits<Scalar,
                                        egelu::internal::fast_silu_kernel<egelu::internal::work_scalar<Scalar>>> {};
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
