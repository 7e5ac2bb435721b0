// BiasGeluOutputKernel inside RowMajor Tensor contractions on a
// ThreadPoolDevice: same values as the unfused expression, and NaN for a bias of
// the wrong length (output_kernel_checks.hpp).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include "output_kernel_checks.hpp"

namespace {

using namespace output_kernel_checks;

TEST(OutputKernelPool, RowMajor) { check_layout_on_pool<Eigen::RowMajor>(); }

}  // namespace
