#include <cmath>
#include <egelu/egelu.hpp>
#include <egelu/feed_forward.hpp>
#include <egelu/npy.hpp>
#include <sstream>
#include <stdexcept>

namespace egelu {
namespace {

std::string shape(Eigen::Index rows, Eigen::Index cols) {
  std::ostringstream s;
  s << rows << "x" << cols;
  return s.str();
}

void require(bool ok, const std::string& what, Eigen::Index rows, Eigen::Index cols, Eigen::Index want_rows,
             Eigen::Index want_cols, const std::string& why) {
  if (!ok) {
    throw std::invalid_argument("egelu::FeedForward: " + what + " is " + shape(rows, cols) + " but must be " +
                                shape(want_rows, want_cols) + " (" + why + ")");
  }
}

// Eigen's GEMM with packing buffers that persist between calls: the product
// Eigen would otherwise allocate them for on every call above 128 KB.
template <typename Scalar>
class persistent_blocking : public Eigen::internal::level3_blocking<Scalar, Scalar> {
 public:
  // res (col-major) += lhs (row-major) * rhs (col-major)
  template <typename Lhs, typename Rhs, typename Res>
  void multiply_add(const Lhs& lhs, const Rhs& rhs, Res& res) {
    static_assert(Lhs::IsRowMajor && !Rhs::IsRowMajor && !Res::IsRowMajor, "layouts");
    Eigen::Index kc = lhs.cols(), mc = res.rows(), nc = res.cols();
    Eigen::internal::computeProductBlockingSizes<Scalar, Scalar, 1, Eigen::Index>(kc, mc, nc, 1);
    this->m_kc = kc;
    this->m_mc = mc;
    this->m_nc = nc;
    if (a_.size() < kc * mc) a_.resize(kc * mc);
    if (b_.size() < kc * nc) b_.resize(kc * nc);
    this->m_blockA = a_.data();
    this->m_blockB = b_.data();
    Eigen::internal::general_matrix_matrix_product<Eigen::Index, Scalar, Eigen::RowMajor, false, Scalar,
                                                   Eigen::ColMajor, false, Eigen::ColMajor,
                                                   1>::run(res.rows(), res.cols(), lhs.cols(), lhs.data(),
                                                           lhs.outerStride(), rhs.data(), rhs.outerStride(), res.data(),
                                                           1, res.outerStride(), Scalar(1), *this);
  }

 private:
  Eigen::Matrix<Scalar, Eigen::Dynamic, 1> a_, b_;
};

}  // namespace

template <typename Scalar>
struct FeedForward<Scalar>::Impl {
  Weights w1, w2;
  Vector b1, b2, gamma, beta;
  GeluForm form;
  Scalar eps;
  Matrix hidden;  // d_ff x capacity
  persistent_blocking<Scalar> first, second;
};

template <typename Scalar>
FeedForward<Scalar>::FeedForward(const Eigen::Ref<const Weights>& w1, const Eigen::Ref<const Vector>& b1,
                                 const Eigen::Ref<const Weights>& w2, const Eigen::Ref<const Vector>& b2,
                                 const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
                                 GeluForm form, Scalar eps)
    : impl_(new Impl{w1, w2, b1, b2, gamma, beta, form, eps, {}, {}, {}}) {
  const Impl& m = *impl_;
  const Eigen::Index d = m.w1.cols(), d_ff = m.w1.rows();
  require(d > 0 && d_ff > 0, "W1", d_ff, d, std::max<Eigen::Index>(d_ff, 1), std::max<Eigen::Index>(d, 1),
          "d_ff x d_model, both positive");
  require(m.b1.size() == d_ff, "b1", m.b1.size(), 1, d_ff, 1, "d_ff, from W1");
  require(m.w2.rows() == d && m.w2.cols() == d_ff, "W2", m.w2.rows(), m.w2.cols(), d, d_ff, "d_model x d_ff, from W1");
  require(m.b2.size() == d, "b2", m.b2.size(), 1, d, 1, "d_model, from W1");
  require(m.gamma.size() == d, "gamma", m.gamma.size(), 1, d, 1, "d_model, from W1");
  require(m.beta.size() == d, "beta", m.beta.size(), 1, d, 1, "d_model, from W1");
  if (!(eps > 0)) throw std::invalid_argument("egelu::FeedForward: eps must be positive");
}

template <typename Scalar>
FeedForward<Scalar>::FeedForward(FeedForward&&) noexcept = default;
template <typename Scalar>
FeedForward<Scalar>& FeedForward<Scalar>::operator=(FeedForward&&) noexcept = default;
template <typename Scalar>
FeedForward<Scalar>::~FeedForward() = default;

template <typename Scalar>
Eigen::Index FeedForward<Scalar>::d_model() const {
  return impl_->w1.cols();
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
}

template <typename Scalar>
void FeedForward<Scalar>::forward(const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) {
  Impl& m = *impl_;
  const Eigen::Index d = d_model(), tokens = x.cols();
  require(x.rows() == d, "x", x.rows(), x.cols(), d, tokens, "d_model x tokens");
  require(y.rows() == d && y.cols() == tokens, "y", y.rows(), y.cols(), d, tokens, "the shape of x");
  const bool in_place = y.data() == x.data() && y.outerStride() == x.outerStride();
  const auto x_bytes = internal::bytes_of(x), y_bytes = internal::bytes_of(y);
  if (!in_place && tokens > 0 && internal::overlap(x_bytes, y_bytes)) {
    throw std::invalid_argument("egelu::FeedForward: y overlaps x without being x");
  }
  reserve(tokens);
  auto hidden = m.hidden.leftCols(tokens);

  // hidden = gelu(W1 x + b1): the product, then bias + GELU column by column while it is in cache.
  hidden.setZero();
  m.first.multiply_add(m.w1, x, hidden);
  const Eigen::Replicate<const Vector, 1, Eigen::Dynamic> b1(m.b1, 1, tokens);
  switch (m.form) {
    case GeluForm::tanh:
      internal::add_bias_and_activate(hidden, b1, gelu_tanh_op<Scalar>());
      break;
    case GeluForm::exact:
      internal::add_bias_and_activate(hidden, b1, gelu_erf_op<Scalar>());
      break;
    case GeluForm::fast_tanh:
      internal::add_bias_and_activate(hidden, b1, fast::gelu_tanh_op<Scalar>());
      break;
    case GeluForm::fast_exact:
      internal::add_bias_and_activate(hidden, b1, fast::gelu_erf_op<Scalar>());
      break;
  }

  // y = x + W2 hidden + b2, then LayerNorm over each token.
  if (!in_place) y = x;
  m.second.multiply_add(m.w2, hidden, y);
  const Scalar inv_d = Scalar(1) / Scalar(d);
  for (Eigen::Index t = 0; t < tokens; ++t) {
    auto column = y.col(t).array();
    column += m.b2.array();
    const Scalar mean = column.sum() * inv_d;
    column -= mean;
    const Scalar variance = column.square().sum() * inv_d;
    column = column * (m.gamma.array() / std::sqrt(variance + m.eps)) + m.beta.array();
  }
}

template class FeedForward<float>;
template class FeedForward<double>;

}  // namespace egelu
