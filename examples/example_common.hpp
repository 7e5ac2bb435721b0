// What the feed-forward examples share: their flags, a pool for --threads, the timing,
// the self-check's printout and the handling of errors.
#ifndef EGELU_EXAMPLES_EXAMPLE_COMMON_HPP
#define EGELU_EXAMPLES_EXAMPLE_COMMON_HPP

#define EIGEN_USE_THREADS
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <egelu/npy.hpp>
#include <fstream>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>  // Eigen::ThreadPool, with EIGEN_USE_THREADS
#include <vector>

namespace example {

struct Options {
  Eigen::Index tokens = 128, d_model = 0, d_ff = 0;
  int threads = 1, repeats = 10;
  std::vector<std::string> flags;  // the example's own switches that were given
  std::string weights;
  bool has(const std::string& flag) const { return std::find(flags.begin(), flags.end(), flag) != flags.end(); }
};

// --tokens N --d-model N --d-ff N --threads N --weights DIR, and the example's own switches.
inline Options parse(int argc, char** argv, const std::vector<std::string>& switches, const char* usage) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    auto positive = [&]() {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || n <= 0) throw std::invalid_argument(arg + " needs a positive integer, not '" + v + "'");
      return n;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    } else if (arg == "--tokens") {
      o.tokens = positive();
    } else if (arg == "--d-model") {
      o.d_model = positive();
    } else if (arg == "--d-ff") {
      o.d_ff = positive();
    } else if (arg == "--threads") {
      o.threads = int(positive());
    } else if (arg == "--weights") {
      o.weights = value();
    } else if (std::find(switches.begin(), switches.end(), arg) != switches.end()) {
      o.flags.push_back(arg);
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "'");
    }
  }
  return o;
}

// "3.4.0", or the string Eigen 5 and later give (their WORLD version stays 3).
inline std::string eigen_version() {
#if defined(EIGEN_VERSION_STRING)
  return EIGEN_VERSION_STRING;
#else
  return std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
         std::to_string(EIGEN_MINOR_VERSION);
#endif
}

inline bool exists(const std::string& path) { return std::ifstream(path).good(); }

// X from DIR/X.npy, (T, d) row-major = d x T column-major, if there is one.
inline bool load_tokens(const std::string& dir, Eigen::Index d, Eigen::MatrixXf& x) {
  if (!exists(dir + "X.npy")) return false;
  const egelu::npy::Array xs = egelu::npy::load(dir + "X.npy");
  if (xs.shape.size() != 2 || Eigen::Index(xs.shape[1]) != d) {
    throw std::invalid_argument(dir + "X.npy must be (tokens, " + std::to_string(d) + "), not " + xs.shape_string());
  }
  const std::vector<float> v = xs.values<float>();
  x = Eigen::Map<const Eigen::MatrixXf>(v.data(), d, Eigen::Index(xs.shape[0]));
  return true;
}

// A pool for --threads N: the calling thread is one of the N, so the pool has N - 1.
struct Threads {
  explicit Threads(int n) : count(n), pool(n > 1 ? n - 1 : 1), device(&pool, n) {}
  int count;
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

// The median time of `repeats` runs of f, after one untimed run (the warm-up).
inline double median_seconds(int repeats, const std::function<void()>& f) {
  f();
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// Prints the time, the speed and the check of y against the unfused reference; returns
// the exit code (1 on a mismatch).
inline int report(double median, int repeats, double flops, Eigen::Index tokens, const Eigen::MatrixXf& y,
                  const Eigen::MatrixXd& reference) {
  const double max_diff = (y.cast<double>() - reference).cwiseAbs().maxCoeff();
  const double max_rel = ((y.cast<double>() - reference).array().abs() / (1 + reference.array().abs())).maxCoeff();
  const double tolerance = 5e-5;  // float GEMMs (sums of up to d_ff terms) against double
  const bool ok = std::isfinite(max_rel) && max_rel <= tolerance;
  std::printf("  time      %.3f ms per forward (median of %d)\n", median * 1e3, repeats);
  std::printf("  speed     %.1f GFLOP/s, %.2f us per token\n", flops / median * 1e-9, median * 1e6 / double(tokens));
  std::printf("  check     max |fused - unfused| = %.3g, relative to 1+|y|: %.3g (tolerance %.0e) %s\n", max_diff,
              max_rel, tolerance, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}

// run() with the examples' exit codes: 2 for bad usage and errors, in words.
inline int main_with(const char* name, const char* usage, const std::function<int()>& run) {
  try {
    return run();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s\n%s", name, e.what(), usage);
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory for the weights and activations of these dimensions\n", name);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  }
}

}  // namespace example

#endif  // EGELU_EXAMPLES_EXAMPLE_COMMON_HPP
