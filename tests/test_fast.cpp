// The opt-in fast kernels (egelu::fast): their absolute bound against quad
// precision, special values, lanes against the scalar tail, and every API form.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "checks.hpp"
#include "test_scale.hpp"

namespace {

using checks::Form;
using ArrayXf = Eigen::ArrayXf;

// The documented bound (README, "Fast variants"): |fast(x) - gelu(x)| <= 4e-6 |x|.
constexpr double fast_bound = 4e-6;

std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The 128 values of T nearest to centre.
template <typename T>
void append_neighbours(std::vector<T>& v, T centre) {
  const T inf = std::numeric_limits<T>::infinity();
  for (int i = 0; i < 64; ++i) centre = std::nextafter(centre, -inf);
  for (int i = 0; i < 128; ++i, centre = std::nextafter(centre, inf)) v.push_back(centre);
}

// Inputs: a fine grid over [-8, 8] (every piece of the table, both clamps and
// beyond), every float near the piece boundaries and the clamps, and random floats.
// The grid and the random floats shrink with EGELU_TEST_SAMPLE_DIVISOR (test_scale.hpp).
ArrayXf bound_inputs() {
  std::vector<float> v;
  const int grid = int(test_scale::samples(1 << 20, 1 << 14));  // steps on each side of 0
  for (int i = -grid; i <= grid; ++i) v.push_back(8.f * float(i) / float(grid));
  using Pieces = egelu::internal::fast_pieces;
  for (int k = 0; k <= Pieces::count; ++k) append_neighbours(v, Pieces::clamp * (float(2 * k) / Pieces::count - 1));
  // the rationals' clamps (targets without AVX-512)
  for (const float clamp :
       {egelu::internal::fast_rational_tanh_float::clamp, egelu::internal::fast_rational_erf_float::clamp}) {
    append_neighbours(v, clamp);
    append_neighbours(v, -clamp);
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> bulk(-10.f, 10.f);
  for (std::size_t i = 0; i < test_scale::samples(1 << 19); ++i) v.push_back(bulk(rng));
  return Eigen::Map<ArrayXf>(v.data(), Eigen::Index(v.size()));
}

template <typename Op>
void check_bound(Form form) {
  const ArrayXf x = bound_inputs();
  ArrayXf y = ArrayXf::Constant(x.size(), std::numeric_limits<float>::quiet_NaN());
  y = x.unaryExpr(Op());
  double worst = 0;
  float worst_x = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const reference::quad exact = checks::exact(form, x(i));
    const double error = double(fabsq(reference::quad(y(i)) - exact)), scale = std::fabs(double(x(i)));
    ASSERT_TRUE(std::isfinite(y(i))) << "x = " << x(i);
    // plus half the least subnormal: a result below the normal range is rounded to it
    ASSERT_LE(error, fast_bound * scale + 0x1p-150)
        << "x = " << x(i) << ", got " << y(i) << ", exact " << double(exact);
    if (reference::is_normal_result<float>(exact) && error / scale > worst) worst = error / scale, worst_x = x(i);
  }
  std::printf("fast %s: max |error| / |x| = %.3g at x = %.9g over %td inputs\n",
              form == Form::tanh ? "gelu" : "gelu_exact", worst, double(worst_x), x.size());
  // The bound is not loose by orders of magnitude: a broken table would show.
  EXPECT_GT(worst, fast_bound / 100);
}

TEST(Fast, GeluWithinItsBound) { check_bound<egelu::fast::gelu_tanh_op<float>>(Form::tanh); }
TEST(Fast, GeluExactWithinItsBound) { check_bound<egelu::fast::gelu_erf_op<float>>(Form::erf); }

template <typename Op>
void check_special_values() {
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  const float tiny = std::numeric_limits<float>::denorm_min() * 1000, least_normal = std::numeric_limits<float>::min();
  ArrayXf x(12);
  x << std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.f, -0.f, big, -big, 1e13f, -1e13f, tiny, -least_normal,
      6.f;
  // In every lane and in the scalar tail: a 12-long array leaves a tail on every SIMD width.
  ArrayXf y = ArrayXf::Constant(x.size(), 7.f);
  y = x.unaryExpr(Op());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const float scalar = Op()(x(i));
    if (std::isnan(scalar)) {
      EXPECT_TRUE(std::isnan(y(i))) << i;
    } else {
      EXPECT_EQ(bits_of(y(i)), bits_of(scalar)) << "x = " << x(i);
    }
  }
  EXPECT_TRUE(std::isnan(y(0)));
  EXPECT_EQ(y(1), inf);
  EXPECT_EQ(bits_of(y(2)), bits_of(-0.f));
  EXPECT_EQ(bits_of(y(3)), bits_of(0.f));
  EXPECT_EQ(bits_of(y(4)), bits_of(-0.f));
  EXPECT_EQ(y(5), big);
  EXPECT_EQ(bits_of(y(6)), bits_of(-0.f));
  EXPECT_EQ(y(7), 1e13f);
  EXPECT_EQ(bits_of(y(8)), bits_of(-0.f));
  EXPECT_NEAR(y(9), x(9) / 2, fast_bound * std::fabs(x(9)) + std::numeric_limits<float>::denorm_min());
  EXPECT_NEAR(y(10), x(10) / 2, fast_bound * std::fabs(x(10)));
  EXPECT_EQ(y(11), 6.f);
}

