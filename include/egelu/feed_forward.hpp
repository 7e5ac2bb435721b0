// The feed-forward block of BERT (post-norm) and GPT-2 (pre-norm), built on egelu's GELU:
//
//   post:  Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2)      BERT, RoBERTa, DistilBERT, MPNet, DeBERTa
//   pre:   Y = X + W2 gelu(W1 LayerNorm(X) + b1) + b2      GPT-2, ViT, Whisper, GPT-NeoX, Phi-2, StarCoder2
//
// Tokens are the columns of a d_model x T column-major matrix -- the same bytes as
// PyTorch's row-major (T, d_model) -- and weights come in PyTorch's nn.Linear layout
// (out_features x in_features, row-major). The weights are packed once, when the block is
// made, in the precision asked for (f32, or bf16/f16 widened to float in registers), into
// the layout egelu's micro-kernels read, so a call packs only its tokens.
//
// Any number of threads may call forward() on one block at once: each call leases a
// workspace from the block, and the weights are shared. Part of the compiled library
// egelu::nn; it holds its weights itself, so no Eigen object changes hands between the
// library and the program (docs/DESIGN.md, "The compiled library").
/// @file
/// The BERT-style feed-forward block egelu::FeedForward, of the compiled library egelu::nn.
#ifndef EGELU_FEED_FORWARD_HPP
#define EGELU_FEED_FORWARD_HPP

#include <cstddef>
#include <egelu/internal/nn_api.hpp>
#include <egelu/threads.hpp>
#include <egelu/weight_format.hpp>
#include <memory>
#include <string>
#include <type_traits>

namespace Eigen {
struct ThreadPoolDevice;  // <unsupported/Eigen/CXX11/Tensor> with EIGEN_USE_THREADS defines it
}

namespace egelu {

namespace hf {
struct mlp_layer;  // a checkpoint's layer, as the library reads it (src/checkpoints/hf_checkpoint.hpp)
}

/// The GELU of a FeedForward block: tanh (GPT-2) or exact (HF BERT), with the default kernels or the
/// opt-in egelu::fast ones (@ref fast "Fast variants"), or CLIP's QuickGELU.
enum class GeluForm { tanh, exact, fast_tanh, fast_exact, quick };
/// @var GeluForm::tanh
/// gelu_tanh_op, the tanh form (GPT-2, original BERT).
/// @var GeluForm::exact
/// gelu_erf_op, the exact form (HF BERT, PyTorch's default).
/// @var GeluForm::fast_tanh
/// fast::gelu_tanh_op, the opt-in fast tanh form.
/// @var GeluForm::fast_exact
/// fast::gelu_erf_op, the opt-in fast exact form.
/// @var GeluForm::quick
/// quick_gelu_op, x sigmoid(1.702 x) (CLIP's quick_gelu).

/// Where a FeedForward block's LayerNorm sits.
enum class NormPlacement { post, pre };
/// @var NormPlacement::post
/// After the residual: Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2) (BERT, RoBERTa, DistilBERT, MPNet, DeBERTa, ELECTRA).
/// @var NormPlacement::pre
/// Before the MLP: Y = X + W2 gelu(W1 LayerNorm(X) + b1) + b2 (GPT-2, ViT, Whisper, GPT-NeoX, Phi-2, StarCoder2).

/// The feed-forward block of BERT (post-norm) or GPT-2 (pre-norm), LayerNorm with gamma, beta and eps:
/// Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2), or Y = X + W2 gelu(W1 LayerNorm(X) + b1) + b2.
///
/// Tokens are the columns of a d_model x T column-major matrix (the same bytes as PyTorch's row-major
/// (T, d_model)); weights come in PyTorch's nn.Linear layout (out_features x in_features, row-major).
/// The block copies its weights and packs them once, when it is made, in the precision its
/// WeightFormat says, into the layout egelu's micro-kernels read, so a call packs only its tokens.
/// from_pretrained() builds it from a Hugging Face checkpoint with the model's own settings.
///
/// **Threads.** Any number of threads may call forward() on one block at the same time, with or
/// without devices of their own or a shared one: each call leases a workspace from the block (its
/// activations and scratch memory), the weights are shared, and every result is the bits a lone call
/// gives. reserve() may run concurrently with forward() too. Moving, assigning and destroying a block
/// must not overlap any other use of it. After warm-up forward() allocates nothing: once the block has
/// served as many concurrent calls as now, each with at least as many tokens and device threads (or
/// after reserve(tokens, callers)).
///
/// Part of the compiled library egelu::nn (`#include <egelu/feed_forward.hpp>`). Movable, not copyable.
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

  /// How a block is made: its GELU, where its LayerNorm sits, LayerNorm's epsilon and the precision
  /// of its weights. An aggregate: `{GeluForm::tanh, NormPlacement::pre, 1e-5f, WeightFormat::bf16}`.
  struct Options {
    GeluForm gelu = GeluForm::tanh;            ///< The GELU.
    NormPlacement norm = NormPlacement::post;  ///< BERT's post-norm or GPT-2's pre-norm.
    Scalar eps = Scalar(1e-12);                ///< LayerNorm's epsilon (BERT's 1e-12; GPT-2 1e-5).
    WeightFormat weights = std::is_same<Scalar, double>::value ? WeightFormat::f64 : WeightFormat::f32;
    ///< The precision the block holds its weights in: f32, bf16, f16, q8_0, q4_0 or mxfp4 for float blocks, f64 for
    ///< double.
    InputFormat inputs = InputFormat::f32;
    ///< The precision the products read their inputs in: f32, or q16_0 with q8_0 or q4_0 weights (opt-in).
  };

