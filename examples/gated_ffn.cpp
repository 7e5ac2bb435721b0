// gated_ffn: a LLaMA-style gated feed-forward block with its RMSNorm and residual,
// Y = X + W_down (act(W_gate N(X)) * W_up N(X)), run with egelu::GatedFeedForward and
// checked against a plain unfused computation in double precision (no egelu).
//
//   gated_ffn                         TinyLlama-1.1B: d_model 2048, d_ff 5632, SwiGLU, 128 tokens
//   gated_ffn --geglu                 Gemma-2B: d_model 2048, d_ff 16384, GeGLU (tanh GELU)
//   gated_ffn --geglu --exact         GeGLU with the exact GELU
//   gated_ffn --threads 2             one block, its work split over two threads
//   gated_ffn --format bf16           the weights held in bfloat16, as checkpoints ship (f16: half; q8_0, q4_0:
//                                     ggml's 8- and 4-bit blocks; mxfp4: OCP's MXFP4)
//   gated_ffn --checkpoint DIR --layer N   layer N of a Hugging Face checkpoint (LLaMA, Mistral, Qwen, Phi-3,
//                                          Gemma 1-3; --stack encoder|decoder: T5; text: Gemma 3)
//   gated_ffn --weights DIR           gate_proj.npy up_proj.npy down_proj.npy norm.npy [eps.npy X.npy Y.npy]
//
// The check: against the folder's reference outputs when it has them, and against a plain
// unfused computation in double precision or, for a checkpoint, egelu's double-precision
// block of the same layer.
#include <algorithm>
#include <egelu/gated_feed_forward.hpp>

#include "example_common.hpp"

namespace {

using GF = egelu::GatedFeedForward<float>;

const char* kUsage =
    "usage: gated_ffn [--tokens N] [--d-model N] [--d-ff N] [--threads N] [--geglu] [--exact] [--format F]\n"
    "                 [--inputs q16_0]\n"
    "                 [--checkpoint DIR [--stack S] [--layer N] | --weights DIR] [--help]\n"
    "  Runs Y = X + W_down (act(W_gate N(X)) * W_up N(X)), N = RMSNorm, with SwiGLU at TinyLlama-1.1B's\n"
    "  dimensions (--geglu: GeGLU at Gemma-2B's) on deterministic random weights, on layer N of a Hugging\n"
    "  Face checkpoint (config.json + safetensors: its settings decide the activation and eps; --stack\n"
    "  names T5's encoder or decoder), or on .npy files gate_proj up_proj down_proj norm [eps X Y] from\n"
    "  DIR; checks it against the folder's reference outputs and an independent double-precision\n"
    "  computation, and prints the time, GFLOP/s and the largest difference. --format\n"
    "  f32|bf16|f16|q8_0|q4_0|mxfp4 holds the weights in that precision; --inputs q16_0 (with q8_0 or q4_0)\n"
    "  makes the products read their inputs as 16-bit integers.\n"
    "  Exits 1 on a mismatch, 2 on bad usage.\n";

constexpr float kEps = 1e-5f;  // TinyLlama's rms_norm_eps (Gemma's is 1e-6), for random weights

// act(gate) * up.
double gated(egelu::GatedForm form, double v, double up) {
  switch (form) {
    case egelu::GatedForm::swiglu:
      return v / (1 + std::exp(-v)) * up;
    case egelu::GatedForm::geglu:
      return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))) * up;
    case egelu::GatedForm::geglu_exact:
      return 0.5 * v * std::erfc(-v / std::sqrt(2.0)) * up;
    case egelu::GatedForm::clamped_swiglu:  // gpt-oss's
      v = std::min(v, 7.0);
      return v / (1 + std::exp(-1.702 * v)) * (std::clamp(up, -7.0, 7.0) + 1);
  }
  return 0;
}

// The block the slow, obvious way: double precision, no egelu.
Eigen::MatrixXd unfused(const GF::Weights& gate, const GF::Weights& up, const GF::Weights& down, const GF::Vector& norm,
                        const GF::Matrix& x, egelu::GatedForm form, double eps) {
  Eigen::MatrixXd n = x.cast<double>();
  for (Eigen::Index t = 0; t < n.cols(); ++t) {
    n.col(t) /= std::sqrt(n.col(t).squaredNorm() / double(n.rows()) + eps);
    n.col(t).array() *= norm.cast<double>().array();
  }
  const Eigen::MatrixXd g = gate.cast<double>() * n, u = up.cast<double>() * n;
  Eigen::MatrixXd h(g.rows(), g.cols());
  for (Eigen::Index i = 0; i < g.size(); ++i) h(i) = gated(form, g(i), u(i));
  return x.cast<double>() + down.cast<double>() * h;
}

const char* form_name(egelu::GatedForm form) {
  switch (form) {
    case egelu::GatedForm::swiglu:
      return "SwiGLU";
    case egelu::GatedForm::geglu:
      return "GeGLU (tanh GELU)";
    case egelu::GatedForm::geglu_exact:
      return "GeGLU (exact GELU)";
    case egelu::GatedForm::clamped_swiglu:
      return "gpt-oss's clamped SwiGLU";
  }
  return "?";
}

