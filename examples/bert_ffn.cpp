// bert_ffn: a BERT feed-forward block, Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2),
// run with egelu::FeedForward and checked against a plain unfused computation
// in double precision (std::tanh / std::erfc, no egelu).
//
//   bert_ffn                          BERT-base: d_model 768, d_ff 3072, 128 tokens
//   bert_ffn --tokens 512 --exact     the exact (erf) GELU, as in Hugging Face BERT
//   bert_ffn --fast                   the opt-in egelu::fast GELU (absolute bound 4e-6 |x|)
//   bert_ffn --weights DIR            W1.npy b1.npy W2.npy b2.npy gamma.npy beta.npy [X.npy]
#define EIGEN_USE_THREADS
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <egelu/feed_forward.hpp>
#include <egelu/npy.hpp>
#include <fstream>
#include <new>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>  // Eigen::ThreadPool, with EIGEN_USE_THREADS
#include <vector>

namespace {

using FF = egelu::FeedForward<float>;
using MatrixD = Eigen::MatrixXd;

struct Options {
  Eigen::Index tokens = 128, d_model = 768, d_ff = 3072;
  int threads = 1, repeats = 10;
  bool exact = false, fast = false;
  std::string weights;
};

const char* kUsage =
    "usage: bert_ffn [--tokens N] [--d-model N] [--d-ff N] [--threads N] [--exact] [--fast] [--weights DIR] [--help]\n"
    "  Runs Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2) on deterministic random weights (or .npy files\n"
    "  W1 b1 W2 b2 gamma beta [X] from DIR), checks it against an unfused double-precision computation,\n"
    "  and prints the time, GFLOP/s and the largest difference. Exits 1 on a mismatch, 2 on bad usage.\n";

Options parse(int argc, char** argv) {
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
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--tokens") {
      o.tokens = positive();
    } else if (arg == "--d-model") {
      o.d_model = positive();
    } else if (arg == "--d-ff") {
      o.d_ff = positive();
    } else if (arg == "--threads") {
      o.threads = int(positive());
    } else if (arg == "--exact") {
      o.exact = true;
    } else if (arg == "--fast") {
      o.fast = true;
    } else if (arg == "--weights") {
      o.weights = value();
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "'");
    }
  }
  return o;
}

// The block the slow, obvious way: double precision, no egelu.
MatrixD unfused(const FF::Weights& w1, const FF::Vector& b1, const FF::Weights& w2, const FF::Vector& b2,
                const FF::Vector& gamma, const FF::Vector& beta, const FF::Matrix& x, bool exact) {
  MatrixD h = w1.cast<double>() * x.cast<double>();
  for (Eigen::Index j = 0; j < h.cols(); ++j) {
    for (Eigen::Index i = 0; i < h.rows(); ++i) {
      const double v = h(i, j) + b1(i);
      h(i, j) = exact ? 0.5 * v * std::erfc(-v / std::sqrt(2.0))
                      : 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    }
  }
  MatrixD z = x.cast<double>() + w2.cast<double>() * h;
  for (Eigen::Index j = 0; j < z.cols(); ++j) {
    z.col(j) += b2.cast<double>();
    const double mean = z.col(j).mean();
    const double var = (z.col(j).array() - mean).square().mean();
    z.col(j) = ((z.col(j).array() - mean) / std::sqrt(var + 1e-12)) * gamma.cast<double>().array() +
               beta.cast<double>().array();
  }
  return z;
}

