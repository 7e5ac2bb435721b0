// The gated feed-forward block of LLaMA, Mistral, Qwen (SwiGLU) and Gemma, T5 v1.1
// (GeGLU), with its pre-norm and residual:
//
//   Y = X + W_down (act(W_gate N(X)) * W_up N(X)),   N(x) = x / sqrt(mean(x^2) + eps) * weight
//
// N is RMSNorm as LLaMA has it (Gemma's checkpoints store weight - 1: give it weight).
// Tokens are the columns of a d_model x T column-major matrix -- the same bytes as
// PyTorch's row-major (T, d_model) -- and weights come in PyTorch's nn.Linear layout
// (out_features x in_features, row-major), as Hugging Face names them. The gate and up
// products are one product with the two weights stacked (vLLM's gate_up_proj), packed
// once when the block is made; act(gate) * up is applied to each tile in cache.
//
// Part of the compiled library egelu::nn; it copies its weights (feed_forward.hpp).
#ifndef EGELU_GATED_FEED_FORWARD_HPP
#define EGELU_GATED_FEED_FORWARD_HPP

#include <egelu/internal/nn_api.hpp>
#include <memory>
#include <string>

namespace Eigen {
struct ThreadPoolDevice;  // <unsupported/Eigen/CXX11/Tensor> with EIGEN_USE_THREADS defines it
}

namespace egelu {

/// The gate's activation: SwiGLU (silu: LLaMA, Mistral, Qwen), GeGLU with the tanh GELU
/// (Gemma's gelu_pytorch_tanh, T5's gelu_new), or GeGLU with the exact GELU.
enum class GatedForm { swiglu, geglu, geglu_exact };

template <typename Scalar>
class EGELU_NN_API GatedFeedForward {
 public:
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "GatedFeedForward is compiled for float and double");
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;                    // d x T
  using Weights = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;  // out x in
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  /// gate, up: d_ff x d_model; down: d_model x d_ff; norm: d_model, the RMSNorm weight (copied).
  /// Throws std::invalid_argument naming the shapes when they do not fit together.
  GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                   const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                   GatedForm form = GatedForm::swiglu, Scalar eps = Scalar(1e-6));
  GatedFeedForward(GatedFeedForward&&) noexcept;
  GatedFeedForward& operator=(GatedFeedForward&&) noexcept;
  ~GatedFeedForward();

  /// Reads Hugging Face's names from a directory: gate_proj.npy, up_proj.npy, down_proj.npy
  /// and norm.npy.
  static GatedFeedForward load(const std::string& directory, GatedForm form = GatedForm::swiglu,
                               Scalar eps = Scalar(1e-6));

  Eigen::Index d_model() const;
  Eigen::Index d_ff() const;
  GatedForm form() const;

  /// Sizes the workspace for up to `tokens` columns.
  void reserve(Eigen::Index tokens);

  /// y = the block applied to x (both d_model x T; y may be x itself), on the calling thread.
  /// Throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y);

  /// The same on the device's threads (the calling thread works too), with the same bits
  /// for any number of threads. Allocates nothing once the workspace holds T tokens and
  /// this device has been used (an earlier call).
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice& device);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class GatedFeedForward<float>;
extern template class GatedFeedForward<double>;

}  // namespace egelu

#endif  // EGELU_GATED_FEED_FORWARD_HPP
