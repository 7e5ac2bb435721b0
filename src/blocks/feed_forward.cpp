// FeedForward: BERT's post-norm block, Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2), or
// GPT-2's pre-norm one, Y = X + W2 gelu(W1 LayerNorm(X) + b1) + b2, in passes split into
// tasks for the device's threads (blocks/passes.hpp): the pre-norm's LayerNorm over the
// tokens; the first product, its tiles starting from b1 and finished with the GELU while
// in cache; the second, its tiles starting from the residual (and finished with b2 when
// the norm came first); the post-norm's LayerNorm over the tokens.
#define EIGEN_USE_THREADS
#include <egelu/feed_forward.hpp>
#include <egelu/npy.hpp>

#include "activations/passes.hpp"
#include "blocks/checks.hpp"
#include "blocks/norms.hpp"
#include "blocks/pass_timing.hpp"
#include "blocks/passes.hpp"
#include "blocks/weights.hpp"
#include "blocks/workspace_pool.hpp"

namespace egelu {

namespace {

constexpr const char* kBlock = "egelu::FeedForward";

// The passes are indexed by the form's value (activations/passes.hpp).
static_assert(int(GeluForm::tanh) == 0 && int(GeluForm::exact) == 1 && int(GeluForm::fast_tanh) == 2 &&
                  int(GeluForm::fast_exact) == 3 && int(GeluForm::quick) == 4,
              "activation_passes::gelu lists the forms in GeluForm's order");

// One call's memory: the normalised tokens (pre-norm), the hidden layer (the first
// product's tiles), each product's packed input, the thread slots' widened weights (block
// formats), and the call's task team.
template <typename Scalar>
struct workspace {
  blocks::growing_buffer<Scalar> normed, hidden, packed_in, packed_hidden, widened;
  internal::owned_task_team team;
};

}  // namespace

template <typename Scalar>
struct FeedForward<Scalar>::Impl {
  blocks::weights<Scalar> w1, w2;
  Vector b1, b2, gamma, beta;
  Options options;
  mutable blocks::workspace_pool<workspace<Scalar>> pool;

  Impl(const gemm::matrix_view& w1_, const std::string& w1_name, Vector b1_, const gemm::matrix_view& w2_,
       const std::string& w2_name, Vector b2_, Vector gamma_, Vector beta_, const Options& o)
      : w1(blocks::pack<Scalar>(w1_, o.weights, w1_name, o.inputs)),
        w2(blocks::pack<Scalar>(w2_, o.weights, w2_name, o.inputs)),
        b1(std::move(b1_)),
        b2(std::move(b2_)),
        gamma(std::move(gamma_)),
        beta(std::move(beta_)),
        options(o) {}

  Eigen::Index d_model() const { return w1.packed.depth(); }
  Eigen::Index d_ff() const { return w1.packed.rows(); }

  // Sizes a workspace for `tokens` tokens on up to `threads` threads.
  void size(workspace<Scalar>& w, Eigen::Index tokens, int threads) const {
    const blocks::token_layout layout(tokens, w1.kernel.nt);
    if (options.norm == NormPlacement::pre) w.normed.reserve(d_model() * tokens);
    w.hidden.reserve(d_ff() * tokens);
    w.packed_in.reserve(layout.packed_size(d_model()));
    w.packed_hidden.reserve(layout.packed_size(d_ff()));
    w.widened.reserve(threads * widened_size());
  }
  // A thread slot's widened weights: the larger product's.
  Eigen::Index widened_size() const { return std::max(blocks::widened_size(w1, 1), blocks::widened_size(w2, 1)); }

  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice* device) const;
  // One chunk of a call's tokens (blocks::token_chunks), in the call's workspace.
  void forward_chunk(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice* device,
                     workspace<Scalar>& w, blocks::pass_clock& clock) const;
};

