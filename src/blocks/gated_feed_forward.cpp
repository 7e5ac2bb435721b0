// GatedFeedForward: Y = X + W_down (act(W_gate N(X)) * W_up N(X)), in passes split into
// tasks for the device's threads (blocks/passes.hpp): the norm (RMSNorm, LayerNorm or
// none) over the tokens; the gate and up products together, tile by tile -- the gate's
// tile into the hidden layer, the up's into the task's scratch -- so act(gate) * up is
// formed while both are in cache; and the down product, its tiles starting from the
// residual. With a norm after the MLP (Gemma 2 and 3, GLM-4, OLMo 2) or a factor on its
// output (Granite) the down product's tiles start from zero, and a last pass over the
// tokens adds the normalised or scaled MLP output to the residual.
#define EIGEN_USE_THREADS
#include <cmath>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/npy.hpp>
#include <fstream>

#include "activations/passes.hpp"
#include "blocks/checks.hpp"
#include "blocks/norms.hpp"
#include "blocks/pass_timing.hpp"
#include "blocks/passes.hpp"
#include "blocks/weights.hpp"
#include "blocks/workspace_pool.hpp"

namespace egelu {

namespace {

constexpr const char* kBlock = "egelu::GatedFeedForward";

// The passes are indexed by the form's value (activations/passes.hpp).
static_assert(int(GatedForm::swiglu) == 0 && int(GatedForm::geglu) == 1 && int(GatedForm::geglu_exact) == 2 &&
                  int(GatedForm::clamped_swiglu) == 3,
              "activation_passes::gated lists the forms in GatedForm's order");

// One call's memory: the normalised tokens (and, with a post-norm or a factor, the MLP's output),
// the hidden layer (the gate's tiles), each product's packed input, the up product's
// tiles and the widened weights of block formats (one of each a thread slot), and the
// call's task team.
template <typename Scalar>
struct workspace {
  blocks::growing_buffer<Scalar> normed, hidden, packed_in, packed_hidden, scratch, widened;
  internal::owned_task_team team;
};

}  // namespace

template <typename Scalar>
struct GatedFeedForward<Scalar>::Impl {
  blocks::gated_weights<Scalar> mlp;
  Vector norm, norm_bias, post_norm;  // norm: empty with GatedNorm::none; the others: empty without one
  Options options;
  mutable blocks::workspace_pool<workspace<Scalar>> pool;

  Impl(const gemm::matrix_view& gate_, const gemm::matrix_view& up_, const gemm::matrix_view& down_,
       const std::string (&names)[3], Vector norm_, Vector norm_bias_, Vector post_norm_, const Options& o)
      : mlp{blocks::pack<Scalar>(gate_, o.weights, names[0], o.inputs),
            blocks::pack<Scalar>(up_, o.weights, names[1], o.inputs),
            blocks::pack<Scalar>(down_, o.weights, names[2], o.inputs)},
        norm(std::move(norm_)),
        norm_bias(std::move(norm_bias_)),
        post_norm(std::move(post_norm_)),
        options(o) {}

  Eigen::Index d_model() const { return mlp.down.packed.rows(); }
  Eigen::Index d_ff() const { return mlp.gate.packed.rows(); }

