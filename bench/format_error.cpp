// What a weight format costs in accuracy: the blocks' outputs with bf16, f16, q8_0, q4_0 and
// mxfp4 weights (and q8_0 and q4_0 with q16_0 inputs) against the same block with the f32 weights
// they were made from, on weights drawn as trained ones look (normal, standard deviation 0.02,
// a few larger outliers) and tokens of unit variance. Prints a Markdown table (docs/DESIGN.md,
// "What a format costs in accuracy"); the q16_0 rows also against the same weights with f32 inputs.
//
//   format_error [--tokens N]        default 64
//
// The error is the MLP's contribution's, relative: |dy| / |y_f32 - x| over all outputs (the
// residual, which every format carries exactly, is left out; for BERT's post-norm block,
// whose output is normalised, |dy| / |y_f32|), as an RMS and as the largest element's
// |dy| against the contribution's RMS.
#define EIGEN_USE_THREADS
#include <cmath>
#include <cstdio>
#include <cstring>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <map>
#include <random>
#include <string>

namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using egelu::WeightFormat;

// Normal weights of standard deviation `sigma`, one in 1024 four times as large.
RowMajor trained_like(Eigen::Index rows, Eigen::Index cols, float sigma, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, sigma);
  std::uniform_int_distribution<int> outlier(0, 1023);
  RowMajor w(rows, cols);
  for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng) * (outlier(rng) == 0 ? 4.f : 1.f);
  return w;
}

struct Error {
  double rms, max;
};

// y against want, as changes of `base` (x for a residual block, zero for a normalised output).
Error error_of(const Eigen::MatrixXf& y, const Eigen::MatrixXf& want, const Eigen::MatrixXf& base) {
  const Eigen::MatrixXd d = y.cast<double>() - want.cast<double>(), c = want.cast<double>() - base.cast<double>();
  const double scale = std::sqrt(c.squaredNorm() / double(c.size()));
  return {std::sqrt(d.squaredNorm() / double(d.size())) / scale, d.cwiseAbs().maxCoeff() / scale};
}

// Each weight format with float inputs, then q8_0 and q4_0 with q16_0 inputs (opt-in).
struct Variant {
  WeightFormat weights;
  egelu::InputFormat inputs;
};
constexpr Variant kFormats[] = {
    {WeightFormat::bf16, egelu::InputFormat::f32},   {WeightFormat::f16, egelu::InputFormat::f32},
    {WeightFormat::q8_0, egelu::InputFormat::f32},   {WeightFormat::q4_0, egelu::InputFormat::f32},
    {WeightFormat::q8_0, egelu::InputFormat::q16_0}, {WeightFormat::q4_0, egelu::InputFormat::q16_0},
    {WeightFormat::mxfp4, egelu::InputFormat::f32}};

}  // namespace

int main(int argc, char** argv) {
  Eigen::Index tokens = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--tokens") == 0) tokens = std::atol(argv[i + 1]);
  }
  std::mt19937 rng(35);
  std::normal_distribution<float> unit(0.f, 1.f);
  std::printf(
      "| block (random weights, N(0, 0.02) with outliers) | format | bytes / weight | RMS error | max error | RMS "
      "error "
      "against the same weights' f32 inputs |\n");
  std::printf("|---|---|---|---|---|---|\n");
  // The outputs with q8_0's and q4_0's float inputs, for their q16_0 rows: what the inputs' rounding alone costs.
  std::map<WeightFormat, Eigen::MatrixXf> float_inputs;
  const auto row = [&](const char* block, Variant f, double bytes_per_weight, const Eigen::MatrixXf& y,
                       const Eigen::MatrixXf& want, const Eigen::MatrixXf& base) {
    const Error e = error_of(y, want, base);
    const bool q16 = f.inputs == egelu::InputFormat::q16_0;
    std::printf("| %s | %s%s | %.4g | %.2e | %.2e | ", block, egelu::to_string(f.weights), q16 ? ", q16_0 inputs" : "",
                bytes_per_weight, e.rms, e.max);
    if (q16) {
      std::printf("%.2e |\n", error_of(y, float_inputs.at(f.weights), base).rms);
    } else {
      float_inputs[f.weights] = y;
      std::printf("– |\n");
    }
  };
  {
    using GF = egelu::GatedFeedForward<float>;
    const Eigen::Index d = 2048, d_ff = 5632;
    const RowMajor gate = trained_like(d_ff, d, 0.02f, rng), up = trained_like(d_ff, d, 0.02f, rng),
                   down = trained_like(d, d_ff, 0.02f, rng);
    const Eigen::VectorXf norm = Eigen::VectorXf::Ones(d);
    Eigen::MatrixXf x(d, tokens);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = unit(rng);
    const GF reference(gate, up, down, norm, GF::Options{egelu::GatedForm::swiglu, 1e-5f, WeightFormat::f32});
    Eigen::MatrixXf want(d, tokens), y(d, tokens);
    reference.forward(x, want);
    for (Variant f : kFormats) {
      const GF block(gate, up, down, norm, GF::Options{egelu::GatedForm::swiglu, 1e-5f, f.weights, f.inputs});
      block.forward(x, y);
      row("TinyLlama MLP (SwiGLU, 2048 / 5632)", f, double(block.weight_bytes()) / double(3 * d * d_ff), y, want, x);
    }
  }
  {
    using FF = egelu::FeedForward<float>;
    const Eigen::Index d = 768, d_ff = 3072;
    const RowMajor w1 = trained_like(d_ff, d, 0.02f, rng), w2 = trained_like(d, d_ff, 0.02f, rng);
    Eigen::VectorXf b1(d_ff), b2(d);
    for (Eigen::Index i = 0; i < d_ff; ++i) b1(i) = 0.02f * unit(rng);
    for (Eigen::Index i = 0; i < d; ++i) b2(i) = 0.02f * unit(rng);
    Eigen::MatrixXf x(d, tokens);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = unit(rng);
    const Eigen::VectorXf gamma = Eigen::VectorXf::Ones(d), beta = Eigen::VectorXf::Zero(d);
    for (bool pre : {false, true}) {
      const FF::Options o{egelu::GeluForm::exact, pre ? egelu::NormPlacement::pre : egelu::NormPlacement::post, 1e-12f,
                          WeightFormat::f32};
      const FF reference(w1, b1, w2, b2, gamma, beta, o);
      Eigen::MatrixXf want(d, tokens), y(d, tokens);
      reference.forward(x, want);
      for (Variant f : kFormats) {
        FF::Options of = o;
        of.weights = f.weights;
        of.inputs = f.inputs;
        const FF block(w1, b1, w2, b2, gamma, beta, of);
        block.forward(x, y);
        row(pre ? "GPT-2-style pre-norm block (768 / 3072)" : "BERT-base block (post-norm, 768 / 3072)", f,
            double(block.weight_bytes()) / double(2 * d * d_ff), y, want, pre ? x : Eigen::MatrixXf::Zero(d, tokens));
      }
    }
  }
  return 0;
}