namespace {

// The block's parts checked against W1's shape: std::invalid_argument naming both shapes.
void check_shapes(Eigen::Index d_ff, Eigen::Index d, Eigen::Index b1, Eigen::Index w2_rows, Eigen::Index w2_cols,
                  Eigen::Index b2, Eigen::Index gamma, Eigen::Index beta) {
  using blocks::require;
  require(d > 0 && d_ff > 0, kBlock, "W1", d_ff, d, std::max<Eigen::Index>(d_ff, 1), std::max<Eigen::Index>(d, 1),
          "d_ff x d_model, both positive");
  require(b1 == d_ff, kBlock, "b1", b1, 1, d_ff, 1, "d_ff, from W1");
  require(w2_rows == d && w2_cols == d_ff, kBlock, "W2", w2_rows, w2_cols, d, d_ff, "d_model x d_ff, from W1");
  require(b2 == d, kBlock, "b2", b2, 1, d, 1, "d_model, from W1");
  require(gamma == d, kBlock, "gamma", gamma, 1, d, 1, "d_model, from W1");
  require(beta == d, kBlock, "beta", beta, 1, d, 1, "d_model, from W1");
}

}  // namespace

template <typename Scalar>
FeedForward<Scalar>::FeedForward(const Eigen::Ref<const Weights>& w1, const Eigen::Ref<const Vector>& b1,
                                 const Eigen::Ref<const Weights>& w2, const Eigen::Ref<const Vector>& b2,
                                 const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
                                 GeluForm form, Scalar eps)
    : FeedForward(w1, b1, w2, b2, gamma, beta, Options{form, NormPlacement::post, eps}) {}

template <typename Scalar>
FeedForward<Scalar>::FeedForward(const Eigen::Ref<const Weights>& w1, const Eigen::Ref<const Vector>& b1,
                                 const Eigen::Ref<const Weights>& w2, const Eigen::Ref<const Vector>& b2,
                                 const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
                                 const Options& options) {
  check_shapes(w1.rows(), w1.cols(), b1.size(), w2.rows(), w2.cols(), b2.size(), gamma.size(), beta.size());
  if (!(options.eps > 0)) throw std::invalid_argument("egelu::FeedForward: eps must be positive");
  blocks::check_format<Scalar>(kBlock, options.weights);
  blocks::check_inputs(kBlock, options.weights, options.inputs);
  impl_.reset(
      new Impl(blocks::view_of<Scalar>(w1), "W1", b1, blocks::view_of<Scalar>(w2), "W2", b2, gamma, beta, options));
}

