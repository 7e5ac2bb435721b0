// MoeFeedForward: Y = X + (sum_j g_j Expert_j(N(X)) [+ s Shared(N(X))]) [* output_scale], in passes split into
// tasks for the device's threads (blocks/passes.hpp), the gated block's passes run per expert:
//   1. RMSNorm (LayerNorm for Phi-3.5-MoE) over the tokens, written packed as the router's input;
//   2. the router's logits, a product (E, plus the shared expert's gate, rows), from its bias (gpt-oss);
//   3. each token's routing (moe_routing.hpp); then, on the calling thread, the tokens of
//      each expert, in token order, and where each expert's columns go;
//   4. each expert's tokens packed as its input (the shared expert's: every token), times
//      their weights where the routing weighs the inputs (Llama 4: Expert_j(g_j N(X)));
//   5. every expert's first pass -- act(gate) * up, tile by tile, each product from its bias where the
//      experts have them (gpt-oss) -- as one round of tasks;
//   6. every expert's down product (from its bias) as one round, into the experts' output columns;
//   7. per token, the chosen experts' outputs times their weights (unless 4 weighed the inputs)
//      summed in the order of the experts' numbers, then the shared expert's, times the output scale, then the
//      residual.
// Each expert reads its weights once a call and only the chosen ones run; every sum is in
// an order that does not depend on the threads.
#define EIGEN_USE_THREADS
#include <algorithm>
#include <egelu/moe_feed_forward.hpp>

#include "activations/passes.hpp"
#include "blocks/checks.hpp"
#include "blocks/moe_routing.hpp"
#include "blocks/norms.hpp"
#include "blocks/passes.hpp"
#include "blocks/weights.hpp"
#include "blocks/workspace_pool.hpp"

namespace egelu {

namespace {

constexpr const char* kBlock = "egelu::MoeFeedForward";
using blocks::index;

// One call's memory. Per expert (and, last, the shared expert): its tokens, and where its
// packed input, hidden layer, packed hidden layer and output columns start.
template <typename Scalar>
struct workspace {
  blocks::growing_buffer<Scalar> normed, packed_router_in, logits, scores, packed_in, hidden, packed_hidden, scratch,
      out, shared_weight, widened;        // widened: a thread slot's widened weights (block formats)
  blocks::growing_buffer<int> chosen;     // T x k experts, a token's in increasing number
  blocks::growing_buffer<Scalar> weight;  // T x k routing weights
  blocks::growing_buffer<index> column;   // T x k: the chosen expert's output column for the token
  blocks::growing_buffer<index> routed;   // the experts' pairs t k + j (token t's choice j), expert after expert
  blocks::growing_buffer<index> starts;   // 8 (E + 2) offsets (below)
  internal::owned_task_team team;
};

// The offsets of one call, per expert e in [0, E] (E: the shared expert) and one past.
struct expert_offsets {
  index *count, *first_token, *packed_in, *hidden, *packed_hidden, *first_column, *first_task, *first_down_task;
};

}  // namespace

template <typename Scalar>
struct MoeFeedForward<Scalar>::Impl {
  blocks::weights<Scalar> router;   // E rows, and the shared expert's gate last when there is one
  std::vector<Scalar> router_bias;  // the router's logits' (gpt-oss), its rows', or empty
  std::vector<blocks::gated_weights<Scalar>> experts;
  blocks::gated_weights<Scalar> shared;  // empty rows without one
  bool shared_gated = false;
  Vector norm, norm_bias, bias;  // norm_bias: a LayerNorm's, or empty
  Options options;
  mutable blocks::workspace_pool<workspace<Scalar>> pool;

  int E() const { return int(experts.size()); }
  int k() const { return options.routing.experts_per_token; }
  bool has_shared() const { return shared.gate.packed.rows() > 0; }
  Eigen::Index d_model() const { return router.packed.depth(); }
  Eigen::Index d_ff() const { return experts.front().gate.packed.rows(); }
  Eigen::Index shared_d_ff() const { return has_shared() ? shared.gate.packed.rows() : 0; }
  int nt() const { return experts.front().gate.kernel.nt; }
  // A thread slot's scratch for a call of T tokens: the up tiles of the largest task of any
  // expert (at most a token block's width of tokens, by the widest expert's rows).
  index scratch_slot_size(index T) const {
    return std::max(d_ff(), shared_d_ff()) * std::min<index>(T, blocks::widest_token_block(nt()));
  }

  // Expert e's weights (e == E(): the shared expert's).
  const blocks::gated_weights<Scalar>& mlp(int e) const { return e < E() ? experts[std::size_t(e)] : shared; }

