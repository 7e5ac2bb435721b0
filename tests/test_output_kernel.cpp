// BiasGeluOutputKernel / BiasGeluExactOutputKernel inside Tensor contractions on the
// DefaultDevice: same values as the unfused expression, both layouts
// (output_kernel_checks.hpp); and the kernel's own argument checks.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "output_kernel_checks.hpp"

namespace {

using namespace output_kernel_checks;

TEST(OutputKernel, DefaultDevice) {
  check_all<Eigen::ColMajor, true>(Eigen::DefaultDevice());
  check_all<Eigen::RowMajor, true>(Eigen::DefaultDevice());
}

TEST(OutputKernel, FastKernelsDefaultDevice) {
  const auto fast_tanh = [](const auto& x) { return egelu::fast::gelu(x); };
  const auto fast_erf = [](const auto& x) { return egelu::fast::gelu_exact(x); };
  check_fast_contraction<Eigen::ColMajor, egelu::fast::BiasGeluOutputKernel<float>>(fast_tanh, Eigen::DefaultDevice());
  check_fast_contraction<Eigen::ColMajor, egelu::fast::BiasGeluExactOutputKernel<float>>(fast_erf,
                                                                                         Eigen::DefaultDevice());
  check_fast_contraction<Eigen::RowMajor, egelu::fast::BiasGeluOutputKernel<float>>(fast_tanh, Eigen::DefaultDevice());
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

TEST(OutputKernel, WrongBiasLengthGivesNaN) {
  check_wrong_bias_lengths<Eigen::ColMajor>(Eigen::DefaultDevice());
  check_wrong_bias_lengths<Eigen::RowMajor>(Eigen::DefaultDevice());
}

}  // namespace
