// egelu on Eigen::Tensor expressions: ranks 0 to 6 in both layouts, maps, fixed
// sizes, chips, slices, broadcasts and contractions, with the shape kept.
#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <numeric>
#include <vector>

#include "checks.hpp"

namespace {

using checks::Form;

template <typename T, int Rank, int Layout>
void check_rank() {
  Eigen::array<Eigen::Index, Rank> dims;
  for (int i = 0; i < Rank; ++i) dims[i] = 2 + (i % 3);  // 2, 3, 4, 2, 3, 4
  Eigen::Tensor<T, Rank, Layout> x(dims);
  x.setRandom();
  x = x * T(8) - T(4);
  Eigen::Tensor<T, Rank, Layout> y(dims), z(dims);
  y.setConstant(std::numeric_limits<T>::quiet_NaN());
  z.setConstant(std::numeric_limits<T>::quiet_NaN());
  y = egelu::gelu(x);
  z = egelu::gelu_exact(x);
  ASSERT_EQ(y.dimensions(), x.dimensions());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    checks::expect_close(Form::tanh, x.data()[i], y.data()[i]);
    checks::expect_close(Form::erf, x.data()[i], z.data()[i]);
  }
}

template <int Layout>
void check_all_ranks() {
  check_rank<float, 0, Layout>();
  check_rank<float, 1, Layout>();
  check_rank<float, 2, Layout>();
  check_rank<double, 3, Layout>();
  check_rank<float, 4, Layout>();
  check_rank<double, 5, Layout>();
  check_rank<float, 6, Layout>();
}

TEST(Tensor, EveryRankColMajor) { check_all_ranks<Eigen::ColMajor>(); }
TEST(Tensor, EveryRankRowMajor) { check_all_ranks<Eigen::RowMajor>(); }

TEST(Tensor, RankZero) {
  Eigen::Tensor<float, 0> x;
  x() = -1.0f;
  Eigen::Tensor<float, 0> y = egelu::gelu(x);
  EXPECT_NEAR(y(), -0.1588f, 5e-5);
}

TEST(Tensor, MapFixedSizeChipSlice) {
  std::vector<float> buffer(3 * 4 * 5 + 1);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = float(i) * 0.17f - 5.f;
  Eigen::TensorMap<const Eigen::Tensor<float, 3>> map(buffer.data() + 1, 3, 4, 5);  // unaligned
  Eigen::Tensor<float, 3> ymap = egelu::gelu(map);
  ASSERT_EQ(ymap.dimensions(), map.dimensions());
  for (Eigen::Index i = 0; i < map.size(); ++i) checks::expect_close(Form::tanh, map.data()[i], ymap.data()[i]);

  Eigen::TensorFixedSize<double, Eigen::Sizes<3, 4, 5>> fixed;
  fixed.setRandom();
  Eigen::TensorFixedSize<double, Eigen::Sizes<3, 4, 5>> yfixed;
  yfixed.setConstant(std::numeric_limits<double>::quiet_NaN());
  yfixed = egelu::gelu_exact(fixed);
  for (Eigen::Index i = 0; i < fixed.size(); ++i) checks::expect_close(Form::erf, fixed.data()[i], yfixed.data()[i]);

  Eigen::Tensor<float, 3> t(4, 5, 6);
  t.setRandom();
  Eigen::Tensor<float, 2> chip = egelu::gelu(t.chip<1>(2));
  ASSERT_EQ(chip.dimension(0), 4);
  ASSERT_EQ(chip.dimension(1), 6);
  for (Eigen::Index i = 0; i < 4; ++i)
    for (Eigen::Index k = 0; k < 6; ++k) checks::expect_close(Form::tanh, t(i, 2, k), chip(i, k));

  const Eigen::array<Eigen::Index, 3> offsets = {1, 2, 0}, extents = {2, 3, 5};
  Eigen::Tensor<float, 3> slice = egelu::gelu_exact(t.slice(offsets, extents));
  ASSERT_EQ(slice.dimension(0), 2);
  for (Eigen::Index i = 0; i < 2; ++i)
    for (Eigen::Index j = 0; j < 3; ++j)
      for (Eigen::Index k = 0; k < 5; ++k) checks::expect_close(Form::erf, t(1 + i, 2 + j, k), slice(i, j, k));
}

TEST(Tensor, FusesWithBroadcastInOneExpression) {
  Eigen::Tensor<float, 2> a(8, 33);
  a.setRandom();
  Eigen::Tensor<float, 2> bias(8, 1);
  bias.setRandom();
  const Eigen::array<Eigen::Index, 2> bcast = {1, 33};
  Eigen::Tensor<float, 2> y(8, 33);
  y.setConstant(std::numeric_limits<float>::quiet_NaN());
  y = egelu::gelu(a * 2.f + bias.broadcast(bcast));
  for (Eigen::Index i = 0; i < 8; ++i)
    for (Eigen::Index j = 0; j < 33; ++j) checks::expect_close(Form::tanh, a(i, j) * 2.f + bias(i, 0), y(i, j));
}

