// The checks of BiasGeluOutputKernel / BiasGeluExactOutputKernel inside Tensor
// contractions, for either device and layout: test_output_kernel.cpp runs them on the
// DefaultDevice, test_output_kernel_pool.cpp and test_output_kernel_pool_rowmajor.cpp on a
// ThreadPoolDevice (the thread pool's contractions are the suite's slowest code to compile:
// in three files they build at once).
//
// Every output kernel is one template, bias_activation_output_kernel<Scalar, Op>: what a
// device does with it (the blocks it hands over, the pool's GEMV, GEMM and sharded paths)
// is the template's code whatever the Op, and what the Op does is the same on any device.
// So every activation is checked on the DefaultDevice, both layouts, every shape, and the
// thread pool's paths with one of them (the tanh form): each further output-kernel type
// instantiates the pool's eight contraction variants again, most of a file's compile time.
#ifndef EGELU_TESTS_OUTPUT_KERNEL_CHECKS_HPP
#define EGELU_TESTS_OUTPUT_KERNEL_CHECKS_HPP

#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

#include "checks.hpp"

namespace output_kernel_checks {

using checks::Form;

template <int Layout, typename Kernel, typename Device>
void check_contraction(Form form, const Device& device, Eigen::Index d_ff, Eigen::Index d, Eigen::Index tokens) {
  Eigen::Tensor<float, 2, Layout> W(d_ff, d), X(d, tokens);
  Eigen::Tensor<float, 1, Layout> bias(d_ff);
  W.setRandom();
  X.setRandom();
  bias.setRandom();
  W = W - 0.5f;
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};

  Eigen::Tensor<float, 2, Layout> fused(d_ff, tokens), product(d_ff, tokens);
  fused.setConstant(std::numeric_limits<float>::quiet_NaN());
  fused.device(device) = W.contract(X, dims, Kernel(bias));
  product.device(device) = W.contract(X, dims);

  // The unfused expression, with the bias broadcast over tokens.
  const Eigen::array<Eigen::Index, 2> as_column = {d_ff, 1}, over_tokens = {1, tokens};
  Eigen::Tensor<float, 2, Layout> unfused(d_ff, tokens);
  const auto biased = product + bias.reshape(as_column).broadcast(over_tokens);
  if (form == Form::tanh) {
    unfused.device(device) = egelu::gelu(biased);
  } else {
    unfused.device(device) = egelu::gelu_exact(biased);
  }
  for (Eigen::Index i = 0; i < d_ff; ++i) {
    for (Eigen::Index j = 0; j < tokens; ++j) {
      ASSERT_EQ(fused(i, j), unfused(i, j)) << "at (" << i << ", " << j << ") of " << d_ff << "x" << tokens
                                            << (Layout == Eigen::RowMajor ? " RowMajor" : " ColMajor");
      checks::expect_close(form, product(i, j) + bias(i), fused(i, j));
    }
  }
}

// Every shape, in one layout on one device: both kernels, or (EveryForm false: the
// thread pool, see above) the tanh form's. Small (one block), odd, and
// large enough for the thread pool to split the work; one token (Eigen master sends a
// RowMajor one such through a direct GEMV that hands the kernel the column transposed),
// one output row, and both.
template <int Layout, bool EveryForm, typename Device>
void check_all(const Device& device) {
  for (auto shape : {std::array<Eigen::Index, 3>{7, 5, 3}, std::array<Eigen::Index, 3>{130, 67, 33},
                     std::array<Eigen::Index, 3>{768, 256, 128}, std::array<Eigen::Index, 3>{300, 64, 1},
                     std::array<Eigen::Index, 3>{7, 5, 1}, std::array<Eigen::Index, 3>{1, 64, 9},
                     std::array<Eigen::Index, 3>{1, 64, 1}}) {
    check_contraction<Layout, egelu::BiasGeluOutputKernel<float>>(Form::tanh, device, shape[0], shape[1], shape[2]);
    if constexpr (EveryForm) {
      check_contraction<Layout, egelu::BiasGeluExactOutputKernel<float>>(Form::erf, device, shape[0], shape[1],
                                                                         shape[2]);
    }
  }
}