int run(const example::Options& o) {
  using egelu::GatedForm;
  example::Threads threads(o.threads);
  const std::string& dir = o.checkpoint.empty() ? o.weights : o.checkpoint;
  const bool geglu = o.has("--geglu"), exact = o.has("--exact");
  if (exact && !geglu) throw std::invalid_argument("--exact is GeGLU's: give --geglu too");
  const GatedForm form = geglu ? (exact ? GatedForm::geglu_exact : GatedForm::geglu) : GatedForm::swiglu;
  const egelu::WeightFormat format = o.format.empty() ? egelu::WeightFormat::f32 : example::weight_format(o.format);
  std::unique_ptr<GF> block;
  GF::Weights gate, up, down;
  GF::Vector norm;
  if (!o.checkpoint.empty()) {
    o.refuse_with_weights({"--geglu", "--exact"}, o.checkpoint + "/config.json");
    block.reset(new GF(example::from_pretrained<GF>(o)));
  } else {
    Eigen::Index d = o.d_model ? o.d_model : 2048, d_ff = o.d_ff ? o.d_ff : (geglu ? 16384 : 5632);
    float eps = kEps;
    if (!o.weights.empty()) {
      const std::string p = o.weights + "/";
      const egelu::npy::Array first = egelu::npy::load(p + "gate_proj.npy");
      if (first.shape.size() != 2) throw std::invalid_argument(p + "gate_proj.npy must be 2-D (d_ff, d_model)");
      d_ff = Eigen::Index(first.shape[0]), d = Eigen::Index(first.shape[1]);
      gate = egelu::npy::load_matrix<float>(p + "gate_proj.npy", d_ff, d);
      up = egelu::npy::load_matrix<float>(p + "up_proj.npy", d_ff, d);
      down = egelu::npy::load_matrix<float>(p + "down_proj.npy", d, d_ff);
      norm = egelu::npy::load_vector<float>(p + "norm.npy", d);
      // The folder's epsilon, as GatedFeedForward::load reads it.
      eps = example::exists(p + "eps.npy") ? egelu::npy::load_vector<float>(p + "eps.npy", 1)(0) : 1e-6f;
    } else {
      std::srand(2024);  // Eigen's Random() draws from std::rand: deterministic
      gate = GF::Weights::Random(d_ff, d) * (2.f / std::sqrt(float(d)));
      up = GF::Weights::Random(d_ff, d) / std::sqrt(float(d));
      down = GF::Weights::Random(d, d_ff) / std::sqrt(float(d_ff));
      norm = GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.1f;
    }
    block.reset(new GF(gate, up, down, norm, GF::Options{form, eps, format, example::input_format(o.inputs)}));
  }
  const example::Inputs in = example::inputs(o, block->d_model());
  GF::Matrix y(block->d_model(), in.x.cols());
  const double median = example::median_seconds(o.repeats, [&] {
    if (threads.count == 1) {
      block->forward(in.x, y);
    } else {
      block->forward(in.x, y, threads.device);
    }
  });
  std::printf("gated_ffn: %s%s d_model=%ld d_ff=%ld tokens=%ld %s eps=%g weights=%s (%.1f MB) threads=%d, Eigen %s\n",
              dir.empty() ? "random weights" : dir.c_str(),
              o.checkpoint.empty()
                  ? ""
                  : ((o.stack.empty() ? "" : " " + o.stack) + " layer " + std::to_string(o.layer)).c_str(),
              long(block->d_model()), long(block->d_ff()), long(in.x.cols()), form_name(block->form()),
              double(block->eps()), egelu::to_string(block->weight_format()), double(block->weight_bytes()) * 1e-6,
              threads.count, example::eigen_version().c_str());
  example::report_speed(median, o.repeats, 6.0 * double(block->d_model()) * double(block->d_ff()) * double(in.x.cols()),
                        in.x.cols());
  const double tolerance = example::tolerance_for(block->weight_format(), o.format.empty());
  bool ok = true;
  if (in.reference.size()) ok = example::check(in.reference_name.c_str(), y, in.reference, tolerance) && ok;
  if (!o.checkpoint.empty()) {
    const auto twin = example::from_pretrained_double<egelu::GatedFeedForward<double>>(o);
    Eigen::MatrixXd y64(y.rows(), y.cols());
    twin.forward(in.x.cast<double>(), y64);
    ok = example::check("egelu's double-precision block of this checkpoint", y, y64, tolerance) && ok;
  } else {
    ok = example::check("an unfused double-precision computation", y,
                        unfused(gate, up, down, norm, in.x, form, double(block->eps())), tolerance) &&
         ok;
  }
  return example::verdict(ok);
}

}  // namespace

int main(int argc, char** argv) {
  return example::main_with("gated_ffn", kUsage, [&] {
    return run(example::parse(argc, argv, {"--geglu", "--exact"}, kUsage));
  });
}
