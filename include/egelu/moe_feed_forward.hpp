// The mixture-of-experts feed-forward block of Mixtral, Qwen2/3-MoE, OLMoE, DeepSeek-V2/V3,
// Phi-3.5-MoE and Granite: a router picks k of E gated MLPs (experts) for each token and sums their
// outputs, weighted, with the layer's RMSNorm (Phi-3.5-MoE: LayerNorm) before and its residual after:
//
//   Y = X + sum_{j in top-k(N(X))} g_j Expert_j(N(X)) [+ s(N(X)) Shared(N(X))]
//   Expert_j(n) = W_down,j (act(W_gate,j n) * W_up,j n)
//
// The routing is Transformers' for each family (MoeFeedForward::Routing): softmax or sigmoid
// scores over the experts, top-k, optionally among the best groups of experts, the weights
// renormalised and scaled; or Phi-3.5-MoE's sparsemixer. A call groups its tokens by expert, so that each chosen
// expert's weights are read once and its tokens packed into the micro-kernels' panels; at one token only the chosen
// experts' weights are read. Part of the compiled library egelu::nn.
/// @file
/// The mixture-of-experts feed-forward block egelu::MoeFeedForward, of the compiled library egelu::nn.
#ifndef EGELU_MOE_FEED_FORWARD_HPP
#define EGELU_MOE_FEED_FORWARD_HPP

#include <cstddef>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/internal/nn_api.hpp>
#include <egelu/weight_format.hpp>
#include <memory>
#include <string>
#include <type_traits>

namespace egelu {

/// How a mixture of experts scores its experts for a token, from the router's logits.
enum class RouterScore { softmax, sigmoid, sparsemixer };
/// @var RouterScore::softmax
/// softmax over all E logits (Mixtral, Qwen-MoE, OLMoE, DeepSeek-V2).
/// @var RouterScore::sigmoid
/// sigmoid of each logit (DeepSeek-V3, Llama 4). Without a correction bias or groups the top k are
/// those of the logits themselves, as Llama 4's router takes them: the same experts as the scores'
/// but where two sigmoids round to the same value, as they do to 1 above a logit of about 17 in float.
/// @var RouterScore::sparsemixer
/// Phi-3.5-MoE's sparsemixer, as Transformers runs it at inference: the experts are chosen one at a
/// time, each the best logit l_b left; its weight is the softmax, at b, over the logits left that lie
/// within a relative 2 Routing::jitter of it, (l_b - l_j) / max(|l_j|, l_b) <= 2 jitter. No groups,
/// no correction bias; `normalize` and `scale` apply after, as for the others (Phi-3.5-MoE: neither).

/// How group-limited routing ranks a group of experts (DeepSeek): the experts are cut into groups
/// of E / groups, the best `groups_kept` groups are kept, and the top k are chosen among their experts
/// (the others' scores read 0, as Transformers masks them).
enum class GroupRank { none, best, top2_sum };
/// @var GroupRank::none
/// No groups: the top k of all experts.
/// @var GroupRank::best
/// A group ranks by its best score (DeepSeek-V2's group_limited_greedy).
/// @var GroupRank::top2_sum
/// A group ranks by the sum of its two best biased scores (DeepSeek-V3's noaux_tc).

/// The mixture-of-experts feed-forward block: Y = X + sum over the top k experts of g_j Expert_j(N(X)),
/// plus a shared expert for every token where the model has one (Llama 4 weighs the experts' inputs
/// instead: Expert_j(g_j N(X)), Routing::weigh_input). gpt-oss's router and experts have biases, each
/// product starting from its own (MoeFeedForward::Biases).
///
/// N is RMSNorm as LLaMA has it, or LayerNorm (Phi-3.5-MoE, Options::norm); each expert is a gated MLP, W_down
/// (act(W_gate n) * W_up n), with the activation of Options::form. The router is a E x d_model weight; its logits, the
/// scores, the choice and the weights are computed in float as Transformers computes them (MoeFeedForward::Routing),
/// then the chosen experts' outputs are summed in float in the order of the experts' numbers, then the shared expert's,
/// then the residual: the same order for every number of threads. Ties between equal scores go to the expert (or group)
/// with the lower number.
///
/// A call groups its tokens by expert: each expert the router chose runs once, on the tokens routed to
/// it, packed into the micro-kernels' panels, so its weights are read once a call; at one token only
/// the k chosen experts' weights are read. Threads, warm-up and allocation as GatedFeedForward: any
/// number of threads may call forward() at once; after reserve() (or as many calls of as many tokens
/// and threads) forward() allocates nothing, whatever the routing. Movable, not copyable.
///
/// Part of the compiled library egelu::nn (`#include <egelu/moe_feed_forward.hpp>`).
/// @tparam Scalar float or double, the two the library is compiled for.
template <typename Scalar>
class EGELU_NN_API MoeFeedForward {
 public:
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "MoeFeedForward is compiled for float and double");
  /// Activations: d_model x T, column-major, one token per column.
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  /// A weight: out_features x in_features, row-major (PyTorch's nn.Linear layout); the experts'
  /// weights stacked, expert e's rows after expert e - 1's.
  using Weights = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  /// The norm's weight (and a LayerNorm's bias), or the router's correction bias.
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  /// How the router picks and weighs a token's experts: scores from the logits (softmax or sigmoid);
  /// the choice, on the scores plus the correction bias when the block has one (sigmoid scores with
  /// neither bias nor groups: on the logits, RouterScore::sigmoid), of the top
  /// `experts_per_token`, among the best `groups_kept` of `groups` groups when `group_rank` is not none;
  /// the chosen experts' unbiased scores as weights (or, with RouterScore::sparsemixer, its choice and
  /// weights, from the logits and `jitter`), divided by their sum when `normalize` (plus 1e-20 with
  /// sigmoid scores, as DeepSeek-V3), then multiplied by `scale`. Each weight multiplies its expert's
  /// output, or, with `weigh_input`, its input: Expert_j(g_j N(x)), summed unweighted (Llama 4).
  struct Routing {
    int experts_per_token = 2;                 ///< k, the experts a token runs through.
    RouterScore score = RouterScore::softmax;  ///< The scores.
    bool normalize = true;                     ///< Divide the k weights by their sum.
    Scalar scale = Scalar(1);                  ///< Then multiply them by this (routed_scaling_factor).
    int groups = 1;                            ///< Groups of experts (n_group).
    int groups_kept = 1;                       ///< The groups the choice is made in (topk_group).
    GroupRank group_rank = GroupRank::none;    ///< How a group ranks; none: no groups.
    Scalar jitter = Scalar(0.01);              ///< sparsemixer's threshold (router_jitter_noise).
    bool weigh_input = false;                  ///< Weigh each expert's input, not its output (Llama 4).
  };

