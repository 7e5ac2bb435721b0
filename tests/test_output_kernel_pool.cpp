// BiasGeluOutputKernel inside ColMajor Tensor contractions on a
// ThreadPoolDevice: same values as the unfused expression, the pool's sharding by the inner dimension, and NaN for a
// bias of the wrong length (output_kernel_checks.hpp).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include "output_kernel_checks.hpp"

namespace {

using namespace output_kernel_checks;

TEST(OutputKernelPool, ColMajor) { check_layout_on_pool<Eigen::ColMajor>(); }

// A long inner dimension and a small output make the thread pool shard the
// contraction by its inner dimension, a separate path that applies the kernel
// once to the summed output (its mapper's stride is the row count there too).
TEST(OutputKernelPool, ShardedByInnerDimension) {
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  const Eigen::Index d_ff = 16, d = 300'000, tokens = 12;
  check_contraction<Eigen::ColMajor, egelu::BiasGeluOutputKernel<float>>(Form::tanh, device, d_ff, d, tokens);
  check_wrong_bias_length<Eigen::ColMajor>(device, d_ff, d, tokens, d_ff + 1);
}

}  // namespace
