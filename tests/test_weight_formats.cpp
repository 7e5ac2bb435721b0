// Blocks holding bfloat16 or half weights against the float block made from the same
// weights rounded here (to nearest even, by the formats' definitions): the 16-bit block
// widens exactly and sums in float, so its results are the float block's bits, for any
// number of tokens and threads. A weight beyond half's range is an error naming it.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <unsupported/Eigen/CXX11/Tensor>

namespace {

using Weights = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;
using Matrix = Eigen::MatrixXf;
using egelu::WeightFormat;

// x rounded to nearest even with `bits` significant bits and half's or bfloat16's range
// (exponent floor for subnormals), written from the definition with std::ldexp.
float round_to(float x, WeightFormat f) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int digits = f == WeightFormat::bf16 ? 8 : 11, min_exponent = f == WeightFormat::bf16 ? -126 : -14;
  int e;
  std::frexp(x, &e);  // x = m 2^e, 0.5 <= |m| < 1
  const int quantum = std::max(e - digits, min_exponent - digits + 1);
  return float(std::nearbyint(std::ldexp(double(x), -quantum)) * std::ldexp(1.0, quantum));  // ties to even
}

Weights rounded(const Weights& w, WeightFormat f) {
  return w.unaryExpr([f](float v) { return round_to(v, f); });
}

bool same_bits(const Matrix& a, const Matrix& b) {
  return std::memcmp(a.data(), b.data(), sizeof(float) * std::size_t(a.size())) == 0;
}

// block(x) == reference(x) bit for bit, for several token counts and 1, 2, 3 threads.
template <typename Block>
void expect_same_outputs(const Block& block, const Block& reference, const char* what) {
  for (int threads : {1, 2, 3}) {
    Eigen::ThreadPool pool(threads);
    const Eigen::ThreadPoolDevice device(&pool, threads);
    for (Eigen::Index tokens : {1, 2, 9, 33, 300}) {
      const Matrix x = Matrix::Random(block.d_model(), tokens) * 2.f;
      Matrix y = Matrix::Constant(x.rows(), x.cols(), NAN), want = y;
      reference.forward(x, want);
      if (threads == 1) {
        block.forward(x, y);
      } else {
        block.forward(x, y, device);
      }
      EXPECT_FALSE(y.hasNaN()) << what;
      EXPECT_TRUE(same_bits(y, want)) << what << ", " << threads << " threads, " << tokens << " tokens: max diff "
                                      << (y - want).cwiseAbs().maxCoeff();
    }
  }
}

TEST(WeightFormats, SixteenBitFeedForwardIsTheFloatBlockOnRoundedWeights) {
  using FF = egelu::FeedForward<float>;
  const Eigen::Index d = 96, d_ff = 400;
  const Weights w1 = Weights::Random(d_ff, d) * 0.3f, w2 = Weights::Random(d, d_ff) * 0.05f;
  const Vector b1 = Vector::Random(d_ff), b2 = Vector::Random(d), g = Vector::Ones(d) + Vector::Random(d) * 0.1f,
               b = Vector::Random(d);
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::f16}) {
    for (egelu::NormPlacement norm : {egelu::NormPlacement::post, egelu::NormPlacement::pre}) {
      const FF narrow(w1, b1, w2, b2, g, b, FF::Options{egelu::GeluForm::tanh, norm, 1e-5f, f});
      const FF wide(rounded(w1, f), b1, rounded(w2, f), b2, g, b, FF::Options{egelu::GeluForm::tanh, norm, 1e-5f});
      EXPECT_EQ(narrow.weight_format(), f);
      EXPECT_EQ(2 * narrow.weight_bytes(), wide.weight_bytes());
      expect_same_outputs(
          narrow, wide,
          (std::string(egelu::to_string(f)) + (norm == egelu::NormPlacement::pre ? ", pre-norm" : ", post-norm"))
              .c_str());
    }
  }
}

TEST(WeightFormats, SixteenBitGatedBlockIsTheFloatBlockOnRoundedWeights) {
  using GF = egelu::GatedFeedForward<float>;
  const Eigen::Index d = 96, d_ff = 264;
  const Weights gate = Weights::Random(d_ff, d) * 0.3f, up = Weights::Random(d_ff, d) * 0.2f,
                down = Weights::Random(d, d_ff) * 0.05f;
  const Vector norm = Vector::Ones(d) + Vector::Random(d) * 0.1f;
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::f16}) {
    for (egelu::GatedForm form : {egelu::GatedForm::swiglu, egelu::GatedForm::geglu}) {
      const GF narrow(gate, up, down, norm, GF::Options{form, 1e-5f, f});
      const GF wide(rounded(gate, f), rounded(up, f), rounded(down, f), norm, GF::Options{form, 1e-5f});
      EXPECT_EQ(narrow.weight_format(), f);
      expect_same_outputs(narrow, wide, egelu::to_string(f));
    }
  }
}

TEST(WeightFormats, WeightsBeyondHalfsRangeAndDoubleFormatsAreRefused) {
  using FF = egelu::FeedForward<float>;
  Weights w1 = Weights::Ones(8, 4);
  w1(3, 2) = 1e5f;
  try {
    FF(w1, Vector::Zero(8), Weights::Ones(4, 8), Vector::Zero(4), Vector::Ones(4), Vector::Zero(4),
       FF::Options{egelu::GeluForm::tanh, egelu::NormPlacement::post, 1e-5f, WeightFormat::f16});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("W1: the value 100000 at (3, 2) is beyond float16's range"), std::string::npos)
        << e.what();
  }
  // bfloat16 has float's range: the same weights fit
  EXPECT_NO_THROW(FF(w1, Vector::Zero(8), Weights::Ones(4, 8), Vector::Zero(4), Vector::Ones(4), Vector::Zero(4),
                     FF::Options{egelu::GeluForm::tanh, egelu::NormPlacement::post, 1e-5f, WeightFormat::bf16}));
  using FD = egelu::FeedForward<double>;
  const FD::Weights w = FD::Weights::Ones(8, 4), v = FD::Weights::Ones(4, 8);
  EXPECT_THROW(FD(w, FD::Vector::Zero(8), v, FD::Vector::Zero(4), FD::Vector::Ones(4), FD::Vector::Zero(4),
                  FD::Options{egelu::GeluForm::tanh, egelu::NormPlacement::post, 1e-5, WeightFormat::bf16}),
               std::invalid_argument);
  EXPECT_THROW(FF(w1, Vector::Zero(8), Weights::Ones(4, 8), Vector::Zero(4), Vector::Ones(4), Vector::Zero(4),
                  FF::Options{egelu::GeluForm::tanh, egelu::NormPlacement::post, 1e-5f, WeightFormat::f64}),
               std::invalid_argument);
}

}  // namespace
