// Eigen::half and Eigen::bfloat16: computed in float, rounded once.
#include <gtest/gtest.h>

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
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    checks::expect_close(form, x(i), y(i));
    const reference::quad exact = checks::exact(form, reference::quad(float(x(i))));
    const bool forward = form == Form::tanh || form == Form::erf;  // gradients: bounded relative to 1 + |y|
    if (forward && reference::is_normal_result<T>(exact)) {
      // Rounded once from float: half an ulp of T plus float's own error.
      EXPECT_LE(reference::ulp_error(y(i), exact), 0.501) << float(x(i));
    }
  }
}

TEST(NarrowTypes, Half) {
  for (Form f : {Form::tanh, Form::erf, Form::tanh_grad, Form::erf_grad}) check_narrow<Eigen::half>(f);
}

TEST(NarrowTypes, BFloat16) {
  for (Form f : {Form::tanh, Form::erf, Form::tanh_grad, Form::erf_grad}) check_narrow<Eigen::bfloat16>(f);
}

TEST(NarrowTypes, TensorOfHalf) {
  Eigen::Tensor<Eigen::half, 2> x(5, 7);
  x.setRandom();
  Eigen::Tensor<Eigen::half, 2> y = egelu::gelu(x);
  for (Eigen::Index i = 0; i < x.size(); ++i) checks::expect_close(Form::tanh, x.data()[i], y.data()[i]);
}

}  // namespace
