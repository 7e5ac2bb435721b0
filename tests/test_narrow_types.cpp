// Eigen::half and Eigen::bfloat16: computed in float, rounded once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "checks.hpp"

namespace {

using checks::Form;

template <typename T>
void check_narrow(Form form) {
  // Every finite value of the type in [-16, 16].
  std::vector<T> values;
  for (float v = -16.f; v <= 16.f;) {
    const T t(v);
    values.push_back(t);
    const T next = Eigen::numext::bit_cast<T>(
        static_cast<std::uint16_t>(Eigen::numext::bit_cast<std::uint16_t>(t) + (float(t) < 0 ? -1 : 1)));
    v = float(t) < 0 && float(next) == 0 ? 0.f : float(next);
    if (float(t) == 0 && v == 0) v = float(Eigen::numext::bit_cast<T>(std::uint16_t(1)));
  }
  Eigen::Array<T, Eigen::Dynamic, 1> x(values.size()), y(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) x(Eigen::Index(i)) = values[i];
  y.setConstant(std::numeric_limits<T>::quiet_NaN());
  if (form == Form::tanh) y = egelu::gelu(x);
  if (form == Form::erf) y = egelu::gelu_exact(x);
  if (form == Form::tanh_grad) y = egelu::gelu_grad(x);
  if (form == Form::erf_grad) y = egelu::gelu_exact_grad(x);
  if (form == Form::silu) y = egelu::silu(x);
  if (form == Form::silu_grad) y = egelu::silu_grad(x);
  if (form == Form::quick_gelu) y = egelu::quick_gelu(x);
  if (form == Form::quick_gelu_grad) y = egelu::quick_gelu_grad(x);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    checks::expect_close(form, x(i), y(i));
    const reference::quad exact = checks::exact(form, reference::quad(float(x(i))));
    const bool forward = !checks::is_grad(form);  // gradients: bounded relative to 1 + |y|
    if (forward && reference::is_normal_result<T>(exact)) {
      // Rounded once from float: half an ulp of T plus float's own error.
      EXPECT_LE(reference::ulp_error(y(i), exact), 0.501) << float(x(i));
    }
  }
}

constexpr Form kEveryForm[] = {Form::tanh, Form::erf,       Form::tanh_grad,  Form::erf_grad,
                               Form::silu, Form::silu_grad, Form::quick_gelu, Form::quick_gelu_grad};

TEST(NarrowTypes, Half) {
  for (Form f : kEveryForm) check_narrow<Eigen::half>(f);
}

TEST(NarrowTypes, BFloat16) {
  for (Form f : kEveryForm) check_narrow<Eigen::bfloat16>(f);
}

// Every bit pattern of T (NaNs, infinities, zeros, subnormals included): where
// Eigen converts packets of T to float packets the functor is vectorized, and
// every lane must give the bits the scalar path gives.
template <typename T, typename Op>
void check_lanes_agree_with_scalar(Op op) {
  using Traits = Eigen::internal::functor_traits<Op>;
  constexpr bool packets_convert =
      Eigen::internal::packet_traits<T>::Vectorizable && Eigen::internal::type_casting_traits<T, float>::VectorizedCast;
  EXPECT_EQ(bool(Traits::PacketAccess), packets_convert);
  Eigen::Array<T, Eigen::Dynamic, 1> x(1 << 16);
  for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = Eigen::numext::bit_cast<T>(static_cast<std::uint16_t>(i));
  Eigen::Array<T, Eigen::Dynamic, 1> y = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(x.size(), T(7));
  y = x.unaryExpr(op);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const T scalar = op(x(i));
    if (Eigen::numext::isnan(scalar)) {
      EXPECT_TRUE(Eigen::numext::isnan(y(i))) << "bits " << i;
    } else {
      EXPECT_EQ(Eigen::numext::bit_cast<std::uint16_t>(y(i)), Eigen::numext::bit_cast<std::uint16_t>(scalar))
          << "bits " << i << ", x = " << float(x(i));
    }
  }
}

template <typename T>
void check_all_lanes() {
  check_lanes_agree_with_scalar<T>(egelu::gelu_tanh_op<T>());
  check_lanes_agree_with_scalar<T>(egelu::gelu_erf_op<T>());
  check_lanes_agree_with_scalar<T>(egelu::gelu_tanh_grad_op<T>());
  check_lanes_agree_with_scalar<T>(egelu::gelu_erf_grad_op<T>());
  check_lanes_agree_with_scalar<T>(egelu::silu_op<T>());
  check_lanes_agree_with_scalar<T>(egelu::silu_grad_op<T>());
  check_lanes_agree_with_scalar<T>(egelu::quick_gelu_op<T>());
  check_lanes_agree_with_scalar<T>(egelu::quick_gelu_grad_op<T>());
  check_lanes_agree_with_scalar<T>(egelu::swish_op<T>(T(-0.5f)));
  // Special values in the lanes of a vectorized loop.
  using L = std::numeric_limits<T>;
  Eigen::Array<T, Eigen::Dynamic, 1> x = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(64, T(1));
  x.head(5) << L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), -T(0);
  for (const auto& y :
       {Eigen::Array<T, Eigen::Dynamic, 1>(egelu::gelu(x)), Eigen::Array<T, Eigen::Dynamic, 1>(egelu::gelu_exact(x)),
        Eigen::Array<T, Eigen::Dynamic, 1>(egelu::silu(x)), Eigen::Array<T, Eigen::Dynamic, 1>(egelu::quick_gelu(x))}) {
    EXPECT_TRUE(Eigen::numext::isnan(y(0)));
    EXPECT_EQ(float(y(1)), std::numeric_limits<float>::infinity());
    EXPECT_EQ(float(y(2)), 0.f);
    EXPECT_TRUE(std::signbit(float(y(2)))) << "gelu(-inf) must be -0";
    EXPECT_EQ(float(y(3)), 0.f);
    EXPECT_FALSE(std::signbit(float(y(3))));
    EXPECT_EQ(float(y(4)), 0.f);
    EXPECT_TRUE(std::signbit(float(y(4))));
  }
}

TEST(NarrowTypes, HalfLanesAgreeWithScalarPath) { check_all_lanes<Eigen::half>(); }
TEST(NarrowTypes, BFloat16LanesAgreeWithScalarPath) { check_all_lanes<Eigen::bfloat16>(); }

TEST(NarrowTypes, TensorOfHalf) {
  Eigen::Tensor<Eigen::half, 2> x(5, 7);
  x.setRandom();
  Eigen::Tensor<Eigen::half, 2> y = egelu::gelu(x);
  for (Eigen::Index i = 0; i < x.size(); ++i) checks::expect_close(Form::tanh, x.data()[i], y.data()[i]);
}

}  // namespace
