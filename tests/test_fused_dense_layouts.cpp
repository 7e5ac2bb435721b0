// The fused product with other scalars, layouts, destinations and operands: double and
// blocks, arrays, replicated biases, reversed and diagonal destinations, row-major weights,
// a sparse left operand (fused_shapes.hpp; test_fused_dense.cpp has the rest).
#include <gtest/gtest.h>

#include <Eigen/Sparse>
#include <cmath>
#include <limits>
#include <vector>

#include "fused_shapes.hpp"

namespace {

using checks::Form;
using fused_shapes::expect_gelu_of;
using fused_shapes::Shapes;

TEST_F(Shapes, DoubleAndBlocks) {
  const Eigen::MatrixXd Wd = W.cast<double>(), Xd = X.cast<double>();
  const Eigen::VectorXd bd = b.cast<double>();
  Eigen::MatrixXd big = Eigen::MatrixXd::Constant(d_ff + 3, tokens + 2, std::numeric_limits<double>::quiet_NaN());
  big.block(1, 2, d_ff, tokens).noalias() = egelu::gelu((Wd * Xd).colwise() + bd);
  const Eigen::MatrixXd input = (Wd * Xd).colwise() + bd;
  expect_gelu_of(Form::tanh, Eigen::MatrixXd(big.block(1, 2, d_ff, tokens)), input);
  EXPECT_TRUE(std::isnan(big(0, 0)) && std::isnan(big(d_ff + 2, tokens + 1))) << "wrote outside the block";
}

// Eigen constructs an Array from a matrix expression; the fused path must too.
TEST_F(Shapes, ArrayDestination) {
  const Eigen::ArrayXXf Y = egelu::gelu(W * X);
  const Eigen::MatrixXf product = W * X;
  expect_gelu_of(Form::tanh, Eigen::MatrixXf(Y.matrix()), product);
  const Eigen::ArrayXXf Z = egelu::gelu_exact((W * X).colwise() + b);
  const Eigen::MatrixXf input = (W * X).colwise() + b;
  expect_gelu_of(Form::erf, Eigen::MatrixXf(Z.matrix()), input);

  const Eigen::MatrixXf S = Eigen::MatrixXf::Random(d, d);
  Eigen::ArrayXXf A = Eigen::ArrayXXf::Random(d, tokens);
  const Eigen::MatrixXf input2 = S * A.matrix();
  A.matrix() = egelu::gelu(S * A.matrix());  // through the wrapper, the destination is the right operand
  expect_gelu_of(Form::tanh, Eigen::MatrixXf(A.matrix()), input2);
}

// Array-style code: (A * B).array() plus an array bias is the same fused pass.
TEST_F(Shapes, ArrayStyleExpressions) {
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.array() = egelu::gelu_exact((W * x).array() + b.array()); }));
  const Eigen::VectorXf input = W * x + b;
  expect_gelu_of(Form::erf, y, input);

  Eigen::ArrayXXf Y = Eigen::ArrayXXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  const long bare = bare_product_allocations();
  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y = egelu::gelu((W * X).array().colwise() + b.array()); }), bare);
  const Eigen::MatrixXf broadcast_input = (W * X).colwise() + b;
  expect_gelu_of(Form::tanh, Eigen::MatrixXf(Y.matrix()), broadcast_input);

  const Eigen::RowVectorXf r = Eigen::RowVectorXf::Random(tokens);
  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y = egelu::gelu(r.array().replicate(d_ff, 1) + (W * X).array()); }), bare);
  const Eigen::MatrixXf row_input = (W * X).rowwise() + r;
  expect_gelu_of(Form::tanh, Eigen::MatrixXf(Y.matrix()), row_input);
}

// b.replicate(1, T) and a block of columns repeated: each line of the bias is a
// line of the replicated object (the values must match Replicate's own).
TEST_F(Shapes, ReplicatedBias) {
  Eigen::MatrixXf Y = Eigen::MatrixXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  const long bare = bare_product_allocations();
  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y.noalias() = egelu::gelu(W * X + b.replicate(1, tokens)); }), bare);
  const Eigen::MatrixXf input = W * X + b.replicate(1, tokens);
  expect_gelu_of(Form::tanh, Y, input);

  const Eigen::Index half = tokens / 2;
  const Eigen::MatrixXf columns = Eigen::MatrixXf::Random(d_ff, half);
  Eigen::MatrixXf Z = Eigen::MatrixXf::Constant(d_ff, 2 * half, std::numeric_limits<float>::quiet_NaN());
  Z.noalias() = egelu::gelu_exact(columns.replicate(1, 2) + W * X.leftCols(2 * half));
  const Eigen::MatrixXf input2 = W * X.leftCols(2 * half) + columns.replicate(1, 2);
  expect_gelu_of(Form::erf, Z, input2);

  const Eigen::MatrixXf rows = Eigen::MatrixXf::Random(d_ff / 2, tokens);  // repeated down each column
  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  Y.noalias() = egelu::gelu(W * X + rows.replicate(2, 1));
  const Eigen::MatrixXf input3 = W * X + rows.replicate(2, 1);
  expect_gelu_of(Form::tanh, Y, input3);

  // Both ways at once, into a row-major destination (lines are rows).
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::MatrixXf block = Eigen::MatrixXf::Random(d_ff / 3, tokens / 2);
  const Eigen::Index cols = 2 * block.cols();
  RowMajor R = RowMajor::Constant(d_ff, cols, std::numeric_limits<float>::quiet_NaN());
  R.noalias() = egelu::gelu_exact(W * X.leftCols(cols) + block.replicate(3, 2));
  RowMajor product(d_ff, cols);  // a row-major product sums in another order: compare like with like
  product.noalias() = W * X.leftCols(cols);
  const RowMajor input4 = product + block.replicate(3, 2);
  expect_gelu_of(Form::erf, R, input4);
}

