// Known values: the examples from the issues, ONNX's conformance vectors, and
// the special values every lane and the scalar tail must get right.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <egelu/egelu.hpp>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "reference.hpp"

namespace {

TEST(Values, IssueExamplesToFourDecimals) {
  Eigen::ArrayXf x(3), y(2);
  x << -1, 0, 1;
  y << -3, 3;
  const Eigen::ArrayXf gx = egelu::gelu(x), gy = egelu::gelu(y);
  EXPECT_NEAR(gx(0), -0.1588f, 5e-5);
  EXPECT_EQ(gx(1), 0.0f);
  EXPECT_NEAR(gx(2), 0.8412f, 5e-5);
  EXPECT_NEAR(gy(0), -0.0036f, 5e-5);
  EXPECT_NEAR(gy(1), 2.9964f, 5e-5);
}

// tests/data/onnx_gelu/*.json: ONNX Gelu-20 node tests (see the README there).
std::vector<double> json_array(const std::string& text, const std::string& key) {
  const std::size_t at = text.find("\"" + key + "\"");
  const std::size_t open = text.find('[', at), close = text.find(']', open);
  if (at == std::string::npos || open == std::string::npos || close == std::string::npos) {
    throw std::runtime_error("no array \"" + key + "\"");
  }
  std::string body = text.substr(open + 1, close - open - 1);
  for (char& c : body) c = c == ',' ? ' ' : c;
  std::istringstream in(body);
  std::vector<double> values;
  for (double v; in >> v;) values.push_back(v);
  return values;
}

class OnnxVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(OnnxVectors, MatchWithinFourUlp) {
  const std::string path = std::string(EGELU_TEST_DATA_DIR) + "/onnx_gelu/" + GetParam() + ".json";
  std::ifstream file(path);
  ASSERT_TRUE(file) << path;
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const bool tanh_form = text.find("\"approximate\": \"tanh\"") != std::string::npos;
  const std::vector<double> input = json_array(text, "input"), output = json_array(text, "output");
  ASSERT_EQ(input.size(), output.size());
  Eigen::ArrayXf x(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) x(i) = float(input[i]);
  Eigen::ArrayXf y = Eigen::ArrayXf::Constant(x.size(), std::numeric_limits<float>::quiet_NaN());
  if (tanh_form) {
    y = egelu::gelu(x);
  } else {
    y = egelu::gelu_exact(x);
  }
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    // ONNX's tanh vectors round x + 0.044715 x^3 to float first (up to 4 ulp off the formula).
    EXPECT_LE(reference::ulp_error(y(i), reference::quad(output[i])), 4.0) << GetParam() << " x=" << x(i);
  }
}

INSTANTIATE_TEST_SUITE_P(Onnx, OnnxVectors,
                         ::testing::Values("test_gelu_tanh_1", "test_gelu_tanh_2", "test_gelu_default_1",
                                           "test_gelu_default_2"));

// Places each special value both in a vector lane and in the scalar tail.
template <typename T, typename Op>
Eigen::Array<T, Eigen::Dynamic, 1> apply_everywhere(const std::vector<T>& values, Op op) {
  const Eigen::Index n = 67;  // not a multiple of any packet size
  Eigen::Array<T, Eigen::Dynamic, 1> x = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(n, T(0.5));
  for (std::size_t i = 0; i < values.size(); ++i) {
    x(Eigen::Index(i)) = values[i];
    x(n - 1 - Eigen::Index(i)) = values[i];
  }
  Eigen::Array<T, Eigen::Dynamic, 1> y =
      Eigen::Array<T, Eigen::Dynamic, 1>::Constant(n, std::numeric_limits<T>::quiet_NaN());
  y = x.unaryExpr(op);
  return y;
}

template <typename T>
class SpecialValues : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SpecialValues, FloatTypes, );

