// moe_ffn: a mixture-of-experts feed-forward layer (Mixtral, Qwen-MoE, OLMoE, DeepSeek) with
// egelu::MoeFeedForward: RMSNorm, a router choosing k of E SwiGLU experts per token, their
// outputs summed with the routing weights, the residual. Timed and checked.
//
//   moe_ffn                               an OLMoE-like layer, smaller: d_model 1024, 16 experts of 512,
//                                         top 4, softmax, 128 tokens, random weights
//   moe_ffn --tokens 1 --threads 2        decoding: one token, only its k experts' weights are read
//   moe_ffn --format bf16                 the experts' weights held in bfloat16 (f16: half; q8_0, q4_0: ggml's 8- and
//                                         4-bit blocks; mxfp4: OCP's MXFP4, as gpt-oss ships)
//   moe_ffn --checkpoint DIR --layer N    the mixture of experts of layer N of a Hugging Face checkpoint
//
// The check: against the folder's reference outputs when it has them, and against a plain
// unfused computation in double precision (routing, experts, sums, no egelu) or, for a
// checkpoint, egelu's double-precision block of the same layer.
#include <egelu/moe_feed_forward.hpp>
#include <numeric>

#include "example_common.hpp"

namespace {

using MF = egelu::MoeFeedForward<float>;

const char* kUsage =
    "usage: moe_ffn [--tokens N] [--d-model N] [--d-ff N] [--threads N] [--format F] [--inputs q16_0]\n"
    "               [--checkpoint DIR [--layer N]] [--help]\n"
    "  Runs Y = X + sum over the top k experts of g_j Expert_j(N(X)), N = RMSNorm, each expert a SwiGLU MLP,\n"
    "  on deterministic random weights (16 experts of d_ff 512 at d_model 1024, top 4) or on the mixture of\n"
    "  experts of layer N of a Hugging Face checkpoint (Mixtral, Qwen2/3-MoE, OLMoE, DeepSeek-V2/V3: its\n"
    "  config decides the routing); checks it against the folder's reference outputs and an independent\n"
    "  double-precision computation, and prints the time and the largest difference. --format\n"
    "  f32|bf16|f16|q8_0|q4_0|mxfp4 holds the experts' weights in that precision; --inputs q16_0 (with q8_0 or q4_0)\n"
    "  makes the experts' products read their inputs as 16-bit integers. Exits 1 on a mismatch, 2 on bad usage.\n";

constexpr int kExperts = 16, kPerToken = 4;

// The layer the slow, obvious way: double precision, no egelu (softmax routing, top k,
// renormalised, as the random block is made).
Eigen::MatrixXd unfused(const MF::Weights& router, const MF::Weights& gates, const MF::Weights& ups,
                        const MF::Weights& downs, const MF::Vector& norm, const Eigen::MatrixXf& x, double eps) {
  const Eigen::Index E = router.rows(), d = x.rows(), f = gates.rows() / E;
  Eigen::MatrixXd y = x.cast<double>();
  for (Eigen::Index t = 0; t < x.cols(); ++t) {
    Eigen::VectorXd n = x.col(t).cast<double>();
    n = n / std::sqrt(n.squaredNorm() / double(d) + eps);
    n.array() *= norm.cast<double>().array();
    Eigen::VectorXd p = router.cast<double>() * n;
    p = (p.array() - p.maxCoeff()).exp();
    std::vector<int> order(static_cast<std::size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p(a) > p(b); });
    double sum = 0;
    for (int j = 0; j < kPerToken; ++j) sum += p(order[std::size_t(j)]);
    for (int j = 0; j < kPerToken; ++j) {
      const int e = order[std::size_t(j)];
      const Eigen::VectorXd g = gates.middleRows(e * f, f).cast<double>() * n,
                            u = ups.middleRows(e * f, f).cast<double>() * n;
      const Eigen::VectorXd h = (g.array() / (1 + (-g.array()).exp())) * u.array();
      y.col(t) += p(e) / sum * (downs.middleRows(e * d, d).cast<double>() * h);
    }
  }
  return y;
}

