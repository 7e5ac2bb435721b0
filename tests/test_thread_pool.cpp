// ThreadPoolDevice evaluation gives the same bits as the default device, through
// egelu's executor (plain assignments of its functors) and Eigen's (the rest).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <egelu/egelu.hpp>
#include <thread>

namespace {

template <typename T, typename Make>
void expect_same_bits_on_pool(Make make, int threads = 2, Eigen::Index rows = 517, Eigen::Index cols = 301) {
  Eigen::Tensor<T, 2> x(rows, cols);
  x.setRandom();
  x = x * T(30) - T(20);
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
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
  expect_same_bits_on_pool<float>([](const auto& x) { return egelu::fast::gelu(x); });
  expect_same_bits_on_pool<double>([](const auto& x) { return egelu::fast::gelu_exact(x); });
}

// Sizes that split into ranges unevenly, or not at all, and more threads than cores.
TEST(ThreadPool, OddSizesAndThreadCounts) {
  for (const int threads : {2, 3, 5}) {
    for (const Eigen::Index cols : {1, 7, 1001}) {
      expect_same_bits_on_pool<float>([](const auto& x) { return egelu::gelu_exact(x); }, threads, 1031, cols);
      expect_same_bits_on_pool<double>([](const auto& x) { return egelu::gelu(x); }, threads, 1031, cols);
    }
  }
}

// A pool whose only worker is busy (for 3 s): the calling thread does every range
// itself rather than wait for it, and the late task later finds nothing left to do.
// Eigen's executor waits for the worker, which this test sees as taking 3 s.
TEST(ThreadPool, BusyPoolDoesNotStallTheCaller) {
  Eigen::ThreadPool pool(1);
  Eigen::ThreadPoolDevice device(&pool, 4);
  std::atomic<bool> started{false};
  pool.Schedule([&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::seconds(3));
  });
  while (!started) std::this_thread::yield();
  Eigen::Tensor<float, 1> x(1 << 20), on_pool(1 << 20);
  x.setRandom();
  x = x * 12.f - 6.f;
  on_pool.setConstant(std::numeric_limits<float>::quiet_NaN());
  const auto start = std::chrono::steady_clock::now();
  on_pool.device(device) = egelu::gelu(x);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  const Eigen::Tensor<float, 1> on_default = egelu::gelu(x);
  EXPECT_EQ(0, std::memcmp(on_default.data(), on_pool.data(), sizeof(float) * std::size_t(x.size())));
}

}  // namespace