template <typename T, typename Op>
void check_specials(Op op) {
  using L = std::numeric_limits<T>;
  const std::vector<T> x = {L::quiet_NaN(), L::infinity(),   -L::infinity(),   T(0),         -T(0),
                            L::max(),       -L::max(),       T(1e13),          T(-1e13),     T(1e30),
                            T(-1e30),       L::denorm_min(), -L::denorm_min(), L::min() / 4, -L::min() / 4};
  const auto y = apply_everywhere<T>(x, op);
  for (int end = 0; end < 2; ++end) {
    auto at = [&](std::size_t i) { return y(end ? y.size() - 1 - Eigen::Index(i) : Eigen::Index(i)); };
    EXPECT_TRUE(std::isnan(at(0)));
    EXPECT_EQ(at(1), L::infinity());
    EXPECT_EQ(at(2), T(0));
    EXPECT_TRUE(std::signbit(at(2))) << "gelu(-inf) must be -0";
    EXPECT_EQ(at(3), T(0));
    EXPECT_FALSE(std::signbit(at(3)));
    EXPECT_EQ(at(4), T(0));
    EXPECT_TRUE(std::signbit(at(4)));
    EXPECT_EQ(at(5), L::max());
    EXPECT_EQ(at(6), T(0));
    EXPECT_TRUE(std::signbit(at(6)));
    EXPECT_EQ(at(7), T(1e13));
    EXPECT_EQ(at(8), T(0));
    EXPECT_EQ(at(9), T(1e30));
    EXPECT_EQ(at(10), T(0));
    // Subnormal and tiny inputs: gelu(x) = x/2 to within rounding.
    for (std::size_t i = 11; i < 15; ++i) {
      const T expected = x[i] / 2;
      EXPECT_LE(std::abs(at(i) - expected), L::denorm_min()) << "x=" << x[i];
    }
  }
}

TYPED_TEST(SpecialValues, TanhForm) { check_specials<TypeParam>(egelu::gelu_tanh_op<TypeParam>()); }
TYPED_TEST(SpecialValues, ErfForm) { check_specials<TypeParam>(egelu::gelu_erf_op<TypeParam>()); }

template <typename T, typename Op>
void check_grad_specials(Op op) {
  using L = std::numeric_limits<T>;
  const std::vector<T> x = {L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), -T(0), T(1e30), T(-1e30)};
  const auto y = apply_everywhere<T>(x, op);
  for (int end = 0; end < 2; ++end) {
    auto at = [&](std::size_t i) { return y(end ? y.size() - 1 - Eigen::Index(i) : Eigen::Index(i)); };
    EXPECT_TRUE(std::isnan(at(0)));
    EXPECT_EQ(at(1), T(1));
    EXPECT_EQ(at(2), T(0));
    EXPECT_EQ(at(3), T(0.5));
    EXPECT_EQ(at(4), T(0.5));
    EXPECT_EQ(at(5), T(1));
    EXPECT_EQ(at(6), T(0));
  }
}

// The kernels scale by 2^n built from the low bits of n + pow2_shifter (float
// packets, x86 double packets) or by pldexp: every lane must be exactly
// std::ldexp(1, n) over the whole normal range, wider than the kernels need, in
// full and half packets (fixed-size objects use the latter), and from n's shifted
// form as from n.
template <typename Packet>
void check_pow2_over_normal_range() {
  using T = typename Eigen::internal::unpacket_traits<Packet>::type;
  constexpr int lanes = Eigen::internal::unpacket_traits<Packet>::size;
  using L = std::numeric_limits<T>;
  for (int first = L::min_exponent - 1; first <= L::max_exponent - 1; first += lanes) {
    T n[lanes], shifted[lanes], got[lanes], from_shifted[lanes];
    for (int k = 0; k < lanes; ++k) {
      n[k] = T(std::min(first + k, L::max_exponent - 1));
      shifted[k] = n[k] + egelu::internal::pow2_shifter<T>;
    }
    const Packet n_packet = Eigen::internal::ploadu<Packet>(n);
    Eigen::internal::pstoreu(got, egelu::internal::pow2(n_packet));
    Eigen::internal::pstoreu(from_shifted,
                             egelu::internal::pow2_from_shifted(Eigen::internal::ploadu<Packet>(shifted), n_packet));
    for (int k = 0; k < lanes; ++k) {
      ASSERT_EQ(got[k], std::ldexp(T(1), int(n[k]))) << "n = " << n[k] << ", lane " << k;
      ASSERT_EQ(from_shifted[k], got[k]) << "from the shifted form, n = " << n[k] << ", lane " << k;
      ASSERT_EQ(egelu::internal::pow2(n[k]), got[k]) << "scalar path, n = " << n[k];
    }
  }
}

TEST(ExactArithmetic, Pow2IsExactOverTheNormalRange) {
  using Eigen::internal::packet_traits;
  using Eigen::internal::unpacket_traits;
  check_pow2_over_normal_range<packet_traits<float>::type>();
  check_pow2_over_normal_range<unpacket_traits<packet_traits<float>::type>::half>();
  check_pow2_over_normal_range<packet_traits<double>::type>();
  check_pow2_over_normal_range<unpacket_traits<packet_traits<double>::type>::half>();
}

