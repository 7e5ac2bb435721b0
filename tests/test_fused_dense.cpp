// gelu(W * x + b) and friends: the product goes straight into the destination,
// bias + GELU follow in the same pass, and nothing is allocated beyond what the
// bare product allocates -- unless the destination overlaps an operand.
// (test_fused_dense_layouts.cpp: other scalars, layouts, destinations and operands.)
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "fused_shapes.hpp"

namespace {

using checks::Form;
using fused_shapes::expect_gelu_of;
using fused_shapes::Shapes;

// The assignment throws std::invalid_argument, and its message names the shapes.
void expect_throw(const std::function<void()>& assign, const std::string& shapes) {
  try {
    assign();
    ADD_FAILURE() << "no exception for " << shapes;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(shapes), std::string::npos) << e.what();
  }
}

TEST_F(Shapes, GemvAllocatesNothing) {
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  // The counter sees Eigen's temporaries: an explicit eval() is one.
  EXPECT_EQ(1, malloc_counter::during([&] { y.noalias() = egelu::gelu((W * x).eval() + b); }));
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::gelu(W * x + b); }));
  const Eigen::VectorXf input = W * x + b;
  expect_gelu_of(Form::tanh, y, input);

  y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::gelu_exact(b + W * x); }));
  expect_gelu_of(Form::erf, y, input);

  // Without noalias(): the overlap check finds none, so still no temporary.
  y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y = egelu::gelu(W * x + b); }));
  expect_gelu_of(Form::tanh, y, input);
}

// The opt-in fast functors fuse the same way: same allocations, the unfused values.
TEST_F(Shapes, FastFormsFuseToo) {
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::fast::gelu(W * x + b); }));
  const Eigen::VectorXf input = W * x + b;
  EXPECT_TRUE(y.cwiseEqual(Eigen::VectorXf(egelu::fast::gelu(input))).all());
  EXPECT_FALSE(y.cwiseEqual(Eigen::VectorXf(egelu::gelu(input))).all());  // it is the fast kernel

  const long bare = bare_product_allocations();
  Eigen::MatrixXf Y = Eigen::MatrixXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y.noalias() = egelu::fast::gelu_exact((W * X).colwise() + b); }), bare);
  const Eigen::MatrixXf inputs = (W * X).colwise() + b;
  EXPECT_TRUE(Y.cwiseEqual(Eigen::MatrixXf(egelu::fast::gelu_exact(inputs))).all());
}

// The family fuses the same way: silu, quick_gelu and swish of a product and a bias.
TEST_F(Shapes, FamilyFusesToo) {
  const Eigen::VectorXf input = W * x + b;
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::silu(W * x + b); }));
  EXPECT_TRUE(y.cwiseEqual(Eigen::VectorXf(egelu::silu(input))).all());
  y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::quick_gelu(b + W * x); }));
  EXPECT_TRUE(y.cwiseEqual(Eigen::VectorXf(egelu::quick_gelu(input))).all());
  y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::swish(W * x + b, -1.5f); }));
  EXPECT_TRUE(y.cwiseEqual(Eigen::VectorXf(egelu::swish(input, -1.5f))).all());

  const long bare = bare_product_allocations();
  Eigen::MatrixXf Y = Eigen::MatrixXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y.noalias() = egelu::silu((W * X).colwise() + b); }), bare);
  const Eigen::MatrixXf inputs = (W * X).colwise() + b;
  EXPECT_TRUE(Y.cwiseEqual(Eigen::MatrixXf(egelu::silu(inputs))).all());
}

TEST_F(Shapes, GemmAllocatesNoMoreThanTheBareProduct) {
  Eigen::MatrixXf Y(d_ff, tokens);
  const long bare = bare_product_allocations();

  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y.noalias() = egelu::gelu((W * X).colwise() + b); }), bare);
  const Eigen::MatrixXf broadcast_input = (W * X).colwise() + b;
  expect_gelu_of(Form::tanh, Y, broadcast_input);

  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y = egelu::gelu(W * X + B); }), bare);
  const Eigen::MatrixXf full_input = W * X + B;
  expect_gelu_of(Form::tanh, Y, full_input);

  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y.noalias() = egelu::gelu_exact(B + W * X); }), bare);
  expect_gelu_of(Form::erf, Y, full_input);
}

TEST_F(Shapes, BareProductAllocatesNoMoreThanTheProduct) {
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::gelu(W * x); }));
  const Eigen::VectorXf input = W * x;
  expect_gelu_of(Form::tanh, y, input);

  Eigen::MatrixXf Y(d_ff, tokens);
  const long bare = bare_product_allocations();
  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y = egelu::gelu_exact(W * X); }), bare);
  const Eigen::MatrixXf product = W * X;
  expect_gelu_of(Form::erf, Y, product);
}