// The opt-in fast kernels: the same values as the unfused fast expression.
template <int Layout, typename Kernel, typename Unfused, typename Device>
void check_fast_contraction(Unfused unfused_gelu, const Device& device) {
  const Eigen::Index d_ff = 130, d = 67, tokens = 33;
  Eigen::Tensor<float, 2, Layout> W(d_ff, d), X(d, tokens), fused(d_ff, tokens), unfused(d_ff, tokens);
  Eigen::Tensor<float, 1, Layout> bias(d_ff);
  W.setRandom();
  X.setRandom();
  bias.setRandom();
  W = (W - 0.5f) * 8.f;  // products over [-6, 6] and beyond: every piece and both clamps
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
  fused.setConstant(std::numeric_limits<float>::quiet_NaN());
  fused.device(device) = W.contract(X, dims, Kernel(bias));
  const Eigen::array<Eigen::Index, 2> as_column = {d_ff, 1}, over_tokens = {1, tokens};
  unfused.device(device) = unfused_gelu(W.contract(X, dims) + bias.reshape(as_column).broadcast(over_tokens));
  for (Eigen::Index i = 0; i < fused.size(); ++i) ASSERT_EQ(fused.data()[i], unfused.data()[i]) << i;
}

// A bias of the wrong length cannot be thrown at from inside the contraction
// (the blocks may run on pool threads), so the kernel never reads past it and
// writes NaN instead: never an out-of-bounds read, never plausible numbers.
template <int Layout, typename Device>
void check_wrong_bias_length(const Device& device, Eigen::Index d_ff, Eigen::Index d, Eigen::Index tokens,
                             Eigen::Index bias_length) {
  Eigen::Tensor<float, 2, Layout> W(d_ff, d), X(d, tokens), Y(d_ff, tokens);
  W.setRandom();
  X.setRandom();
  Y.setZero();
  const Eigen::VectorXf bias = Eigen::VectorXf::Random(bias_length);
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
  Y.device(device) = W.contract(X, dims, egelu::BiasGeluOutputKernel<float>(bias));
  // An output of one column looks like one of one row handed over as a column (Eigen
  // master's direct GEMV), whose bias is one number: a one-number bias is taken as that
  // row's there (bias_gelu_output_kernel.hpp), so the rows may hold numbers.
  const bool one_number_may_be_one_rows = tokens == 1 && bias_length == 1;
  Eigen::Index nan_rows = 0;
  for (Eigen::Index i = 0; i < d_ff; ++i) {
    bool all_nan = true;
    for (Eigen::Index j = 0; j < tokens; ++j) all_nan = all_nan && std::isnan(Y(i, j));
    nan_rows += all_nan;
    if (i >= bias_length && !one_number_may_be_one_rows) {
      EXPECT_TRUE(all_nan) << "row " << i << " has no bias but holds numbers";
    }
  }
  if (Layout == Eigen::ColMajor && !one_number_may_be_one_rows) {
    EXPECT_EQ(nan_rows, d_ff) << "bias length " << bias_length << ", " << tokens << " tokens";
  }
}

template <int Layout, typename Device>
void check_wrong_bias_lengths(const Device& device) {
  for (Eigen::Index length : {Eigen::Index(0), Eigen::Index(1), Eigen::Index(299), Eigen::Index(301)}) {
    for (Eigen::Index tokens : {Eigen::Index(40), Eigen::Index(1)}) {  // GEMM and GEMV paths
      check_wrong_bias_length<Layout>(device, 300, 64, tokens, length);
    }
  }
}

// One layout on a two-thread pool: every shape with the tanh form's kernel (see above),
// and NaN for a bias of the wrong length.
template <int Layout>
void check_layout_on_pool() {
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  check_all<Layout, false>(device);
  check_wrong_bias_lengths<Layout>(device);
}

}  // namespace output_kernel_checks

#endif  // EGELU_TESTS_OUTPUT_KERNEL_CHECKS_HPP