  // Sizes a workspace for `tokens` tokens on up to `threads` threads.
  void size(workspace<Scalar>& w, Eigen::Index tokens, int threads) const {
    const blocks::token_layout layout(tokens, mlp.gate.kernel.nt);
    // With a post-norm or a factor, the MLP's output follows the normalised tokens.
    w.normed.reserve(d_model() * tokens * (post_norm.size() || options.output_scale != 1 ? 2 : 1));
    w.hidden.reserve(d_ff() * tokens);
    w.packed_in.reserve(layout.packed_size(d_model()));
    w.packed_hidden.reserve(layout.packed_size(d_ff()));
    w.scratch.reserve(scratch_size(tokens, threads));
    w.widened.reserve(threads * widened_size());
  }
  // Every slot's scratch for a call of `tokens` on any number of threads up to `threads`, so
  // that a workspace reserved for a device also serves a call on fewer threads (a smaller
  // device, or a call too small to share between all of them: blocks/parallel.hpp). It is
  // not monotone in the tokens (token blocks, and a call's chunks, are cut differently for
  // different counts): reserve() takes the most over every count up to its own.
  Eigen::Index scratch_size(Eigen::Index tokens, int threads) const {
    Eigen::Index scratch = 0;
    for (int t = 1; t <= threads; ++t)
      scratch = std::max(scratch, t * blocks::gated_scratch_size(mlp, layout_for(tokens, t), t));
    return scratch;
  }
  // A call's token blocks on `threads` threads (blocks/products.hpp, token_sharing_threads).
  blocks::token_layout layout_for(Eigen::Index tokens, int threads) const {
    return blocks::token_layout(tokens, mlp.gate.kernel.nt, blocks::token_sharing_threads(threads, mlp.bytes()));
  }
  // A thread slot's widened weights: the first pass's two products' or the down product's.
  Eigen::Index widened_size() const {
    return std::max(blocks::widened_size(mlp.gate, 2), blocks::widened_size(mlp.down, 1));
  }

  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice* device) const;
  // One chunk of a call's tokens (blocks::token_chunks), in the call's workspace.
  void forward_chunk(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice* device,
                     workspace<Scalar>& w, blocks::pass_clock& clock) const;
};

template <typename Scalar>
GatedFeedForward<Scalar>::GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                                           const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                                           GatedForm form, Scalar eps)
    : GatedFeedForward(gate, up, down, norm, Options{form, eps}) {}

template <typename Scalar>
GatedFeedForward<Scalar>::GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                                           const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                                           const Options& options)
    : GatedFeedForward(gate, up, down, norm, Vector(), options) {}

template <typename Scalar>
GatedFeedForward<Scalar>::GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                                           const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                                           const Eigen::Ref<const Vector>& post_norm, const Options& options)
    : GatedFeedForward(gate, up, down, norm, Vector(), post_norm, options) {}

template <typename Scalar>
GatedFeedForward<Scalar>::GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                                           const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                                           const Eigen::Ref<const Vector>& norm_bias,
                                           const Eigen::Ref<const Vector>& post_norm, const Options& options) {
  using blocks::require;
  const Eigen::Index d = gate.cols(), d_ff = gate.rows();
  require(d > 0 && d_ff > 0, kBlock, "gate", d_ff, d, std::max<Eigen::Index>(d_ff, 1), std::max<Eigen::Index>(d, 1),
          "d_ff x d_model, both positive");
  require(up.rows() == d_ff && up.cols() == d, kBlock, "up", up.rows(), up.cols(), d_ff, d,
          "d_ff x d_model, from gate");
  require(down.rows() == d && down.cols() == d_ff, kBlock, "down", down.rows(), down.cols(), d, d_ff,
          "d_model x d_ff, from gate");
  // (This constructor is every other's body, with empty vectors for what they lack.)
  blocks::check_norm(kBlock, options.norm, norm.size(), norm_bias.size(), d, "from gate");
  require(post_norm.size() == d || post_norm.size() == 0, kBlock, "post_norm", post_norm.size(), 1, d, 1,
          "d_model, from gate");
  if (!(options.eps > 0)) throw std::invalid_argument("egelu::GatedFeedForward: eps must be positive");
  blocks::check_output_scale(kBlock, options.output_scale);
  blocks::check_format<Scalar>(kBlock, options.weights);
  blocks::check_inputs(kBlock, options.weights, options.inputs);
  const std::string names[3] = {"gate", "up", "down"};
  impl_.reset(new Impl(blocks::view_of<Scalar>(gate), blocks::view_of<Scalar>(up), blocks::view_of<Scalar>(down), names,
                       norm, norm_bias, post_norm, options));
}