template <typename Scalar>
FeedForward<Scalar>::FeedForward(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
template <typename Scalar>
FeedForward<Scalar>::FeedForward(FeedForward&&) noexcept = default;
template <typename Scalar>
FeedForward<Scalar>& FeedForward<Scalar>::operator=(FeedForward&&) noexcept = default;
template <typename Scalar>
FeedForward<Scalar>::~FeedForward() = default;

template <typename Scalar>
Eigen::Index FeedForward<Scalar>::d_model() const {
  return impl_->d_model();
}
template <typename Scalar>
Eigen::Index FeedForward<Scalar>::d_ff() const {
  return impl_->d_ff();
}
template <typename Scalar>
GeluForm FeedForward<Scalar>::form() const {
  return impl_->options.gelu;
}
template <typename Scalar>
NormPlacement FeedForward<Scalar>::norm_placement() const {
  return impl_->options.norm;
}
template <typename Scalar>
Scalar FeedForward<Scalar>::eps() const {
  return impl_->options.eps;
}
template <typename Scalar>
WeightFormat FeedForward<Scalar>::weight_format() const {
  return impl_->options.weights;
}
template <typename Scalar>
InputFormat FeedForward<Scalar>::input_format() const {
  return impl_->options.inputs;
}
template <typename Scalar>
std::size_t FeedForward<Scalar>::weight_bytes() const {
  return impl_->w1.packed.bytes() + impl_->w2.packed.bytes();
}

template <typename Scalar>
FeedForward<Scalar> FeedForward<Scalar>::from_pretrained(const std::string& path, int layer) {
  return from_layer(hf::open_mlp_layer(path, nullptr, layer, hf::block_kind::plain), blocks::checkpoint_format,
                    InputFormat::f32);
}

template <typename Scalar>
FeedForward<Scalar> FeedForward<Scalar>::from_pretrained(const std::string& path, int layer, WeightFormat weights,
                                                         InputFormat inputs) {
  blocks::check_inputs(kBlock, weights, inputs);
  return from_layer(hf::open_mlp_layer(path, nullptr, layer, hf::block_kind::plain), weights, inputs);
}

template <typename Scalar>
FeedForward<Scalar> FeedForward<Scalar>::from_pretrained(const std::string& path, const std::string& stack, int layer) {
  return from_layer(hf::open_mlp_layer(path, &stack, layer, hf::block_kind::plain), blocks::checkpoint_format,
                    InputFormat::f32);
}

template <typename Scalar>
FeedForward<Scalar> FeedForward<Scalar>::from_pretrained(const std::string& path, const std::string& stack, int layer,
                                                         WeightFormat weights, InputFormat inputs) {
  blocks::check_inputs(kBlock, weights, inputs);
  return from_layer(hf::open_mlp_layer(path, &stack, layer, hf::block_kind::plain), weights, inputs);
}

template <typename Scalar>
FeedForward<Scalar> FeedForward<Scalar>::from_layer(const hf::mlp_layer& m, WeightFormat weights, InputFormat inputs) {
  Options o;
  o.gelu = m.act == hf::activation::gelu_exact   ? GeluForm::exact
           : m.act == hf::activation::quick_gelu ? GeluForm::quick
                                                 : GeluForm::tanh;
  o.norm = m.pre_norm ? NormPlacement::pre : NormPlacement::post;
  o.eps = Scalar(m.eps);
  o.weights = weights == blocks::checkpoint_format ? blocks::kept_format<Scalar>(m.w1) : weights;
  o.inputs = inputs;
  blocks::check_format<Scalar>(kBlock, o.weights);
  // A checkpoint without biases (its config says so) adds zeros: the same sums but for the sign of a zero.
  const Vector b1 = m.b1 ? blocks::vector_of<Vector>(m.b1) : Vector::Zero(m.d_ff);
  const Vector b2 = m.b2 ? blocks::vector_of<Vector>(m.b2) : Vector::Zero(m.d_model);
  return FeedForward(std::unique_ptr<Impl>(
      new Impl(m.w1.matrix(), blocks::tensor_name(m.w1), b1, m.w2.matrix(), blocks::tensor_name(m.w2), b2,
               blocks::vector_of<Vector>(m.norm_weight), blocks::vector_of<Vector>(m.norm_bias), o)));
}

template <typename Scalar>
FeedForward<Scalar> FeedForward<Scalar>::load(const std::string& directory, GeluForm form, Scalar eps) {
  const std::string dir = directory.empty() || directory.back() == '/' ? directory : directory + "/";
  const npy::Array w1 = npy::load(dir + "W1.npy");
  if (w1.shape.size() != 2) {
    throw std::invalid_argument(w1.name + ": W1 must be 2-D (d_ff, d_model), the file holds " + w1.shape_string());
  }
  const Eigen::Index d_ff = Eigen::Index(w1.shape[0]), d = Eigen::Index(w1.shape[1]);
  const std::string why = " (d_ff = " + std::to_string(d_ff) + " and d_model = " + std::to_string(d) + " come from " +
                          w1.name + " " + w1.shape_string() + ")";
  const auto matrix = [&](const char* file, Eigen::Index rows, Eigen::Index cols) {
    return blocks::with_reason(why, [&] { return npy::load_matrix<Scalar>(dir + file, rows, cols); });
  };
  const auto vector = [&](const char* file, Eigen::Index size) {
    return blocks::with_reason(why, [&] { return npy::load_vector<Scalar>(dir + file, size); });
  };
  return FeedForward(npy::load_matrix<Scalar>(dir + "W1.npy", d_ff, d), vector("b1.npy", d_ff),
                     matrix("W2.npy", d, d_ff), vector("b2.npy", d), vector("gamma.npy", d), vector("beta.npy", d),
                     form, eps);
}

template <typename Scalar>
void FeedForward<Scalar>::reserve(Eigen::Index tokens, int callers, int threads) const {
  impl_->pool.prepare(callers, [&](workspace<Scalar>& w) { impl_->size(w, tokens, std::max(threads, 1)); });
}

template <typename Scalar>
void FeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) const {
  impl_->forward(x, y, nullptr);
}

template <typename Scalar>
void FeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                  const Eigen::ThreadPoolDevice& device) const {
  impl_->forward(x, y, &device);
}

