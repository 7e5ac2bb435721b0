// Random inputs for the accuracy tests, the same for a given seed on every target.
#ifndef EGELU_TESTS_RANDOM_INPUTS_HPP
#define EGELU_TESTS_RANDOM_INPUTS_HPP

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace random_inputs {

// n values uniform in [lo, hi).
template <typename T>
std::vector<T> uniform(std::size_t n, T lo, T hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<T> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// n values of both signs whose magnitudes are log-uniform in [smallest, largest]: many
// binades, each about as often.
template <typename T>
std::vector<T> log_uniform(std::size_t n, T smallest, T largest, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<T> exponent(std::log2(smallest), std::log2(largest));
  std::bernoulli_distribution negative(0.5);
  std::vector<T> v(n);
  for (auto& x : v) x = (negative(rng) ? -1 : 1) * std::exp2(exponent(rng));
  return v;
}

}  // namespace random_inputs

#endif  // EGELU_TESTS_RANDOM_INPUTS_HPP