// "3.4.0", or the string Eigen 5 and later give (their WORLD version stays 3).
std::string eigen_version() {
#if defined(EIGEN_VERSION_STRING)
  return EIGEN_VERSION_STRING;
#else
  return std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
         std::to_string(EIGEN_MINOR_VERSION);
#endif
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

int run(const Options& o) {
  using egelu::GeluForm;
  const GeluForm form =
      o.fast ? (o.exact ? GeluForm::fast_exact : GeluForm::fast_tanh) : (o.exact ? GeluForm::exact : GeluForm::tanh);
  FF::Weights w1, w2;
  FF::Vector b1, b2, gamma, beta;
  FF::Matrix x;
  Eigen::Index d = o.d_model, d_ff = o.d_ff, tokens = o.tokens;
  if (!o.weights.empty()) {
    const std::string dir = o.weights + "/";
    const egelu::npy::Array first = egelu::npy::load(dir + "W1.npy");
    if (first.shape.size() != 2) throw std::invalid_argument(dir + "W1.npy must be 2-D (d_ff, d_model)");
    d_ff = Eigen::Index(first.shape[0]);
    d = Eigen::Index(first.shape[1]);
    w1 = egelu::npy::load_matrix<float>(dir + "W1.npy", d_ff, d);
    b1 = egelu::npy::load_vector<float>(dir + "b1.npy", d_ff);
    w2 = egelu::npy::load_matrix<float>(dir + "W2.npy", d, d_ff);
    b2 = egelu::npy::load_vector<float>(dir + "b2.npy", d);
    gamma = egelu::npy::load_vector<float>(dir + "gamma.npy", d);
    beta = egelu::npy::load_vector<float>(dir + "beta.npy", d);
    if (exists(dir + "X.npy")) {
      const egelu::npy::Array xs = egelu::npy::load(dir + "X.npy");
      if (xs.shape.size() != 2 || Eigen::Index(xs.shape[1]) != d) {
        throw std::invalid_argument(dir + "X.npy must be (tokens, " + std::to_string(d) + "), not " +
                                    xs.shape_string());
      }
      tokens = Eigen::Index(xs.shape[0]);
      const std::vector<float> v = xs.values<float>();
      x = Eigen::Map<const FF::Matrix>(v.data(), d, tokens);  // (T, d) row-major = d x T column-major
    }
  } else {
    std::srand(2024);  // Eigen's Random() draws from std::rand: deterministic
    w1 = FF::Weights::Random(d_ff, d) / std::sqrt(float(d));
    b1 = FF::Vector::Random(d_ff) * 0.1f;
    w2 = FF::Weights::Random(d, d_ff) / std::sqrt(float(d_ff));
    b2 = FF::Vector::Random(d) * 0.1f;
    gamma = FF::Vector::Ones(d) + FF::Vector::Random(d) * 0.1f;
    beta = FF::Vector::Random(d) * 0.1f;
  }
  if (x.size() == 0) x = FF::Matrix::Random(d, tokens) * 2.f;

  // One block; with --threads N its work is split over a pool of N threads (the calling
  // thread being one of them).
  FF block(w1, b1, w2, b2, gamma, beta, form);
  const int threads = o.threads;
  Eigen::ThreadPool pool(threads > 1 ? threads - 1 : 1);
  const Eigen::ThreadPoolDevice device(&pool, threads);
  FF::Matrix y(d, tokens);
  auto forward_all = [&] {
    if (threads == 1) {
      block.forward(x, y);
    } else {
      block.forward(x, y, device);
    }
  };

  forward_all();  // warm-up: sizes the workspaces
  std::vector<double> seconds;
  for (int r = 0; r < o.repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    forward_all();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double flops = 4.0 * double(d) * double(d_ff) * double(tokens);

  const MatrixD reference = unfused(w1, b1, w2, b2, gamma, beta, x, o.exact);
  const double max_diff = (y.cast<double>() - reference).cwiseAbs().maxCoeff();
  const double max_rel = ((y.cast<double>() - reference).array().abs() / (1 + reference.array().abs())).maxCoeff();
  const double tolerance = 5e-5;  // float GEMMs (sums of up to d_ff terms) against double
  const bool ok = std::isfinite(max_rel) && max_rel <= tolerance;

  std::printf("bert_ffn: d_model=%ld d_ff=%ld tokens=%ld gelu=%s threads=%d, Eigen %s\n", long(d), long(d_ff),
              long(tokens), o.exact ? (o.fast ? "fast exact (erf)" : "exact (erf)") : (o.fast ? "fast tanh" : "tanh"),
              threads, eigen_version().c_str());
  std::printf("  time      %.3f ms per forward (median of %d)\n", median * 1e3, o.repeats);
  std::printf("  speed     %.1f GFLOP/s, %.2f us per token\n", flops / median * 1e-9, median * 1e6 / double(tokens));
  std::printf("  check     max |fused - unfused| = %.3g, relative to 1+|y|: %.3g (tolerance %.0e) %s\n", max_diff,
              max_rel, tolerance, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "bert_ffn: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "bert_ffn: out of memory for the weights and activations of these dimensions\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bert_ffn: %s\n", e.what());
    return 2;
  }
}
