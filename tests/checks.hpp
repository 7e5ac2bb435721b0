// Assertions shared by the tests: every coefficient of a result against the
// quad-precision reference for the coefficient of the input at the same place.
#ifndef EGELU_TESTS_CHECKS_HPP
#define EGELU_TESTS_CHECKS_HPP

#include <gtest/gtest.h>

#include <egelu/egelu.hpp>
#include <limits>
#include <type_traits>

#include "reference.hpp"

namespace checks {

enum class Form { tanh, erf, tanh_grad, erf_grad, silu, silu_grad, quick_gelu, quick_gelu_grad };

inline bool is_grad(Form form) {
  return form == Form::tanh_grad || form == Form::erf_grad || form == Form::silu_grad || form == Form::quick_gelu_grad;
}

// The exact result for x; T is the type the kernel computes in (QuickGELU's 1.702 is rounded to it).
template <typename T = float>
reference::quad exact(Form form, reference::quad x) {
  constexpr bool in_double = std::is_same<T, double>::value;
  switch (form) {
    case Form::tanh:
      return reference::gelu_tanh(x);
    case Form::erf:
      return reference::gelu_erf(x);
    case Form::tanh_grad:
      return reference::gelu_tanh_grad(x);
    case Form::erf_grad:
      return reference::gelu_erf_grad(x);
    case Form::silu:
      return reference::silu(x);
    case Form::silu_grad:
      return reference::silu_grad(x);
    case Form::quick_gelu:
      return in_double ? reference::quick_gelu_double(x) : reference::quick_gelu_float(x);
    case Form::quick_gelu_grad:
      return in_double ? reference::quick_gelu_grad_double(x) : reference::quick_gelu_grad_float(x);
  }
  return 0;
}

// The documented bounds (README, "Accuracy"): 2 ulp for float/double results
// that are normal numbers, and |error| <= eps * (1 + |exact|) everywhere.
template <typename T>
double relative_one_bound(Form form) {
  const bool grad = is_grad(form);
  if (std::is_same<T, float>::value) return grad ? 1.5e-7 : 2e-6;
  if (std::is_same<T, double>::value) return grad ? 5e-16 : 1e-14;
  if (std::is_same<T, Eigen::half>::value) return 1e-3;
  return 8e-3;  // bfloat16
}

template <typename T>
void expect_close(Form form, T x, T got, double scale = 1) {
  using Work = std::conditional_t<std::is_same<T, double>::value, double, float>;
  const reference::quad e = exact<Work>(form, reference::quad(double(x))) * reference::quad(scale);
  const double rel = double(fabsq(reference::quad(double(got)) - e) / (1 + fabsq(e)));
  EXPECT_LE(rel, relative_one_bound<T>(form)) << "x=" << double(x) << " got=" << double(got);
  const bool grad = is_grad(form);
  if (!grad && scale == 1 && std::is_floating_point<T>::value && reference::is_normal_result<T>(e)) {
    EXPECT_LE(reference::ulp_error(got, e), 2.0) << "x=" << double(x);
  }
}

// result(i, j) against the reference at input(i, j), for any two dense objects.
template <typename In, typename Out>
void expect_coefficientwise(Form form, const In& input, const Out& result) {
  ASSERT_EQ(input.rows(), result.rows());
  ASSERT_EQ(input.cols(), result.cols());
  for (Eigen::Index j = 0; j < input.cols(); ++j)
    for (Eigen::Index i = 0; i < input.rows(); ++i) expect_close(form, input(i, j), result(i, j));
}

}  // namespace checks

#endif  // EGELU_TESTS_CHECKS_HPP
