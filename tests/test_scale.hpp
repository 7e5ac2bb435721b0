// The size of the long tests, for emulated runs. EGELU_TEST_SAMPLE_DIVISOR (a CMake
// cache variable, default 1: the full size) divides their random-sample counts and
// shortens their every-float windows, never below a minimum that still exercises
// every lane, the scalar tail and each region; every test still runs. The aarch64 CI
// job sets it: under qemu-user the quad-precision references, in software either
// way, run several times slower than on the host.
#ifndef EGELU_TESTS_TEST_SCALE_HPP
#define EGELU_TESTS_TEST_SCALE_HPP

#include <algorithm>
#include <cstddef>
#include <vector>

#ifndef EGELU_TEST_SAMPLE_DIVISOR
#define EGELU_TEST_SAMPLE_DIVISOR 1
#endif

namespace test_scale {

constexpr std::size_t divisor = EGELU_TEST_SAMPLE_DIVISOR;
static_assert(divisor >= 1, "EGELU_TEST_SAMPLE_DIVISOR must be a positive integer");

// n samples divided by the divisor, but no fewer than `minimum` (nor more than n).
constexpr std::size_t samples(std::size_t n, std::size_t minimum = 10'000) {
  return std::max(n / divisor, std::min(n, minimum));
}

// A window of consecutive inputs (every float in [lo, hi), say) shortened to
// samples(size, minimum) of them: its first and last halves, so that the window's
// edges (a binade boundary, the tail's edge) are still covered input by input.
template <typename T>
std::vector<T> window(std::vector<T> all, std::size_t minimum = 8'192) {
  const std::size_t keep = samples(all.size(), minimum);
  if (keep < all.size()) {
    const std::size_t head = keep / 2, tail = keep - head;
    all.erase(all.begin() + std::ptrdiff_t(head), all.end() - std::ptrdiff_t(tail));
  }
  return all;
}

}  // namespace test_scale

#endif  // EGELU_TESTS_TEST_SCALE_HPP