TEST(Fast, SpecialValues) {
  check_special_values<egelu::fast::gelu_tanh_op<float>>();
  check_special_values<egelu::fast::gelu_erf_op<float>>();
}

// Every float in [-8, 8] with a stride, as packets and one by one: the same bits.
template <typename Op>
void check_lanes_agree_with_scalar() {
  // a multiple of 64 plus 3: a scalar tail on every SIMD width, whatever the divisor
  ArrayXf x(Eigen::Index(test_scale::samples(1 << 21, 1 << 16) / 64 * 64) + 3);
  for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = -8.f + 16.f * float(i) / float(x.size());
  ArrayXf y = ArrayXf::Constant(x.size(), std::numeric_limits<float>::quiet_NaN());
  y = x.unaryExpr(Op());
  for (Eigen::Index i = 0; i < x.size(); ++i) ASSERT_EQ(bits_of(y(i)), bits_of(Op()(x(i)))) << "x = " << x(i);
}

TEST(Fast, LanesAgreeWithScalar) {
  check_lanes_agree_with_scalar<egelu::fast::gelu_tanh_op<float>>();
  check_lanes_agree_with_scalar<egelu::fast::gelu_erf_op<float>>();
}

// Vectorized wherever the default functors are, and cheaper by Eigen's cost model.
TEST(Fast, FunctorTraits) {
  using Eigen::internal::functor_traits;
  EXPECT_EQ(bool(functor_traits<egelu::fast::gelu_tanh_op<float>>::PacketAccess),
            bool(functor_traits<egelu::gelu_tanh_op<float>>::PacketAccess));
  EXPECT_EQ(bool(functor_traits<egelu::fast::gelu_erf_op<double>>::PacketAccess),
            bool(functor_traits<egelu::gelu_erf_op<double>>::PacketAccess));
  EXPECT_LT(int(functor_traits<egelu::fast::gelu_tanh_op<float>>::Cost),
            int(functor_traits<egelu::gelu_tanh_op<float>>::Cost));
  EXPECT_LT(int(functor_traits<egelu::fast::gelu_erf_op<double>>::Cost),
            int(functor_traits<egelu::gelu_erf_op<double>>::Cost));
}

TEST(Fast, DenseAndTensorForms) {
  const Eigen::MatrixXf m = Eigen::MatrixXf::Random(37, 5) * 6;
  Eigen::MatrixXf out = Eigen::MatrixXf::Constant(37, 5, std::numeric_limits<float>::quiet_NaN());
  out = egelu::fast::gelu(m);  // a Matrix keeps its shape
  ASSERT_EQ(out.rows(), 37);
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    EXPECT_EQ(bits_of(out(i)), bits_of(egelu::fast::gelu_tanh_op<float>()(m(i))));
    EXPECT_LE(std::fabs(double(out(i)) - double(reference::gelu_tanh(m(i)))), fast_bound * std::fabs(m(i)));
  }
  out = egelu::fast::gelu_exact(m.transpose()).transpose();
  for (Eigen::Index i = 0; i < m.size(); ++i)
    EXPECT_EQ(bits_of(out(i)), bits_of(egelu::fast::gelu_erf_op<float>()(m(i))));

  Eigen::Tensor<float, 3> t(3, 4, 5);
  t.setRandom();
  t = t * 6.f;
  Eigen::Tensor<float, 3> g = egelu::fast::gelu(t), e = egelu::fast::gelu_exact(t * 1.f);
  ASSERT_EQ(g.dimensions(), t.dimensions());
  for (Eigen::Index i = 0; i < t.size(); ++i) {
    EXPECT_EQ(bits_of(g(i)), bits_of(egelu::fast::gelu_tanh_op<float>()(t(i))));
    EXPECT_EQ(bits_of(e(i)), bits_of(egelu::fast::gelu_erf_op<float>()(t(i))));
  }
}

