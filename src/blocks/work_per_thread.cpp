// egelu::set_min_work_per_thread: the least work a block's call gives each of its threads,
// read once a call by its task_runner (blocks/parallel.hpp).
#define EIGEN_USE_THREADS
#include <atomic>
#include <egelu/threads.hpp>

#include "blocks/parallel.hpp"

namespace egelu {
namespace {

std::atomic<long>& setting() {
  static std::atomic<long> multiply_adds{default_min_work_per_thread};
  return multiply_adds;
}

}  // namespace

namespace blocks {
long min_work_per_thread() { return setting().load(std::memory_order_relaxed); }
}  // namespace blocks

long set_min_work_per_thread(long multiply_adds) {
  return setting().exchange(multiply_adds < 0 ? 0 : multiply_adds, std::memory_order_relaxed);
}

}  // namespace egelu
