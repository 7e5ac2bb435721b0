// bert_ffn: the feed-forward block of BERT (post-norm) or GPT-2 (pre-norm) with
// egelu::FeedForward, timed and checked.
//
//   bert_ffn                              BERT-base: d_model 768, d_ff 3072, 128 tokens, random weights
//   bert_ffn --tokens 512 --exact         the exact (erf) GELU, as in Hugging Face BERT
//   bert_ffn --fast                       the opt-in egelu::fast GELU (absolute bound 4e-6 |x|)
//   bert_ffn --threads 2                  one block, its work split over two threads
//   bert_ffn --format bf16                the weights held in bfloat16 (f16: half; q8_0, q4_0: ggml's 8- and
//                                         4-bit blocks; mxfp4: OCP's MXFP4)
//   bert_ffn --checkpoint DIR --layer N   layer N of a Hugging Face checkpoint (BERT, RoBERTa, GPT-2, ViT,
//                                         GPT-NeoX; --stack text|vision: CLIP, Gemma 3; encoder|decoder: Whisper)
//   bert_ffn --weights DIR                W1.npy b1.npy W2.npy b2.npy gamma.npy beta.npy [X.npy Y.npy]
//
// The check: against the folder's reference outputs when it has them (Y.npy, or a test
// checkpoint's reference/Y_layer<N>.npy), and against a plain unfused computation in
// double precision (std::tanh / std::erfc, no egelu) or, for a checkpoint, egelu's
// double-precision block of the same layer.
#include <egelu/feed_forward.hpp>

#include "example_common.hpp"

namespace {

using FF = egelu::FeedForward<float>;
using egelu::GeluForm;

const char* kUsage =
    "usage: bert_ffn [--tokens N] [--d-model N] [--d-ff N] [--threads N] [--exact] [--fast] [--format F]\n"
    "                [--inputs q16_0]\n"
    "                [--checkpoint DIR [--stack S] [--layer N] | --weights DIR] [--help]\n"
    "  Runs BERT's Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2) (or, from a GPT-2 checkpoint, the pre-norm\n"
    "  Y = X + W2 gelu(W1 LayerNorm(X) + b1) + b2) on deterministic random weights at BERT-base's dimensions,\n"
    "  on layer N of a Hugging Face checkpoint (config.json + safetensors: its settings decide the GELU,\n"
    "  the norm and eps; --stack names CLIP's text or vision tower, Whisper's encoder or decoder), or on\n"
    "  .npy files W1 b1 W2 b2 gamma beta [X Y] from DIR; checks it against the folder's reference outputs\n"
    "  and an independent double-precision computation, and prints the time,\n"
    "  GFLOP/s and the largest difference. --format f32|bf16|f16|q8_0|q4_0|mxfp4 holds the weights in that precision;\n"
    "  --inputs q16_0 (with q8_0 or q4_0) makes the products read their inputs as 16-bit integers.\n"
    "  Exits 1 on a mismatch, 2 on bad usage.\n";

// The block the slow, obvious way: double precision, no egelu.
Eigen::MatrixXd unfused(const FF::Weights& w1, const FF::Vector& b1, const FF::Weights& w2, const FF::Vector& b2,
                        const FF::Vector& gamma, const FF::Vector& beta, const FF::Matrix& x, bool exact, double eps) {
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
    z.col(j) =
        ((z.col(j).array() - mean) / std::sqrt(var + eps)) * gamma.cast<double>().array() + beta.cast<double>().array();
  }
  return z;
}

const char* gelu_name(GeluForm form) {
  switch (form) {
    case GeluForm::tanh:
      return "tanh";
    case GeluForm::exact:
      return "exact (erf)";
    case GeluForm::fast_tanh:
      return "fast tanh";
    case GeluForm::fast_exact:
      return "fast exact (erf)";
    case GeluForm::quick:
      return "QuickGELU";
  }
  return "?";
}