// A Reverse has no direct access (Eigen's GEMV cannot write into it); a diagonal
// has one with a stride, and here it is also the right operand.
TEST_F(Shapes, ReversedAndDiagonalDestinations) {
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  y.reverse() = egelu::gelu(W * x + b);
  const Eigen::VectorXf input = W * x + b;
  expect_gelu_of(Form::tanh, Eigen::VectorXf(y.reverse()), input);

  const Eigen::MatrixXf S = Eigen::MatrixXf::Random(d, d);
  Eigen::MatrixXf M = Eigen::MatrixXf::Random(d, d);
  const Eigen::VectorXf input2 = S * M.diagonal() + x;
  M.diagonal() = egelu::gelu_exact(S * M.diagonal() + x);
  expect_gelu_of(Form::erf, Eigen::VectorXf(M.diagonal()), input2);
}

// Weights in PyTorch's nn.Linear layout (row-major, out x in), a strided row as
// the destination, fixed sizes, and a product of W with its own transpose.
TEST_F(Shapes, RowMajorWeightsAndOddDestinations) {
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor Wr = W;
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::gelu(Wr * x + b); }));
  const Eigen::VectorXf input = Wr * x + b;
  expect_gelu_of(Form::tanh, y, input);

  Eigen::MatrixXf Y = Eigen::MatrixXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  Y.noalias() = egelu::gelu_exact((Wr * X).colwise() + b);
  const Eigen::MatrixXf input2 = (Wr * X).colwise() + b;
  expect_gelu_of(Form::erf, Y, input2);

  // One token as a row of a column-major matrix: a destination with inner stride.
  Eigen::MatrixXf rows = Eigen::MatrixXf::Constant(3, d_ff, std::numeric_limits<float>::quiet_NaN());
  rows.row(1).noalias() = egelu::gelu(x.transpose() * W.transpose() + b.transpose());
  const Eigen::RowVectorXf input3 = x.transpose() * W.transpose() + b.transpose();
  expect_gelu_of(Form::tanh, Eigen::RowVectorXf(rows.row(1)), input3);
  EXPECT_TRUE(rows.row(0).array().isNaN().all() && rows.row(2).array().isNaN().all()) << "wrote outside the row";

  const Eigen::Matrix4f A = Eigen::Matrix4f::Random();
  const Eigen::Vector4f v = Eigen::Vector4f::Random(), c = Eigen::Vector4f::Random();
  const Eigen::Vector4f fixed = egelu::gelu_exact(A * v + c);
  const Eigen::Vector4f input4 = A * v + c;
  expect_gelu_of(Form::erf, fixed, input4);

  Eigen::MatrixXf G = Eigen::MatrixXf::Constant(d, d, std::numeric_limits<float>::quiet_NaN());
  G = egelu::gelu(X * X.transpose());
  const Eigen::MatrixXf input5 = X * X.transpose();
  expect_gelu_of(Form::tanh, G, input5);
}

TEST_F(Shapes, SparseLeftOperand) {
  Eigen::SparseMatrix<float> S(d_ff, d);
  for (Eigen::Index i = 0; i < d_ff; ++i) S.insert(i, (7 * i) % d) = 0.25f + 0.01f * float(i % 13);
  const Eigen::MatrixXf dense = S;
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  y.noalias() = egelu::gelu(S * x + b);
  const Eigen::VectorXf input = dense * x + b;  // one product per row: the same sums
  expect_gelu_of(Form::tanh, y, input);
  y.setConstant(std::numeric_limits<float>::quiet_NaN());
  y = egelu::gelu_exact(S * x);
  const Eigen::VectorXf product = dense * x;
  expect_gelu_of(Form::erf, y, product);
}

}  // namespace
