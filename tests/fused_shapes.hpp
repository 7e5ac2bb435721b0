// What the fused-product tests share: the shapes (a BERT-like layer, small), and the
// check that a fused result has the unfused expression's values, which are right against
// quad. Two files use it, test_fused_dense.cpp and test_fused_dense_layouts.cpp, so that
// the suite's second slowest code to compile builds on both cores.
#ifndef EGELU_TESTS_FUSED_SHAPES_HPP
#define EGELU_TESTS_FUSED_SHAPES_HPP

#include <gtest/gtest.h>

#include "checks.hpp"
#include "malloc_counter.hpp"

namespace fused_shapes {

using checks::Form;

// Same values as the unfused computation, and those are right against quad.
template <typename Fused, typename Input>
void expect_gelu_of(Form form, const Fused& fused, const Input& input) {
  using Plain = typename Input::PlainObject;
  const Plain expected = form == Form::tanh ? Plain(egelu::gelu(input)) : Plain(egelu::gelu_exact(input));
  ASSERT_EQ(fused.rows(), input.rows());
  ASSERT_EQ(fused.cols(), input.cols());
  EXPECT_TRUE(fused.cwiseEqual(expected).all()) << "differs from the unfused expression";
  checks::expect_coefficientwise(form, input, fused);
}

struct Shapes : ::testing::Test {
  const Eigen::Index d = 96, d_ff = 384, tokens = 37;
  Eigen::MatrixXf W = Eigen::MatrixXf::Random(d_ff, d), X = Eigen::MatrixXf::Random(d, tokens);
  Eigen::VectorXf x = Eigen::VectorXf::Random(d), b = Eigen::VectorXf::Random(d_ff);
  Eigen::MatrixXf B = Eigen::MatrixXf::Random(d_ff, tokens);

  // What the bare `Y.noalias() = W * X` allocates (Eigen's packing buffers): the GEMM forms' limit.
  long bare_product_allocations() const {
    Eigen::MatrixXf Y(d_ff, tokens);
    return malloc_counter::during([&] { Y.noalias() = W * X; });
  }
};

}  // namespace fused_shapes

#endif  // EGELU_TESTS_FUSED_SHAPES_HPP
