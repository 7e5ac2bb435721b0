// GatedFeedForward: Y = X + W_down (act(W_gate N(X)) * W_up N(X)), in three passes split
// into tasks for the device's threads (block_passes.hpp): RMSNorm over the tokens; the
// stacked gate/up product, whose tiles each hold the gate rows and the up rows of the
// same hidden units, so act(gate) * up is formed while the tile is in cache; and the
// down product with the residual as each tile's starting value.
#define EIGEN_USE_THREADS
#include <egelu/gated_feed_forward.hpp>
#include <egelu/npy.hpp>

#include "block_checks.hpp"
#include "block_passes.hpp"
#include "token_norms.hpp"

namespace egelu {

namespace {

constexpr const char* kBlock = "egelu::GatedFeedForward";

// f(op) with the gated functor of the form.
template <typename Scalar, typename F>
void with_gated(GatedForm form, const F& f) {
  switch (form) {
    case GatedForm::swiglu:
      return f(swiglu_op<Scalar>());
    case GatedForm::geglu:
      return f(geglu_op<Scalar>());
    case GatedForm::geglu_exact:
      return f(geglu_exact_op<Scalar>());
  }
}

// gate and up stacked so that each row block of b holds the gate rows of some hidden
// units, then their up rows: row block r (rows [r mc, r mc + size)) holds gate and up
// rows [r mc / 2, r mc / 2 + size / 2). Row-major, d_model columns.
template <typename Weights>
Weights stack_by_row_block(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                           blocks::blocking b) {
  const Eigen::Index rows = 2 * gate.rows();
  Weights stacked(rows, gate.cols());
  for (Eigen::Index start = 0; start < rows; start += b.mc) {
    const Eigen::Index half = std::min(b.mc, rows - start) / 2;
    stacked.middleRows(start, half) = gate.middleRows(start / 2, half);
    stacked.middleRows(start + half, half) = up.middleRows(start / 2, half);
  }
  return stacked;
}

}  // namespace

template <typename Scalar>
struct GatedFeedForward<Scalar>::Impl {
  blocks::packed_weights<Scalar> gate_up, down;
  Vector norm;
  GatedForm form;
  Scalar eps;
  Matrix normed = Matrix(), stacked = Matrix(), hidden = Matrix();  // d_model, 2 d_ff, d_ff x capacity
  blocks::block_threads<Scalar> threads = {};

  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice* device);
};

template <typename Scalar>
GatedFeedForward<Scalar>::GatedFeedForward(const Eigen::Ref<const Weights>& gate, const Eigen::Ref<const Weights>& up,
                                           const Eigen::Ref<const Weights>& down, const Eigen::Ref<const Vector>& norm,
                                           GatedForm form, Scalar eps) {
  using blocks::require;
  const Eigen::Index d = gate.cols(), d_ff = gate.rows();
  require(d > 0 && d_ff > 0, kBlock, "gate", d_ff, d, std::max<Eigen::Index>(d_ff, 1), std::max<Eigen::Index>(d, 1),
          "d_ff x d_model, both positive");
  require(up.rows() == d_ff && up.cols() == d, kBlock, "up", up.rows(), up.cols(), d_ff, d,
          "d_ff x d_model, from gate");
  require(down.rows() == d && down.cols() == d_ff, kBlock, "down", down.rows(), down.cols(), d, d_ff,
          "d_model x d_ff, from gate");
  require(norm.size() == d, kBlock, "norm", norm.size(), 1, d, 1, "d_model, from gate");
  if (!(eps > 0)) throw std::invalid_argument("egelu::GatedFeedForward: eps must be positive");
  const blocks::blocking stacked_blocks = blocks::default_blocking<Scalar>(2 * d_ff, d, 2);
  const Weights stacked = stack_by_row_block<Weights>(gate, up, stacked_blocks);
  impl_.reset(
      new Impl{blocks::packed_weights<Scalar>(stacked.data(), 2 * d_ff, d, stacked.outerStride(), stacked_blocks),
               blocks::packed_weights<Scalar>(down.data(), d, d_ff, down.outerStride(),
                                              blocks::default_blocking<Scalar>(d, d_ff)),
               norm, form, eps});
}

