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
//
// A session's helpers outlive it by a linger time (helper_exchange below): rather than
// returning to the pool, each waits, yielding, for the next session of any team on the
// same pool, and opening a session hands it over instead of scheduling a task. A model
// calls a different block (a different team) each layer, so without this every call
// paid Eigen's Schedule (a futex wake of a parked thread: 17-40 us on a VM) and a late
// start; the cost is a pool thread held for the linger time after a call.
#ifndef EGELU_INTERNAL_TASK_TEAM_HPP
#define EGELU_INTERNAL_TASK_TEAM_HPP

#if defined(EIGEN_USE_THREADS)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <unsupported/Eigen/CXX11/Tensor>

namespace egelu {
namespace internal {

class task_team;

// Where session helpers wait between sessions: a fixed set of berths, one per helper,
// each a small state machine. An opener that schedules a helper takes a free berth for it
// (scheduled; busy once it runs its session), and after the session the helper waits in it
// (waiting) for the linger time; an opener claims a waiting berth with one
// compare-and-swap (claimed), so no two openers get the same helper, checks the helper's
// pool (the berth may have changed hands between its load and the swap) and either puts
// it back or assigns it its session (assigned), which the helper serves (busy) and then
// waits again. At the deadline the helper frees its berth and returns to its pool.
//
// Two things keep an opener from scheduling a task that would queue behind a waiting
// helper on the same pool thread: an opener that finds no helper waiting but one still
// busy in a session that has closed (its next in a moment: the same block called again,
// a model's next layer) waits for it, up to 50 us; and a waiting helper leaves at once
// while a task some opener scheduled has not started. Nothing allocates: the berths are
// constant-initialised and never destroyed (a helper may outlive main's statics while
// its pool is being joined).
class helper_exchange {
 public:
  static helper_exchange& instance() {
    static helper_exchange exchange;
    return exchange;
  }

  // How long a helper waits for another session, in microseconds (0: it leaves at once):
  // egelu::default_thread_linger (threads.hpp), which egelu::set_thread_linger sets.
  std::atomic<long> linger_microseconds{300};

  // Hands a waiting helper of `pool` to `team`'s session opened at generation `opened`,
  // with a reference to the team taken for it; false if none is waiting.
  bool hand_over(const Eigen::ThreadPoolInterface* pool, task_team* team, std::uint32_t opened);

  // Schedules on `pool` a helper for `team`'s session opened at `opened` (the caller has
  // taken a reference to the team for it), which stays for later sessions of the pool.
  void schedule(Eigen::ThreadPoolInterface* pool, task_team* team, std::uint32_t opened);

  // A task of egelu's is scheduled, and has started: helpers waiting leave while one has
  // not, so that it does not queue behind them.
  void task_scheduled() { unstarted_.fetch_add(1, std::memory_order_relaxed); }
  void task_started() { unstarted_.fetch_sub(1, std::memory_order_relaxed); }

  // How many helpers of `pool` wait for a session now (for tests).
  int waiting_helpers(const Eigen::ThreadPoolInterface* pool) const {
    int count = 0;
    for (const berth& b : berth_)
      count += b.state.load(std::memory_order_relaxed) == waiting && b.pool.load(std::memory_order_relaxed) == pool;
    return count;
  }

  // A session of `team` has closed: its helpers wait for the next in a moment.
  void session_closed(const task_team* team) {
    for (berth& b : berth_)
      if (b.team.load(std::memory_order_relaxed) == team) b.closed.store(team, std::memory_order_relaxed);
  }

 private:
  enum : int { free_berth, scheduled, busy, waiting, claimed, assigned };
  struct alignas(64) berth {
    std::atomic<int> state{free_berth};
    std::atomic<const Eigen::ThreadPoolInterface*> pool{nullptr};
    std::atomic<task_team*> team{nullptr};          // the last session's
    std::atomic<const task_team*> closed{nullptr};  // a team whose session has closed
    std::atomic<std::uint32_t> opened{0};           // the session's first generation
  };
  bool claim(berth& b, const Eigen::ThreadPoolInterface* pool, task_team* team, std::uint32_t opened);
  // The helper's life: its first session, then the sessions handed over to it.
  void serve(berth& mine);