  /// The post-norm (BERT) block from its weights, which it copies, in Scalar precision.
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
  /// The block from its weights, which it copies (rounded to nearest even for bf16 and f16), with
  /// the GELU, the norm's placement, epsilon and weight format of `options`.
  /// @throws std::invalid_argument naming the shapes when they do not fit together, a weight format
  ///   the Scalar cannot hold, or a weight beyond the range of the 16-bit format (naming it).
  FeedForward(const Eigen::Ref<const Weights>& w1, const Eigen::Ref<const Vector>& b1,
              const Eigen::Ref<const Weights>& w2, const Eigen::Ref<const Vector>& b2,
              const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta, const Options& options);
  /// Takes over the other block's weights and workspaces; the moved-from block may only be assigned
  /// to or destroyed.
  FeedForward(FeedForward&&) noexcept;
  /// Takes over the other block's weights and workspaces, as the move constructor.
  FeedForward& operator=(FeedForward&&) noexcept;
  /// Frees the weights and the workspaces.
  ~FeedForward();

  /// Layer `layer` of a Hugging Face checkpoint: a folder with config.json and model.safetensors (or
  /// model.safetensors.index.json and its shards). The architecture, activation, epsilon and widths
  /// come from config.json (BERT, RoBERTa, XLM-R, DistilBERT, MPNet, DeBERTa-v2/v3, ELECTRA: post-norm;
  /// GPT-2 (Conv1D weights), GPT-BigCode, BLOOM, ViT, GPT-NeoX/Pythia, StarCoder2, and the MLP's part of
  /// the parallel blocks of Phi-1/1.5/2 and GPT-J, Falcon (parallel or sequential, the LayerNorm its config
  /// chooses): pre-norm;
  /// a config saying the linear layers have no biases, as Falcon's, gives zero biases), the weights keep the
  /// checkpoint's precision (BF16 stays bf16, F16 f16, F32, F64 and FP8 f32; a double block holds f64). A model with
  /// several stacks (CLIP's text and vision towers, Whisper's encoder and decoder) needs the three-argument form.
  /// docs/DESIGN.md, "Checkpoints", lists the names and settings read.
  /// @throws std::invalid_argument naming the file, the tensor or the value at fault: a missing
  ///   config.json or tensor, a model whose MLP this block is not (naming the block that loads it), an
  ///   activation it does not run, a layer out of range, a tensor of the wrong shape.
  /// @throws safetensors::format_error for a malformed safetensors file, naming it and the problem.
  static FeedForward from_pretrained(const std::string& path, int layer);
  /// The same, converting the weights to `weights` (rounding to nearest even), the products reading
  /// their inputs in `inputs` (q16_0 with q8_0 or q4_0 weights only).
  static FeedForward from_pretrained(const std::string& path, int layer, WeightFormat weights,
                                     InputFormat inputs = InputFormat::f32);
  /// Layer `layer` of stack `stack` of a Hugging Face checkpoint with several: "text" or "vision"
  /// (CLIP's towers, Gemma 3's SigLIP vision tower), "encoder" or "decoder" (Whisper).
  /// @throws std::invalid_argument for a stack the model does not have (naming those it has), a
  ///   stack name on a model with one, a layer past the stack's last, and as above.
  static FeedForward from_pretrained(const std::string& path, const std::string& stack, int layer);
  /// The same, converting the weights to `weights` (rounding to nearest even), the products reading
  /// their inputs in `inputs`.
  static FeedForward from_pretrained(const std::string& path, const std::string& stack, int layer, WeightFormat weights,
                                     InputFormat inputs = InputFormat::f32);

  /// Reads W1.npy, b1.npy, W2.npy, b2.npy, gamma.npy and beta.npy from a directory (egelu::npy:
  /// float32 or float64, converted to Scalar) and makes the post-norm block from them; d_model and
  /// d_ff are W1's shape. The folder holds no settings: the GELU and epsilon are the caller's.
  /// @throws npy::format_error for a file that is missing (saying why) or not a valid .npy file.
  /// @throws std::invalid_argument naming the file and its shape for an array of the wrong shape,
  ///   and the file the expected shape comes from.
  static FeedForward load(const std::string& directory, GeluForm form = GeluForm::tanh, Scalar eps = Scalar(1e-12));

  /// The model width: the rows of the activations.
  Eigen::Index d_model() const;
  /// The hidden width of the block, W1's rows.
  Eigen::Index d_ff() const;
  /// The GELU the block applies.
  GeluForm form() const;
  /// Where the block's LayerNorm sits.
  NormPlacement norm_placement() const;
  /// LayerNorm's epsilon.
  Scalar eps() const;
  /// The precision the block holds its weights in.
  WeightFormat weight_format() const;
  /// The precision the block's products read their inputs in.
  InputFormat input_format() const;
  /// The bytes the block's packed weights take (the rest, biases and norms, is O(d_model + d_ff)).
  std::size_t weight_bytes() const;

  /// Sizes `callers` workspaces for up to `tokens` columns on up to `threads` threads, so that that
  /// many concurrent forward() calls allocate nothing.
  void reserve(Eigen::Index tokens, int callers = 1, int threads = 1) const;

  /// y = the block applied to x (both d_model x T; y may be x itself), on the calling thread.
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) const;

  /// The same on the device's threads (the calling thread works too): both products,
  /// bias + GELU, the residual and LayerNorm are split over them. The results are the
  /// same bits as forward(x, y) for any number of threads.
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice& device) const;

 private:
  struct Impl;
  explicit FeedForward(std::unique_ptr<Impl> impl);
  static FeedForward from_layer(const hf::mlp_layer& layer, WeightFormat weights, InputFormat inputs);
  std::unique_ptr<Impl> impl_;
};

extern template class FeedForward<float>;
extern template class FeedForward<double>;

}  // namespace egelu

#endif  // EGELU_FEED_FORWARD_HPP