  // Sizes a workspace for `tokens` tokens on up to `threads` threads, for any routing: the
  // experts' packed inputs are at most T k tokens plus a panel's padding each.
  void size(workspace<Scalar>& w, index tokens, int threads) const {
    const index d = d_model(), f = d_ff(), g = shared_d_ff(), T = tokens, pairs = T * k(), nt_ = nt();
    const index routed_tokens = pairs + index(E()) * (nt_ - 1), shared_tokens = has_shared() ? T + nt_ - 1 : 0;
    w.normed.reserve(d * T);
    w.packed_router_in.reserve(blocks::token_layout(T, router.kernel.nt).packed_size(d));
    w.logits.reserve(router.packed.rows() * T);
    w.scores.reserve(2 * index(E()) * T);
    w.shared_weight.reserve(T);
    w.chosen.reserve(pairs);
    w.weight.reserve(pairs);
    w.column.reserve(pairs);
    w.routed.reserve(pairs);
    w.starts.reserve(8 * (index(E()) + 2));
    w.packed_in.reserve((routed_tokens + shared_tokens) * d);
    w.hidden.reserve(pairs * f + T * g);
    w.packed_hidden.reserve(routed_tokens * f + shared_tokens * g);
    w.out.reserve((pairs + (has_shared() ? T : 0)) * d);
    w.scratch.reserve(index(threads) * scratch_slot_size(T));
    w.widened.reserve(index(threads) * widened_size());
  }
  // A thread slot's widened weights (block formats): an expert's first pass's two
  // products' or its down product's, the largest of any expert's.
  index widened_size() const {
    const auto of = [](const blocks::gated_weights<Scalar>& m) {
      return std::max(blocks::widened_size(m.gate, 2), blocks::widened_size(m.down, 1));
    };
    return std::max(of(experts.front()), has_shared() ? of(shared) : index(0));
  }

  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice* device) const;
};

namespace {

template <typename Scalar>
using Impl_of = typename MoeFeedForward<Scalar>::Impl;

// Views of the rows [e rows, (e + 1) rows) of a stacked row-major matrix.
template <typename Scalar, typename Matrix>
gemm::matrix_view expert_view(const Matrix& m, index e, index rows) {
  gemm::matrix_view v = blocks::view_of<Scalar>(m);
  v.data = m.data() + e * rows * m.outerStride();
  v.rows = rows;
  return v;
}

}  // namespace

template <typename Scalar>
MoeFeedForward<Scalar>::MoeFeedForward(const Eigen::Ref<const Weights>& router, const Eigen::Ref<const Weights>& gates,
                                       const Eigen::Ref<const Weights>& ups, const Eigen::Ref<const Weights>& downs,
                                       const Eigen::Ref<const Vector>& norm, const Options& options)
    : MoeFeedForward(router, gates, ups, downs, norm, Vector(), Vector(), Weights(), Weights(), Weights(), Weights(),
                     options) {}

template <typename Scalar>
MoeFeedForward<Scalar>::MoeFeedForward(const Eigen::Ref<const Weights>& router, const Eigen::Ref<const Weights>& gates,
                                       const Eigen::Ref<const Weights>& ups, const Eigen::Ref<const Weights>& downs,
                                       const Eigen::Ref<const Vector>& norm,
                                       const Eigen::Ref<const Vector>& correction_bias,
                                       const Eigen::Ref<const Weights>& shared_gate,
                                       const Eigen::Ref<const Weights>& shared_up,
                                       const Eigen::Ref<const Weights>& shared_down,
                                       const Eigen::Ref<const Weights>& shared_expert_gate, const Options& options)
    : MoeFeedForward(router, gates, ups, downs, norm, Vector(), correction_bias, shared_gate, shared_up, shared_down,
                     shared_expert_gate, options) {}

