// The gated feed-forward block of LLaMA, Mistral, Qwen, Phi-3 (SwiGLU) and Gemma, T5 v1.1
// (GeGLU), with its pre-norm and residual:
//
//   Y = X + W_down (act(W_gate N(X)) * W_up N(X)),   N(x) = x / sqrt(mean(x^2) + eps) * weight
//
// or, with Gemma 2's and 3's norm after the MLP too, Y = X + N_post(W_down (...)). N is
// RMSNorm as LLaMA has it (Gemma's checkpoints store weight - 1: give it weight), or
// LayerNorm (ModernBERT, StableLM, Cohere: GatedNorm::layer), or none (OLMo 2, whose
// only norm is the one after the MLP).
// Tokens are the columns of a d_model x T column-major matrix -- the same bytes as
// PyTorch's row-major (T, d_model) -- and weights come in PyTorch's nn.Linear layout
// (out_features x in_features, row-major), as Hugging Face names them. The weights are
// packed once, when the block is made, in the precision asked for (f32, or bf16/f16
// widened to float in registers); the gate and up products share their tiles, so
// act(gate) * up is formed on each tile in cache.
//
// Any number of threads may call forward() on one block at once (feed_forward.hpp). Part
// of the compiled library egelu::nn; it copies its weights.
/// @file
/// The gated (SwiGLU, GeGLU) feed-forward block egelu::GatedFeedForward, of the compiled library egelu::nn.
#ifndef EGELU_GATED_FEED_FORWARD_HPP
#define EGELU_GATED_FEED_FORWARD_HPP

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

/// The norm the MLP reads the tokens through (N in GatedFeedForward's formula).
enum class GatedNorm { rms, layer, none };
/// @var GatedNorm::rms
/// RMSNorm, x / sqrt(mean(x^2) + eps) * weight (LLaMA, Mistral, Qwen, Gemma, T5).
/// @var GatedNorm::layer
/// LayerNorm, (x - mean) / sqrt(variance + eps) * weight + bias, the bias optional (ModernBERT, Cohere:
/// none; StableLM: one).
/// @var GatedNorm::none
/// None: the MLP reads the tokens as they are (OLMo 2, which normalises the MLP's output instead).

/// The gate's activation: SwiGLU (silu: LLaMA, Mistral, Qwen), GeGLU with the tanh GELU
/// (Gemma's gelu_pytorch_tanh, T5's gelu_new), GeGLU with the exact GELU, or gpt-oss's clamped SwiGLU.
enum class GatedForm { swiglu, geglu, geglu_exact, clamped_swiglu };
/// @var GatedForm::swiglu
/// SwiGLU: silu(gate) * up (swiglu_op).
/// @var GatedForm::geglu
/// GeGLU with the tanh form: gelu(gate) * up (geglu_op).
/// @var GatedForm::geglu_exact
/// GeGLU with the exact form: gelu_exact(gate) * up (geglu_exact_op).
/// @var GatedForm::clamped_swiglu
/// gpt-oss's: quick_gelu(min(gate, 7)) * (clamp(up, -7, 7) + 1) (clamped_swiglu_op).