template <typename Scalar>
void FeedForward<Scalar>::Impl::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                        const Eigen::ThreadPoolDevice* device) const {
  blocks::check_tokens(kBlock, x, y, d_model());
  if (x.cols() == 0) return;
  const auto lease = pool.acquire();
  blocks::pass_clock clock;
  // Chunks of tokens (blocks/products.hpp): a token's hidden layers are the first pass's
  // tiles and the second product's packed input, two of d_ff.
  const blocks::token_chunks chunks(x.cols(), device ? device->numThreads() : 1, 2 * d_ff() * sizeof(Scalar),
                                    w1.packed.bytes() + w2.packed.bytes(), w1.widen || w2.widen);
  chunks.for_each(x, y,
                  [&](const auto& x_chunk, auto& y_chunk) { forward_chunk(x_chunk, y_chunk, device, *lease, clock); });
}

template <typename Scalar>
void FeedForward<Scalar>::Impl::forward_chunk(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                              const Eigen::ThreadPoolDevice* device, workspace<Scalar>& w,
                                              blocks::pass_clock& clock) const {
  const Eigen::Index tokens = x.cols(), d = d_model(), f = d_ff();
  const blocks::task_runner runner(device, *w.team, double(d) * double(f) * double(tokens));
  size(w, tokens, runner.threads());
  const blocks::token_layout layout(
      tokens, w1.kernel.nt, blocks::token_sharing_threads(runner.threads(), w1.packed.bytes() + w2.packed.bytes()));
  Eigen::Map<Matrix> h(w.hidden.data(), f, tokens);
  Scalar *packed_in = w.packed_in.data(), *packed_hidden = w.packed_hidden.data();
  const bool pre = options.norm == NormPlacement::pre;

  // The first product's input, packed: x, or LayerNorm(x) when the norm comes first
  // (each task normalises its tokens and writes them packed).
  if (pre) {
    Eigen::Map<Matrix> normed(w.normed.data(), d, tokens);
    blocks::over_tokens(runner, tokens, [&](Eigen::Index first, Eigen::Index last) {
      blocks::layer_norm(x, normed, first, last, static_cast<const Vector*>(nullptr), gamma, &beta, options.eps);
      blocks::pack_columns(w1.packed, layout, normed.data(), d, first, last, packed_in);
    });
  } else {
    blocks::pack_input(runner, w1.packed, layout, x.data(), x.outerStride(), packed_in);
  }
  clock.mark(0, pre ? "LayerNorm, packed" : "input packed");
  blocks::quantize_input(runner, w1, layout, packed_in, clock);

  // h = gelu(W1 in + b1): each tile starts from b1 and is finished in cache (the GELU
  // compiled for the ISA of the kernels, activations/passes.hpp), then written packed as
  // the second product's input.
  const auto gelu = blocks::passes_of<Scalar>(blocks::selected_activations()).gelu[int(options.gelu)];
  const blocks::task_grid grid(w1.packed, layout, runner);
  const Eigen::Index slot_size = widened_size();
  blocks::for_each_tile_task(runner, grid, [&](const blocks::tile_task& task, int slot) {
    const blocks::product_output<Scalar> out[] = {{&w1, {h.data(), f}, {b1.data(), 0}}};
    const auto activation = clock.timed(slot, gelu);
    blocks::multiply_tiles(out, layout, packed_in, w.widened.data() + slot * slot_size, task,
                           [&](Eigen::Index i, Eigen::Index rows, Eigen::Index t, Eigen::Index n) {
                             activation(&h(i, t), rows, n, f);
                             blocks::pack_tile(w2.packed, layout, h.data(), f, i, rows, t, n, packed_hidden);
                           });
  });
  clock.mark(1, "first product, GELU, packed");
  blocks::quantize_input(runner, w2, layout, packed_hidden, clock);

  // y = x + W2 h (+ b2 before a pre-norm block's output): each tile starts from the residual.
  blocks::residual_product(runner, w2, layout, packed_hidden, x, y, w.widened.data(),
                           [&](Eigen::Index i, Eigen::Index rows, Eigen::Index t, Eigen::Index n) {
                             if (pre) y.block(i, t, rows, n).colwise() += b2.segment(i, rows);
                           });
  clock.mark(2, "second product from the residual");

  // The post-norm's LayerNorm over each token, b2 added first.
  if (!pre) {
    blocks::over_tokens(runner, tokens, [&](Eigen::Index first, Eigen::Index last) {
      blocks::layer_norm(y, y, first, last, &b2, gamma, &beta, options.eps);
    });
    clock.mark(3, "LayerNorm");
  }
}

template class FeedForward<float>;
template class FeedForward<double>;

}  // namespace egelu