template <typename Scalar>
MoeFeedForward<Scalar>::MoeFeedForward(const Eigen::Ref<const Weights>& router, const Eigen::Ref<const Weights>& gates,
                                       const Eigen::Ref<const Weights>& ups, const Eigen::Ref<const Weights>& downs,
                                       const Eigen::Ref<const Vector>& norm, const Biases& biases,
                                       const Options& options)
    : MoeFeedForward(router, gates, ups, downs, norm, options) {
  using blocks::require;
  const index E = router.rows(), f = gates.rows() / E, d = router.cols();
  const auto check = [&](const char* name, const Weights& b, index cols, const char* why) {
    require(b.rows() == 0 || (b.rows() == E && b.cols() == cols), kBlock, name, b.rows(), b.cols(), E, cols, why);
  };
  require(biases.router.size() == 0 || biases.router.size() == E, kBlock, "biases.router", biases.router.size(), 1, E,
          1, "experts, from router, or empty");
  check("biases.gates", biases.gates, f, "experts x d_ff, from gates, or empty");
  check("biases.ups", biases.ups, f, "experts x d_ff, from gates, or empty");
  check("biases.downs", biases.downs, d, "experts x d_model, from router, or empty");
  impl_->router_bias.assign(biases.router.data(), biases.router.data() + biases.router.size());
  const auto row = [](const Weights& b, index e) {
    return b.rows() ? std::vector<Scalar>(b.row(e).data(), b.row(e).data() + b.cols()) : std::vector<Scalar>();
  };
  for (index e = 0; e < E; ++e) {
    blocks::gated_weights<Scalar>& x = impl_->experts[std::size_t(e)];
    x.gate_bias = row(biases.gates, e);
    x.up_bias = row(biases.ups, e);
    x.down_bias = row(biases.downs, e);
  }
}

namespace {

// The block's parts checked against each other and the routing rule against E.
template <typename Scalar>
void check_routing(const typename MoeFeedForward<Scalar>::Routing& r, index E) {
  const auto fail = [](const std::string& why) { throw std::invalid_argument(std::string(kBlock) + ": " + why); };
  if (r.experts_per_token < 1 || r.experts_per_token > E) {
    fail("experts_per_token is " + std::to_string(r.experts_per_token) + " but must be 1 to the " + std::to_string(E) +
         " experts");
  }
  if (r.group_rank != GroupRank::none) {
    const bool ok = r.groups >= 1 && r.groups <= 256 && E % r.groups == 0 && r.groups_kept >= 1 &&
                    r.groups_kept <= r.groups && r.groups_kept * (E / r.groups) >= r.experts_per_token &&
                    (r.group_rank != GroupRank::top2_sum || E / r.groups >= 2);
    if (!ok) {
      fail(std::to_string(E) + " experts in " + std::to_string(r.groups) + " groups, " + std::to_string(r.groups_kept) +
           " kept, " + std::to_string(r.experts_per_token) +
           " experts a token: the groups (at most 256) must divide the experts, the kept groups hold at least the "
           "experts chosen, and ranking by two best needs two experts a group");
    }
  }
  if (!(r.scale > 0) || !std::isfinite(double(r.scale))) fail("the routing's scale must be positive and finite");
  if (r.score != RouterScore::softmax && r.score != RouterScore::sigmoid && r.score != RouterScore::sparsemixer) {
    fail("the routing's score is not a RouterScore (" + std::to_string(int(r.score)) + ")");
  }
  if (r.score == RouterScore::sparsemixer) {
    if (r.group_rank != GroupRank::none) fail("RouterScore::sparsemixer chooses among all experts: no groups");
    if (!(r.jitter >= 0) || !std::isfinite(double(r.jitter))) {
      fail("the routing's jitter must be finite and not negative, not " + std::to_string(double(r.jitter)));
    }
  }
}

}  // namespace