  static constexpr int berths = 64;
  berth berth_[berths];
  std::atomic<int> unstarted_{0};  // egelu tasks scheduled on a pool, not started yet
};

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
    Eigen::ThreadPoolInterface* const pool = device.getPool();
    helper_exchange& exchange = helper_exchange::instance();
    for (int t = 0; t < device.numThreads() - 1; ++t) {
      if (exchange.hand_over(pool, this, opened)) continue;
      references_.fetch_add(1, std::memory_order_relaxed);
      exchange.schedule(pool, this, opened);
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
    helper_exchange::instance().session_closed(this);
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
      helper_exchange::instance().task_scheduled();
      device.getPool()->Schedule([team, mine] {
        helper_exchange::instance().task_started();
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

  friend class helper_exchange;

  std::atomic<std::uint64_t> state_{0};
  std::atomic<std::uint32_t> closed_at_{0};
  bool in_session_ = false;  // the owner's alone
  std::atomic<std::uint32_t> finished_{0};
  std::atomic<const void*> job_{nullptr};
  std::atomic<void (*)(const void*, int, int)> call_{nullptr};
  std::atomic<int> slots_{1};
  std::atomic<int> references_{1};
};

inline bool helper_exchange::claim(berth& b, const Eigen::ThreadPoolInterface* pool, task_team* team,
                                   std::uint32_t opened) {
  int expected = waiting;
  if (b.state.load(std::memory_order_relaxed) != waiting ||
      !b.state.compare_exchange_strong(expected, claimed, std::memory_order_acquire, std::memory_order_relaxed))
    return false;
  if (b.pool.load(std::memory_order_relaxed) != pool) {
    b.state.store(waiting, std::memory_order_release);
    return false;
  }
  team->references_.fetch_add(1, std::memory_order_relaxed);
  b.team.store(team, std::memory_order_relaxed);
  b.closed.store(nullptr, std::memory_order_relaxed);
  b.opened.store(opened, std::memory_order_relaxed);
  b.state.store(assigned, std::memory_order_release);
  return true;
}

inline bool helper_exchange::hand_over(const Eigen::ThreadPoolInterface* pool, task_team* team, std::uint32_t opened) {
  const auto patience = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  for (;;) {
    bool one_closing = false;
    for (berth& b : berth_) {
      if (claim(b, pool, team, opened)) return true;
      const task_team* const serving = b.team.load(std::memory_order_relaxed);
      one_closing = one_closing || (b.state.load(std::memory_order_relaxed) == busy &&
                                    b.closed.load(std::memory_order_relaxed) == serving &&
                                    b.pool.load(std::memory_order_relaxed) == pool);
    }
    if (!one_closing || std::chrono::steady_clock::now() >= patience) return false;
  }
}

inline void helper_exchange::schedule(Eigen::ThreadPoolInterface* pool, task_team* team, std::uint32_t opened) {
  // The opener takes the helper's berth, so that the task is one pointer, which
  // std::function holds in place (no allocation): the berth holds the rest.
  berth* mine = nullptr;
  for (berth& b : berth_) {
    int expected = free_berth;
    if (b.state.load(std::memory_order_relaxed) == free_berth &&
        b.state.compare_exchange_strong(expected, scheduled, std::memory_order_acquire, std::memory_order_relaxed)) {
      mine = &b;
      break;
    }
  }
  task_scheduled();
  if (!mine) {  // every berth holds a helper: this one serves its session and leaves
    pool->Schedule([team, opened] {
      instance().task_started();
      team->stay(opened);
      team->release();
    });
    return;
  }
  mine->pool.store(pool, std::memory_order_relaxed);
  mine->team.store(team, std::memory_order_relaxed);
  mine->closed.store(nullptr, std::memory_order_relaxed);
  mine->opened.store(opened, std::memory_order_relaxed);
  pool->Schedule([mine] { instance().serve(*mine); });
}

inline void helper_exchange::serve(berth& mine) {
  task_started();
  task_team* team = mine.team.load(std::memory_order_relaxed);
  std::uint32_t opened = mine.opened.load(std::memory_order_relaxed);
  mine.state.store(busy, std::memory_order_relaxed);
  for (;;) {
    team->stay(opened);
    team->release();
    // The linger time is read as the helper waits, so that a new setting holds at once.
    const auto since = std::chrono::steady_clock::now();
    const auto waited_enough = [&] {
      return std::chrono::steady_clock::now() - since >=
             std::chrono::microseconds(linger_microseconds.load(std::memory_order_relaxed));
    };
    mine.state.store(waiting, std::memory_order_release);
    for (;;) {
      const int state = mine.state.load(std::memory_order_acquire);
      if (state == assigned) break;
      if (state == waiting && (unstarted_.load(std::memory_order_relaxed) > 0 || waited_enough())) {
        int expected = waiting;
        // Fails only if an opener claimed the berth meanwhile: then serve its session.
        if (mine.state.compare_exchange_strong(expected, free_berth, std::memory_order_release)) return;
      } else {
        std::this_thread::yield();
      }
    }
    team = mine.team.load(std::memory_order_relaxed);
    opened = mine.opened.load(std::memory_order_relaxed);
    mine.state.store(busy, std::memory_order_relaxed);
  }
}

// How long the helpers of the blocks' sessions stay for the next session after one
// closes (see helper_exchange), process-wide; returns the previous value.
inline std::chrono::microseconds set_helper_linger(std::chrono::microseconds linger) {
  return std::chrono::microseconds(
      helper_exchange::instance().linger_microseconds.exchange(long(linger.count()), std::memory_order_relaxed));
}

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