template <typename Scalar>
GatedFeedForward<Scalar>::GatedFeedForward(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
template <typename Scalar>
GatedFeedForward<Scalar>::GatedFeedForward(GatedFeedForward&&) noexcept = default;
template <typename Scalar>
GatedFeedForward<Scalar>& GatedFeedForward<Scalar>::operator=(GatedFeedForward&&) noexcept = default;
template <typename Scalar>
GatedFeedForward<Scalar>::~GatedFeedForward() = default;

template <typename Scalar>
Eigen::Index GatedFeedForward<Scalar>::d_model() const {
  return impl_->d_model();
}
template <typename Scalar>
Eigen::Index GatedFeedForward<Scalar>::d_ff() const {
  return impl_->d_ff();
}
template <typename Scalar>
GatedForm GatedFeedForward<Scalar>::form() const {
  return impl_->options.form;
}
template <typename Scalar>
Scalar GatedFeedForward<Scalar>::eps() const {
  return impl_->options.eps;
}
template <typename Scalar>
GatedNorm GatedFeedForward<Scalar>::norm_type() const {
  return impl_->options.norm;
}
template <typename Scalar>
Scalar GatedFeedForward<Scalar>::output_scale() const {
  return impl_->options.output_scale;
}
template <typename Scalar>
bool GatedFeedForward<Scalar>::has_post_norm() const {
  return impl_->post_norm.size() != 0;
}
template <typename Scalar>
WeightFormat GatedFeedForward<Scalar>::weight_format() const {
  return impl_->options.weights;
}
template <typename Scalar>
InputFormat GatedFeedForward<Scalar>::input_format() const {
  return impl_->options.inputs;
}
template <typename Scalar>
std::size_t GatedFeedForward<Scalar>::weight_bytes() const {
  return impl_->mlp.bytes();
}

template <typename Scalar>
GatedFeedForward<Scalar> GatedFeedForward<Scalar>::from_pretrained(const std::string& path, int layer) {
  return from_layer(hf::open_mlp_layer(path, nullptr, layer, hf::block_kind::gated), blocks::checkpoint_format,
                    InputFormat::f32);
}

template <typename Scalar>
GatedFeedForward<Scalar> GatedFeedForward<Scalar>::from_pretrained(const std::string& path, int layer,
                                                                   WeightFormat weights, InputFormat inputs) {
  blocks::check_inputs(kBlock, weights, inputs);
  return from_layer(hf::open_mlp_layer(path, nullptr, layer, hf::block_kind::gated), weights, inputs);
}

template <typename Scalar>
GatedFeedForward<Scalar> GatedFeedForward<Scalar>::from_pretrained(const std::string& path, const std::string& stack,
                                                                   int layer) {
  return from_layer(hf::open_mlp_layer(path, &stack, layer, hf::block_kind::gated), blocks::checkpoint_format,
                    InputFormat::f32);
}

template <typename Scalar>
GatedFeedForward<Scalar> GatedFeedForward<Scalar>::from_pretrained(const std::string& path, const std::string& stack,
                                                                   int layer, WeightFormat weights,
                                                                   InputFormat inputs) {
  blocks::check_inputs(kBlock, weights, inputs);
  return from_layer(hf::open_mlp_layer(path, &stack, layer, hf::block_kind::gated), weights, inputs);
}

template <typename Scalar>
GatedFeedForward<Scalar> GatedFeedForward<Scalar>::from_layer(const hf::mlp_layer& m, WeightFormat weights,
                                                              InputFormat inputs) {
  Options o;
  o.form = blocks::gated_form(m.act);
  o.eps = Scalar(m.eps);
  o.weights = weights == blocks::checkpoint_format ? blocks::kept_format<Scalar>(m.gate) : weights;
  o.inputs = inputs;
  blocks::check_format<Scalar>(kBlock, o.weights);
  const std::string names[3] = {blocks::tensor_name(m.gate), blocks::tensor_name(m.up), blocks::tensor_name(m.down)};
  // Gemma's RMSNorm multiplies by 1 + weight, in float as GemmaRMSNorm does.
  o.norm = m.gated_norm;
  o.output_scale = blocks::output_scale_of<Scalar>(m);
  // A LayerNorm without a weight (OLMo's) multiplies by ones: exact, so the same.
  Vector norm = m.norm_weight                      ? blocks::norm_of<Vector>(m.norm_weight, m.plus_one)
                : m.gated_norm == GatedNorm::layer ? Vector::Ones(m.d_model)
                                                   : Vector();
  Vector norm_bias = m.norm_bias ? blocks::vector_of<Vector>(m.norm_bias) : Vector();
  Vector post_norm = m.post_norm_weight ? blocks::norm_of<Vector>(m.post_norm_weight, m.plus_one) : Vector();
  return GatedFeedForward(
      std::unique_ptr<Impl>(new Impl(m.gate.matrix(), m.up.matrix(), m.down.matrix(), names, std::move(norm),
                                     std::move(norm_bias), std::move(post_norm), o)));
}

namespace {

// The folder's eps.npy, if it has one.
template <typename Scalar>
bool stored_eps(const std::string& dir, Scalar& eps) {
  if (!std::ifstream(dir + "eps.npy")) return false;
  eps = npy::load_vector<Scalar>(dir + "eps.npy", 1)(0);
  return true;
}

// The block from the folder's .npy files, with this epsilon.
template <typename Scalar>
GatedFeedForward<Scalar> load_npy(const std::string& dir, GatedForm form, Scalar eps) {
  const npy::Array gate = npy::load(dir + "gate_proj.npy");
  if (gate.shape.size() != 2) {
    throw std::invalid_argument(gate.name + ": gate_proj must be 2-D (d_ff, d_model), the file holds " +
                                gate.shape_string());
  }
  const Eigen::Index d_ff = Eigen::Index(gate.shape[0]), d = Eigen::Index(gate.shape[1]);
  const std::string why = " (d_ff = " + std::to_string(d_ff) + " and d_model = " + std::to_string(d) + " come from " +
                          gate.name + " " + gate.shape_string() + ")";
  const auto matrix = [&](const char* file, Eigen::Index rows, Eigen::Index cols) {
    return blocks::with_reason(why, [&] { return npy::load_matrix<Scalar>(dir + file, rows, cols); });
  };
  return GatedFeedForward<Scalar>(
      npy::load_matrix<Scalar>(dir + "gate_proj.npy", d_ff, d), matrix("up_proj.npy", d_ff, d),
      matrix("down_proj.npy", d, d_ff),
      blocks::with_reason(why, [&] { return npy::load_vector<Scalar>(dir + "norm.npy", d); }), form, eps);
}

std::string with_slash(const std::string& directory) {
  return directory.empty() || directory.back() == '/' ? directory : directory + "/";
}

}  // namespace

template <typename Scalar>
GatedFeedForward<Scalar> GatedFeedForward<Scalar>::load(const std::string& directory, GatedForm form) {
  const std::string dir = with_slash(directory);
  Scalar eps = Scalar(1e-6);
  stored_eps(dir, eps);
  return load_npy(dir, form, eps);
}

template <typename Scalar>
GatedFeedForward<Scalar> GatedFeedForward<Scalar>::load(const std::string& directory, GatedForm form, Scalar eps) {
  const std::string dir = with_slash(directory);
  Scalar stored = eps;
  if (stored_eps(dir, stored) && stored != eps) {
    throw std::invalid_argument(dir + "eps.npy holds eps = " + std::to_string(double(stored)) + " but the call gives " +
                                std::to_string(double(eps)));
  }
  return load_npy(dir, form, eps);
}

template <typename Scalar>
void GatedFeedForward<Scalar>::reserve(Eigen::Index tokens, int callers, int threads) const {
  impl_->pool.prepare(callers, [&](workspace<Scalar>& w) {
    impl_->size(w, tokens, std::max(threads, 1));
    Eigen::Index scratch = 0;
    for (Eigen::Index fewer = 1; fewer < tokens; ++fewer)
      scratch = std::max(scratch, impl_->scratch_size(fewer, std::max(threads, 1)));
    w.scratch.reserve(scratch);
  });
}

template <typename Scalar>
void GatedFeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) const {
  impl_->forward(x, y, nullptr);
}