// The overlap check looks through expressions (scaled operands, a scaled or
// summed bias) to the objects they read, so these need no temporary either.
TEST_F(Shapes, ExpressionOperandsNeedNoTemporary) {
  const Eigen::VectorXf c = Eigen::VectorXf::Random(d_ff);
  Eigen::VectorXf y = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::gelu(W * x + (2.f * b + c)); }));
  const Eigen::VectorXf input = W * x + (2.f * b + c);
  expect_gelu_of(Form::tanh, y, input);

  y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0, malloc_counter::during([&] { y.noalias() = egelu::gelu_exact((2.f * W) * x + b); }));
  const Eigen::VectorXf scaled_input = (2.f * W) * x + b;
  expect_gelu_of(Form::erf, y, scaled_input);

  Eigen::MatrixXf Y(d_ff, tokens);
  const long bare = bare_product_allocations();
  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y.noalias() = egelu::gelu((W * X).colwise() + b.cwiseAbs()); }), bare);
  const Eigen::MatrixXf broadcast_input = (W * X).colwise() + b.cwiseAbs();
  expect_gelu_of(Form::tanh, Y, broadcast_input);
}

TEST_F(Shapes, ConstructionAllocatesOnlyTheResult) {
  long allocations = 0;
  Eigen::VectorXf* z = nullptr;
  allocations = malloc_counter::during([&] { z = new Eigen::VectorXf(egelu::gelu_exact(W * x + b)); });
  // operator new of the Eigen object itself comes from libstdc++ (not counted); its storage is one malloc.
  EXPECT_EQ(1, allocations);
  const Eigen::VectorXf input = W * x + b;
  expect_gelu_of(Form::erf, *z, input);
  delete z;
}

TEST_F(Shapes, AliasedDestinationIsStillRight) {
  const Eigen::MatrixXf S = Eigen::MatrixXf::Random(d, d);
  const Eigen::VectorXf c = Eigen::VectorXf::Random(d);
  Eigen::VectorXf v = Eigen::VectorXf::Random(d);
  const Eigen::VectorXf input = S * v + c;
  v = egelu::gelu(S * v + c);  // v is both the destination and the product's right operand
  expect_gelu_of(Form::tanh, v, input);

  Eigen::VectorXf bias = Eigen::VectorXf::Random(d_ff);
  const Eigen::VectorXf input2 = W * x + bias;
  bias = egelu::gelu_exact(W * x + bias);  // the destination is the bias
  expect_gelu_of(Form::erf, bias, input2);

  Eigen::MatrixXf M = Eigen::MatrixXf::Random(d, d);
  const Eigen::MatrixXf input3 = M.transpose() * M + M;
  M.noalias() = egelu::gelu(M.transpose() * M + M);  // noalias() was a lie: still detected
  expect_gelu_of(Form::tanh, M, input3);
}

TEST_F(Shapes, AliasThroughAnExpressionIsStillRight) {
  const Eigen::MatrixXf S = Eigen::MatrixXf::Random(d, d);
  Eigen::VectorXf v = Eigen::VectorXf::Random(d);
  const Eigen::VectorXf input = S * v;
  v = egelu::gelu_exact(S * v);  // no bias: the destination is the right operand
  expect_gelu_of(Form::erf, v, input);

  Eigen::VectorXf y = Eigen::VectorXf::Random(d_ff);
  const Eigen::VectorXf input2 = W * x + 2.f * y;
  y = egelu::gelu(W * x + 2.f * y);  // the bias expression reads the destination
  expect_gelu_of(Form::tanh, y, input2);

  Eigen::MatrixXf M = Eigen::MatrixXf::Random(d, d);
  const Eigen::MatrixXf input3 = (0.5f * M.transpose()) * X.topRows(d);
  M.leftCols(tokens) = egelu::gelu(0.5f * M.transpose() * X.topRows(d));  // the scaled left operand reads M
  expect_gelu_of(Form::tanh, Eigen::MatrixXf(M.leftCols(tokens)), input3);
}