// 2^(n/16) from the sixteen-entry table (exp2_in_double.hpp): 2^m times 2^(j/16) rounded
// to double, n = 16m + j, in every lane and the scalar path, for n far beyond the
// kernels' |n| <= 2700.
template <typename Packet>
void check_pow2_of_sixteenths() {
  constexpr int lanes = Eigen::internal::unpacket_traits<Packet>::size;
  for (int first = -16 * 1000; first < 16 * 1000; first += lanes) {
    double n[lanes], shifted[lanes], got[lanes];
    for (int k = 0; k < lanes; ++k) {
      n[k] = first + k;
      shifted[k] = n[k] + egelu::internal::low_bits_shifter<double>;
    }
    Eigen::internal::pstoreu(got, egelu::internal::pow2_of_sixteenths(Eigen::internal::ploadu<Packet>(shifted)));
    for (int k = 0; k < lanes; ++k) {
      const int m = int(std::floor(n[k] / 16));
      const long double exact = std::exp2((n[k] - 16 * m) / 16.0L);  // 2^(j/16), j = n - 16m
      const long double table = std::ldexp(static_cast<long double>(got[k]), -m);
      // Half an ulp: 2^(j/16) lies in [1, 2).
      ASSERT_LE(std::abs(table - exact), 0x1p-53L) << "n = " << n[k] << ", lane " << k;
      ASSERT_EQ(egelu::internal::pow2_of_sixteenths(shifted[k]), got[k]) << "scalar path, n = " << n[k];
    }
  }
}

TEST(ExactArithmetic, Pow2OfSixteenthsIsTheRoundedTableTimesPow2) {
  check_pow2_of_sixteenths<double>();
  check_pow2_of_sixteenths<Eigen::internal::packet_traits<double>::type>();
  // With AVX-512: two lookups with VL, lane by lane without.
  check_pow2_of_sixteenths<Eigen::internal::packet_traits<double>::half>();
}

// max(x, -0), the forms' "+ x when x >= 0": x for x >= +0, -0 for x < 0 and x = -0, in
// every lane and the scalar path. The rule is written here from the sign bit, not from
// std::max: clang 14 folds x < 0 ? -0.0 : x into x <= 0 ? -0.0 : x (exact_arithmetic.hpp),
// and the sanitized CI build, at -O1, is where it does.
template <typename Packet>
void check_max_with_minus_zero() {
  using T = typename Eigen::internal::unpacket_traits<Packet>::type;
  constexpr int lanes = Eigen::internal::unpacket_traits<Packet>::size;
  using L = std::numeric_limits<T>;
  const T values[] = {T(0),     -T(0),       T(1.5),        T(-1.5),       L::denorm_min(), -L::denorm_min(),
                      L::max(), L::lowest(), L::infinity(), -L::infinity()};
  for (const T v : values) {
    T in[lanes], out[lanes];
    std::fill(in, in + lanes, v);
    Eigen::internal::pstoreu(out, egelu::internal::max_with_minus_zero(Eigen::internal::ploadu<Packet>(in)));
    const T expected = std::signbit(v) ? -T(0) : v;
    for (int k = 0; k < lanes; ++k) {
      ASSERT_EQ(out[k], expected) << "x = " << v << ", lane " << k;
      ASSERT_EQ(std::signbit(out[k]), std::signbit(expected)) << "x = " << v << ", lane " << k;
    }
    const T scalar = egelu::internal::max_with_minus_zero(v);
    ASSERT_EQ(scalar, expected) << "scalar path, x = " << v;
    ASSERT_EQ(std::signbit(scalar), std::signbit(expected)) << "scalar path, x = " << v;
  }
  for (const T nan : {L::quiet_NaN(), -L::quiet_NaN()}) {  // stays NaN: the forms' result is NaN anyway
    T in[lanes], out[lanes];
    std::fill(in, in + lanes, nan);
    Eigen::internal::pstoreu(out, egelu::internal::max_with_minus_zero(Eigen::internal::ploadu<Packet>(in)));
    for (int k = 0; k < lanes; ++k) ASSERT_TRUE(std::isnan(out[k])) << "lane " << k;
    ASSERT_TRUE(std::isnan(egelu::internal::max_with_minus_zero(nan))) << "scalar path";
  }
}

TEST(ExactArithmetic, MaxWithMinusZeroKeepsTheSignOfZero) {
  check_max_with_minus_zero<float>();
  check_max_with_minus_zero<Eigen::internal::packet_traits<float>::type>();
  check_max_with_minus_zero<double>();
  check_max_with_minus_zero<Eigen::internal::packet_traits<double>::type>();
}

TYPED_TEST(SpecialValues, TanhGradient) { check_grad_specials<TypeParam>(egelu::gelu_tanh_grad_op<TypeParam>()); }
TYPED_TEST(SpecialValues, ErfGradient) { check_grad_specials<TypeParam>(egelu::gelu_erf_grad_op<TypeParam>()); }

}  // namespace