// half and bfloat16 run the float kernel and round once; double keeps the default kernel.
template <typename T>
void check_narrow() {
  Eigen::Array<T, Eigen::Dynamic, 1> x(1 << 16);
  for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = Eigen::numext::bit_cast<T>(static_cast<std::uint16_t>(i));
  Eigen::Array<T, Eigen::Dynamic, 1> y = egelu::fast::gelu(x), z = egelu::fast::gelu_exact(x);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const T want_y(egelu::fast::gelu_tanh_op<float>()(float(x(i))));
    const T want_z(egelu::fast::gelu_erf_op<float>()(float(x(i))));
    if (Eigen::numext::isnan(want_y)) {
      EXPECT_TRUE(Eigen::numext::isnan(y(i)) && Eigen::numext::isnan(z(i))) << i;
      continue;
    }
    EXPECT_EQ(Eigen::numext::bit_cast<std::uint16_t>(y(i)), Eigen::numext::bit_cast<std::uint16_t>(want_y)) << i;
    EXPECT_EQ(Eigen::numext::bit_cast<std::uint16_t>(z(i)), Eigen::numext::bit_cast<std::uint16_t>(want_z)) << i;
  }
}

TEST(Fast, HalfAndBFloat16) {
  check_narrow<Eigen::half>();
  check_narrow<Eigen::bfloat16>();
}

// double: the tanh form keeps the default kernel; the exact form is a rational
// function within 1e-15 |x| (README, "Fast variants").
constexpr double fast_double_bound = 1e-15;

TEST(Fast, DoubleTanhFormIsTheDefaultKernel) {
  const Eigen::ArrayXd x = Eigen::ArrayXd::LinSpaced(1001, -12, 12);
  const Eigen::ArrayXd fast = egelu::fast::gelu(x), accurate = egelu::gelu(x);
  EXPECT_TRUE((fast == accurate).all());
}

TEST(Fast, DoubleExactFormWithinItsBound) {
  std::vector<double> v;
  const int grid = int(test_scale::samples(1 << 18, 1 << 13));  // steps on each side of 0
  for (int i = -grid; i <= grid; ++i) v.push_back(10. * i / grid);
  const double clamp = egelu::internal::fast_rational_erf_double::clamp;
  for (const double centre : {clamp, -clamp, 0.0}) append_neighbours(v, centre);  // the clamp, and tiny values
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> bulk(-12, 12);
  for (std::size_t i = 0; i < test_scale::samples(1 << 18); ++i) v.push_back(bulk(rng));
  const Eigen::Map<const Eigen::ArrayXd> x(v.data(), Eigen::Index(v.size()));
  Eigen::ArrayXd y = Eigen::ArrayXd::Constant(x.size(), std::numeric_limits<double>::quiet_NaN());
  y = egelu::fast::gelu_exact(x);
  double worst = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y(i), egelu::fast::gelu_erf_op<double>()(x(i))) << "lanes and scalar differ at x = " << x(i);
    const reference::quad exact = reference::gelu_erf(x(i));
    const double error = double(fabsq(reference::quad(y(i)) - exact)), scale = std::fabs(x(i));
    ASSERT_LE(error, fast_double_bound * scale + std::numeric_limits<double>::denorm_min())
        << "x = " << x(i) << ", got " << y(i);
    if (reference::is_normal_result<double>(exact)) worst = std::max(worst, error / scale);
  }
  std::printf("fast gelu_exact, double: max |error| / |x| = %.3g over %td inputs\n", worst, x.size());
  EXPECT_GT(worst, fast_double_bound / 100);

  const double inf = std::numeric_limits<double>::infinity();
  Eigen::ArrayXd special(7);
  special << std::numeric_limits<double>::quiet_NaN(), inf, -inf, 0., -0., 1e300, -1e300;
  const Eigen::ArrayXd out = egelu::fast::gelu_exact(special);
  EXPECT_TRUE(std::isnan(out(0)));
  EXPECT_EQ(out(1), inf);
  EXPECT_TRUE(out(2) == 0 && std::signbit(out(2)));
  EXPECT_TRUE(out(3) == 0 && !std::signbit(out(3)));
  EXPECT_TRUE(out(4) == 0 && std::signbit(out(4)));
  EXPECT_EQ(out(5), 1e300);
  EXPECT_TRUE(out(6) == 0 && std::signbit(out(6)));
}

}  // namespace
