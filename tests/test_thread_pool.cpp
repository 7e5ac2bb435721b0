// ThreadPoolDevice evaluation gives the same bits as the default device.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <cstring>
#include <egelu/egelu.hpp>

namespace {

template <typename T, typename Make>
void expect_same_bits_on_pool(Make make) {
  Eigen::Tensor<T, 2> x(517, 301);
  x.setRandom();
  x = x * T(30) - T(20);
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  Eigen::Tensor<T, 2> on_default = make(x);
  Eigen::Tensor<T, 2> on_pool(x.dimensions());
  on_pool.setConstant(std::numeric_limits<T>::quiet_NaN());
  on_pool.device(device) = make(x);
  EXPECT_EQ(0, std::memcmp(on_default.data(), on_pool.data(), sizeof(T) * std::size_t(x.size())));
}

TEST(ThreadPool, BitIdenticalToDefaultDevice) {
  expect_same_bits_on_pool<float>([](const auto& x) { return egelu::gelu(x); });
  expect_same_bits_on_pool<float>([](const auto& x) { return egelu::gelu_exact(x); });
  expect_same_bits_on_pool<float>([](const auto& x) { return egelu::gelu_grad(x); });
  expect_same_bits_on_pool<double>([](const auto& x) { return egelu::gelu(x); });
  expect_same_bits_on_pool<double>([](const auto& x) { return egelu::gelu_exact_grad(x); });
  expect_same_bits_on_pool<float>([](const auto& x) { return egelu::gelu(x * 0.5f + 1.f); });
}

}  // namespace
