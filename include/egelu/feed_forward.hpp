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
#ifndef EGELU_FEED_FORWARD_HPP
#define EGELU_FEED_FORWARD_HPP

#include <egelu/internal/nn_api.hpp>
#include <memory>
#include <string>

namespace Eigen {
struct ThreadPoolDevice;  // <unsupported/Eigen/CXX11/Tensor> with EIGEN_USE_THREADS defines it
}

namespace egelu {

/// The GELU of the block: tanh (GPT-2) or exact (HF BERT), with the default kernels or the
/// opt-in egelu::fast ones (README, "Fast variants").
enum class GeluForm { tanh, exact, fast_tanh, fast_exact };

template <typename Scalar>
class EGELU_NN_API FeedForward {
 public:
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "FeedForward is compiled for float and double");
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;                    // d x T
  using Weights = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;  // out x in
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  /// w1: d_ff x d_model, b1: d_ff, w2: d_model x d_ff, b2, gamma, beta: d_model (copied).
  /// Throws std::invalid_argument naming the shapes when they do not fit together.
  FeedForward(const Eigen::Ref<const Weights>& w1, const Eigen::Ref<const Vector>& b1,
              const Eigen::Ref<const Weights>& w2, const Eigen::Ref<const Vector>& b2,
              const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
              GeluForm form = GeluForm::tanh, Scalar eps = Scalar(1e-12));
  FeedForward(FeedForward&&) noexcept;
  FeedForward& operator=(FeedForward&&) noexcept;
  ~FeedForward();

  /// Reads W1.npy, b1.npy, W2.npy, b2.npy, gamma.npy and beta.npy from a directory.
  static FeedForward load(const std::string& directory, GeluForm form = GeluForm::tanh, Scalar eps = Scalar(1e-12));

  Eigen::Index d_model() const;
  Eigen::Index d_ff() const;
  GeluForm form() const;

  /// Sizes the workspace for up to `tokens` columns.
  void reserve(Eigen::Index tokens);

  /// y = the block applied to x (both d_model x T; y may be x itself), on the calling thread.
  /// Throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y);

  /// The same on the device's threads (the calling thread works too): both products,
  /// bias + GELU, the residual and LayerNorm are split over them. The results are the
  /// same bits as forward(x, y) for any number of threads. Allocates nothing once the
  /// workspace holds T tokens and this device has been used (an earlier call).
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice& device);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class FeedForward<float>;
extern template class FeedForward<double>;

}  // namespace egelu

#endif  // EGELU_FEED_FORWARD_HPP