TEST_F(Shapes, AliasThroughNegativeStridesIsStillRight) {
  // The destination walks its columns backwards through memory, and the right
  // operand starts one column in: they share all but one column, while the
  // destination's first and last addresses, taken in walking order, span a
  // range that would miss the operand.
  const Eigen::Index n = d;
  std::vector<float> memory(std::size_t(n * (n + 1)));
  for (std::size_t i = 0; i < memory.size(); ++i) memory[i] = std::sin(0.37f * float(i));
  const Eigen::Map<Eigen::MatrixXf> operand(memory.data() + n, n, n);
  Eigen::Map<Eigen::MatrixXf, 0, Eigen::OuterStride<>> backwards(memory.data() + n * (n - 1), n, n,
                                                                 Eigen::OuterStride<>(-n));
  const Eigen::MatrixXf S = Eigen::MatrixXf::Random(n, n), C = Eigen::MatrixXf::Random(n, n);
  const Eigen::MatrixXf input = S * operand + C;
  backwards = egelu::gelu(S * operand + C);
  expect_gelu_of(Form::tanh, Eigen::MatrixXf(backwards), input);
}

// Eigen itself checks these shapes with eigen_assert, which stops a debug build
// first; in a release build the fused assignment must not read past the bias.
TEST_F(Shapes, WrongShapesThrowNamingBothShapes) {
#ifndef NDEBUG
  GTEST_SKIP() << "Eigen's own eigen_assert catches these first in a debug build";
#endif
  const Eigen::VectorXf short_bias = Eigen::VectorXf::Random(d_ff - 1);
  const Eigen::RowVectorXf long_row = Eigen::RowVectorXf::Random(tokens + 1);
  const Eigen::MatrixXf narrow = Eigen::MatrixXf::Random(d_ff, tokens - 1);
  Eigen::VectorXf y;
  Eigen::MatrixXf Y;
  expect_throw([&] { y.noalias() = egelu::gelu(W * x + short_bias); }, "A * B is 384x1 but the bias is 383x1");
  expect_throw([&] { y = egelu::gelu_exact(short_bias + W * x); }, "A * B is 384x1 but the bias is 383x1");
  expect_throw([&] { Y.noalias() = egelu::gelu((W * X).colwise() + short_bias); },
               "A * B is 384x37 but the bias is 383x1 (broadcast to 383x37)");
  expect_throw([&] { Y.noalias() = egelu::gelu((W * X).rowwise() + long_row); },
               "A * B is 384x37 but the bias is 1x38 (broadcast to 384x38)");
  expect_throw([&] { Y = egelu::gelu_exact(W * X + narrow); }, "A * B is 384x37 but the bias is 384x36");
  const Eigen::MatrixXf X_short = Eigen::MatrixXf::Random(d - 1, tokens);
  expect_throw([&] { Y.noalias() = egelu::gelu((W * X_short).colwise() + b); }, "A is 384x96 but B is 95x37");
  expect_throw([&] { y = egelu::gelu(W * X_short); }, "gelu(A * B): A is 384x96 but B is 95x37");
  EXPECT_EQ(y.size(), 0) << "the destination was resized before the shapes were checked";
  EXPECT_EQ(Y.size(), 0) << "the destination was resized before the shapes were checked";
}

// A destination that cannot take the result's shape (a block, a fixed size) throws in every
// build: the shape is checked before Eigen is asked to resize it, whose eigen_assert would
// stop a debug build first.
TEST_F(Shapes, WrongDestinationThrowsInEveryBuild) {
  Eigen::MatrixXf big = Eigen::MatrixXf::Zero(d_ff + 10, tokens + 10);
  expect_throw([&] { big.block(0, 0, 5, 5) = egelu::gelu(W * X + B); },
               "gelu(A * B + bias) is 384x37 but the destination is 5x5");
  expect_throw([&] { big.block(0, 0, 5, 5) = egelu::gelu_exact(W * X); },
               "gelu(A * B) is 384x37 but the destination is 5x5");
  EXPECT_TRUE((big.array() == 0).all()) << "wrote into a destination of the wrong shape";
  Eigen::Matrix4f fixed = Eigen::Matrix4f::Zero();
  expect_throw([&] { fixed.noalias() = egelu::gelu((W * X).colwise() + b); }, "is 384x37 but the destination is 4x4");
  EXPECT_TRUE((fixed.array() == 0).all()) << "wrote into a destination of the wrong shape";
  Eigen::Matrix<float, Eigen::Dynamic, 1, 0, 8, 1> bounded;
  expect_throw([&] { bounded.noalias() = egelu::gelu(W * x + b); }, "is 384x1 but the destination is 0x1");
}