int run(const example::Options& o) {
  example::Threads threads(o.threads);
  std::unique_ptr<MF> block;
  MF::Weights router, gates, ups, downs;
  MF::Vector norm;
  if (!o.checkpoint.empty()) {
    block.reset(new MF(example::from_pretrained<MF>(o)));
  } else {
    const Eigen::Index d = o.d_model ? o.d_model : 1024, f = o.d_ff ? o.d_ff : 512;
    std::srand(2024);  // Eigen's Random() draws from std::rand: deterministic
    router = MF::Weights::Random(kExperts, d) * (2.f / std::sqrt(float(d)));
    gates = MF::Weights::Random(kExperts * f, d) * (2.f / std::sqrt(float(d)));
    ups = MF::Weights::Random(kExperts * f, d) / std::sqrt(float(d));
    downs = MF::Weights::Random(kExperts * d, f) / std::sqrt(float(f));
    norm = MF::Vector::Ones(d) + MF::Vector::Random(d) * 0.1f;
    MF::Options options;
    options.eps = 1e-5f;
    options.weights = o.format.empty() ? egelu::WeightFormat::f32 : example::weight_format(o.format);
    options.inputs = example::input_format(o.inputs);
    options.routing.experts_per_token = kPerToken;
    block.reset(new MF(router, gates, ups, downs, norm, options));
  }
  const example::Inputs in = example::inputs(o, block->d_model());
  MF::Matrix y(block->d_model(), in.x.cols());
  const double median = example::median_seconds(o.repeats, [&] {
    if (threads.count == 1) {
      block->forward(in.x, y);
    } else {
      block->forward(in.x, y, threads.device);
    }
  });
  std::printf(
      "moe_ffn: %s%s d_model=%ld experts=%d of d_ff=%ld, top %d%s, tokens=%ld eps=%g weights=%s (%.1f MB) threads=%d, "
      "Eigen %s\n",
      o.checkpoint.empty() ? "random weights" : o.checkpoint.c_str(),
      o.checkpoint.empty() ? "" : (" layer " + std::to_string(o.layer)).c_str(), long(block->d_model()),
      block->experts(), long(block->d_ff()), block->experts_per_token(),
      block->shared_d_ff() ? (", shared expert of " + std::to_string(block->shared_d_ff())).c_str() : "",
      long(in.x.cols()), double(block->eps()), egelu::to_string(block->weight_format()),
      double(block->weight_bytes()) * 1e-6, threads.count, example::eigen_version().c_str());
  const double routed = 6.0 * double(block->d_model()) * double(block->d_ff()) * block->experts_per_token(),
               shared = 6.0 * double(block->d_model()) * double(block->shared_d_ff());
  example::report_speed(median, o.repeats, (routed + shared) * double(in.x.cols()), in.x.cols());
  // A checkpoint's 16-bit (or MXFP4) experts hold its references' weights; experts quantized here do not.
  const egelu::WeightFormat kept = block->weight_format();
  const bool quantized = kept == egelu::WeightFormat::q8_0 || kept == egelu::WeightFormat::q4_0 ||
                         (kept == egelu::WeightFormat::mxfp4 && !o.format.empty());
  const double tolerance =
      example::tolerance_for(block->weight_format(), (o.checkpoint.size() && !quantized) || o.format.empty());
  bool ok = true;
  if (in.reference.size()) ok = example::check(in.reference_name.c_str(), y, in.reference, tolerance) && ok;
  if (!o.checkpoint.empty()) {
    const auto twin = example::from_pretrained_double<egelu::MoeFeedForward<double>>(o);
    Eigen::MatrixXd y64(y.rows(), y.cols());
    twin.forward(in.x.cast<double>(), y64);
    ok = example::check("egelu's double-precision block of this checkpoint", y, y64, tolerance) && ok;
  } else {
    ok = example::check("an unfused double-precision computation", y,
                        unfused(router, gates, ups, downs, norm, in.x, double(block->eps())), tolerance) &&
         ok;
  }
  return example::verdict(ok);
}

}  // namespace

int main(int argc, char** argv) {
  return example::main_with("moe_ffn", kUsage, [&] {
    const example::Options o = example::parse(argc, argv, {}, kUsage);
    return run(o);
  });
}
