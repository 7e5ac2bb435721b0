// FeedForward: Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2), in three passes, each split
// into tasks for the device's threads (src/parallel.hpp): the first product with bias +
// GELU on each tile while it is in cache, the second with the residual as each tile's
// starting value and b2 at its end, and LayerNorm over the tokens.
#define EIGEN_USE_THREADS
#include <egelu/feed_forward.hpp>
#include <egelu/npy.hpp>

#include "block_checks.hpp"
#include "block_passes.hpp"
#include "token_norms.hpp"

namespace egelu {

namespace {

constexpr const char* kBlock = "egelu::FeedForward";

// f(op) with the functor of the form.
template <typename Scalar, typename F>
void with_gelu(GeluForm form, const F& f) {
  switch (form) {
    case GeluForm::tanh:
      return f(gelu_tanh_op<Scalar>());
    case GeluForm::exact:
      return f(gelu_erf_op<Scalar>());
    case GeluForm::fast_tanh:
      return f(fast::gelu_tanh_op<Scalar>());
    case GeluForm::fast_exact:
      return f(fast::gelu_erf_op<Scalar>());
  }
}

}  // namespace

template <typename Scalar>
struct FeedForward<Scalar>::Impl {
  blocks::packed_weights<Scalar> w1, w2;
  Vector b1, b2, gamma, beta;
  GeluForm form;
  Scalar eps;
  Matrix hidden = Matrix();  // d_ff x capacity
  blocks::block_threads<Scalar> threads = {};

  void forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y, const Eigen::ThreadPoolDevice* device);
};

template <typename Scalar>
FeedForward<Scalar>::FeedForward(const Eigen::Ref<const Weights>& w1, const Eigen::Ref<const Vector>& b1,
                                 const Eigen::Ref<const Weights>& w2, const Eigen::Ref<const Vector>& b2,
                                 const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
                                 GeluForm form, Scalar eps) {
  using blocks::require;
  const Eigen::Index d = w1.cols(), d_ff = w1.rows();
  require(d > 0 && d_ff > 0, kBlock, "W1", d_ff, d, std::max<Eigen::Index>(d_ff, 1), std::max<Eigen::Index>(d, 1),
          "d_ff x d_model, both positive");
  require(b1.size() == d_ff, kBlock, "b1", b1.size(), 1, d_ff, 1, "d_ff, from W1");
  require(w2.rows() == d && w2.cols() == d_ff, kBlock, "W2", w2.rows(), w2.cols(), d, d_ff, "d_model x d_ff, from W1");
  require(b2.size() == d, kBlock, "b2", b2.size(), 1, d, 1, "d_model, from W1");
  require(gamma.size() == d, kBlock, "gamma", gamma.size(), 1, d, 1, "d_model, from W1");
  require(beta.size() == d, kBlock, "beta", beta.size(), 1, d, 1, "d_model, from W1");
  if (!(eps > 0)) throw std::invalid_argument("egelu::FeedForward: eps must be positive");
  impl_.reset(new Impl{
      blocks::packed_weights<Scalar>(w1.data(), d_ff, d, w1.outerStride(), blocks::default_blocking<Scalar>(d_ff, d)),
      blocks::packed_weights<Scalar>(w2.data(), d, d_ff, w2.outerStride(), blocks::default_blocking<Scalar>(d, d_ff)),
      b1,
      b2,
      gamma,
      beta,
      form,
      eps,
      {},
      {}});
}

template <typename Scalar>
FeedForward<Scalar>::FeedForward(FeedForward&&) noexcept = default;
template <typename Scalar>
FeedForward<Scalar>& FeedForward<Scalar>::operator=(FeedForward&&) noexcept = default;
template <typename Scalar>
FeedForward<Scalar>::~FeedForward() = default;

template <typename Scalar>
Eigen::Index FeedForward<Scalar>::d_model() const {
  return impl_->w1.depth();
}
template <typename Scalar>
Eigen::Index FeedForward<Scalar>::d_ff() const {
  return impl_->w1.rows();
}
template <typename Scalar>
GeluForm FeedForward<Scalar>::form() const {
  return impl_->form;
}

template <typename Scalar>
FeedForward<Scalar> FeedForward<Scalar>::load(const std::string& directory, GeluForm form, Scalar eps) {
  const std::string dir = directory.empty() || directory.back() == '/' ? directory : directory + "/";
  const npy::Array w1 = npy::load(dir + "W1.npy");
  if (w1.shape.size() != 2) {
    throw std::invalid_argument(w1.name + ": W1 must be 2-D (d_ff, d_model), the file holds " + w1.shape_string());
  }
  const Eigen::Index d_ff = Eigen::Index(w1.shape[0]), d = Eigen::Index(w1.shape[1]);
  return FeedForward(npy::load_matrix<Scalar>(dir + "W1.npy", d_ff, d), npy::load_vector<Scalar>(dir + "b1.npy", d_ff),
                     npy::load_matrix<Scalar>(dir + "W2.npy", d, d_ff), npy::load_vector<Scalar>(dir + "b2.npy", d),
                     npy::load_vector<Scalar>(dir + "gamma.npy", d), npy::load_vector<Scalar>(dir + "beta.npy", d),
                     form, eps);
}

template <typename Scalar>
void FeedForward<Scalar>::reserve(Eigen::Index tokens) {
  if (impl_->hidden.cols() < tokens) impl_->hidden.resize(d_ff(), tokens);
  impl_->threads.reserve(tokens, impl_->w1, impl_->w2);
}

template <typename Scalar>
void FeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) {
  reserve(x.cols());
  impl_->forward(x, y, nullptr);
}

template <typename Scalar>
void FeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                  const Eigen::ThreadPoolDevice& device) {
  reserve(x.cols());
  impl_->forward(x, y, &device);
}

template <typename Scalar>
void FeedForward<Scalar>::Impl::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                                        const Eigen::ThreadPoolDevice* device) {
  const bool in_place = blocks::check_tokens(kBlock, x, y, w1.depth());
  if (x.cols() == 0) return;
  const blocks::task_runner runner = threads.runner(device, x.cols(), w1, w2);
  auto h = hidden.leftCols(x.cols());

  // h = gelu(W1 x + b1), tile by tile.
  with_gelu<Scalar>(form, [&](const auto& op) {
    blocks::multiply(
        runner, w1, x, h, threads,
        [&](Eigen::Index i, Eigen::Index j, Eigen::Index rows, Eigen::Index cols) {
          h.block(i, j, rows, cols).setZero();
        },
        [&](Eigen::Index i, Eigen::Index j, Eigen::Index rows, Eigen::Index cols) {
          for (Eigen::Index t = j; t < j + cols; ++t) {
            auto line = h.col(t).segment(i, rows).array();
            line = (line + b1.segment(i, rows).array()).unaryExpr(op);
          }
        });
  });

  // y = x + W2 h, tile by tile: each tile starts as x's.
  blocks::multiply(
      runner, w2, h, y, threads,
      [&](Eigen::Index i, Eigen::Index j, Eigen::Index rows, Eigen::Index cols) {
        if (!in_place) y.block(i, j, rows, cols) = x.block(i, j, rows, cols);
      },
      [](Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index) {});

  // LayerNorm over each token, b2 added first.
  blocks::over_tokens(runner, x.cols(), [&](Eigen::Index first, Eigen::Index last) {
    blocks::layer_norm(y, first, last, b2, gamma, beta, eps);
  });
}

template class FeedForward<float>;
template class FeedForward<double>;

}  // namespace egelu