TEST(Tensor, OfAContraction) {
  Eigen::Tensor<double, 2> a(6, 4), b(4, 5);
  a.setRandom();
  b.setRandom();
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
  Eigen::Tensor<double, 2> product = a.contract(b, dims);
  Eigen::Tensor<double, 2> y = egelu::gelu(a.contract(b, dims));
  for (Eigen::Index i = 0; i < product.size(); ++i) checks::expect_close(Form::tanh, product.data()[i], y.data()[i]);
}

TEST(Tensor, ZeroSizedDimensions) {
  Eigen::Tensor<float, 3> x(4, 0, 3);
  Eigen::Tensor<float, 3> y = egelu::gelu(x);
  EXPECT_EQ(y.dimension(1), 0);
  EXPECT_EQ(y.size(), 0);
}

TEST(Tensor, GradientsAndBackward) {
  Eigen::Tensor<float, 3, Eigen::RowMajor> x(3, 7, 5), dy(3, 7, 5);
  x.setRandom();
  x = x * 10.f - 5.f;
  dy.setRandom();
  Eigen::Tensor<float, 3, Eigen::RowMajor> g = egelu::gelu_grad(x), h = egelu::gelu_exact_grad(x);
  Eigen::Tensor<float, 3, Eigen::RowMajor> b = egelu::gelu_backward(dy, x), c = egelu::gelu_exact_backward(dy, x);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    checks::expect_close(Form::tanh_grad, x.data()[i], g.data()[i]);
    checks::expect_close(Form::erf_grad, x.data()[i], h.data()[i]);
    checks::expect_close(Form::tanh_grad, x.data()[i], b.data()[i], dy.data()[i]);
    checks::expect_close(Form::erf_grad, x.data()[i], c.data()[i], dy.data()[i]);
  }
}

// Every function takes const maps (of const data, whose Scalar is const float, which the
// functors refused until the scalar's const was dropped) and const expressions.
TEST(Tensor, ConstMapsAndConstExpressions) {
  std::vector<float> buffer(4 * 6), ones(4 * 6, 1.f);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = float(i) * 0.37f - 4.f;
  const float* data = buffer.data();
  const Eigen::TensorMap<const Eigen::Tensor<const float, 2>> x(data, 4, 6);
  const Eigen::TensorMap<const Eigen::Tensor<const float, 2>> up(ones.data(), 4, 6), dy(ones.data(), 4, 6);
  const Eigen::Tensor<float, 2> owned = x;
  const auto& const_ref = owned;
  const auto scaled = x * 1.f;  // a const expression of the const map
  auto check = [&](const char* what, Form form, const Eigen::Tensor<float, 2>& y) {
    ASSERT_EQ(y.dimension(0), 4) << what;
    ASSERT_EQ(y.dimension(1), 6) << what;
    for (Eigen::Index i = 0; i < y.size(); ++i) checks::expect_close(form, data[i], y.data()[i]);
  };
  check("gelu", Form::tanh, egelu::gelu(x));
  check("gelu_exact", Form::erf, egelu::gelu_exact(x));
  check("silu", Form::silu, egelu::silu(x));
  check("quick_gelu", Form::quick_gelu, egelu::quick_gelu(x));
  check("swish", Form::silu, egelu::swish(x, 1.f));
  check("gelu_grad", Form::tanh_grad, egelu::gelu_grad(x));
  check("gelu_exact_grad", Form::erf_grad, egelu::gelu_exact_grad(x));
  check("silu_grad", Form::silu_grad, egelu::silu_grad(x));
  check("quick_gelu_grad", Form::quick_gelu_grad, egelu::quick_gelu_grad(x));
  check("gelu_backward", Form::tanh_grad, egelu::gelu_backward(dy, x));
  check("gelu_exact_backward", Form::erf_grad, egelu::gelu_exact_backward(dy, x));
  check("silu_backward", Form::silu_grad, egelu::silu_backward(dy, x));
  check("quick_gelu_backward", Form::quick_gelu_grad, egelu::quick_gelu_backward(dy, x));
  check("swiglu", Form::silu, egelu::swiglu(x, up));
  check("geglu", Form::tanh, egelu::geglu(x, up));
  check("geglu_exact", Form::erf, egelu::geglu_exact(x, up));
  const Eigen::Tensor<float, 2> fast_tanh = egelu::fast::gelu(x), fast_erf = egelu::fast::gelu_exact(x),
                                fast_silu = egelu::fast::silu(x);
  EXPECT_EQ(fast_tanh.size() + fast_erf.size() + fast_silu.size(), 3 * 24);
  check("gelu of a const reference", Form::tanh, egelu::gelu(const_ref));
  check("gelu of a const expression", Form::tanh, egelu::gelu(scaled));
  check("gelu_exact of a const map of non-const data", Form::erf,
        egelu::gelu_exact(Eigen::TensorMap<const Eigen::Tensor<float, 2>>(buffer.data(), 4, 6)));
}

TEST(Tensor, BackwardRejectsMismatchedDimensions) {
  Eigen::Tensor<float, 2> x(3, 4), dy(4, 3);
  x.setRandom();
  dy.setRandom();
  try {
    Eigen::Tensor<float, 2> y = egelu::gelu_backward(dy, x);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[4, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[3, 4]"), std::string::npos) << e.what();
  }
}

}  // namespace