  /// How a block is made: the experts' activation, the norm's epsilon, the precision of the experts'
  /// weights and the routing.
  struct Options {
    GatedForm form = GatedForm::swiglu;  ///< The experts' (and the shared expert's) activation.
    Scalar eps = Scalar(1e-6);           ///< The norm's epsilon.
    WeightFormat weights = std::is_same<Scalar, double>::value ? WeightFormat::f64 : WeightFormat::f32;
    ///< The precision the experts' weights are held in (the router is held in Scalar).
    Routing routing;  ///< The routing rule.
    InputFormat inputs = InputFormat::f32;
    ///< The precision the experts' products read their inputs in: f32, or q16_0 with q8_0 or q4_0 weights
    ///< (opt-in; the router reads floats).
    Scalar output_scale = 1;
    ///< The MLP's output (the routed experts' sum plus the shared expert's) times this before the residual
    ///< is added, each a rounding: Y = X + (MLP * output_scale) (Granite's residual_multiplier). Finite.
    GatedNorm norm = GatedNorm::rms;
    ///< The norm before the router and the experts: RMSNorm, or LayerNorm (its bias optional: the
    ///< constructor's `norm_bias`; Phi-3.5-MoE's, with its eps). GatedNorm::none is refused.
  };

  /// The biases the products start from (gpt-oss's), each empty (no rows) for none: the router's
  /// logits' and, per expert, its gate's, up's and down's.
  struct Biases {
    Vector router;  ///< The router's, E: the logits are router N(x) + this.
    Weights gates;  ///< The experts' W_gate biases, E x d_ff: expert e's in row e.
    Weights ups;    ///< The experts' W_up biases, E x d_ff.
    Weights downs;  ///< The experts' W_down biases, E x d_model: added before the routing weight multiplies.
  };

