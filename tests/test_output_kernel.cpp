// BiasGeluOutputKernel / BiasGeluExactOutputKernel inside Tensor contractions:
// same values as the unfused expression, both layouts, both devices.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <limits>

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
      ASSERT_EQ(fused(i, j), unfused(i, j)) << "at (" << i << ", " << j << ")";
      checks::expect_close(form, product(i, j) + bias(i), fused(i, j));
    }
  }
}

template <typename Device>
void check_all(const Device& device) {
  using egelu::BiasGeluExactOutputKernel;
  using egelu::BiasGeluOutputKernel;
  // Small (one block), odd, and large enough for the thread pool to split the work.
  for (auto shape : {std::array<Eigen::Index, 3>{7, 5, 3}, std::array<Eigen::Index, 3>{130, 67, 33},
                     std::array<Eigen::Index, 3>{768, 256, 128}, std::array<Eigen::Index, 3>{300, 64, 1}}) {
    check_contraction<Eigen::ColMajor, BiasGeluOutputKernel<float>>(Form::tanh, device, shape[0], shape[1], shape[2]);
    check_contraction<Eigen::RowMajor, BiasGeluOutputKernel<float>>(Form::tanh, device, shape[0], shape[1], shape[2]);
    check_contraction<Eigen::ColMajor, BiasGeluExactOutputKernel<float>>(Form::erf, device, shape[0], shape[1],
                                                                         shape[2]);
    check_contraction<Eigen::RowMajor, BiasGeluExactOutputKernel<float>>(Form::erf, device, shape[0], shape[1],
                                                                         shape[2]);
  }
}

TEST(OutputKernel, DefaultDevice) { check_all(Eigen::DefaultDevice()); }

TEST(OutputKernel, CopiesLikeAValue) {
  const Eigen::VectorXf bias = Eigen::VectorXf::Random(5);
  egelu::BiasGeluOutputKernel<float> kernel(bias);
  egelu::BiasGeluOutputKernel<float> copy = kernel;  // the copy constructor, not the one taking a vector
  EXPECT_EQ(copy.bias(), bias.data());
  EXPECT_EQ(copy.size(), 5);
}

TEST(OutputKernel, ThreadPoolDevice) {
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  check_all(device);
}

}  // namespace
