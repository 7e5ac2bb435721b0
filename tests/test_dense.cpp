// egelu on every kind of dense expression: the result keeps the shape, is lazy,
// is right against the quad reference, and the scalar tail agrees with the lanes.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "checks.hpp"

namespace {

using checks::Form;

template <typename Plain>
Plain poisoned(Eigen::Index rows, Eigen::Index cols) {
  return Plain::Constant(rows, cols, std::numeric_limits<typename Plain::Scalar>::quiet_NaN());
}

TEST(Dense, ReturnsLazyExpressions) {
  Eigen::ArrayXf x = Eigen::ArrayXf::Random(8);
  static_assert(std::is_same<decltype(egelu::gelu(x)),
                             const Eigen::CwiseUnaryOp<egelu::gelu_tanh_op<float>, const Eigen::ArrayXf>>::value);
  static_assert(std::is_same<decltype(egelu::gelu_exact(x)),
                             const Eigen::CwiseUnaryOp<egelu::gelu_erf_op<float>, const Eigen::ArrayXf>>::value);
  // The expression refers to x: changing x changes what it evaluates to.
  const auto expr = egelu::gelu(x);
  x.setConstant(1.0f);
  EXPECT_EQ(expr.eval()(3), egelu::gelu_tanh_op<float>()(1.0f));
}

// Every function takes maps of const data and const expressions.
TEST(Dense, ConstMapsAndConstExpressions) {
  std::vector<float> buffer(37), ones(37, 1.f);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = float(i) * 0.29f - 5.f;
  const Eigen::Map<const Eigen::ArrayXf> x(buffer.data(), 37), up(ones.data(), 37), dy(ones.data(), 37);
  const Eigen::Map<const Eigen::VectorXf> v(buffer.data(), 37);
  const auto scaled = x * 1.f;
  auto check = [&](const char* what, Form form, const Eigen::ArrayXf& y) {
    ASSERT_EQ(y.size(), 37) << what;
    for (Eigen::Index i = 0; i < y.size(); ++i) checks::expect_close(form, x(i), y(i));
  };
  check("gelu", Form::tanh, egelu::gelu(x));
  check("gelu_exact", Form::erf, egelu::gelu_exact(x));
  check("silu", Form::silu, egelu::silu(x));
  check("quick_gelu", Form::quick_gelu, egelu::quick_gelu(x));
  check("swish", Form::silu, egelu::swish(x, 1.f));
  check("gelu_grad", Form::tanh_grad, egelu::gelu_grad(x));
  check("silu_grad", Form::silu_grad, egelu::silu_grad(x));
  check("gelu_backward", Form::tanh_grad, egelu::gelu_backward(dy, x));
  check("swiglu", Form::silu, egelu::swiglu(x, up));
  check("geglu_exact", Form::erf, egelu::geglu_exact(x, up));
  check("a const expression", Form::tanh, egelu::gelu(scaled));
  check("a map of a const vector", Form::erf, egelu::gelu_exact(v).array());
}

TEST(Dense, ArraysAndMatricesOfEveryStorage) {
  const Eigen::ArrayXf a = Eigen::ArrayXf::Random(1001) * 6;
  Eigen::ArrayXf ya = poisoned<Eigen::ArrayXf>(1001, 1);
  ya = egelu::gelu(a);
  checks::expect_coefficientwise(Form::tanh, a.matrix(), ya.matrix());

  const Eigen::ArrayXXd b = Eigen::ArrayXXd::Random(7, 9) * 8;
  Eigen::ArrayXXd yb = poisoned<Eigen::ArrayXXd>(7, 9);
  yb = egelu::gelu_exact(b);
  checks::expect_coefficientwise(Form::erf, b, yb);

  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor r = RowMajor::Random(5, 13) * 4;
  RowMajor yr = poisoned<RowMajor>(5, 13);
  yr = egelu::gelu(r);
  checks::expect_coefficientwise(Form::tanh, r, yr);

  const Eigen::Matrix<float, 3, 4> f = Eigen::Matrix<float, 3, 4>::Random() * 3;
  Eigen::Matrix<float, 3, 4> yf = Eigen::Matrix<float, 3, 4>::Constant(std::numeric_limits<float>::quiet_NaN());
  yf = egelu::gelu_exact(f);
  checks::expect_coefficientwise(Form::erf, f, yf);

  const Eigen::Vector4d v = Eigen::Vector4d::Random();
  const Eigen::Vector4d yv = egelu::gelu(v);
  checks::expect_coefficientwise(Form::tanh, v, yv);

  const Eigen::Array<float, 1, Eigen::Dynamic> row = Eigen::Array<float, 1, Eigen::Dynamic>::Random(37) * 5;
  const Eigen::Array<float, 1, Eigen::Dynamic> yrow = egelu::gelu(row);
  checks::expect_coefficientwise(Form::tanh, row, yrow);
}

TEST(Dense, BlocksMapsAndStrides) {
  const Eigen::MatrixXf m = Eigen::MatrixXf::Random(17, 11) * 5;
  const Eigen::MatrixXf yblock = egelu::gelu(m.block(1, 2, 9, 5));
  checks::expect_coefficientwise(Form::tanh, m.block(1, 2, 9, 5), yblock);
  const Eigen::VectorXf ycol = egelu::gelu_exact(m.col(3));
  checks::expect_coefficientwise(Form::erf, m.col(3), ycol);
  const Eigen::RowVectorXf yrow = egelu::gelu(m.row(4));  // strided in a column-major matrix
  checks::expect_coefficientwise(Form::tanh, m.row(4), yrow);
  const Eigen::MatrixXf yt = egelu::gelu(m.transpose());
  checks::expect_coefficientwise(Form::tanh, m.transpose(), yt);

  std::vector<float> buffer(403);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = float(i % 97) * 0.13f - 6.f;
  // Unaligned: one float past an aligned start.
  Eigen::Map<const Eigen::ArrayXf> unaligned(buffer.data() + 1, 400);
  const Eigen::ArrayXf yu = egelu::gelu(unaligned);
  checks::expect_coefficientwise(Form::tanh, unaligned, yu);
  Eigen::Map<const Eigen::ArrayXf, 0, Eigen::InnerStride<3>> strided(buffer.data(), 134);
  const Eigen::ArrayXf ys = egelu::gelu_exact(strided);
  checks::expect_coefficientwise(Form::erf, strided, ys);
  Eigen::Map<const Eigen::MatrixXf, 0, Eigen::OuterStride<>> outer(buffer.data(), 7, 9, Eigen::OuterStride<>(11));
  const Eigen::MatrixXf yo = egelu::gelu(outer);
  checks::expect_coefficientwise(Form::tanh, outer, yo);

  // Writing through a Map into a block of a bigger matrix.
  Eigen::MatrixXf big = Eigen::MatrixXf::Constant(10, 10, std::numeric_limits<float>::quiet_NaN());
  big.block(2, 3, 9 - 2, 5) = egelu::gelu(m.block(0, 0, 7, 5));
  checks::expect_coefficientwise(Form::tanh, m.block(0, 0, 7, 5), big.block(2, 3, 7, 5));
}

TEST(Dense, FusesWithSurroundingExpressions) {
  const Eigen::ArrayXf a = Eigen::ArrayXf::Random(301) * 3, b = Eigen::ArrayXf::Random(301) * 2;
  const Eigen::ArrayXf input = a * 1.5f + b;
  const Eigen::ArrayXf g = egelu::gelu(a * 1.5f + b);
  checks::expect_coefficientwise(Form::tanh, input.matrix(), g.matrix());
  const Eigen::ArrayXf y = 2.f * egelu::gelu(a * 1.5f + b) - 1.f;
  EXPECT_TRUE((y == 2.f * g - 1.f).all());

  const Eigen::MatrixXd w = Eigen::MatrixXd::Random(12, 7), x = Eigen::MatrixXd::Random(7, 5);
  const Eigen::MatrixXd product = w * x;
  const Eigen::MatrixXd yp = egelu::gelu_exact(w * x);
  checks::expect_coefficientwise(Form::erf, product, yp);
}

TEST(Dense, ScalarTailAgreesWithVectorLanesBitForBit) {
  const Eigen::ArrayXf xf = Eigen::ArrayXf::Random(1003) * 12;
  const Eigen::ArrayXd xd = Eigen::ArrayXd::Random(1003) * 30;
  auto same_bits = [](auto a, auto b) { return std::memcmp(&a, &b, sizeof(a)) == 0; };
  const Eigen::ArrayXf yf = egelu::gelu(xf), ef = egelu::gelu_exact(xf), gf = egelu::gelu_grad(xf),
                       hf = egelu::gelu_exact_grad(xf);
  const Eigen::ArrayXd yd = egelu::gelu(xd), ed = egelu::gelu_exact(xd);
  for (Eigen::Index i = 0; i < xf.size(); ++i) {
    EXPECT_TRUE(same_bits(yf(i), egelu::gelu_tanh_op<float>()(xf(i)))) << i;
    EXPECT_TRUE(same_bits(ef(i), egelu::gelu_erf_op<float>()(xf(i)))) << i;
    EXPECT_TRUE(same_bits(gf(i), egelu::gelu_tanh_grad_op<float>()(xf(i)))) << i;
    EXPECT_TRUE(same_bits(hf(i), egelu::gelu_erf_grad_op<float>()(xf(i)))) << i;
    EXPECT_TRUE(same_bits(yd(i), egelu::gelu_tanh_op<double>()(xd(i)))) << i;
    EXPECT_TRUE(same_bits(ed(i), egelu::gelu_erf_op<double>()(xd(i)))) << i;
  }
}

// Fixed-size objects evaluate with Eigen's half and quarter packets (Packet8f and
// Packet4f with AVX-512, whose double twins look 2^(j/8) up differently): every
// width must give the bits of the dynamic-size evaluation (full packets and the
// scalar tail, which the test above ties together).
template <typename Scalar, int Size, typename Op>
void expect_fixed_size_matches_dynamic(Op op, Scalar spread) {
  using Fixed = Eigen::Array<Scalar, Size, 1>;
  using Dynamic = Eigen::Array<Scalar, Eigen::Dynamic, 1>;
  const Dynamic x = Dynamic::Random(Size * 101) * spread;
  const Dynamic expected = x.unaryExpr(op);
  for (Eigen::Index start = 0; start + Size <= x.size(); start += Size) {
    const Fixed xs = x.template segment<Size>(start);
    Fixed got = Fixed::Constant(std::numeric_limits<Scalar>::quiet_NaN());
    got = xs.unaryExpr(op);
    ASSERT_EQ(0, std::memcmp(got.data(), expected.data() + start, sizeof(Fixed)))
        << "size " << Size << ", first x = " << xs(0);
  }
}

template <typename Scalar, typename Op>
void expect_every_fixed_size_matches_dynamic(Op op, Scalar spread) {
  expect_fixed_size_matches_dynamic<Scalar, 2>(op, spread);
  expect_fixed_size_matches_dynamic<Scalar, 4>(op, spread);
  expect_fixed_size_matches_dynamic<Scalar, 8>(op, spread);
  expect_fixed_size_matches_dynamic<Scalar, 16>(op, spread);
}

TEST(Dense, FixedSizeObjectsMatchDynamicBitForBit) {
  expect_every_fixed_size_matches_dynamic(egelu::gelu_tanh_op<float>(), 12.f);
  expect_every_fixed_size_matches_dynamic(egelu::gelu_erf_op<float>(), 15.f);
  expect_every_fixed_size_matches_dynamic(egelu::gelu_tanh_grad_op<float>(), 12.f);
  expect_every_fixed_size_matches_dynamic(egelu::gelu_erf_grad_op<float>(), 15.f);
  expect_every_fixed_size_matches_dynamic(egelu::gelu_tanh_op<double>(), 30.);
  expect_every_fixed_size_matches_dynamic(egelu::gelu_erf_op<double>(), 40.);
}

TEST(Dense, EmptyInputs) {
  const Eigen::ArrayXf empty(0);
  const Eigen::ArrayXf y = egelu::gelu(empty);
  EXPECT_EQ(y.size(), 0);
  const Eigen::MatrixXd m(0, 5);
  const Eigen::MatrixXd ym = egelu::gelu_exact(m);
  EXPECT_EQ(ym.rows(), 0);
  EXPECT_EQ(ym.cols(), 5);
}

TEST(Dense, GradientsAndBackward) {
  const Eigen::ArrayXXf x = Eigen::ArrayXXf::Random(9, 13) * 7;
  const Eigen::ArrayXXf dy = Eigen::ArrayXXf::Random(9, 13);
  Eigen::ArrayXXf g = poisoned<Eigen::ArrayXXf>(9, 13);
  g = egelu::gelu_grad(x);
  checks::expect_coefficientwise(Form::tanh_grad, x, g);
  g = egelu::gelu_exact_grad(x);
  checks::expect_coefficientwise(Form::erf_grad, x, g);

  Eigen::ArrayXXf back = poisoned<Eigen::ArrayXXf>(9, 13);
  back = egelu::gelu_backward(dy, x);
  for (Eigen::Index j = 0; j < x.cols(); ++j)
    for (Eigen::Index i = 0; i < x.rows(); ++i) checks::expect_close(Form::tanh_grad, x(i, j), back(i, j), dy(i, j));
  back = egelu::gelu_exact_backward(dy, x);
  for (Eigen::Index j = 0; j < x.cols(); ++j)
    for (Eigen::Index i = 0; i < x.rows(); ++i) checks::expect_close(Form::erf_grad, x(i, j), back(i, j), dy(i, j));

  const Eigen::MatrixXd xm = Eigen::MatrixXd::Random(4, 6), dym = Eigen::MatrixXd::Random(4, 6);
  const Eigen::MatrixXd bm = egelu::gelu_backward(dym, xm);
  for (Eigen::Index j = 0; j < xm.cols(); ++j)
    for (Eigen::Index i = 0; i < xm.rows(); ++i) checks::expect_close(Form::tanh_grad, xm(i, j), bm(i, j), dym(i, j));
}

TEST(Dense, BackwardRejectsMismatchedShapes) {
  const Eigen::ArrayXXf x = Eigen::ArrayXXf::Random(3, 4), dy = Eigen::ArrayXXf::Random(4, 3);
  try {
    const Eigen::ArrayXXf y = egelu::gelu_backward(dy, x);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("4x3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3x4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(egelu::gelu_exact_backward(dy, x), std::invalid_argument);
}

}  // namespace
