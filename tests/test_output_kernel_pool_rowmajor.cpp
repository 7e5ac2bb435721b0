// BiasGeluOutputKernel inside RowMajor Tensor contractions on a
// ThreadPoolDevice: same values as the unfused expression, and NaN for a bias of
// the wrong length (output_kernel_checks.hpp).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include "output_kernel_checks.hpp"

namespace {

using namespace output_kernel_checks;

TEST(OutputKernelPool, RowMajor) {
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  check_all<Eigen::RowMajor, false>(device);
  check_wrong_bias_lengths<Eigen::RowMajor>(device);
}

}  // namespace