int run(const example::Options& o) {
  example::Threads threads(o.threads);
  const std::string& dir = o.checkpoint.empty() ? o.weights : o.checkpoint;
  std::unique_ptr<FF> block;
  FF::Weights w1, w2;
  FF::Vector b1, b2, gamma, beta;
  const bool exact = o.has("--exact"), fast = o.has("--fast");
  const GeluForm form =
      fast ? (exact ? GeluForm::fast_exact : GeluForm::fast_tanh) : (exact ? GeluForm::exact : GeluForm::tanh);
  const egelu::WeightFormat format = o.format.empty() ? egelu::WeightFormat::f32 : example::weight_format(o.format);
  if (!o.checkpoint.empty()) {
    o.refuse_with_weights({"--exact", "--fast"}, o.checkpoint + "/config.json");
    block.reset(new FF(example::from_pretrained<FF>(o)));
  } else {
    Eigen::Index d = o.d_model ? o.d_model : 768, d_ff = o.d_ff ? o.d_ff : 3072;
    if (!o.weights.empty()) {
      const std::string p = o.weights + "/";
      const egelu::npy::Array first = egelu::npy::load(p + "W1.npy");
      if (first.shape.size() != 2) throw std::invalid_argument(p + "W1.npy must be 2-D (d_ff, d_model)");
      d_ff = Eigen::Index(first.shape[0]), d = Eigen::Index(first.shape[1]);
      w1 = egelu::npy::load_matrix<float>(p + "W1.npy", d_ff, d);
      b1 = egelu::npy::load_vector<float>(p + "b1.npy", d_ff);
      w2 = egelu::npy::load_matrix<float>(p + "W2.npy", d, d_ff);
      b2 = egelu::npy::load_vector<float>(p + "b2.npy", d);
      gamma = egelu::npy::load_vector<float>(p + "gamma.npy", d);
      beta = egelu::npy::load_vector<float>(p + "beta.npy", d);
    } else {
      std::srand(2024);  // Eigen's Random() draws from std::rand: deterministic
      w1 = FF::Weights::Random(d_ff, d) / std::sqrt(float(d));
      b1 = FF::Vector::Random(d_ff) * 0.1f;
      w2 = FF::Weights::Random(d, d_ff) / std::sqrt(float(d_ff));
      b2 = FF::Vector::Random(d) * 0.1f;
      gamma = FF::Vector::Ones(d) + FF::Vector::Random(d) * 0.1f;
      beta = FF::Vector::Random(d) * 0.1f;
    }
    block.reset(new FF(w1, b1, w2, b2, gamma, beta,
                       FF::Options{form, egelu::NormPlacement::post, 1e-12f, format, example::input_format(o.inputs)}));
  }
  const example::Inputs in = example::inputs(o, block->d_model());
  FF::Matrix y(block->d_model(), in.x.cols());
  const double median = example::median_seconds(o.repeats, [&] {
    if (threads.count == 1) {
      block->forward(in.x, y);
    } else {
      block->forward(in.x, y, threads.device);
    }
  });
  std::printf(
      "bert_ffn: %s%s d_model=%ld d_ff=%ld tokens=%ld gelu=%s norm=%s eps=%g weights=%s (%.1f MB) threads=%d, "
      "Eigen %s\n",
      dir.empty() ? "random weights" : dir.c_str(),
      o.checkpoint.empty() ? ""
                           : ((o.stack.empty() ? "" : " " + o.stack) + " layer " + std::to_string(o.layer)).c_str(),
      long(block->d_model()), long(block->d_ff()), long(in.x.cols()), gelu_name(block->form()),
      block->norm_placement() == egelu::NormPlacement::pre ? "pre" : "post", double(block->eps()),
      egelu::to_string(block->weight_format()), double(block->weight_bytes()) * 1e-6, threads.count,
      example::eigen_version().c_str());
  example::report_speed(median, o.repeats, 4.0 * double(block->d_model()) * double(block->d_ff()) * double(in.x.cols()),
                        in.x.cols());
  // Weights rounded to 16 bits move the output by about their rounding, not float's.
  const double tolerance = example::tolerance_for(block->weight_format(), o.format.empty());
  bool ok = true;
  if (in.reference.size()) ok = example::check(in.reference_name.c_str(), y, in.reference, tolerance) && ok;
  if (!o.checkpoint.empty()) {
    const auto twin = example::from_pretrained_double<egelu::FeedForward<double>>(o);
    Eigen::MatrixXd y64(y.rows(), y.cols());
    twin.forward(in.x.cast<double>(), y64);
    ok = example::check("egelu's double-precision block of this checkpoint", y, y64, tolerance) && ok;
  } else {
    ok = example::check("an unfused double-precision computation", y,
                        unfused(w1, b1, w2, b2, gamma, beta, in.x, exact, 1e-12), tolerance) &&
         ok;
  }
  return example::verdict(ok);
}

}  // namespace

int main(int argc, char** argv) {
  return example::main_with("bert_ffn", kUsage, [&] {
    return run(example::parse(argc, argv, {"--exact", "--fast"}, kUsage));
  });
}