/// The gated feed-forward block of LLaMA, Mistral, Qwen, Phi-3 (SwiGLU) and Gemma, T5 v1.1 (GeGLU).
///
/// With its pre-norm and residual: Y = X + W_down (act(W_gate N(X)) * W_up N(X)), where
/// N(x) = x / sqrt(mean(x^2) + eps) * weight is RMSNorm as LLaMA has it (Gemma's checkpoints store
/// weight - 1: give it weight; from_pretrained() does), or, as Options::norm says, LayerNorm
/// (ModernBERT, StableLM, Cohere, OLMo) or none (OLMo 2, EXAONE 4). Gemma 2 and 3, GLM-4, OLMo 2 and
/// EXAONE 4 normalise the MLP's output too: Y = X + N_post(W_down (act(W_gate N(X)) * W_up N(X))),
/// RMSNorm with a weight of its own; Granite scales it: Y = X + s W_down (...) (Options::output_scale).
///
/// Tokens are the columns of a d_model x T column-major matrix (the same bytes as PyTorch's row-major
/// (T, d_model)); weights come in PyTorch's nn.Linear layout (out_features x in_features, row-major),
/// as Hugging Face names them. The block copies its weights and packs them once, in the precision its
/// WeightFormat says; the gate and up products share their tiles, so act(gate) * up is formed on each
/// tile in cache. Threads, warm-up and allocation as FeedForward: any number of threads may call
/// forward() at once, each on a workspace of its own. Movable, not copyable.
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
  /// A norm's weight or bias.
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  /// How a block is made: the gate's activation, the norms' epsilon, the precision of its weights and
  /// of its products' inputs, and its norm. An aggregate: `{GatedForm::swiglu, 1e-5f, WeightFormat::bf16}`.
  struct Options {
    GatedForm form = GatedForm::swiglu;  ///< The gate's activation.
    Scalar eps = Scalar(1e-6);           ///< The norms' epsilon (before and after the MLP).
    WeightFormat weights = std::is_same<Scalar, double>::value ? WeightFormat::f64 : WeightFormat::f32;
    ///< The precision the block holds its weights in: f32, bf16, f16, q8_0, q4_0 or mxfp4 for float blocks, f64 for
    ///< double.
    InputFormat inputs = InputFormat::f32;
    ///< The precision the products read their inputs in: f32, or q16_0 with q8_0 or q4_0 weights (opt-in).
    GatedNorm norm = GatedNorm::rms;  ///< The norm before the MLP; the one after it is RMSNorm.
    Scalar output_scale = 1;
    ///< The MLP's output (after the norm after it, if any) times this before the residual is added, each a
    ///< rounding: Y = X + (MLP * output_scale) (Granite's residual_multiplier). Finite.
  };

  /// The block from its weights, which it copies, in Scalar precision.
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
  /// The block from its weights, which it copies (rounded to nearest even for bf16 and f16), with the
  /// activation, epsilon and weight format of `options`.
  /// @throws std::invalid_argument naming the shapes when they do not fit together, a weight format
  ///   the Scalar cannot hold, or a weight beyond the range of the 16-bit format (naming it).
  GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                   const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm, const Options& options);
  /// The block with a norm after the MLP too (Gemma 2 and 3): Y = X + N_post(W_down (...)), N_post
  /// RMSNorm with weight `post_norm` (d_model) and the same epsilon; otherwise as above.
  GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                   const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                   const Eigen::Ref<const Vector>& post_norm, const Options& options);
  /// Every form: the norm before the MLP as `options.norm` says, with weight `norm` and, for
  /// GatedNorm::layer, bias `norm_bias` (each d_model; an empty vector where the block has none:
  /// `norm` with GatedNorm::none, `norm_bias` but for a LayerNorm with a bias, `post_norm` without a
  /// norm after the MLP). ModernBERT: `{GatedForm::geglu_exact, 1e-5f}` with `norm = GatedNorm::layer`
  /// and no bias; OLMo 2: GatedNorm::none and a `post_norm`.
  /// @throws std::invalid_argument naming the shapes when they do not fit together (a vector given
  ///   where the norm has none included), and as above.
  GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                   const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                   const Eigen::Ref<const Vector>& norm_bias, const Eigen::Ref<const Vector>& post_norm,
                   const Options& options);
  /// Takes over the other block's weights and workspaces; the moved-from block may only be assigned
  /// to or destroyed.
  GatedFeedForward(GatedFeedForward&&) noexcept;
  /// Takes over the other block's weights and workspaces, as the move constructor.
  GatedFeedForward& operator=(GatedFeedForward&&) noexcept;
  /// Frees the weights and the workspaces.
  ~GatedFeedForward();

  /// Layer `layer` of a Hugging Face checkpoint: a folder with config.json and model.safetensors (or
  /// model.safetensors.index.json and its shards): LLaMA, Mistral, Qwen2, Qwen3, Phi-3 (SwiGLU), Gemma
  /// 1, 2 and 3 (GeGLU, RMSNorm weight + 1; 2 and 3 with the norm after the MLP), T5 v1.1, mT5, umT5
  /// (GeGLU), ModernBERT (the exact GeGLU after a LayerNorm), StableLM, Cohere 1 and 2 and OLMo (SwiGLU
  /// after a LayerNorm), OLMo 2 and 3 and EXAONE 4 (SwiGLU, RMSNorm after it only), Granite (its
  /// residual_multiplier as output_scale), GLM and GLM-4 (fused gate_up_proj; GLM-4 with RMSNorm after
  /// the MLP too), Ministral, SmolLM3, Seed-OSS, Hunyuan and Helium (LLaMA's MLP), and the dense layers of
  /// mixtures of experts (Granite 4's dense models, granitemoehybrid with no experts: its shared MLP, the
  /// fused input_linear split, times residual_multiplier); Cohere's layer is a parallel block (so is StableLM's with
  /// use_parallel_residual): the block computes X + MLP(N(X)), the caller adds the attention's output.
  /// The activation, epsilon and widths come
  /// from config.json; the weights keep the checkpoint's precision (BF16 stays bf16, F16 f16, F32, F64
  /// and FP8 f32; a double block holds f64). A model with several stacks (T5's encoder and decoder) needs
  /// the three-argument form; Gemma 3's language model is its default;
  /// a vision-language model's language model (LLaVA, PaliGemma, SmolVLM, Qwen2-VL, ...) is its only stack.
  /// docs/DESIGN.md, "Checkpoints", lists the names and settings read.
  /// @throws std::invalid_argument naming the file, the tensor or the value at fault (as
  ///   FeedForward::from_pretrained); a layer this block is not names the block that loads it.
  /// @throws safetensors::format_error for a malformed safetensors file, naming it and the problem.
  static GatedFeedForward from_pretrained(const std::string& path, int layer);
  /// The same, converting the weights to `weights` (rounding to nearest even), the products reading
  /// their inputs in `inputs` (q16_0 with q8_0 or q4_0 weights only).
  static GatedFeedForward from_pretrained(const std::string& path, int layer, WeightFormat weights,
                                          InputFormat inputs = InputFormat::f32);
  /// Layer `layer` of stack `stack` of a Hugging Face checkpoint with several: "encoder" or
  /// "decoder" (T5, mT5, umT5), "text" (Gemma 3's language model).
  /// @throws std::invalid_argument for a stack the model does not have (naming those it has), a
  ///   stack name on a model with one, a layer past the stack's last, and as above.
  static GatedFeedForward from_pretrained(const std::string& path, const std::string& stack, int layer);
  /// The same, converting the weights to `weights` (rounding to nearest even), the products reading
  /// their inputs in `inputs`.
  static GatedFeedForward from_pretrained(const std::string& path, const std::string& stack, int layer,
                                          WeightFormat weights, InputFormat inputs = InputFormat::f32);

  /// Reads Hugging Face's names from a directory: gate_proj.npy, up_proj.npy, down_proj.npy,
  /// norm.npy (egelu::npy: float32 or float64, converted to Scalar) and, when present, eps.npy (one
  /// number; else eps is 1e-6), and makes the block from them; d_ff and d_model are gate_proj's shape.
  /// @throws npy::format_error for a file that is missing (saying why) or not a valid .npy file.
  /// @throws std::invalid_argument naming the file and its shape for an array of the wrong shape,
  ///   and the file the expected shape comes from.
  static GatedFeedForward load(const std::string& directory, GatedForm form = GatedForm::swiglu);
  /// The same with an epsilon given, which eps.npy must not contradict.
  /// @throws std::invalid_argument when eps.npy holds another epsilon.
  static GatedFeedForward load(const std::string& directory, GatedForm form, Scalar eps);

  /// The model width: the rows of the activations.
  Eigen::Index d_model() const;
  /// The hidden width of the block, W_gate's rows.
  Eigen::Index d_ff() const;
  /// The gate's activation.
  GatedForm form() const;
  /// The norms' epsilon.
  Scalar eps() const;
  /// The norm before the MLP.
  GatedNorm norm_type() const;
  /// The factor on the MLP's output (Options::output_scale).
  Scalar output_scale() const;
  /// Whether the block normalises the MLP's output too (Gemma 2 and 3, OLMo 2).
  bool has_post_norm() const;
  /// The precision the block holds its weights in.
  WeightFormat weight_format() const;
  /// The precision the block's products read their inputs in.
  InputFormat input_format() const;
  /// The bytes the block's packed weights take (the rest, the norm, is O(d_model)).
  std::size_t weight_bytes() const;

  /// Sizes `callers` workspaces for up to `tokens` columns on up to `threads` threads, so that that
  /// many concurrent forward() calls allocate nothing.
  void reserve(Eigen::Index tokens, int callers = 1, int threads = 1) const;

  /// y = the block applied to x (both d_model x T; y may be x itself), on the calling thread.
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) const;

  /// The same on the device's threads (the calling thread works too), with the same bits
  /// for any number of threads.
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice& device) const;

 private:
  struct Impl;
  explicit GatedFeedForward(std::unique_ptr<Impl> impl);
  static GatedFeedForward from_layer(const hf::mlp_layer& layer, WeightFormat weights, InputFormat inputs);
  std::unique_ptr<Impl> impl_;
};

extern template class GatedFeedForward<float>;
extern template class GatedFeedForward<double>;

}  // namespace egelu

#endif  // EGELU_GATED_FEED_FORWARD_HPP
