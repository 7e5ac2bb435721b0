// BiasGeluOutputKernel / BiasGeluExactOutputKernel inside Tensor contractions:
// same values as the unfused expression, both layouts, both devices.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "checks.hpp"

namespace {

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

template <typename Device>
void check_all(const Device& device) {
  using egelu::BiasGeluExactOutputKernel;
  using egelu::BiasGeluOutputKernel;
  // Small (one block), odd, and large enough for the thread pool to split the work; one
  // token (Eigen master sends a RowMajor one such through a direct GEMV that hands the
  // kernel the column transposed), one output row, and both.
  for (auto shape : {std::array<Eigen::Index, 3>{7, 5, 3}, std::array<Eigen::Index, 3>{130, 67, 33},
                     std::array<Eigen::Index, 3>{768, 256, 128}, std::array<Eigen::Index, 3>{300, 64, 1},
                     std::array<Eigen::Index, 3>{7, 5, 1}, std::array<Eigen::Index, 3>{1, 64, 9},
                     std::array<Eigen::Index, 3>{1, 64, 1}}) {
    check_contraction<Eigen::ColMajor, BiasGeluOutputKernel<float>>(Form::tanh, device, shape[0], shape[1], shape[2]);
    check_contraction<Eigen::RowMajor, BiasGeluOutputKernel<float>>(Form::tanh, device, shape[0], shape[1], shape[2]);
    check_contraction<Eigen::ColMajor, BiasGeluExactOutputKernel<float>>(Form::erf, device, shape[0], shape[1],
                                                                         shape[2]);
    check_contraction<Eigen::RowMajor, BiasGeluExactOutputKernel<float>>(Form::erf, device, shape[0], shape[1],
                                                                         shape[2]);
  }
}

TEST(OutputKernel, DefaultDevice) { check_all(Eigen::DefaultDevice()); }

// The opt-in fast kernels: the same values as the unfused fast expression, both layouts and devices.
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

TEST(OutputKernel, FastKernels) {
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice pool_device(&pool, 2);
  const auto fast_tanh = [](const auto& x) { return egelu::fast::gelu(x); };
  const auto fast_erf = [](const auto& x) { return egelu::fast::gelu_exact(x); };
  check_fast_contraction<Eigen::ColMajor, egelu::fast::BiasGeluOutputKernel<float>>(fast_tanh, Eigen::DefaultDevice());
  check_fast_contraction<Eigen::RowMajor, egelu::fast::BiasGeluOutputKernel<float>>(fast_tanh, pool_device);
  check_fast_contraction<Eigen::ColMajor, egelu::fast::BiasGeluExactOutputKernel<float>>(fast_erf, pool_device);
  check_fast_contraction<Eigen::RowMajor, egelu::fast::BiasGeluExactOutputKernel<float>>(fast_erf,
                                                                                         Eigen::DefaultDevice());
}

TEST(OutputKernel, CopiesLikeAValue) {
  const Eigen::VectorXf bias = Eigen::VectorXf::Random(5);
  egelu::BiasGeluOutputKernel<float> kernel(bias);
  egelu::BiasGeluOutputKernel<float> copy = kernel;  // the copy constructor, not the one taking a vector
  EXPECT_EQ(copy.bias(), bias.data());
  EXPECT_EQ(copy.size(), 5);
}

// The kernel reads bias[0 .. size) contiguously, so a strided vector or a matrix
// is refused where it is given, not read as the wrong numbers.
TEST(OutputKernel, StridedOrMatrixBiasThrows) {
  const Eigen::MatrixXf M = Eigen::MatrixXf::Random(4, 6);
  const auto expect_throw = [](const auto& bias, const std::string& what) {
    try {
      egelu::BiasGeluExactOutputKernel<float> kernel(bias);
      ADD_FAILURE() << "no exception for " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_throw(M.row(1), "1x6 with inner stride 4");
  const Eigen::Map<const Eigen::VectorXf, 0, Eigen::InnerStride<2>> every_other(M.data(), 12);
  expect_throw(every_other, "12x1 with inner stride 2");
  expect_throw(M, "4x6");

  const egelu::BiasGeluOutputKernel<float> column(M.col(2));
  EXPECT_EQ(column.bias(), &M(0, 2));
  EXPECT_EQ(column.size(), 4);
  const Eigen::RowVectorXf row = M.row(1);
  EXPECT_EQ(egelu::BiasGeluOutputKernel<float>(row).size(), 6);
  Eigen::Tensor<float, 1> tensor(7);
  EXPECT_EQ(egelu::BiasGeluOutputKernel<float>(tensor).size(), 7);
  const std::vector<float> values(3, 0.5f);
  EXPECT_EQ(egelu::BiasGeluOutputKernel<float>(values).bias(), values.data());
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

template <typename Device>
void check_wrong_bias_lengths(const Device& device) {
  for (Eigen::Index length : {Eigen::Index(0), Eigen::Index(1), Eigen::Index(299), Eigen::Index(301)}) {
    for (Eigen::Index tokens : {Eigen::Index(40), Eigen::Index(1)}) {  // GEMM and GEMV paths
      check_wrong_bias_length<Eigen::ColMajor>(device, 300, 64, tokens, length);
      check_wrong_bias_length<Eigen::RowMajor>(device, 300, 64, tokens, length);
    }
  }
}

TEST(OutputKernel, WrongBiasLengthGivesNaN) {
  check_wrong_bias_lengths(Eigen::DefaultDevice());
  Eigen::ThreadPool pool(2);
  check_wrong_bias_lengths(Eigen::ThreadPoolDevice(&pool, 2));
}

TEST(OutputKernel, ThreadPoolDevice) {
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  check_all(device);
}

// A long inner dimension and a small output make the thread pool shard the
// contraction by its inner dimension, a separate path that applies the kernel
// once to the summed output (its mapper's stride is the row count there too).
TEST(OutputKernel, ThreadPoolShardedByInnerDimension) {
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  const Eigen::Index d_ff = 16, d = 300'000, tokens = 12;
  check_contraction<Eigen::ColMajor, egelu::BiasGeluOutputKernel<float>>(Form::tanh, device, d_ff, d, tokens);
  check_contraction<Eigen::RowMajor, egelu::BiasGeluExactOutputKernel<float>>(Form::erf, device, d_ff, d, tokens);
  check_wrong_bias_length<Eigen::ColMajor>(device, d_ff, d, tokens, d_ff + 1);
}

}  // namespace