template <typename Scalar>
GatedFeedForward<Scalar>::GatedFeedForward(GatedFeedForward&&) noexcept = default;
template <typename Scalar>
GatedFeedForward<Scalar>& GatedFeedForward<Scalar>::operator=(GatedFeedForward&&) noexcept = default;
template <typename Scalar>
GatedFeedForward<Scalar>::~GatedFeedForward() = default;

template <typename Scalar>
Eigen::Index GatedFeedForward<Scalar>::d_model() const {
  return impl_->down.rows();
}
template <typename Scalar>
Eigen::Index GatedFeedForward<Scalar>::d_ff() const {
  return impl_->down.depth();
}
template <typename Scalar>
GatedForm GatedFeedForward<Scalar>::form() const {
  return impl_->form;
}

template <typename Scalar>
GatedFeedForward<Scalar> GatedFeedForward<Scalar>::load(const std::string& directory, GatedForm form, Scalar eps) {
  const std::string dir = directory.empty() || directory.back() == '/' ? directory : directory + "/";
  const npy::Array gate = npy::load(dir + "gate_proj.npy");
  if (gate.shape.size() != 2) {
    throw std::invalid_argument(gate.name + ": gate_proj must be 2-D (d_ff, d_model), the file holds " +
                                gate.shape_string());
  }
  const Eigen::Index d_ff = Eigen::Index(gate.shape[0]), d = Eigen::Index(gate.shape[1]);
  return GatedFeedForward(npy::load_matrix<Scalar>(dir + "gate_proj.npy", d_ff, d),
                          npy::load_matrix<Scalar>(dir + "up_proj.npy", d_ff, d),
                          npy::load_matrix<Scalar>(dir + "down_proj.npy", d, d_ff),
                          npy::load_vector<Scalar>(dir + "norm.npy", d), form, eps);
}

template <typename Scalar>
void GatedFeedForward<Scalar>::reserve(Eigen::Index tokens) {
  Impl& m = *impl_;
  if (m.hidden.cols() < tokens) {
    m.normed.resize(d_model(), tokens);
    m.stacked.resize(2 * d_ff(), tokens);
    m.hidden.resize(d_ff(), tokens);
  }
  m.threads.reserve(tokens, m.gate_up, m.down);
}

template <typename Scalar>
void GatedFeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) {
  reserve(x.cols());
  impl_->forward(x, y, nullptr);
}

template <typename Scalar>
void GatedFeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                       const Eigen::ThreadPoolDevice& device) {
  reserve(x.cols());
  impl_->forward(x, y, &device);
}

template <typename Scalar>
void GatedFeedForward<Scalar>::Impl::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                             const Eigen::ThreadPoolDevice* device) {
  const bool in_place = blocks::check_tokens(kBlock, x, y, down.rows());
  const Eigen::Index tokens = x.cols();
  if (tokens == 0) return;
  const blocks::task_runner runner = threads.runner(device, tokens, gate_up, down);
  auto n = normed.leftCols(tokens);
  auto s = stacked.leftCols(tokens);
  auto h = hidden.leftCols(tokens);

  // n = RMSNorm(x)
  blocks::over_tokens(runner, tokens,
                      [&](Eigen::Index first, Eigen::Index last) { blocks::rms_norm(x, n, first, last, norm, eps); });

  // h = act(W_gate n) * (W_up n): each tile's first half of rows is gate, the second up.
  with_gated<Scalar>(form, [&](const auto& op) {
    blocks::multiply(
        runner, gate_up, n, s, threads,
        [&](Eigen::Index i, Eigen::Index j, Eigen::Index rows, Eigen::Index cols) {
          s.block(i, j, rows, cols).setZero();
        },
        [&](Eigen::Index i, Eigen::Index j, Eigen::Index rows, Eigen::Index cols) {
          const Eigen::Index half = rows / 2;
          h.block(i / 2, j, half, cols).array() =
              s.block(i, j, half, cols).array().binaryExpr(s.block(i + half, j, half, cols).array(), op);
        });
  });

  // y = x + W_down h, tile by tile: each tile starts as x's.
  blocks::multiply(
      runner, down, h, y, threads,
      [&](Eigen::Index i, Eigen::Index j, Eigen::Index rows, Eigen::Index cols) {
        if (!in_place) y.block(i, j, rows, cols) = x.block(i, j, rows, cols);
      },
      [](Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index) {});
}

template class GatedFeedForward<float>;
template class GatedFeedForward<double>;

}  // namespace egelu