// Eigen resizes through the wrappers that pass a resize on (Transpose, ArrayWrapper,
// MatrixWrapper): an empty row vector taking a column vector's result (Eigen transposes the
// destination), .array(), .matrix() and .transpose() of empty objects.
TEST_F(Shapes, WrappedDestinationsAreResized) {
  const Eigen::VectorXf input = W * x + b;
  Eigen::RowVectorXf r;
  r = egelu::gelu(W * x + b);
  expect_gelu_of(Form::tanh, Eigen::VectorXf(r.transpose()), input);
  Eigen::VectorXf y;
  y.array() = egelu::gelu_exact((W * x).array() + b.array());
  expect_gelu_of(Form::erf, y, input);
  const Eigen::MatrixXf inputs = W * X + B;
  Eigen::ArrayXXf A;
  A.matrix() = egelu::gelu(W * X + B);
  expect_gelu_of(Form::tanh, Eigen::MatrixXf(A.matrix()), inputs);
  Eigen::MatrixXf T;
  T.transpose() = egelu::gelu_exact(W * X + B);
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMajor product(d_ff, tokens);  // a transposed destination is row-major: compare like with like
  product.noalias() = W * X;
  const RowMajor row_major_inputs = product + B;
  expect_gelu_of(Form::erf, RowMajor(T.transpose()), row_major_inputs);
}

TEST_F(Shapes, RowMajorDestinationAndRowwiseBias) {
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::RowVectorXf r = Eigen::RowVectorXf::Random(tokens);
  RowMajor Y = RowMajor::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  Y.noalias() = egelu::gelu((W * X).colwise() + b);
  RowMajor product(d_ff, tokens);  // a row-major product sums in another order: compare like with like
  product.noalias() = W * X;
  const RowMajor input = product.colwise() + b;
  expect_gelu_of(Form::tanh, Y, input);
  Eigen::MatrixXf Z = Eigen::MatrixXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  Z.noalias() = egelu::gelu_exact((W * X).rowwise() + r);
  const Eigen::MatrixXf input2 = (W * X).rowwise() + r;
  expect_gelu_of(Form::erf, Z, input2);
}

TEST_F(Shapes, SumOfTwoProductsUsesEigensOwnEvaluation) {
  const Eigen::MatrixXf C = Eigen::MatrixXf::Random(d_ff, 5), D = Eigen::MatrixXf::Random(5, tokens);
  const Eigen::MatrixXf Y = egelu::gelu(W * X + C * D);
  const Eigen::MatrixXf input = W * X + C * D;
  expect_gelu_of(Form::tanh, Y, input);
}

// A bias holding a product would be evaluated once per line by the fused pass;
// Eigen's own evaluation computes it once. Counted by allocations: each
// evaluation of C * D (384 x 37 floats) takes one.
TEST_F(Shapes, BiasHoldingAProductIsEvaluatedOnce) {
  const Eigen::MatrixXf C = Eigen::MatrixXf::Random(d_ff, 5), D = Eigen::MatrixXf::Random(5, tokens);
  Eigen::MatrixXf Y = Eigen::MatrixXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  const long allocations = malloc_counter::during([&] { Y.noalias() = egelu::gelu_exact(W * X + (C * D).cwiseAbs()); });
  EXPECT_LT(allocations, tokens / 2) << "the bias's product was evaluated once per column";
  const Eigen::MatrixXf input = W * X + (C * D).cwiseAbs();
  expect_gelu_of(Form::erf, Y, input);
}

// A broadcast bias holding a product (colwise() + C * e): the fused pass evaluates
// it once (one vector) and broadcasts that. Before, each column's line read the
// product expression anew: 39 allocations for 37 columns, C * e computed 37 times.
// The product may read the destination.
TEST_F(Shapes, BroadcastOfAProductIsEvaluatedOnce) {
  const Eigen::MatrixXf C = Eigen::MatrixXf::Random(d_ff, 5);
  const Eigen::VectorXf e = Eigen::VectorXf::Random(5);
  const long bare = bare_product_allocations();
  Eigen::MatrixXf Y = Eigen::MatrixXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y.noalias() = egelu::gelu((W * X).colwise() + C * e); }), bare + 1);
  const Eigen::MatrixXf input = (W * X).colwise() + C * e;
  expect_gelu_of(Form::tanh, Y, input);

  Y.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { Y.noalias() = egelu::gelu(W * X + (2 * (C * e)).replicate(1, tokens)); }),
            bare + 1);
  const Eigen::MatrixXf input3 = W * X + (2 * (C * e)).replicate(1, tokens);
  expect_gelu_of(Form::tanh, Y, input3);

  Eigen::MatrixXf Z = Eigen::MatrixXf::Random(d_ff, tokens);
  const Eigen::MatrixXf input2 = (W * X).colwise() + Z.leftCols(5) * e;
  Z = egelu::gelu_exact((W * X).colwise() + Z.leftCols(5) * e);
  expect_gelu_of(Form::erf, Z, input2);
}

}  // namespace
