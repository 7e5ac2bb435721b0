// A BERT-style feed-forward block built on egelu's fused bias + GELU:
//
//   Y = LayerNorm(X + W2 * gelu(W1 * X + b1) + b2)      (LayerNorm: gamma, beta, eps)
//
// Tokens are the columns of a d_model x T column-major matrix -- the same bytes
// as PyTorch's row-major (T, d_model) -- and weights come in PyTorch's
// nn.Linear layout (out_features x in_features, row-major). After the first
// call (or reserve()), forward() allocates nothing for up to that many tokens.
// The weights are packed once, when the block is made, into the layout Eigen's
// GEMM kernel consumes, so a call packs only its tokens.
//
// Part of the compiled library egelu::nn. It holds its weights itself: the
// constructor copies them, so no Eigen object changes hands between the
// library and the program (docs/DESIGN.md, "The compiled library").
/// @file
/// The BERT-style feed-forward block egelu::FeedForward, of the compiled library egelu::nn.
#ifndef EGELU_FEED_FORWARD_HPP
#define EGELU_FEED_FORWARD_HPP

#include <egelu/internal/nn_api.hpp>
#include <memory>
#include <string>

namespace Eigen {
struct ThreadPoolDevice;  // <unsupported/Eigen/CXX11/Tensor> with EIGEN_USE_THREADS defines it
}

namespace egelu {

/// The GELU of a FeedForward block: tanh (GPT-2) or exact (HF BERT), with the default kernels or the
/// opt-in egelu::fast ones (@ref fast "Fast variants").
enum class GeluForm { tanh, exact, fast_tanh, fast_exact };
/// @var GeluForm::tanh
/// gelu_tanh_op, the tanh form (GPT-2, original BERT).
/// @var GeluForm::exact
/// gelu_erf_op, the exact form (HF BERT, PyTorch's default).
/// @var GeluForm::fast_tanh
/// fast::gelu_tanh_op, the opt-in fast tanh form.
/// @var GeluForm::fast_exact
/// fast::gelu_erf_op, the opt-in fast exact form.

/// A BERT-style feed-forward block: Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2), LayerNorm with
/// gamma, beta and eps.
///
/// Tokens are the columns of a d_model x T column-major matrix (the same bytes as PyTorch's row-major
/// (T, d_model)); weights come in PyTorch's nn.Linear layout (out_features x in_features, row-major).
/// The block copies its weights and packs them once, when it is made, into the layout Eigen's GEMM
/// kernel consumes, so a call packs only its tokens. After the first call (or reserve()), forward()
/// allocates nothing for up to that many tokens. Movable, not copyable.
///
/// Part of the compiled library egelu::nn (`#include <egelu/feed_forward.hpp>`).
/// @tparam Scalar float or double, the two the library is compiled for.
template <typename Scalar>
class EGELU_NN_API FeedForward {
 public:
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "FeedForward is compiled for float and double");
  /// Activations: d_model x T, column-major, one token per column.
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  /// A weight: out_features x in_features, row-major (PyTorch's nn.Linear layout).
  using Weights = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  /// A bias, or LayerNorm's gamma or beta.
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  /// The block from its weights, which it copies.
  /// @param w1 the first linear layer's weight, d_ff x d_model.
  /// @param b1 its bias, d_ff.
  /// @param w2 the second linear layer's weight, d_model x d_ff.
  /// @param b2 its bias, d_model.
  /// @param gamma LayerNorm's weight, d_model.
  /// @param beta LayerNorm's bias, d_model.
  /// @param form the GELU.
  /// @param eps LayerNorm's epsilon.
  /// @throws std::invalid_argument naming the shapes when they do not fit together.
  FeedForward(const Eigen::Ref<const Weights>& w1, const Eigen::Ref<const Vector>& b1,
              const Eigen::Ref<const Weights>& w2, const Eigen::Ref<const Vector>& b2,
              const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
              GeluForm form = GeluForm::tanh, Scalar eps = Scalar(1e-12));
  /// Takes over the other block's weights and workspace; the moved-from block may only be assigned
  /// to or destroyed.
  FeedForward(FeedForward&&) noexcept;
  /// Takes over the other block's weights and workspace, as the move constructor.
  FeedForward& operator=(FeedForward&&) noexcept;
  /// Frees the weights and the workspace.
  ~FeedForward();

  /// Reads W1.npy, b1.npy, W2.npy, b2.npy, gamma.npy and beta.npy from a directory (egelu::npy:
  /// float32 or float64, converted to Scalar) and makes the block from them; d_model and d_ff are
  /// W1's shape.
  /// @throws npy::format_error for a file that is missing or not a valid .npy file.
  /// @throws std::invalid_argument naming the file and its shape for an array of the wrong shape.
  static FeedForward load(const std::string& directory, GeluForm form = GeluForm::tanh, Scalar eps = Scalar(1e-12));

  /// The model width: the rows of the activations.
  Eigen::Index d_model() const;
  /// The hidden width of the block, W1's rows.
  Eigen::Index d_ff() const;
  /// The GELU the block applies.
  GeluForm form() const;

  /// Sizes the workspace for up to `tokens` columns, so that forward() allocates nothing for them.
  void reserve(Eigen::Index tokens);

  /// y = the block applied to x (both d_model x T; y may be x itself), on the calling thread.
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y);

  /// The same on the device's threads (the calling thread works too): both products,
  /// bias + GELU, the residual and LayerNorm are split over them. The results are the
  /// same bits as forward(x, y) for any number of threads. Allocates nothing once the
  /// workspace holds T tokens and this device has been used (an earlier call).
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice& device);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class FeedForward<float>;
extern template class FeedForward<double>;

}  // namespace egelu

#endif  // EGELU_FEED_FORWARD_HPP
