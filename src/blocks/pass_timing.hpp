// Where a block's forward call spends its time, pass by pass: the per-pass breakdown of
// bench/block_passes (issue 36), measured on the blocks' own code rather than on a copy
// of their passes. Off unless a profile is installed; then each forward call adds the
// wall time of each of its passes, and its threads the time they spend in tasks (so that
// a benchmark sees how long threads wait for each other) and in the activation fused into
// the first product's tiles. Off, a call pays one atomic load (and one a round of tasks), and
// each finished tile one branch. A profile is for one caller at a time (a benchmark's): two
// calls adding to it at once would race.
#ifndef EGELU_SRC_BLOCKS_PASS_TIMING_HPP
#define EGELU_SRC_BLOCKS_PASS_TIMING_HPP

#include <atomic>
#include <chrono>

namespace egelu {
namespace blocks {

struct pass_profile {
  static constexpr int max_passes = 5, max_slots = 64;
  const char* name[max_passes] = {};
  double seconds[max_passes] = {};            // wall time of each pass, over the calls
  double activation_seconds[max_slots] = {};  // each thread slot's time in the activation
  double task_seconds[max_slots] = {};        // each thread slot's time in tasks (task_runner::run)
  long calls = 0;
};

// The installed profile, or null.
inline std::atomic<pass_profile*>& installed_pass_profile() {
  static std::atomic<pass_profile*> profile{nullptr};
  return profile;
}

// The profile's clock, in seconds.
inline double profile_seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One forward call's clock: mark(pass, name) ends a pass; timed(slot, activation) wraps the
// activation a thread slot calls on its tiles.
class pass_clock {
 public:
  pass_clock() : profile_(installed_pass_profile().load(std::memory_order_acquire)) {
    if (profile_) {
      ++profile_->calls;
      start_ = now();
    }
  }
  void mark(int pass, const char* name) {
    if (!profile_) return;
    const double t = now();
    profile_->name[pass] = name;
    profile_->seconds[pass] += t - start_;
    start_ = t;
  }
  template <typename Activation>
  auto timed(int slot, const Activation& activation) const {
    double* const total = profile_ && slot < pass_profile::max_slots ? &profile_->activation_seconds[slot] : nullptr;
    return [total, &activation](auto&&... arguments) {
      if (!total) return activation(arguments...);
      const double t0 = now();
      activation(arguments...);
      *total += now() - t0;
    };
  }

 private:
  static double now() { return profile_seconds_now(); }
  pass_profile* profile_;
  double start_ = 0;
};

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_PASS_TIMING_HPP
