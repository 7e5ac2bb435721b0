// gated_ffn: a LLaMA-style gated feed-forward block with its RMSNorm and residual,
// Y = X + W_down (act(W_gate N(X)) * W_up N(X)), run with egelu::GatedFeedForward and
// checked against a plain unfused computation in double precision (no egelu).
//
//   gated_ffn                         TinyLlama-1.1B: d_model 2048, d_ff 5632, SwiGLU, 128 tokens
//   gated_ffn --geglu                 Gemma-2B: d_model 2048, d_ff 16384, GeGLU (tanh GELU)
//   gated_ffn --geglu --exact         GeGLU with the exact GELU
//   gated_ffn --threads 2             one block, its work split over two threads
//   gated_ffn --weights DIR           gate_proj.npy up_proj.npy down_proj.npy norm.npy [X.npy]
#include <egelu/gated_feed_forward.hpp>

#include "example_common.hpp"

namespace {

using GF = egelu::GatedFeedForward<float>;

const char* kUsage =
    "usage: gated_ffn [--tokens N] [--d-model N] [--d-ff N] [--threads N] [--geglu] [--exact] [--weights DIR]\n"
    "                 [--help]\n"
    "  Runs Y = X + W_down (act(W_gate N(X)) * W_up N(X)), N = RMSNorm, with SwiGLU at TinyLlama-1.1B's\n"
    "  dimensions (--geglu: GeGLU at Gemma-2B's) on deterministic random weights (or .npy files gate_proj\n"
    "  up_proj down_proj norm [X] from DIR), checks it against an unfused double-precision computation,\n"
    "  and prints the time, GFLOP/s and the largest difference. Exits 1 on a mismatch, 2 on bad usage.\n";

constexpr float kEps = 1e-5f;  // TinyLlama's rms_norm_eps (Gemma's is 1e-6)

double activation(egelu::GatedForm form, double v) {
  switch (form) {
    case egelu::GatedForm::swiglu:
      return v / (1 + std::exp(-v));
    case egelu::GatedForm::geglu:
      return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case egelu::GatedForm::geglu_exact:
      return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
  }
  return 0;
}

// The block the slow, obvious way: double precision, no egelu.
Eigen::MatrixXd unfused(const GF::Weights& gate, const GF::Weights& up, const GF::Weights& down, const GF::Vector& norm,
                        const GF::Matrix& x, egelu::GatedForm form) {
  Eigen::MatrixXd n = x.cast<double>();
  for (Eigen::Index t = 0; t < n.cols(); ++t) {
    n.col(t) /= std::sqrt(n.col(t).squaredNorm() / double(n.rows()) + double(kEps));
    n.col(t).array() *= norm.cast<double>().array();
  }
  const Eigen::MatrixXd g = gate.cast<double>() * n, u = up.cast<double>() * n;
  Eigen::MatrixXd h(g.rows(), g.cols());
  for (Eigen::Index i = 0; i < g.size(); ++i) h(i) = activation(form, g(i)) * u(i);
  return x.cast<double>() + down.cast<double>() * h;
}

int run(const example::Options& o) {
  using egelu::GatedForm;
  const bool geglu = o.has("--geglu"), exact = o.has("--exact");
  if (exact && !geglu) throw std::invalid_argument("--exact is GeGLU's: give --geglu too");
  const GatedForm form = geglu ? (exact ? GatedForm::geglu_exact : GatedForm::geglu) : GatedForm::swiglu;
  GF::Weights gate, up, down;
  GF::Vector norm;
  GF::Matrix x;
  Eigen::Index d = o.d_model ? o.d_model : 2048, d_ff = o.d_ff ? o.d_ff : (geglu ? 16384 : 5632);
  if (!o.weights.empty()) {
    const std::string dir = o.weights + "/";
    const egelu::npy::Array first = egelu::npy::load(dir + "gate_proj.npy");
    if (first.shape.size() != 2) throw std::invalid_argument(dir + "gate_proj.npy must be 2-D (d_ff, d_model)");
    d_ff = Eigen::Index(first.shape[0]);
    d = Eigen::Index(first.shape[1]);
    gate = egelu::npy::load_matrix<float>(dir + "gate_proj.npy", d_ff, d);
    up = egelu::npy::load_matrix<float>(dir + "up_proj.npy", d_ff, d);
    down = egelu::npy::load_matrix<float>(dir + "down_proj.npy", d, d_ff);
    norm = egelu::npy::load_vector<float>(dir + "norm.npy", d);
    example::load_tokens(dir, d, x);
  } else {
    std::srand(2024);  // Eigen's Random() draws from std::rand: deterministic
    gate = GF::Weights::Random(d_ff, d) * (2.f / std::sqrt(float(d)));
    up = GF::Weights::Random(d_ff, d) / std::sqrt(float(d));
    down = GF::Weights::Random(d, d_ff) / std::sqrt(float(d_ff));
    norm = GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.1f;
  }
  if (x.size() == 0) x = GF::Matrix::Random(d, o.tokens) * 2.f;

  GF block(gate, up, down, norm, form, kEps);
  example::Threads threads(o.threads);
  GF::Matrix y(d, x.cols());
  const double median = example::median_seconds(o.repeats, [&] {
    if (threads.count == 1) {
      block.forward(x, y);
    } else {
      block.forward(x, y, threads.device);
    }
  });
  std::printf("gated_ffn: d_model=%ld d_ff=%ld tokens=%ld %s threads=%d, Eigen %s\n", long(d), long(d_ff),
              long(x.cols()), geglu ? (exact ? "GeGLU (exact GELU)" : "GeGLU (tanh GELU)") : "SwiGLU", threads.count,
              example::eigen_version().c_str());
  return example::report(median, o.repeats, 6.0 * double(d) * double(d_ff) * double(x.cols()), x.cols(), y,
                         unfused(gate, up, down, norm, x, form));
}

}  // namespace

int main(int argc, char** argv) {
  return example::main_with("gated_ffn", kUsage, [&] {
    return run(example::parse(argc, argv, {"--geglu", "--exact"}, kUsage));
  });
}