template <typename Scalar>
void GatedFeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                       const Eigen::ThreadPoolDevice& device) const {
  impl_->forward(x, y, &device);
}

template <typename Scalar>
void GatedFeedForward<Scalar>::Impl::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                             const Eigen::ThreadPoolDevice* device) const {
  blocks::check_tokens(kBlock, x, y, d_model());
  if (x.cols() == 0) return;
  const auto lease = pool.acquire();
  blocks::pass_clock clock;
  // Chunks of tokens (blocks/products.hpp): a token's hidden layers are the gate's tiles,
  // the up's and the down product's packed input, three of d_ff.
  const blocks::token_chunks chunks(x.cols(), device ? device->numThreads() : 1, 3 * d_ff() * sizeof(Scalar),
                                    mlp.bytes(), mlp.gate.widen || mlp.down.widen);
  chunks.for_each(x, y,
                  [&](const auto& x_chunk, auto& y_chunk) { forward_chunk(x_chunk, y_chunk, device, *lease, clock); });
}

template <typename Scalar>
void GatedFeedForward<Scalar>::Impl::forward_chunk(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                                   const Eigen::ThreadPoolDevice* device, workspace<Scalar>& w,
                                                   blocks::pass_clock& clock) const {
  const Eigen::Index tokens = x.cols(), d = d_model(), f = d_ff();
  const blocks::task_runner runner(device, *w.team, double(d) * double(f) * double(tokens));
  size(w, tokens, runner.threads());
  const blocks::token_layout layout = layout_for(tokens, runner.threads());
  Eigen::Map<Matrix> n(w.normed.data(), d, tokens);
  Scalar *packed_in = w.packed_in.data(), *packed_hidden = w.packed_hidden.data();

  // N(x), written packed as the first products' input by the task that computes it.
  blocks::over_tokens(runner, tokens, [&](Eigen::Index first, Eigen::Index last) {
    blocks::norm_before(options.norm, x, n, first, last, norm, norm_bias, options.eps);
    blocks::pack_columns(mlp.gate.packed, layout, n.data(), d, first, last, packed_in);
  });
  clock.mark(0, "norm, packed");
  blocks::quantize_input(runner, mlp.gate, layout, packed_in, clock);

  // h = act(W_gate n) * (W_up n), tile by tile (blocks/passes.hpp; the activation compiled
  // for the ISA of the kernels, activations/passes.hpp), written packed as the down
  // product's input.
  const auto gated = blocks::passes_of<Scalar>(blocks::selected_activations()).gated[int(options.form)];
  // Cut for all the call's threads (not threads_for): any of them may run a task, and each
  // slot's scratch is the largest task's (size() reserves it for each thread count).
  const blocks::task_grid grid(mlp.gate.packed, layout, runner.threads());
  const Eigen::Index slot_size = blocks::gated_scratch_size(mlp, layout, runner.threads());
  blocks::for_each_tile_task(runner, grid, [&](const blocks::tile_task& task, int slot) {
    blocks::gated_tiles(mlp, layout, packed_in, w.hidden.data(), f, w.scratch.data() + slot * slot_size,
                        w.widened.data() + slot * widened_size(), clock.timed(slot, gated), packed_hidden, task);
  });
  clock.mark(1, "gate and up products, act(gate) * up, packed");
  blocks::quantize_input(runner, mlp.down, layout, packed_hidden, clock);

  const auto no_finish = [](Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index) {};
  const Scalar scale = options.output_scale;
  if (post_norm.size() == 0 && scale == 1) {
    // y = x + W_down h: each tile starts from the residual.
    blocks::residual_product(runner, mlp.down, layout, packed_hidden, x, y, w.widened.data(), no_finish);
    clock.mark(2, "down product from the residual");
    return;
  }
  // m = W_down h, then y = x + N_post(m), or x + m * scale (Granite: each a rounding, as
  // PyTorch's residual + hidden_states * residual_multiplier), over the tokens.
  Eigen::Map<Matrix> m(w.normed.data() + d * tokens, d, tokens);
  blocks::product(runner, mlp.down, layout, packed_hidden, blocks::matrix_ref<const Scalar>{}, m, w.widened.data(),
                  no_finish);
  clock.mark(2, "down product");
  blocks::over_tokens(runner, tokens, [&](Eigen::Index first, Eigen::Index last) {
    auto out = m.middleCols(first, last - first);
    if (post_norm.size()) blocks::rms_norm(m, m, first, last, post_norm, options.eps);
    if (scale != 1) out *= scale;
    y.middleCols(first, last - first) = x.middleCols(first, last - first) + out;
  });
  clock.mark(3, "post-norm or scale, residual");
}

template class GatedFeedForward<float>;
template class GatedFeedForward<double>;

}  // namespace egelu
