// egelu::set_thread_linger: the library's own helper_exchange (task_team.hpp), which the
// blocks' sessions use; a program's copy of the header-only exchange is another.
#define EIGEN_USE_THREADS
#include <egelu/egelu.hpp>
#include <egelu/threads.hpp>

namespace egelu {

std::chrono::microseconds set_thread_linger(std::chrono::microseconds linger) {
  return internal::set_helper_linger(linger);
}

}  // namespace egelu