template <typename Scalar>
MoeFeedForward<Scalar>::MoeFeedForward(const Eigen::Ref<const Weights>& router, const Eigen::Ref<const Weights>& gates,
                                       const Eigen::Ref<const Weights>& ups, const Eigen::Ref<const Weights>& downs,
                                       const Eigen::Ref<const Vector>& norm, const Eigen::Ref<const Vector>& norm_bias,
                                       const Eigen::Ref<const Vector>& correction_bias,
                                       const Eigen::Ref<const Weights>& shared_gate,
                                       const Eigen::Ref<const Weights>& shared_up,
                                       const Eigen::Ref<const Weights>& shared_down,
                                       const Eigen::Ref<const Weights>& shared_expert_gate, const Options& options) {
  using blocks::require;
  const index E = router.rows(), d = router.cols();
  require(E > 0 && d > 0, kBlock, "router", E, d, std::max<index>(E, 1), std::max<index>(d, 1),
          "experts x d_model, both positive");
  require(gates.rows() % E == 0 && gates.rows() > 0 && gates.cols() == d, kBlock, "gates", gates.rows(), gates.cols(),
          E * std::max<index>(gates.rows() / E, 1), d, "experts d_ff x d_model, from router");
  const index f = gates.rows() / E;
  require(ups.rows() == E * f && ups.cols() == d, kBlock, "ups", ups.rows(), ups.cols(), E * f, d,
          "experts d_ff x d_model, from gates");
  require(downs.rows() == E * d && downs.cols() == f, kBlock, "downs", downs.rows(), downs.cols(), E * d, f,
          "experts d_model x d_ff, from gates");
  if (options.norm == GatedNorm::none) {
    throw std::invalid_argument(
        "egelu::MoeFeedForward: options.norm is GatedNorm::none: the router and the experts "
        "read the normalised tokens (GatedNorm::rms or GatedNorm::layer)");
  }
  blocks::check_norm(kBlock, options.norm, norm.size(), norm_bias.size(), d, "from router");
  require(correction_bias.size() == 0 || correction_bias.size() == E, kBlock, "correction_bias", correction_bias.size(),
          1, E, 1, "experts, from router, or empty");
  if (options.routing.score == RouterScore::sparsemixer) {
    require(correction_bias.size() == 0, kBlock, "correction_bias", correction_bias.size(), 1, 0, 1,
            "empty: RouterScore::sparsemixer reads the logits alone");
  }
  const index g = shared_gate.rows();
  require(shared_gate.rows() == 0 || shared_gate.cols() == d, kBlock, "shared_gate", shared_gate.rows(),
          shared_gate.cols(), g, d, "d_shared x d_model, or empty");
  require(shared_up.rows() == g && (g == 0 || shared_up.cols() == d), kBlock, "shared_up", shared_up.rows(),
          shared_up.cols(), g, g ? d : shared_up.cols(), "as shared_gate");
  require(shared_down.cols() == g && (g == 0 ? shared_down.rows() == 0 : shared_down.rows() == d), kBlock,
          "shared_down", shared_down.rows(), shared_down.cols(), g ? d : 0, g, "d_model x d_shared, from shared_gate");
  require(shared_expert_gate.size() == 0 || (g > 0 && shared_expert_gate.rows() == 1 && shared_expert_gate.cols() == d),
          kBlock, "shared_expert_gate", shared_expert_gate.rows(), shared_expert_gate.cols(), 1, d,
          "1 x d_model with a shared expert, or empty");
  if (!(options.eps > 0)) throw std::invalid_argument("egelu::MoeFeedForward: eps must be positive");
  blocks::check_output_scale(kBlock, options.output_scale);
  blocks::check_format<Scalar>(kBlock, options.weights);
  blocks::check_inputs(kBlock, options.weights, options.inputs);
  check_routing<Scalar>(options.routing, E);

  std::unique_ptr<Impl> impl(new Impl());
  Weights routers(E + shared_expert_gate.rows(), d);
  routers.topRows(E) = router;
  if (shared_expert_gate.rows()) routers.bottomRows(1) = shared_expert_gate;
  impl->router = blocks::pack<Scalar>(blocks::view_of<Scalar>(routers), blocks::own_format<Scalar>(), "router");
  impl->experts.reserve(std::size_t(E));
  for (index e = 0; e < E; ++e) {
    const std::string n = "expert " + std::to_string(e) + "'s ";
    impl->experts.push_back(
        {blocks::pack<Scalar>(expert_view<Scalar>(gates, e, f), options.weights, n + "gate", options.inputs),
         blocks::pack<Scalar>(expert_view<Scalar>(ups, e, f), options.weights, n + "up", options.inputs),
         blocks::pack<Scalar>(expert_view<Scalar>(downs, e, d), options.weights, n + "down", options.inputs)});
  }
  if (g) {
    const InputFormat in = options.inputs;
    impl->shared = {blocks::pack<Scalar>(blocks::view_of<Scalar>(shared_gate), options.weights, "shared_gate", in),
                    blocks::pack<Scalar>(blocks::view_of<Scalar>(shared_up), options.weights, "shared_up", in),
                    blocks::pack<Scalar>(blocks::view_of<Scalar>(shared_down), options.weights, "shared_down", in)};
  }
  impl->shared_gated = shared_expert_gate.rows() > 0;
  impl->norm = norm;
  impl->norm_bias = norm_bias;
  impl->bias = correction_bias;
  impl->options = options;
  impl_ = std::move(impl);
}

