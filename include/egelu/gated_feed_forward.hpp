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
/// @file
/// The gated (SwiGLU, GeGLU) feed-forward block egelu::GatedFeedForward, of the compiled library egelu::nn.
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
/// @var GatedForm::swiglu
/// SwiGLU: silu(gate) * up (swiglu_op).
/// @var GatedForm::geglu
/// GeGLU with the tanh form: gelu(gate) * up (geglu_op).
/// @var GatedForm::geglu_exact
/// GeGLU with the exact form: gelu_exact(gate) * up (geglu_exact_op).

/// The gated feed-forward block of LLaMA, Mistral, Qwen (SwiGLU) and Gemma, T5 v1.1 (GeGLU).
///
/// With its pre-norm and residual: Y = X + W_down (act(W_gate N(X)) * W_up N(X)), where
/// N(x) = x / sqrt(mean(x^2) + eps) * weight is RMSNorm as LLaMA has it (Gemma's checkpoints store
/// weight - 1: give it weight).
///
/// Tokens are the columns of a d_model x T column-major matrix (the same bytes as PyTorch's row-major
/// (T, d_model)); weights come in PyTorch's nn.Linear layout (out_features x in_features, row-major),
/// as Hugging Face names them. The block copies its weights; the gate and up products are one product
/// with the two weights stacked, packed once when the block is made, and act(gate) * up is applied to
/// each tile in cache. After the first call (or reserve()), forward() allocates nothing for up to that
/// many tokens. Movable, not copyable.
///
/// Part of the compiled library egelu::nn (`#include <egelu/gated_feed_forward.hpp>`).
/// @tparam Scalar float or double, the two the library is compiled for.
template <typename Scalar>
class EGELU_NN_API GatedFeedForward {
 public:
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "GatedFeedForward is compiled for float and double");
  /// Activations: d_model x T, column-major, one token per column.
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  /// A weight: out_features x in_features, row-major (PyTorch's nn.Linear layout).
  using Weights = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  /// The RMSNorm weight.
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  /// The block from its weights, which it copies.
  /// @param gate W_gate (Hugging Face's gate_proj), d_ff x d_model.
  /// @param up W_up (up_proj), d_ff x d_model.
  /// @param down W_down (down_proj), d_model x d_ff.
  /// @param norm the RMSNorm weight, d_model.
  /// @param form the gate's activation.
  /// @param eps RMSNorm's epsilon.
  /// @throws std::invalid_argument naming the shapes when they do not fit together.
  GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                   const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                   GatedForm form = GatedForm::swiglu, Scalar eps = Scalar(1e-6));
  /// Takes over the other block's weights and workspace; the moved-from block may only be assigned
  /// to or destroyed.
  GatedFeedForward(GatedFeedForward&&) noexcept;
  /// Takes over the other block's weights and workspace, as the move constructor.
  GatedFeedForward& operator=(GatedFeedForward&&) noexcept;
  /// Frees the weights and the workspace.
  ~GatedFeedForward();

  /// Reads Hugging Face's names from a directory: gate_proj.npy, up_proj.npy, down_proj.npy
  /// and norm.npy (egelu::npy: float32 or float64, converted to Scalar), and makes the block from
  /// them; d_ff and d_model are gate_proj's shape.
  /// @throws npy::format_error for a file that is missing or not a valid .npy file.
  /// @throws std::invalid_argument naming the file and its shape for an array of the wrong shape.
  static GatedFeedForward load(const std::string& directory, GatedForm form = GatedForm::swiglu,
                               Scalar eps = Scalar(1e-6));

  /// The model width: the rows of the activations.
  Eigen::Index d_model() const;
  /// The hidden width of the block, W_gate's rows.
  Eigen::Index d_ff() const;
  /// The gate's activation.
  GatedForm form() const;

  /// Sizes the workspace for up to `tokens` columns, so that forward() allocates nothing for them.
  void reserve(Eigen::Index tokens);

  /// y = the block applied to x (both d_model x T; y may be x itself), on the calling thread.
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y);

  /// The same on the device's threads (the calling thread works too), with the same bits
  /// for any number of threads. Allocates nothing once the workspace holds T tokens and
  /// this device has been used (an earlier call).
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice& device);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class GatedFeedForward<float>;
extern template class GatedFeedForward<double>;

}  // namespace egelu

#endif  // EGELU_GATED_FEED_FORWARD_HPP
