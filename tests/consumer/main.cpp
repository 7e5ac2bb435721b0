// Uses the installed package as a program would, built with its own SIMD flags:
// the header-only functions, and egelu::nn's blocks loaded from .npy files and a
// Hugging Face checkpoint and checked against the PyTorch fixtures, with matrices the
// library's reader returns transposed, resized and freed here.
#include <cmath>
#include <cstdio>
#include <egelu/egelu.hpp>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/npy.hpp>
#include <string>

namespace {

bool check(bool ok, const char* what) {
  std::printf("  %-58s %s\n", what, ok ? "ok" : "WRONG");
  return ok;
}

// (T, d) row-major in a file: transposed here into d x T, as the blocks take tokens.
Eigen::MatrixXf tokens(const std::string& path, Eigen::Index d) {
  const egelu::npy::Array a = egelu::npy::load(path);
  Eigen::MatrixXf x = egelu::npy::load_matrix<float>(path, Eigen::Index(a.shape[0]), d).transpose();
  return x;
}

}  // namespace

int main() {
  bool ok = true;
  std::printf("consumer: Eigen %d.%d.%d, %s\n", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION,
              Eigen::SimdInstructionSetsInUse());

  Eigen::ArrayXf x(3);
  x << -1, 0, 1;
  const Eigen::ArrayXf y = egelu::gelu(x);
  ok &=
      check(std::abs(y(0) + 0.158808f) < 1e-5f && y(1) == 0 && std::abs(y(2) - 0.841192f) < 1e-5f, "gelu([-1, 0, 1])");

  const std::string dir = std::string(EGELU_FIXTURES) + "/ffn_tanh";
  auto block = egelu::FeedForward<float>::load(dir, egelu::GeluForm::tanh);
  const Eigen::MatrixXf input = tokens(dir + "/X.npy", block.d_model());
  const Eigen::MatrixXf expected = tokens(dir + "/Y.npy", block.d_model());
  Eigen::MatrixXf out = Eigen::MatrixXf::Constant(input.rows(), input.cols(), NAN);
  block.forward(input, out);
  const float worst = ((out - expected).array().abs() / (1 + expected.array().abs())).maxCoeff();
  ok &= check(worst <= 1e-5f, "FeedForward::load + forward against PyTorch (1e-5)");

  // A block made here from matrices the library returned, reshaped by this program.
  egelu::npy::RowMajorMatrix<float> w1 = egelu::npy::load_matrix<float>(dir + "/W1.npy", block.d_ff(), block.d_model());
  const Eigen::MatrixXf w1_t = w1.transpose();
  w1 = w1_t.transpose();
  w1.conservativeResize(w1.rows(), w1.cols());
  const auto vec = [&](const char* name, Eigen::Index n) { return egelu::npy::load_vector<float>(dir + name, n); };
  egelu::FeedForward<float> copy(
      w1, vec("/b1.npy", block.d_ff()), egelu::npy::load_matrix<float>(dir + "/W2.npy", block.d_model(), block.d_ff()),
      vec("/b2.npy", block.d_model()), vec("/gamma.npy", block.d_model()), vec("/beta.npy", block.d_model()));
  Eigen::MatrixXf in_place = input;
  copy.forward(in_place, in_place);
  ok &= check(in_place.isApprox(out, 1e-6f), "FeedForward from the reader's matrices, in place");

  // The gated block (LLaMA's MLP), loaded and checked the same way.
  const std::string gated_dir = std::string(EGELU_FIXTURES) + "/gated_swiglu";
  const float eps = float(egelu::npy::load(gated_dir + "/eps.npy").values<double>()[0]);
  auto gated = egelu::GatedFeedForward<float>::load(gated_dir, egelu::GatedForm::swiglu, eps);
  const Eigen::MatrixXf gated_input = tokens(gated_dir + "/X.npy", gated.d_model());
  const Eigen::MatrixXf gated_expected = tokens(gated_dir + "/Y.npy", gated.d_model());
  Eigen::MatrixXf gated_out = Eigen::MatrixXf::Constant(gated_input.rows(), gated_input.cols(), NAN);
  gated.forward(gated_input, gated_out);
  const float gated_worst =
      ((gated_out - gated_expected).array().abs() / (1 + gated_expected.array().abs())).maxCoeff();
  ok &= check(gated_worst <= 1e-5f, "GatedFeedForward::load + forward against PyTorch (1e-5)");

  // A Hugging Face checkpoint through the installed library (its JSON parser stays inside):
  // Gemma's bfloat16 layer 1, kept in bfloat16.
  const std::string hf = std::string(EGELU_FIXTURES) + "/hf/gemma";
  const auto gemma = egelu::GatedFeedForward<float>::from_pretrained(hf, 1);
  const Eigen::MatrixXf hf_input = tokens(hf + "/reference/X.npy", gemma.d_model());
  const Eigen::MatrixXd hf_expected =
      egelu::npy::load_matrix<double>(hf + "/reference/Y_layer1.npy", hf_input.cols(), gemma.d_model()).transpose();
  Eigen::MatrixXf hf_out = Eigen::MatrixXf::Constant(hf_input.rows(), hf_input.cols(), NAN);
  gemma.forward(hf_input, hf_out);
  const double hf_worst =
      ((hf_out.cast<double>() - hf_expected).array().abs() / (1 + hf_expected.array().abs())).maxCoeff();
  ok &= check(hf_worst <= 3e-5 && gemma.weight_format() == egelu::WeightFormat::bf16,
              "GatedFeedForward::from_pretrained (Gemma, bf16) against PyTorch");

  std::printf("consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