template <typename Scalar>
MoeFeedForward<Scalar>::MoeFeedForward(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
template <typename Scalar>
MoeFeedForward<Scalar>::MoeFeedForward(MoeFeedForward&&) noexcept = default;
template <typename Scalar>
MoeFeedForward<Scalar>& MoeFeedForward<Scalar>::operator=(MoeFeedForward&&) noexcept = default;
template <typename Scalar>
MoeFeedForward<Scalar>::~MoeFeedForward() = default;

template <typename Scalar>
Eigen::Index MoeFeedForward<Scalar>::d_model() const {
  return impl_->d_model();
}
template <typename Scalar>
Eigen::Index MoeFeedForward<Scalar>::d_ff() const {
  return impl_->d_ff();
}
template <typename Scalar>
Eigen::Index MoeFeedForward<Scalar>::shared_d_ff() const {
  return impl_->shared_d_ff();
}
template <typename Scalar>
Scalar MoeFeedForward<Scalar>::output_scale() const {
  return impl_->options.output_scale;
}
template <typename Scalar>
GatedNorm MoeFeedForward<Scalar>::norm_type() const {
  return impl_->options.norm;
}
template <typename Scalar>
int MoeFeedForward<Scalar>::experts() const {
  return impl_->E();
}
template <typename Scalar>
int MoeFeedForward<Scalar>::experts_per_token() const {
  return impl_->k();
}
template <typename Scalar>
const typename MoeFeedForward<Scalar>::Routing& MoeFeedForward<Scalar>::routing() const {
  return impl_->options.routing;
}
template <typename Scalar>
GatedForm MoeFeedForward<Scalar>::form() const {
  return impl_->options.form;
}
template <typename Scalar>
Scalar MoeFeedForward<Scalar>::eps() const {
  return impl_->options.eps;
}
template <typename Scalar>
WeightFormat MoeFeedForward<Scalar>::weight_format() const {
  return impl_->options.weights;
}
template <typename Scalar>
InputFormat MoeFeedForward<Scalar>::input_format() const {
  return impl_->options.inputs;
}
template <typename Scalar>
std::size_t MoeFeedForward<Scalar>::weight_bytes() const {
  std::size_t bytes = impl_->router.packed.bytes() + impl_->router_bias.size() * sizeof(Scalar) +
                      (impl_->has_shared() ? impl_->shared.bytes() : 0);
  for (const auto& e : impl_->experts) bytes += e.bytes();
  return bytes;
}

template <typename Scalar>
MoeFeedForward<Scalar> MoeFeedForward<Scalar>::from_pretrained(const std::string& path, int layer) {
  return from_layer(hf::open_mlp_layer(path, nullptr, layer, hf::block_kind::moe), blocks::checkpoint_format,
                    InputFormat::f32);
}

template <typename Scalar>
MoeFeedForward<Scalar> MoeFeedForward<Scalar>::from_pretrained(const std::string& path, int layer, WeightFormat weights,
                                                               InputFormat inputs) {
  blocks::check_inputs(kBlock, weights, inputs);
  return from_layer(hf::open_mlp_layer(path, nullptr, layer, hf::block_kind::moe), weights, inputs);
}

template <typename Scalar>
MoeFeedForward<Scalar> MoeFeedForward<Scalar>::from_pretrained(const std::string& path, const std::string& stack,
                                                               int layer) {
  return from_layer(hf::open_mlp_layer(path, &stack, layer, hf::block_kind::moe), blocks::checkpoint_format,
                    InputFormat::f32);
}

template <typename Scalar>
MoeFeedForward<Scalar> MoeFeedForward<Scalar>::from_pretrained(const std::string& path, const std::string& stack,
                                                               int layer, WeightFormat weights, InputFormat inputs) {
  blocks::check_inputs(kBlock, weights, inputs);
  return from_layer(hf::open_mlp_layer(path, &stack, layer, hf::block_kind::moe), weights, inputs);
}

template <typename Scalar>
MoeFeedForward<Scalar> MoeFeedForward<Scalar>::from_layer(const hf::mlp_layer& m, WeightFormat weights,
                                                          InputFormat inputs) {
  Options o;
  o.inputs = inputs;
  o.form = blocks::gated_form(m.act);
  o.eps = Scalar(m.eps);
  o.weights = weights == blocks::checkpoint_format ? blocks::kept_format<Scalar>(m.experts.front().gate) : weights;
  blocks::check_format<Scalar>(kBlock, o.weights);
  const hf::routing& r = m.route;
  o.routing.experts_per_token = int(r.per_token);
  o.routing.score = r.score == hf::router_score::softmax   ? RouterScore::softmax
                    : r.score == hf::router_score::sigmoid ? RouterScore::sigmoid
                                                           : RouterScore::sparsemixer;
  o.routing.jitter = Scalar(r.jitter);
  o.routing.weigh_input = r.weigh_input;
  o.output_scale = blocks::output_scale_of<Scalar>(m);
  o.norm = m.gated_norm;
  o.routing.normalize = r.normalize;
  o.routing.scale = Scalar(r.scale);
  o.routing.groups = int(r.groups);
  o.routing.groups_kept = int(r.groups_kept);
  o.routing.group_rank = r.rank == hf::group_rank::none   ? GroupRank::none
                         : r.rank == hf::group_rank::best ? GroupRank::best
                                                          : GroupRank::top2_sum;
  check_routing<Scalar>(o.routing, index(r.experts));

  std::unique_ptr<Impl> impl(new Impl());
  // The router (and the shared expert's gate) in Scalar, whatever the checkpoint's dtypes.
  const index E = index(r.experts), d = index(m.d_model);
  Weights routers(E + (m.shared_gate ? 1 : 0), d);
  m.router.tensor->copy_to(routers.data());
  if (m.shared_gate) m.shared_gate.tensor->copy_to(routers.data() + E * d);
  impl->router = blocks::pack<Scalar>(blocks::view_of<Scalar>(routers), blocks::own_format<Scalar>(),
                                      blocks::tensor_name(m.router));
  impl->experts.reserve(m.experts.size());
  for (const hf::expert_ref& e : m.experts) {
    impl->experts.push_back({blocks::pack<Scalar>(e.gate.matrix(), o.weights, blocks::tensor_name(e.gate), inputs),
                             blocks::pack<Scalar>(e.up.matrix(), o.weights, blocks::tensor_name(e.up), inputs),
                             blocks::pack<Scalar>(e.down.matrix(), o.weights, blocks::tensor_name(e.down), inputs)});
    if (e.gate_bias) {
      blocks::gated_weights<Scalar>& x = impl->experts.back();
      x.gate_bias = blocks::column_of<Scalar>(e.gate_bias);
      x.up_bias = blocks::column_of<Scalar>(e.up_bias);
      x.down_bias = blocks::column_of<Scalar>(e.down_bias);
    }
  }
  if (m.gate) {
    impl->shared = {blocks::pack<Scalar>(m.gate.matrix(), o.weights, blocks::tensor_name(m.gate), inputs),
                    blocks::pack<Scalar>(m.up.matrix(), o.weights, blocks::tensor_name(m.up), inputs),
                    blocks::pack<Scalar>(m.down.matrix(), o.weights, blocks::tensor_name(m.down), inputs)};
  }
  impl->shared_gated = bool(m.shared_gate);
  if (m.router_bias) {
    const Vector b = blocks::vector_of<Vector>(m.router_bias);
    impl->router_bias.assign(b.data(), b.data() + b.size());
    impl->router_bias.resize(std::size_t(routers.rows()), Scalar(0));  // (the shared expert's gate: none)
  }
  impl->norm = blocks::norm_of<Vector>(m.norm_weight, m.plus_one);
  if (m.norm_bias) impl->norm_bias = blocks::vector_of<Vector>(m.norm_bias);
  if (m.correction_bias) impl->bias = blocks::vector_of<Vector>(m.correction_bias);
  impl->options = o;
  return MoeFeedForward(std::move(impl));
}

template <typename Scalar>
void MoeFeedForward<Scalar>::reserve(Eigen::Index tokens, int callers, int threads) const {
  impl_->pool.prepare(callers, [&](workspace<Scalar>& w) { impl_->size(w, tokens, std::max(threads, 1)); });
}

template <typename Scalar>
void MoeFeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) const {
  impl_->forward(x, y, nullptr);
}