  /// The block from its weights, which it copies.
  /// @param router the router's weight, E x d_model.
  /// @param gates the experts' W_gate stacked: (E d_ff) x d_model, expert e's rows [e d_ff, (e + 1) d_ff).
  /// @param ups the experts' W_up stacked, as gates.
  /// @param downs the experts' W_down stacked: (E d_model) x d_ff.
  /// @param norm the norm's weight (RMSNorm's, or LayerNorm's: Options::norm), d_model.
  /// @param options the activation, epsilon, weight format and routing.
  /// @throws std::invalid_argument naming the shapes when they do not fit together, and a routing that
  ///   cannot be made (k > E, groups that do not divide E or hold fewer than k experts, a sparsemixer with
  ///   groups or a correction bias, a negative or non-finite jitter, a score or norm outside its enum,
  ///   GatedNorm::none, a non-finite output_scale).
  MoeFeedForward(const Eigen::Ref<const Weights>& router, const Eigen::Ref<const Weights>& gates,
                 const Eigen::Ref<const Weights>& ups, const Eigen::Ref<const Weights>& downs,
                 const Eigen::Ref<const Vector>& norm, const Options& options);
  /// The block with the parts some families add; an empty (0-row) argument leaves the part out.
  /// @param router, gates, ups, downs, norm, options as in the constructor above.
  /// @param correction_bias added to the scores to choose the experts, not to weigh them (DeepSeek-V3's
  ///   e_score_correction_bias), E.
  /// @param shared_gate, shared_up, shared_down a shared expert, run for every token and added after the
  ///   routed ones: d_shared x d_model, d_shared x d_model, d_model x d_shared.
  /// @param shared_expert_gate the shared expert's own gate (Qwen2-MoE), 1 x d_model: its output is
  ///   multiplied by sigmoid(shared_expert_gate N(x)); empty: by 1 (DeepSeek).
  MoeFeedForward(const Eigen::Ref<const Weights>& router, const Eigen::Ref<const Weights>& gates,
                 const Eigen::Ref<const Weights>& ups, const Eigen::Ref<const Weights>& downs,
                 const Eigen::Ref<const Vector>& norm, const Eigen::Ref<const Vector>& correction_bias,
                 const Eigen::Ref<const Weights>& shared_gate, const Eigen::Ref<const Weights>& shared_up,
                 const Eigen::Ref<const Weights>& shared_down, const Eigen::Ref<const Weights>& shared_expert_gate,
                 const Options& options);
  /// The block with biases (gpt-oss: `{GatedForm::clamped_swiglu, 1e-5f}`, the routing's softmax of the
  /// top-k logits being Mixtral's renormalised top k): as the first constructor, each product starting
  /// from its bias in `biases`.
  /// @throws std::invalid_argument as the first constructor, and naming a bias whose shape does not fit.
  MoeFeedForward(const Eigen::Ref<const Weights>& router, const Eigen::Ref<const Weights>& gates,
                 const Eigen::Ref<const Weights>& ups, const Eigen::Ref<const Weights>& downs,
                 const Eigen::Ref<const Vector>& norm, const Biases& biases, const Options& options);
  /// Every part: as above, with the LayerNorm's bias `norm_bias` (d_model; empty for none, and for
  /// RMSNorm) when Options::norm is GatedNorm::layer (Phi-3.5-MoE: `norm` and `norm_bias` its
  /// post_attention_layernorm's weight and bias, RouterScore::sparsemixer, no renormalisation).
  MoeFeedForward(const Eigen::Ref<const Weights>& router, const Eigen::Ref<const Weights>& gates,
                 const Eigen::Ref<const Weights>& ups, const Eigen::Ref<const Weights>& downs,
                 const Eigen::Ref<const Vector>& norm, const Eigen::Ref<const Vector>& norm_bias,
                 const Eigen::Ref<const Vector>& correction_bias, const Eigen::Ref<const Weights>& shared_gate,
                 const Eigen::Ref<const Weights>& shared_up, const Eigen::Ref<const Weights>& shared_down,
                 const Eigen::Ref<const Weights>& shared_expert_gate, const Options& options);
  /// Takes over the other block's weights and workspaces; the moved-from block may only be assigned
  /// to or destroyed.
  MoeFeedForward(MoeFeedForward&&) noexcept;
  /// Takes over the other block's weights and workspaces, as the move constructor.
  MoeFeedForward& operator=(MoeFeedForward&&) noexcept;
  /// Frees the weights and the workspaces.
  ~MoeFeedForward();

