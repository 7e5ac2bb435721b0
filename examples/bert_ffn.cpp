// bert_ffn: a BERT feed-forward block, Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2),
// run with egelu::FeedForward and checked against a plain unfused computation
// in double precision (std::tanh / std::erfc, no egelu).
//
//   bert_ffn                          BERT-base: d_model 768, d_ff 3072, 128 tokens
//   bert_ffn --tokens 512 --exact     the exact (erf) GELU, as in Hugging Face BERT
//   bert_ffn --fast                   the opt-in egelu::fast GELU (absolute bound 4e-6 |x|)
//   bert_ffn --threads 2              one block, its work split over two threads
//   bert_ffn --weights DIR            W1.npy b1.npy W2.npy b2.npy gamma.npy beta.npy [X.npy]
#include <egelu/feed_forward.hpp>

#include "example_common.hpp"

namespace {

using FF = egelu::FeedForward<float>;

const char* kUsage =
    "usage: bert_ffn [--tokens N] [--d-model N] [--d-ff N] [--threads N] [--exact] [--fast] [--weights DIR] [--help]\n"
    "  Runs Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2) on deterministic random weights (or .npy files\n"
    "  W1 b1 W2 b2 gamma beta [X] from DIR), checks it against an unfused double-precision computation,\n"
    "  and prints the time, GFLOP/s and the largest difference. Exits 1 on a mismatch, 2 on bad usage.\n";

// The block the slow, obvious way: double precision, no egelu.
Eigen::MatrixXd unfused(const FF::Weights& w1, const FF::Vector& b1, const FF::Weights& w2, const FF::Vector& b2,
                        const FF::Vector& gamma, const FF::Vector& beta, const FF::Matrix& x, bool exact) {
  Eigen::MatrixXd h = w1.cast<double>() * x.cast<double>();
  for (Eigen::Index j = 0; j < h.cols(); ++j) {
    for (Eigen::Index i = 0; i < h.rows(); ++i) {
      const double v = h(i, j) + b1(i);
      h(i, j) = exact ? 0.5 * v * std::erfc(-v / std::sqrt(2.0))
                      : 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    }
  }
  Eigen::MatrixXd z = x.cast<double>() + w2.cast<double>() * h;
  for (Eigen::Index j = 0; j < z.cols(); ++j) {
    z.col(j) += b2.cast<double>();
    const double mean = z.col(j).mean();
    const double var = (z.col(j).array() - mean).square().mean();
    z.col(j) = ((z.col(j).array() - mean) / std::sqrt(var + 1e-12)) * gamma.cast<double>().array() +
               beta.cast<double>().array();
  }
  return z;
}

int run(const example::Options& o) {
  using egelu::GeluForm;
  const bool exact = o.has("--exact"), fast = o.has("--fast");
  const GeluForm form =
      fast ? (exact ? GeluForm::fast_exact : GeluForm::fast_tanh) : (exact ? GeluForm::exact : GeluForm::tanh);
  FF::Weights w1, w2;
  FF::Vector b1, b2, gamma, beta;
  FF::Matrix x;
  Eigen::Index d = o.d_model ? o.d_model : 768, d_ff = o.d_ff ? o.d_ff : 3072;
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
    example::load_tokens(dir, d, x);
  } else {
    std::srand(2024);  // Eigen's Random() draws from std::rand: deterministic
    w1 = FF::Weights::Random(d_ff, d) / std::sqrt(float(d));
    b1 = FF::Vector::Random(d_ff) * 0.1f;
    w2 = FF::Weights::Random(d, d_ff) / std::sqrt(float(d_ff));
    b2 = FF::Vector::Random(d) * 0.1f;
    gamma = FF::Vector::Ones(d) + FF::Vector::Random(d) * 0.1f;
    beta = FF::Vector::Random(d) * 0.1f;
  }
  if (x.size() == 0) x = FF::Matrix::Random(d, o.tokens) * 2.f;

  FF block(w1, b1, w2, b2, gamma, beta, form);
  example::Threads threads(o.threads);
  FF::Matrix y(d, x.cols());
  const double median = example::median_seconds(o.repeats, [&] {
    if (threads.count == 1) {
      block.forward(x, y);
    } else {
      block.forward(x, y, threads.device);
    }
  });
  std::printf("bert_ffn: d_model=%ld d_ff=%ld tokens=%ld gelu=%s threads=%d, Eigen %s\n", long(d), long(d_ff),
              long(x.cols()), exact ? (fast ? "fast exact (erf)" : "exact (erf)") : (fast ? "fast tanh" : "tanh"),
              threads.count, example::eigen_version().c_str());
  return example::report(median, o.repeats, 4.0 * double(d) * double(d_ff) * double(x.cols()), x.cols(), y,
                         unfused(w1, b1, w2, b2, gamma, beta, x, exact));
}

}  // namespace

int main(int argc, char** argv) {
  return example::main_with("bert_ffn", kUsage, [&] {
    return run(example::parse(argc, argv, {"--exact", "--fast"}, kUsage));
  });
}
