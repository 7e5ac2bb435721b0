// A team of the calling thread and a ThreadPoolDevice's pool threads working off the
// ranges of one job at a time: egelu's Tensor executor runs a job through a team of its
// own, and each feed-forward block keeps one team for all its calls.
//
// The caller runs range 0, then, like each pool task, claims ranges until none is left,
// and waits (yielding) only for ranges that are running: it never sleeps on a barrier
// while a busy pool has not started a task (docs/DESIGN.md, "Threads"). A pool task that
// starts late -- after its job, or even after the team's owner is gone -- finds nothing
// of its job to claim and leaves: each job has a generation, and a task only claims
// ranges of its own. The team counts its references (the owner's and one per scheduled
// task) and deletes itself with the last, so a late task never touches freed memory.
//
// Nothing here allocates once the team exists: a scheduled task is a pointer and a
// generation, which std::function holds in place.
//
// Each thread that works on a job gets a slot, 0 for the caller and 1, 2, ... for pool
// threads in the order they first claim a range: fewer than numThreads slots, so that a
// range can use a per-slot scratch buffer without knowing its thread. One team runs one
// job at a time; callers that run jobs at once (several requests on one pool) each use
// a team of their own.
//
// A session (open_session ... close_session) runs several jobs -- the passes of one
// feed-forward call -- on the same pool tasks: they are scheduled once, and between jobs
// they wait spinning (yielding) for the next instead of leaving, so that a job costs no
// Schedule and no wake-up of a sleeping thread (tens of microseconds on a VM, against a
// decode step's 200). A session helper claims ranges only of jobs started after the
// session opened and before it closed: closing records the generation of a marker job
// with no ranges before publishing it, and a helper that sees the marker's generation
// or a later one leaves.
#ifndef EGELU_INTERNAL_TASK_TEAM_HPP
#define EGELU_INTERNAL_TASK_TEAM_HPP

#if defined(EIGEN_USE_THREADS)

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <unsupported/Eigen/CXX11/Tensor>