  /// The mixture of experts of layer `layer` of a Hugging Face checkpoint (config.json and
  /// model.safetensors or its shards): Mixtral, Qwen2-MoE (with its shared expert), Qwen3-MoE, OLMoE,
  /// DeepSeek-V2 (greedy or group-limited), DeepSeek-V3 (noaux_tc), Phi-3.5-MoE (phimoe: a LayerNorm,
  /// the sparsemixer), Granite's (granitemoe,
  /// granitemoeshared, granitemoehybrid: experts stacked, the shared MLP's gate and up fused, the output
  /// times residual_multiplier, Options::output_scale), Llama 4 (llama4, llama4_text), Jamba, DBRX and
  /// gpt-oss (gpt_oss: biases, GatedForm::clamped_swiglu, MXFP4 experts as released). The routing, activation,
  /// epsilon and widths come from config.json (Transformers' defaults where it leaves a key out); the
  /// experts are read per expert as released on the Hub, or stacked in 3-D tensors as Transformers 5's
  /// first releases saved them; the weights keep the checkpoint's precision (FP8 ones, each code times
  /// its block's scale, in f32; MXFP4 ones as MXFP4, WeightFormat::mxfp4, exactly), the
  /// router, its bias and the correction bias are held in Scalar. docs/DESIGN.md,
  /// "Checkpoints" and "Mixtures of experts".
  /// @throws std::invalid_argument naming the file, tensor or config key at fault; a dense layer of a
  ///   mixture-of-experts model names egelu::GatedFeedForward, whose from_pretrained loads it; a
  ///   quantization_config other than FP8 with a scale per block or gpt-oss's MXFP4 is refused by its
  ///   quant_method.
  /// @throws safetensors::format_error for a malformed safetensors file or a tensor of a dtype egelu
  ///   does not read (I8, F8_E5M2, ...), naming it.
  static MoeFeedForward from_pretrained(const std::string& path, int layer);
  /// The same, converting the experts' weights to `weights` (rounding to nearest even), their products
  /// reading their inputs in `inputs` (q16_0 with q8_0 or q4_0 weights only).
  static MoeFeedForward from_pretrained(const std::string& path, int layer, WeightFormat weights,
                                        InputFormat inputs = InputFormat::f32);
  /// The forms with a stack, as the other blocks have them: the mixtures of experts egelu reads have
  /// one stack, so a stack name is an error saying so.
  static MoeFeedForward from_pretrained(const std::string& path, const std::string& stack, int layer);
  /// The same, converting the experts' weights to `weights`, their products reading their inputs in
  /// `inputs`.
  static MoeFeedForward from_pretrained(const std::string& path, const std::string& stack, int layer,
                                        WeightFormat weights, InputFormat inputs = InputFormat::f32);

  /// The model width: the rows of the activations.
  Eigen::Index d_model() const;
  /// An expert's hidden width.
  Eigen::Index d_ff() const;
  /// The shared expert's hidden width, 0 without one.
  Eigen::Index shared_d_ff() const;
  /// The factor on the MLP's output (Options::output_scale).
  Scalar output_scale() const;
  /// The norm before the router and the experts (Options::norm).
  GatedNorm norm_type() const;
  /// The routed experts, E (a shared expert not counted).
  int experts() const;
  /// The experts a token runs through, k.
  int experts_per_token() const;
  /// The routing rule.
  const Routing& routing() const;
  /// The experts' activation.
  GatedForm form() const;
  /// The norm's epsilon.
  Scalar eps() const;
  /// The precision the experts' weights are held in.
  WeightFormat weight_format() const;
  /// The precision the experts' products read their inputs in.
  InputFormat input_format() const;
  /// The bytes the block's packed weights take: every expert's, the shared expert's and the router's.
  std::size_t weight_bytes() const;

  /// Sizes `callers` workspaces for up to `tokens` columns on up to `threads` threads, for any routing,
  /// so that that many concurrent forward() calls allocate nothing.
  void reserve(Eigen::Index tokens, int callers = 1, int threads = 1) const;

  /// y = the block applied to x (both d_model x T; y may be x itself), on the calling thread.
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) const;

  /// The same on the device's threads (the calling thread works too), with the same bits for any
  /// number of threads.
  /// @throws std::invalid_argument naming the shapes when they are wrong.
  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice& device) const;

 private:
  struct Impl;
  explicit MoeFeedForward(std::unique_ptr<Impl> impl);
  static MoeFeedForward from_layer(const hf::mlp_layer& layer, WeightFormat weights, InputFormat inputs);
  std::unique_ptr<Impl> impl_;
};

extern template class MoeFeedForward<float>;
extern template class MoeFeedForward<double>;

}  // namespace egelu

#endif  // EGELU_MOE_FEED_FORWARD_HPP