template <typename Scalar>
void MoeFeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                     const Eigen::ThreadPoolDevice& device) const {
  impl_->forward(x, y, &device);
}

template <typename Scalar>
void MoeFeedForward<Scalar>::Impl::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                           const Eigen::ThreadPoolDevice* device) const {
  blocks::check_tokens(kBlock, x, y, d_model());
  const index T = x.cols(), d = d_model(), K = k();
  const int experts_n = E(), last = has_shared() ? experts_n : experts_n - 1;  // the shared expert is number E
  if (T == 0) return;
  const auto lease = pool.acquire();
  workspace<Scalar>& w = *lease;
  // The largest product: an expert's (every token routed to it) or the router's.
  const blocks::task_runner runner(
      device, *w.team, double(d) * double(std::max({d_ff(), shared_d_ff(), router.packed.rows()})) * double(T));
  const int threads = runner.threads();
  size(w, T, threads);
  Eigen::Map<Matrix> n(w.normed.data(), d, T);

  // 1. N(x), written packed as the router's input.
  const blocks::token_layout all(T, router.kernel.nt);
  blocks::over_tokens(runner, T, [&](index first, index end) {
    blocks::norm_before(options.norm, x, n, first, end, norm, norm_bias, options.eps);
    for (index t = first; t < end; ++t)
      blocks::pack_column(router.packed, all, &n(0, t), 0, d, t, w.packed_router_in.data());
  });

  // 2. The router's logits (E rows, and the shared expert's gate).
  const index R = router.packed.rows();
  Eigen::Map<Matrix> logits(w.logits.data(), R, T);
  const auto no_finish = [](index, index, index, index) {};
  blocks::product(runner, router, all, w.packed_router_in.data(), blocks::bias_init(router_bias), logits,
                  w.widened.data(), no_finish);

  // 3. Each token's experts and weights; the shared expert's weight.
  int* chosen = w.chosen.data();
  Scalar* weight = w.weight.data();
  blocks::over_tokens(runner, T, [&](index first, index end) {
    for (index t = first; t < end; ++t) {
      Scalar* scratch = w.scores.data() + 2 * experts_n * t;
      blocks::route_token<Scalar>(&logits(0, t), experts_n, bias.size() ? bias.data() : nullptr, options.routing,
                                  scratch, scratch + experts_n, chosen + t * K, weight + t * K);
      if (has_shared()) {
        w.shared_weight.data()[t] = shared_gated ? Scalar(blocks::sigmoid_of(double(logits(experts_n, t)))) : Scalar(1);
      }
    }
  });
  // The experts' tokens in token order, and where each expert's data go.
  const index slots = index(experts_n) + 2;
  index* s = w.starts.data();
  const expert_offsets at{
      s, s + slots, s + 2 * slots, s + 3 * slots, s + 4 * slots, s + 5 * slots, s + 6 * slots, s + 7 * slots};
  std::fill(at.count, at.count + slots, 0);
  for (index p = 0; p < T * K; ++p) ++at.count[chosen[p]];
  at.count[experts_n] = has_shared() ? T : 0;
  const int nt_ = nt();
  const auto mlp_d_ff = [&](int e) { return e < experts_n ? d_ff() : shared_d_ff(); };
  at.first_token[0] = at.packed_in[0] = at.hidden[0] = at.packed_hidden[0] = at.first_column[0] = 0;
  for (int e = 0; e <= experts_n; ++e) {
    const blocks::token_layout layout(at.count[e], nt_);
    at.first_token[e + 1] = at.first_token[e] + (e < experts_n ? at.count[e] : 0);
    at.packed_in[e + 1] = at.packed_in[e] + layout.packed_size(d);
    at.hidden[e + 1] = at.hidden[e] + at.count[e] * mlp_d_ff(e);
    at.packed_hidden[e + 1] = at.packed_hidden[e] + layout.packed_size(mlp_d_ff(e));
    at.first_column[e + 1] = at.first_column[e] + at.count[e];
  }
  {
    index* filled = at.first_task;  // scratch until the task counts below
    std::copy(at.first_token, at.first_token + experts_n, filled);
    for (index t = 0; t < T; ++t) {
      for (index j = 0; j < K; ++j) {
        const int e = chosen[t * K + j];
        const index position = filled[e]++;
        w.routed.data()[position] = t * K + j;
        w.column.data()[t * K + j] = at.first_column[e] + position - at.first_token[e];
      }
    }
  }
  // The rounds' tasks: each expert with tokens, its grid's.
  at.first_task[0] = at.first_down_task[0] = 0;
  for (int e = 0; e <= experts_n; ++e) {
    const bool runs = at.count[e] > 0;
    const blocks::token_layout layout(std::max<index>(at.count[e], 1), nt_);
    at.first_task[e + 1] =
        at.first_task[e] + (runs ? blocks::task_grid(mlp(e).gate.packed, layout, runner).tasks() : 0);
    at.first_down_task[e + 1] =
        at.first_down_task[e] + (runs ? blocks::task_grid(mlp(e).down.packed, layout, runner).tasks() : 0);
  }
  // The expert of task k of a round whose first tasks are `first`.
  const auto expert_of = [&](const index* first, index k) {
    return int(std::upper_bound(first, first + last + 2, k) - first) - 1;
  };

  // 4. Each expert's tokens packed as its input (times their weights with Routing::weigh_input).
  const index pairs = at.first_token[experts_n], packed_pairs = pairs + at.count[experts_n];
  // (A few tokens are packed by the calling thread: a round of tasks would cost more.)
  const int pack_parts =
      packed_pairs * d < (index(1) << 16) ? 1 : int(std::min<index>(packed_pairs, 2 * index(threads)));
  runner.run(pack_parts, [&](int part, int) {
    for (index p = blocks::part_begin(packed_pairs, pack_parts, part);
         p < blocks::part_begin(packed_pairs, pack_parts, part + 1); ++p) {
      const int e = p < pairs
                        ? int(std::upper_bound(at.first_token, at.first_token + experts_n + 1, p) - at.first_token) - 1
                        : experts_n;
      const index i = p < pairs ? p - at.first_token[e] : p - pairs, pair = p < pairs ? w.routed.data()[p] : -1,
                  t = p < pairs ? pair / K : i;
      const Scalar factor = pair >= 0 && options.routing.weigh_input ? weight[pair] : Scalar(1);
      const blocks::token_layout layout(at.count[e], nt_);
      blocks::pack_column(mlp(e).gate.packed, layout, &n(0, t), 0, d, i, w.packed_in.data() + at.packed_in[e], factor);
    }
  });

  // With q16_0 inputs (Q8_0 / Q4_0 experts), each expert's packed input quantized in place,
  // a task an expert (gemm/quantized_inputs.hpp); the same for the hidden layers after 5.
  const bool integer_inputs = mlp(0).gate.quantize_inputs != nullptr;
  const auto quantize_experts = [&](bool hidden) {
    runner.run(last + 1, [&](int e, int) {
      if (at.count[e] == 0) return;
      const blocks::token_layout layout(at.count[e], nt_);
      if (hidden) {
        blocks::quantize_whole_input(mlp(e).down, layout, w.packed_hidden.data() + at.packed_hidden[e]);
      } else {
        blocks::quantize_whole_input(mlp(e).gate, layout, w.packed_in.data() + at.packed_in[e]);
      }
    });
  };
  if (integer_inputs) quantize_experts(false);

  // 5. Every expert's act(gate) * up, one round of tasks.
  const auto gated = blocks::passes_of<Scalar>(blocks::selected_activations()).gated[int(options.form)];
  const index slot_size = scratch_slot_size(T);
  runner.run(int(at.first_task[last + 1]), [&](int k, int slot) {
    const int e = expert_of(at.first_task, k);
    const blocks::gated_weights<Scalar>& m = mlp(e);
    const blocks::token_layout layout(at.count[e], nt_);
    const blocks::task_grid grid(m.gate.packed, layout, runner);
    blocks::gated_tiles(m, layout, w.packed_in.data() + at.packed_in[e], w.hidden.data() + at.hidden[e], mlp_d_ff(e),
                        w.scratch.data() + slot * slot_size, w.widened.data() + slot * widened_size(), gated,
                        w.packed_hidden.data() + at.packed_hidden[e], grid.task(int(k - at.first_task[e])));
  });

  if (integer_inputs) quantize_experts(true);

  // 6. Every expert's down product, one round, into its output columns.
  Eigen::Map<Matrix> out(w.out.data(), d, at.first_column[experts_n + 1]);
  runner.run(int(at.first_down_task[last + 1]), [&](int k, int slot) {
    const int e = expert_of(at.first_down_task, k);
    const blocks::gated_weights<Scalar>& m = mlp(e);
    const blocks::token_layout layout(at.count[e], nt_);
    const blocks::task_grid grid(m.down.packed, layout, runner);
    blocks::product_tiles(m.down, layout, w.packed_hidden.data() + at.packed_hidden[e], blocks::bias_init(m.down_bias),
                          blocks::matrix_ref<Scalar>{&out(0, at.first_column[e]), d}, no_finish,
                          w.widened.data() + slot * widened_size(), grid.task(int(k - at.first_down_task[e])));
  });

  // 7. y = x + (sum of g_j Expert_j in the experts' order, then the shared expert) * output_scale,
  // a product and a sum each rounded (the library is compiled without contractions; the factor, 1
  // but for Granite, rounds nothing when it is 1). Inputs weighed in 4 are summed unweighted.
  const Scalar scale = options.output_scale;
  const bool weigh_output = !options.routing.weigh_input;
  blocks::over_tokens(runner, T, [&](index first, index end) {
    for (index t = first; t < end; ++t) {
      auto sum = n.col(t);  // the token's normalised input is no longer read
      sum.setZero();
      for (index j = 0; j < K; ++j) {
        if (weigh_output) {
          sum += out.col(w.column.data()[t * K + j]) * weight[t * K + j];
        } else {
          sum += out.col(w.column.data()[t * K + j]);
        }
      }
      if (has_shared()) sum += out.col(at.first_column[experts_n] + t) * w.shared_weight.data()[t];
      y.col(t) = x.col(t) + sum * scale;
    }
  });
}

template class MoeFeedForward<float>;
template class MoeFeedForward<double>;

}  // namespace egelu
