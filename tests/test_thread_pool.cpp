// ThreadPoolDevice evaluation gives the same bits as the default device, through
// egelu's executor (plain assignments of its functors) and Eigen's (the rest).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
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

namespace {

// An Eigen::ThreadPool that counts the tasks scheduled on it.
class CountingPool : public Eigen::ThreadPoolInterface {
 public:
  explicit CountingPool(int threads) : pool_(threads) {}
  void Schedule(std::function<void()> fn) override {
    ++scheduled;
    pool_.Schedule(std::move(fn));
  }
  int NumThreads() const override { return pool_.NumThreads(); }
  int CurrentThreadId() const override { return pool_.CurrentThreadId(); }
  std::atomic<int> scheduled{0};

 private:
  Eigen::ThreadPool pool_;
};

// Sets a linger time for a test's life.
struct LingerFor {
  explicit LingerFor(std::chrono::microseconds linger) : before(egelu::internal::set_helper_linger(linger)) {}
  ~LingerFor() { egelu::internal::set_helper_linger(before); }
  std::chrono::microseconds before;
};

// A session's helpers stay for the next session of any team on the same pool: a model
// calls a different block (team) each layer, and scheduling anew wakes a sleeping
// thread. Sessions of two teams, one after the other, schedule the helpers of the first
// only (80 tasks without the hand-over). Each session opens once both helpers wait again
// (or 10 s passed), so that an idle machine gives 2 whatever the threads' timing; a loaded
// one may give a few more, where a waiting helper gave way to the other helper's task
// while it had not started (it could have been queued behind the waiting one).
TEST(TaskTeam, HelpersStayForTheNextSessionOfAnyTeam) {
  CountingPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 3);
  const LingerFor linger(std::chrono::seconds(20));  // restored before the pool goes
  egelu::internal::owned_task_team teams[2];
  std::vector<std::atomic<int>> seen(64);
  std::atomic<int> bad_slots{0};
  int miscounted = 0;
  constexpr int sessions = 40;
  const auto& exchange = egelu::internal::helper_exchange::instance();
  for (int session = 0; session < sessions; ++session) {
    egelu::internal::task_team& team = *teams[session % 2];
    team.open_session(device);
    run_counted_job(team, device, 24, seen, bad_slots);
    for (int k = 0; k < 64; ++k) miscounted += seen[std::size_t(k)].load() != (k < 24 ? 1 : 0);
    team.close_session();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (exchange.waiting_helpers(&pool) < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  }
  EXPECT_EQ(0, bad_slots.load());
  EXPECT_EQ(0, miscounted);
  EXPECT_GE(pool.scheduled.load(), 2);
  EXPECT_LE(pool.scheduled.load(), sessions / 2) << "the helpers did not stay between sessions";
  std::printf("%d tasks scheduled for %d sessions of 2 helpers\n", pool.scheduled.load(), sessions);
}

// Helpers waiting between sessions join only sessions on their own pool, and no more
// of them than the device's threads: sessions alternate between two pools and devices
// of 2, 3 and 4 threads on them; every range runs once, on the caller or a thread of
// the session's pool, on a slot below the device's threads.
TEST(TaskTeam, WaitingHelpersJoinOnlySessionsOfTheirPool) {
  const LingerFor linger(std::chrono::milliseconds(200));
  auto first = std::make_unique<Eigen::ThreadPool>(3), second = std::make_unique<Eigen::ThreadPool>(2);
  const Eigen::ThreadPoolDevice devices[] = {{first.get(), 4}, {second.get(), 3}, {first.get(), 2}, {second.get(), 2}};
  egelu::internal::owned_task_team teams[3];
  std::vector<std::atomic<int>> seen(64);
  std::atomic<int> bad_slots{0}, foreign_threads{0};
  int miscounted = 0;
  for (int session = 0; session < 60; ++session) {
    const Eigen::ThreadPoolDevice& device = devices[session % 4];
    egelu::internal::task_team& team = *teams[session % 3];
    team.open_session(device);
    for (int job = 0; job < 3; ++job) {
      const int ranges = 3 + (session * 5 + job * 11) % 60;
      for (auto& r : seen) r = 0;
      team.run(device, ranges, [&](int k, int slot) {
        if (slot < 0 || slot >= device.numThreads()) ++bad_slots;
        if (slot > 0 && device.getPool()->CurrentThreadId() < 0) ++foreign_threads;
        ++seen[std::size_t(k)];
        volatile double sink = 0;
        for (int i = 0; i < 2000; ++i) sink = sink + double(i);
      });
      for (int k = 0; k < 64; ++k) miscounted += seen[std::size_t(k)].load() != (k < ranges ? 1 : 0);
    }
    team.close_session();
    if (session % 7 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(0, bad_slots.load());
  EXPECT_EQ(0, foreign_threads.load());
  EXPECT_EQ(0, miscounted);
  EXPECT_TRUE(pool_threads_come_free(first, 3)) << "waiting helpers did not leave at their deadline";
  EXPECT_TRUE(pool_threads_come_free(second, 2)) << "waiting helpers did not leave at their deadline";
}

// A waiting helper gives way to a task egelu scheduled on its pool (Tensor executor's,
// or a session's that found no helper waiting), which would otherwise queue behind it
// on its thread until the linger time ran out.
TEST(TaskTeam, WaitingHelpersGiveWayToScheduledTasks) {
  auto pool = std::make_unique<Eigen::ThreadPool>(1);
  const Eigen::ThreadPoolDevice device(pool.get(), 2);
  const LingerFor linger(std::chrono::seconds(30));  // restored before the pool goes
  egelu::internal::owned_task_team team;
  (*team).open_session(device);
  (*team).close_session();  // its helper now waits on the pool's only thread, for 30 s
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // A job whose ranges the caller cannot finish alone: range 0 waits for range 1, which
  // only the pool's task can run.
  egelu::internal::owned_task_team other;
  std::atomic<bool> second_ran{false};
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> claimed{0};
  (*other).run(device, 2, [&](int k, int) {
    if (claimed++ == 0) {
      // The first claimer (the caller, range 0) waits for the pool's task to claim the other.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (claimed < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }
    if (k == 1) second_ran = true;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(second_ran);
  EXPECT_LT(seconds, 15.0) << "the scheduled task waited for the helper's linger time";
}

}  // namespace
