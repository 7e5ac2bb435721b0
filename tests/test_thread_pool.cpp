// ThreadPoolDevice evaluation gives the same bits as the default device, through
// egelu's executor (plain assignments of its functors) and Eigen's (the rest).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <egelu/egelu.hpp>
#include <memory>
#include <thread>
#include <vector>

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

// A job on a team, counting in `ranges_seen` how often each range ran (each should run
// once) and in `bad_slots` the runs on a slot at or past the device's thread count.
void run_counted_job(egelu::internal::task_team& team, const Eigen::ThreadPoolDevice& device, int ranges,
                     std::vector<std::atomic<int>>& ranges_seen, std::atomic<int>& bad_slots) {
  for (auto& r : ranges_seen) r = 0;
  team.run(device, ranges, [&](int k, int slot) {
    if (slot < 0 || slot >= device.numThreads()) ++bad_slots;
    ++ranges_seen[std::size_t(k)];
    // Long enough for helpers to take part.
    volatile double sink = 0;
    for (int i = 0; i < 2000; ++i) sink = sink + double(i);
  });
}

// Whether all `threads` of the pool are free again (a session's helpers left): as many
// tasks as threads, each waiting for all to have started, within 20 s. When they are not,
// the pool is leaked rather than destroyed, which would wait for the helpers forever.
bool pool_threads_come_free(std::unique_ptr<Eigen::ThreadPool>& pool, int threads) {
  auto arrived = std::make_shared<std::atomic<int>>(0);
  for (int t = 0; t < threads; ++t) {
    pool->Schedule([arrived, threads] {
      ++*arrived;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (*arrived < threads && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (*arrived < threads && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  if (*arrived < threads) {
    pool.release();  // its threads are still in a session's helpers: never joined
    return false;
  }
  return true;
}

// The jobs of a session run on helpers scheduled once: every range once, slots in range,
// over sessions and jobs outside them, one after the other on the same team.
TEST(TaskTeam, SessionsRunEveryRangeOnceOnValidSlots) {
  auto pool = std::make_unique<Eigen::ThreadPool>(3);
  Eigen::ThreadPoolDevice device(pool.get(), 4);
  egelu::internal::owned_task_team team;
  std::vector<std::atomic<int>> seen(64);
  std::atomic<int> bad_slots{0};
  int miscounted = 0;  // ranges run other than once (no ASSERT: a session must close)
  for (int round = 0; round < 50; ++round) {
    const bool session = round % 3 != 2;
    if (session) (*team).open_session(device);
    for (int job = 0; job < 4; ++job) {
      const int ranges = 2 + (round * 7 + job * 13) % 62;
      run_counted_job(*team, device, ranges, seen, bad_slots);
      for (int k = 0; k < 64; ++k) miscounted += seen[std::size_t(k)].load() != (k < ranges ? 1 : 0);
    }
    if (session) (*team).close_session();
  }
  EXPECT_EQ(0, bad_slots.load());
  EXPECT_EQ(0, miscounted);
  EXPECT_TRUE(pool_threads_come_free(pool, 3)) << "a session's helpers did not leave when it closed";
}

// A session helper that starts only after its session closed (the pool was busy) leaves
// without claiming a range of a later session's jobs, where it would be one thread too
// many (a slot past the device's threads, whose scratch does not exist).
TEST(TaskTeam, LateHelperOfAClosedSessionClaimsNothing) {
  // Both pool threads busy, so that the stale helper and the next session's start together.
  auto pool = std::make_unique<Eigen::ThreadPool>(2);
  Eigen::ThreadPoolDevice device(pool.get(), 2);
  auto started = std::make_shared<std::atomic<int>>(0);
  auto release = std::make_shared<std::atomic<bool>>(false);
  for (int t = 0; t < 2; ++t) {
    pool->Schedule([started, release] {
      ++*started;
      while (!*release) std::this_thread::yield();
    });
  }
  while (*started < 2) std::this_thread::yield();
  egelu::internal::owned_task_team team;
  std::vector<std::atomic<int>> seen(64);
  std::atomic<int> bad_slots{0};
  int miscounted = 0;            // ranges run other than once (no ASSERT: a session must close)
  (*team).open_session(device);  // its helper waits behind the busy task
  run_counted_job(*team, device, 8, seen, bad_slots);
  (*team).close_session();
  (*team).open_session(device);  // the next session's helper is queued after the stale one
  *release = true;
  for (int job = 0; job < 20; ++job) {
    run_counted_job(*team, device, 40, seen, bad_slots);
    for (int k = 0; k < 40; ++k) miscounted += seen[std::size_t(k)].load() != 1;
  }
  (*team).close_session();
  EXPECT_EQ(0, bad_slots.load());
  EXPECT_EQ(0, miscounted);
  EXPECT_TRUE(pool_threads_come_free(pool, 2)) << "a session's helpers did not leave when it closed";
}

}  // namespace
