// The blocks' tasks on an optional ThreadPoolDevice: the calling thread alone without
// one, else a task_team (task_team.hpp, the mechanism of egelu's Tensor executor too):
// the caller and the pool's threads claiming tasks. Tasks share what they read and write
// to disjoint parts of their output; a task that needs scratch memory takes its slot's
// (the slot is its thread's for this round of tasks: fewer than threads()).
#ifndef EGELU_SRC_BLOCKS_PARALLEL_HPP
#define EGELU_SRC_BLOCKS_PARALLEL_HPP

#ifndef EIGEN_USE_THREADS
#error "the blocks are compiled with EIGEN_USE_THREADS"
#endif

#include <algorithm>
#include <cmath>
#include <egelu/egelu.hpp>
#include <limits>
#include <optional>

#include "blocks/pass_timing.hpp"

namespace egelu {
namespace blocks {

// The least work a call gives a thread, in multiply-adds of one product
// (egelu::set_min_work_per_thread; work_per_thread.cpp).
long min_work_per_thread();

// One call's tasks: on more than one thread, a session of the team (task_team.hpp) for
// the runner's life, so that the call's passes run on pool tasks scheduled once.
//
// Work too small to share runs on fewer threads (docs/DESIGN.md, "Threads": handing a few
// microseconds of work to another core costs more than it saves). A call whose largest
// product has m multiply-adds runs on at most m / min_work_per_thread() of the device's
// threads, through a device of that many threads on the same pool, so that its session
// has that many slots and every grid and per-slot scratch of the call is cut for them; one
// thread: the caller alone, waking no helper. Within a call, a product may be cut for fewer
// still (threads_for: a mixture of experts' experts, whose scratch does not depend on the
// grid). The setting is read once, here, so that every grid of the call is cut alike.
// Results do not depend on it: a tile's kernel calls are the same whichever task computes it.
class task_runner {
 public:
  task_runner() = default;
  task_runner(const Eigen::ThreadPoolDevice* device, internal::task_team& team,
              double largest_product = std::numeric_limits<double>::infinity())
      : least_work_(min_work_per_thread()), team_(&team) {
    const int all = device ? std::max(1, device->numThreads()) : 1, worth = cut(all, largest_product);
    if (worth == all) {
      device_ = device;
    } else if (worth > 1) {
      fewer_.emplace(device->getPool(), worth, device->allocator());
      device_ = &*fewer_;
    }
    if (threads() > 1) team_->open_session(*device_);
  }
  ~task_runner() {
    if (team_ && threads() > 1) team_->close_session();
  }
  task_runner(const task_runner&) = delete;
  task_runner& operator=(const task_runner&) = delete;

  int threads() const { return device_ ? std::max(1, device_->numThreads()) : 1; }

  // How many of the call's threads share a product of `multiply_adds`.
  int threads_for(double multiply_adds) const { return cut(threads(), multiply_adds); }

  // task(k, slot) for every k in [0, tasks); returns when all have run.
  template <typename Task>
  void run(int tasks, const Task& task) const {
    if (pass_profile* profile = installed_pass_profile().load(std::memory_order_acquire)) {
      // Profiled (bench/block_passes): each slot's time in tasks, against the call's wall time.
      const auto timed = [&](int k, int slot) {
        const double start = profile_seconds_now();
        task(k, slot);
        if (slot < pass_profile::max_slots) profile->task_seconds[slot] += profile_seconds_now() - start;
      };
      run_tasks(tasks, timed);
    } else {
      run_tasks(tasks, task);
    }
  }

 private:
  template <typename Task>
  void run_tasks(int tasks, const Task& task) const {
    if (threads() == 1 || tasks <= 1) {
      for (int k = 0; k < tasks; ++k) task(k, 0);
    } else {
      team_->run(*device_, tasks, task);
    }
  }

  // At most n threads, one per least_work_ multiply-adds.
  int cut(int n, double multiply_adds) const {
    if (n == 1 || least_work_ <= 0) return n;
    return int(std::min(double(n), std::max(1.0, std::floor(multiply_adds / double(least_work_)))));
  }

  long least_work_ = 0;
  std::optional<Eigen::ThreadPoolDevice> fewer_;  // the device's pool with fewer threads
  const Eigen::ThreadPoolDevice* device_ = nullptr;
  internal::task_team* team_ = nullptr;
};

// [first, last) of `count` items cut into `parts`.
inline Eigen::Index part_begin(Eigen::Index count, int parts, int k) { return count * k / parts; }

// pass(first, last) over the tokens, cut into two parts per thread.
template <typename Pass>
void over_tokens(const task_runner& runner, Eigen::Index tokens, const Pass& pass) {
  const int parts = int(std::min<Eigen::Index>(tokens, 2 * runner.threads()));
  runner.run(parts, [&](int k, int) { pass(part_begin(tokens, parts, k), part_begin(tokens, parts, k + 1)); });
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_PARALLEL_HPP
