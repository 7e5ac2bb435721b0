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
#include <egelu/weight_format.hpp>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>  // Eigen::ThreadPool, with EIGEN_USE_THREADS
#include <vector>

namespace example {

struct Options {
  Eigen::Index tokens = 128, d_model = 0, d_ff = 0;
  int threads = 1, repeats = 10, layer = 0;
  std::vector<std::string> flags;  // every flag given, the example's own switches among them
  std::string weights, checkpoint, format, stack, inputs;
  bool has(const std::string& flag) const { return std::find(flags.begin(), flags.end(), flag) != flags.end(); }

  // The weights' folder decides some flags: refuse them rather than drop them silently.
  void refuse_with_weights(const std::vector<std::string>& decided, const std::string& by) const {
    for (const std::string& flag : decided) {
      if (has(flag)) throw std::invalid_argument(flag + " is decided by " + by + ": drop it");
    }
  }
};

// --format f32|bf16|f16|q8_0|q4_0|mxfp4: the precision the block holds its weights in.
inline egelu::WeightFormat weight_format(const std::string& name) {
  for (egelu::WeightFormat f : {egelu::WeightFormat::f32, egelu::WeightFormat::bf16, egelu::WeightFormat::f16,
                                egelu::WeightFormat::q8_0, egelu::WeightFormat::q4_0, egelu::WeightFormat::mxfp4}) {
    if (name == egelu::to_string(f)) return f;
  }
  throw std::invalid_argument("--format takes f32, bf16, f16, q8_0, q4_0 or mxfp4, not '" + name + "'");
}

// --inputs f32|q16_0: the precision the block's products read their inputs in (q16_0 with
// --format q8_0 or q4_0).
inline egelu::InputFormat input_format(const std::string& name) {
  if (name.empty() || name == "f32") return egelu::InputFormat::f32;
  if (name == "q16_0") return egelu::InputFormat::q16_0;
  throw std::invalid_argument("--inputs takes f32 or q16_0, not '" + name + "'");
}

// --tokens N --d-model N --d-ff N --threads N --weights DIR --checkpoint DIR --layer N
// --stack NAME --format F --inputs I, and the example's own switches.
inline Options parse(int argc, char** argv, const std::vector<std::string>& switches, const char* usage) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    auto integer = [&](long least) {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < least) {
        throw std::invalid_argument(arg + " needs an integer of at least " + std::to_string(least) + ", not '" + v +
                                    "'");
      }
      return n;
    };
    auto positive = [&]() { return integer(1); };
    if (arg.rfind("--", 0) == 0 && arg != "--help") o.flags.push_back(arg);
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
    } else if (arg == "--checkpoint") {
      o.checkpoint = value();
    } else if (arg == "--layer") {
      o.layer = int(integer(0));
    } else if (arg == "--stack") {
      o.stack = value();
    } else if (arg == "--format") {
      o.format = value();
      weight_format(o.format);
    } else if (arg == "--inputs") {
      o.inputs = value();
      input_format(o.inputs);
    } else if (std::find(switches.begin(), switches.end(), arg) != switches.end()) {
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "'");
    }
  }
  if (!o.weights.empty() && !o.checkpoint.empty())
    throw std::invalid_argument("give --weights or --checkpoint, not both");
  if (input_format(o.inputs) == egelu::InputFormat::q16_0 && o.format != "q8_0" && o.format != "q4_0")
    throw std::invalid_argument("--inputs q16_0 needs --format q8_0 or q4_0");
  if (o.has("--layer") && o.checkpoint.empty()) throw std::invalid_argument("--layer needs --checkpoint");
  if (o.has("--stack") && o.checkpoint.empty()) throw std::invalid_argument("--stack needs --checkpoint");
  if (!o.weights.empty() || !o.checkpoint.empty()) {
    o.refuse_with_weights({"--d-model", "--d-ff"}, "the weights in " + (o.weights.empty() ? o.checkpoint : o.weights));
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

// A (T, d) row-major .npy file of tokens as d x T column-major.
template <typename Scalar>
Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> load_tokens(const std::string& path, Eigen::Index d) {
  const egelu::npy::Array xs = egelu::npy::load(path);
  if (xs.shape.size() != 2 || Eigen::Index(xs.shape[1]) != d) {
    throw std::invalid_argument(path + " must be (tokens, " + std::to_string(d) + "), not " + xs.shape_string());
  }
  const std::vector<Scalar> v = xs.values<Scalar>();
  return Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>>(v.data(), d,
                                                                                 Eigen::Index(xs.shape[0]));
}

// Layer --layer of the checkpoint (of --stack when given), in --format (and --inputs) when
// given.
template <typename Block>
Block from_pretrained(const Options& o) {
  if (o.format.empty()) {
    return o.stack.empty() ? Block::from_pretrained(o.checkpoint, o.layer)
                           : Block::from_pretrained(o.checkpoint, o.stack, o.layer);
  }
  return o.stack.empty()
             ? Block::from_pretrained(o.checkpoint, o.layer, weight_format(o.format), input_format(o.inputs))
             : Block::from_pretrained(o.checkpoint, o.stack, o.layer, weight_format(o.format), input_format(o.inputs));
}

// The same layer as a double block (its precision: the checkpoint's values, exactly).
template <typename Block>
Block from_pretrained_double(const Options& o) {
  return o.stack.empty() ? Block::from_pretrained(o.checkpoint, o.layer)
                         : Block::from_pretrained(o.checkpoint, o.stack, o.layer);
}

// The tokens to run and, when the folder holds them, the reference outputs to check: X.npy
// and Y.npy (a .npy folder: PyTorch's float32 output) or reference/X.npy and
// reference/Y_layer<N>.npy (the test checkpoints: float64; X_<stack>.npy and
// Y_<stack>_layer<N>.npy for a stack). Without them, `tokens` random tokens and no
// reference. A folder's X decides the tokens: --tokens is refused then.
struct Inputs {
  Eigen::MatrixXf x;
  Eigen::MatrixXd reference;  // empty: none in the folder
  std::string reference_name;
};

inline Inputs inputs(const Options& o, Eigen::Index d) {
  Inputs in;
  std::string x_file, y_file;
  if (!o.weights.empty()) {
    x_file = o.weights + "/X.npy", y_file = o.weights + "/Y.npy";
  } else if (!o.checkpoint.empty()) {
    const std::string tag = o.stack.empty() ? "" : "_" + o.stack;
    x_file = o.checkpoint + "/reference/X" + tag + ".npy";
    y_file = o.checkpoint + "/reference/Y" + tag + "_layer" + std::to_string(o.layer) + ".npy";
  }
  if (!x_file.empty() && exists(x_file)) {
    o.refuse_with_weights({"--tokens"}, x_file);
    in.x = load_tokens<float>(x_file, d);
    if (exists(y_file)) {
      in.reference = load_tokens<double>(y_file, d);
      in.reference_name = y_file;
    }
  } else {
    in.x = Eigen::MatrixXf::Random(d, o.tokens) * 2.f;
  }
  return in;
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

// Prints the time and the speed.
inline void report_speed(double median, int repeats, double flops, Eigen::Index tokens) {
  std::printf("  time      %.3f ms per forward (median of %d)\n", median * 1e3, repeats);
  std::printf("  speed     %.1f GFLOP/s, %.2f us per token\n", flops / median * 1e-9, median * 1e6 / double(tokens));
}

// Prints the check of y against one reference; returns whether it holds.
inline bool check(const char* against, const Eigen::MatrixXf& y, const Eigen::MatrixXd& reference,
                  double tolerance = 5e-5) {  // float GEMMs (sums of up to d_ff terms) against double
  const double max_diff = (y.cast<double>() - reference).cwiseAbs().maxCoeff();
  const double max_rel = ((y.cast<double>() - reference).array().abs() / (1 + reference.array().abs())).maxCoeff();
  const bool ok = std::isfinite(max_rel) && max_rel <= tolerance;
  std::printf("  check     against %s: max |y - ref| = %.3g, relative to 1+|ref|: %.3g (tolerance %.0e) %s\n", against,
              max_diff, max_rel, tolerance, ok ? "OK" : "MISMATCH");
  return ok;
}

// The check's tolerance: float's for float weights, or weights as they came; about the
// 16-bit rounding of the weights when the example rounded them (--format).
inline double tolerance_for(egelu::WeightFormat f, bool weights_as_given) {
  if (weights_as_given || f == egelu::WeightFormat::f32) return 5e-5;
  switch (f) {
    case egelu::WeightFormat::bf16:
      return 3e-2;
    case egelu::WeightFormat::q8_0:
      return 3e-2;
    case egelu::WeightFormat::q4_0:
    case egelu::WeightFormat::mxfp4:
      return 3e-1;
    default:
      return 4e-3;
  }
}

// The examples' verdict: 0 when every check held, 1 on a mismatch.
inline int verdict(bool ok) { return ok ? 0 : 1; }

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