namespace egelu {
namespace internal {

class task_team {
 public:
  // A team with one reference, its owner's; release() gives it up.
  static task_team* create() { return new task_team(); }
  void release() {
    if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Schedules numThreads - 1 pool tasks that stay for the jobs run until close_session().
  // Sessions do not nest; the team's owner opens and closes them.
  void open_session(const Eigen::ThreadPoolDevice& device) {
    const std::uint32_t opened = std::uint32_t(state_.load(std::memory_order_relaxed) >> 32);
    for (int t = 0; t < device.numThreads() - 1; ++t) {
      references_.fetch_add(1, std::memory_order_relaxed);
      task_team* team = this;
      device.getPool()->Schedule([team, opened] {
        team->stay(opened);
        team->release();
      });
    }
    in_session_ = true;
  }
  // Ends the session: its helpers leave (a helper that never started leaves at once).
  void close_session() {
    const std::uint64_t state = state_.load(std::memory_order_relaxed);
    const std::uint32_t marker = std::uint32_t(state >> 32) + 1;
    closed_at_.store(marker, std::memory_order_release);
    state_.store(std::uint64_t(marker) << 32, std::memory_order_release);  // a job of no ranges
    in_session_ = false;
  }

  // run_range(k, slot) for every k in [0, ranges), on the calling thread (slot 0) and at
  // most numThreads - 1 pool threads (slots 1 to numThreads - 1); returns when all have
  // run. One job at a time: the calls of one team do not overlap.
  template <typename RunRange>
  void run(const Eigen::ThreadPoolDevice& device, int ranges, const RunRange& run_range) {
    // More ranges than the state holds: jobs of up to max_ranges each.
    for (int first = 0; first < ranges; first += int(max_ranges)) {
      const int count = std::min(int(max_ranges), ranges - first);
      if (first == 0) {
        run_job(device, count, run_range);
      } else {
        run_job(device, count, [&run_range, first](int k, int slot) { run_range(first + k, slot); });
      }
    }
  }

 private:
  template <typename RunRange>
  void run_job(const Eigen::ThreadPoolDevice& device, int ranges, const RunRange& run_range) {
    const std::uint64_t generation = (state_.load(std::memory_order_relaxed) >> 32) + 1;
    job_.store(&run_range, std::memory_order_relaxed);
    call_.store(&invoke<RunRange>, std::memory_order_relaxed);
    finished_.store(0, std::memory_order_relaxed);
    slots_.store(1, std::memory_order_relaxed);
    // Range 0 is the caller's: the next to claim is 1.
    state_.store((generation << 32) | (std::uint64_t(ranges) << 16) | 1, std::memory_order_release);
    const int helpers = in_session_ ? 0 : std::min(ranges - 1, device.numThreads() - 1);
    for (int t = 0; t < helpers; ++t) {
      references_.fetch_add(1, std::memory_order_relaxed);
      task_team* team = this;
      const std::uint32_t mine = std::uint32_t(generation);
      device.getPool()->Schedule([team, mine] {
        team->help(mine, -1);
        team->release();
      });
    }
    run_range(0, 0);
    help(std::uint32_t(generation), 0);
    while (finished_.load(std::memory_order_acquire) < std::uint32_t(ranges - 1)) std::this_thread::yield();
  }

  // state_: the job's generation (32 bits), its number of ranges (16) and the next range
  // to claim (16), so that a task checks its job and claims a range in one step.
  static constexpr std::uint32_t max_ranges = 0xffff;

  task_team() = default;

  template <typename RunRange>
  static void invoke(const void* job, int k, int slot) {
    (*static_cast<const RunRange*>(job))(k, slot);
  }

  // Claims and runs the ranges of job `generation` until none is left, as `slot` (-1: a
  // pool thread's, taken at its first claim). A claim succeeds only while the job is
  // running (some range of it unclaimed), so job_ and slots_ are still its job's.
  void help(std::uint32_t generation, int slot) {
    std::uint64_t state = state_.load(std::memory_order_acquire);
    while (std::uint32_t(state >> 32) == generation && (state & 0xffff) < ((state >> 16) & 0xffff)) {
      if (state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        if (slot < 0) slot = slots_.fetch_add(1, std::memory_order_relaxed);
        call_.load(std::memory_order_relaxed)(job_.load(std::memory_order_relaxed), int(state & 0xffff), slot);
        finished_.fetch_add(1, std::memory_order_release);
        state = state_.load(std::memory_order_acquire);
      }
    }
  }

  // A session helper: helps each job after generation `seen` until a close marker. The
  // marker's generation is stored in closed_at_ before the marker itself, so a helper
  // that has seen a generation at or past it also sees closed_at_ say so; and a claim of
  // job g succeeds only while g is the team's job, before any later marker.
  void stay(std::uint32_t seen) {
    for (;;) {
      const std::uint32_t generation = std::uint32_t(state_.load(std::memory_order_acquire) >> 32);
      if (std::int32_t(closed_at_.load(std::memory_order_acquire) - seen) > 0) return;
      if (generation != seen) {
        help(generation, -1);
        seen = generation;
      } else {
        std::this_thread::yield();
      }
    }
  }

  std::atomic<std::uint64_t> state_{0};
  std::atomic<std::uint32_t> closed_at_{0};
  bool in_session_ = false;  // the owner's alone
  std::atomic<std::uint32_t> finished_{0};
  std::atomic<const void*> job_{nullptr};
  std::atomic<void (*)(const void*, int, int)> call_{nullptr};
  std::atomic<int> slots_{1};
  std::atomic<int> references_{1};
};

// A task_team owned by one object, released with it.
class owned_task_team {
 public:
  owned_task_team() : team_(task_team::create()) {}
  owned_task_team(owned_task_team&& other) noexcept : team_(other.team_) { other.team_ = nullptr; }
  owned_task_team& operator=(owned_task_team&& other) noexcept {
    std::swap(team_, other.team_);
    return *this;
  }
  owned_task_team(const owned_task_team&) = delete;
  owned_task_team& operator=(const owned_task_team&) = delete;
  ~owned_task_team() {
    if (team_) team_->release();
  }
  task_team& operator*() const { return *team_; }

 private:
  task_team* team_;
};

}  // namespace internal
}  // namespace egelu

#endif  // EIGEN_USE_THREADS

#endif  // EGELU_INTERNAL_TASK_TEAM_HPP
