// Blocks holding bfloat16 or half weights against the float block made from the same
// weights rounded here (to nearest even, by the formats' definitions): the 16-bit block
// widens exactly and sums in float, so its results are the float block's bits, for any
// number of tokens and threads. A weight beyond half's range is an error naming it.
// Blocks holding Q8_0 or Q4_0 weights likewise against the float block on the weights
// quantized and dequantized here (ggml_reference.hpp): the kernels widen q d exactly and
// keep the float kernels' order of sums, so these are the float block's bits too.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/moe_feed_forward.hpp>
#include <unsupported/Eigen/CXX11/Tensor>

#include "ggml_reference.hpp"

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
  Eigen::ThreadPool pool_2(2), pool_3(3);
  const Eigen::ThreadPoolDevice devices[] = {{&pool_2, 2}, {&pool_3, 3}};
  for (Eigen::Index tokens : {1, 2, 9, 33, 192, 300}) {  // 192, 300: tokens split between threads
    const Matrix x = Matrix::Random(block.d_model(), tokens) * 2.f;
    Matrix want = Matrix::Constant(x.rows(), x.cols(), NAN);
    reference.forward(x, want);
    for (int threads : {1, 2, 3}) {
      Matrix y = Matrix::Constant(x.rows(), x.cols(), NAN);
      if (threads == 1) {
        block.forward(x, y);
      } else {
        block.forward(x, y, devices[threads - 2]);
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

// Weights with the blocks the specification singles out: a row of zeros, a row whose
// largest magnitude is negative, a row of .5 steps at d = 1, and a block of tiny weights.
Weights with_edge_blocks(Weights w) {
  w.row(0).setZero();
  for (Eigen::Index j = 0; j < w.cols(); ++j) {
    w(1, j) = -std::fabs(w(1, j)) * (j % 32 == 7 ? 3.f : 1.f);
    w(2, j) = j % 32 == 0 ? 127.f / 64 : float(j % 17 - 8) / 128;
  }
  w.block(3, 0, 1, 32) *= 1e-6f;
  return w;
}

// Bytes a block of 32 weights takes (ggml's block_q8_0 and block_q4_0; MXFP4's 16 bytes of
// codes and its scale).
std::size_t block_bytes(WeightFormat f) { return f == WeightFormat::q8_0 ? 34 : f == WeightFormat::q4_0 ? 18 : 17; }

TEST(WeightFormats, BlockFormatFeedForwardIsTheFloatBlockOnDequantizedWeights) {
  using FF = egelu::FeedForward<float>;
  const Eigen::Index d = 96, d_ff = 416;  // d_ff: not a multiple of any kernel's rows
  const Weights w1 = with_edge_blocks(Weights::Random(d_ff, d) * 0.3f),
                w2 = with_edge_blocks(Weights::Random(d, d_ff) * 0.05f);
  const Vector b1 = Vector::Random(d_ff), b2 = Vector::Random(d), g = Vector::Ones(d) + Vector::Random(d) * 0.1f,
               b = Vector::Random(d);
  for (WeightFormat f : {WeightFormat::q8_0, WeightFormat::q4_0, WeightFormat::mxfp4}) {
    for (egelu::NormPlacement norm : {egelu::NormPlacement::post, egelu::NormPlacement::pre}) {
      const FF narrow(w1, b1, w2, b2, g, b, FF::Options{egelu::GeluForm::exact, norm, 1e-5f, f});
      const FF wide(ggml_reference::dequantized(w1, f), b1, ggml_reference::dequantized(w2, f), b2, g, b,
                    FF::Options{egelu::GeluForm::exact, norm, 1e-5f});
      EXPECT_EQ(narrow.weight_format(), f);
      // 34, 18 or 17 bytes a block of 32 weights, against float's 128.
      EXPECT_EQ(narrow.weight_bytes() * 128, wide.weight_bytes() * block_bytes(f));
      expect_same_outputs(narrow, wide, egelu::to_string(f));
    }
  }
}

TEST(WeightFormats, BlockFormatGatedBlockIsTheFloatBlockOnDequantizedWeights) {
  using GF = egelu::GatedFeedForward<float>;
  const Eigen::Index d = 96, d_ff = 288;
  const Weights gate = with_edge_blocks(Weights::Random(d_ff, d) * 0.3f), up = Weights::Random(d_ff, d) * 0.2f,
                down = with_edge_blocks(Weights::Random(d, d_ff) * 0.05f);
  const Vector norm = Vector::Ones(d) + Vector::Random(d) * 0.1f;
  for (WeightFormat f : {WeightFormat::q8_0, WeightFormat::q4_0, WeightFormat::mxfp4}) {
    for (egelu::GatedForm form : {egelu::GatedForm::swiglu, egelu::GatedForm::geglu}) {
      const GF narrow(gate, up, down, norm, GF::Options{form, 1e-5f, f});
      const GF wide(ggml_reference::dequantized(gate, f), ggml_reference::dequantized(up, f),
                    ggml_reference::dequantized(down, f), norm, GF::Options{form, 1e-5f});
      EXPECT_EQ(narrow.weight_format(), f);
      EXPECT_EQ(narrow.weight_bytes() * 128, wide.weight_bytes() * block_bytes(f));
      expect_same_outputs(narrow, wide, egelu::to_string(f));
    }
  }
}

// An input dimension that is not a multiple of 32 is refused naming the matrix and its
// shape (ggml refuses it too); a weight that is not finite cannot be quantized; double
// blocks hold no block format.
TEST(WeightFormats, BlockFormatsRefuseWhatTheyCannotHold) {
  using FF = egelu::FeedForward<float>;
  using GF = egelu::GatedFeedForward<float>;
  const auto message = [](const auto& make) {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  const std::string ff = message([] {
    FF(Weights::Ones(64, 40), Vector::Zero(64), Weights::Ones(40, 64), Vector::Zero(40), Vector::Ones(40),
       Vector::Zero(40), FF::Options{egelu::GeluForm::tanh, egelu::NormPlacement::post, 1e-5f, WeightFormat::q8_0});
  });
  EXPECT_NE(
      ff.find("W1: its input dimension, 40 (the matrix is 64 x 40), is not a whole number of q8_0's blocks of 32"),
      std::string::npos)
      << ff;
  const std::string down = message([] {
    GF(Weights::Ones(64, 40), Weights::Ones(64, 40), Weights::Ones(40, 64), Vector::Ones(40),
       GF::Options{egelu::GatedForm::swiglu, 1e-5f, WeightFormat::q4_0});
  });
  EXPECT_NE(down.find("gate: its input dimension, 40 (the matrix is 64 x 40)"), std::string::npos) << down;
  const std::string down_only = message([] {
    GF(Weights::Ones(40, 64), Weights::Ones(40, 64), Weights::Ones(64, 40), Vector::Ones(64),
       GF::Options{egelu::GatedForm::swiglu, 1e-5f, WeightFormat::q4_0});
  });
  EXPECT_NE(down_only.find("down: its input dimension, 40 (the matrix is 64 x 40)"), std::string::npos) << down_only;
  Weights w = Weights::Ones(64, 64);
  w(5, 33) = NAN;
  const std::string nan = message([&] {
    GF(w, Weights::Ones(64, 64), Weights::Ones(64, 64), Vector::Ones(64),
       GF::Options{egelu::GatedForm::swiglu, 1e-5f, WeightFormat::q8_0});
  });
  EXPECT_NE(nan.find("gate: the value nan at (5, 33) cannot be quantized to q8_0"), std::string::npos) << nan;
  w(5, 33) = 1e6f;  // Q4_0's d = 1e6 / 8 is beyond half
  const std::string scale = message([&] {
    GF(w, Weights::Ones(64, 64), Weights::Ones(64, 64), Vector::Ones(64),
       GF::Options{egelu::GatedForm::swiglu, 1e-5f, WeightFormat::q4_0});
  });
  EXPECT_NE(scale.find("gate: the block of 32 weights at (5, 32) to (5, 63) has a scale beyond q4_0's"),
            std::string::npos)
      << scale;
  using GD = egelu::GatedFeedForward<double>;
  const GD::Weights wd = GD::Weights::Ones(64, 64);
  const std::string dbl = message([&] {
    GD(wd, wd, wd, GD::Vector::Ones(64), GD::Options{egelu::GatedForm::swiglu, 1e-5, WeightFormat::q8_0});
  });
  EXPECT_NE(dbl.find("GatedFeedForward<double> cannot hold q8_0 weights"), std::string::npos) << dbl;
}

// With q16_0 inputs (opt-in) a block in a block format computes on its inputs rounded to
// 16-bit integers a group of 32 (each off by at most max|x| / 65534 of its group): against
// the same block with float inputs, its outputs differ by about 10^-5 of their scale, far
// below 10^-3 (a wrong pair, offset or scale is off by the scale itself); the same bits on
// 1, 2 and 3 threads; every output written.
template <typename Block>
void expect_near_float_inputs(const Block& block, const Block& reference, const std::string& what) {
  for (Eigen::Index tokens : {1, 2, 9, 33, 300}) {
    const Matrix x = Matrix::Random(block.d_model(), tokens) * 2.f;
    Matrix want = Matrix::Constant(x.rows(), x.cols(), NAN), one = want;
    reference.forward(x, want);
    block.forward(x, one);
    const float scale = (want - x).cwiseAbs().maxCoeff(), error = (one - want).cwiseAbs().maxCoeff();
    EXPECT_LE(error, 1e-3f * scale) << what << ", " << tokens << " tokens";  // (false for a NaN)
    EXPECT_GT(error, 0.f) << what << ": no rounding seen, the inputs are not quantized";
    for (int threads : {2, 3}) {
      Eigen::ThreadPool pool(threads);
      const Eigen::ThreadPoolDevice device(&pool, threads);
      Matrix y = Matrix::Constant(x.rows(), x.cols(), NAN);
      block.forward(x, y, device);
      EXPECT_TRUE(same_bits(y, one)) << what << ", " << tokens << " tokens, " << threads << " threads";
    }
  }
}

TEST(WeightFormats, Q16InputsAreTheFloatInputsBlockWithinTheirRounding) {
  using FF = egelu::FeedForward<float>;
  using GF = egelu::GatedFeedForward<float>;
  const Eigen::Index d = 96, d_ff = 416;
  const Weights w1 = with_edge_blocks(Weights::Random(d_ff, d) * 0.3f),
                w2 = with_edge_blocks(Weights::Random(d, d_ff) * 0.05f), up = Weights::Random(d_ff, d) * 0.2f;
  const Vector b1 = Vector::Random(d_ff), b2 = Vector::Random(d), g = Vector::Ones(d) + Vector::Random(d) * 0.1f,
               b = Vector::Random(d);
  for (WeightFormat f : {WeightFormat::q8_0, WeightFormat::q4_0}) {
    const std::string format = egelu::to_string(f);
    for (egelu::NormPlacement norm : {egelu::NormPlacement::post, egelu::NormPlacement::pre}) {
      FF::Options o{egelu::GeluForm::tanh, norm, 1e-5f, f};
      const FF reference(w1, b1, w2, b2, g, b, o);
      o.inputs = egelu::InputFormat::q16_0;
      const FF block(w1, b1, w2, b2, g, b, o);
      EXPECT_EQ(block.input_format(), egelu::InputFormat::q16_0);
      EXPECT_EQ(reference.input_format(), egelu::InputFormat::f32);
      expect_near_float_inputs(block, reference, "FeedForward " + format);
    }
    for (egelu::GatedForm form : {egelu::GatedForm::swiglu, egelu::GatedForm::geglu_exact}) {
      const GF reference(w1, up, w2, g, GF::Options{form, 1e-5f, f});
      const GF block(w1, up, w2, g, GF::Options{form, 1e-5f, f, egelu::InputFormat::q16_0});
      expect_near_float_inputs(block, reference, "GatedFeedForward " + format);
    }
    // A mixture of experts (4 experts of 64, top 2, and a shared expert of 96): every expert's
    // input and hidden layer quantized, the router reading floats.
    using MF = egelu::MoeFeedForward<float>;
    const Eigen::Index experts = 4, f_e = 64, f_s = 96;
    const Weights router = Weights::Random(experts, d) * 0.5f, gates = Weights::Random(experts * f_e, d) * 0.3f,
                  ups = Weights::Random(experts * f_e, d) * 0.2f, downs = Weights::Random(experts * d, f_e) * 0.1f,
                  shared_gate = Weights::Random(f_s, d) * 0.3f, shared_up = Weights::Random(f_s, d) * 0.2f,
                  shared_down = Weights::Random(d, f_s) * 0.1f, none(0, d);
    MF::Options mo{egelu::GatedForm::swiglu, 1e-5f, f, {}};
    const MF reference(router, gates, ups, downs, g, Vector(), shared_gate, shared_up, shared_down, none, mo);
    mo.inputs = egelu::InputFormat::q16_0;
    const MF block(router, gates, ups, downs, g, Vector(), shared_gate, shared_up, shared_down, none, mo);
    EXPECT_EQ(block.input_format(), egelu::InputFormat::q16_0);
    expect_near_float_inputs(block, reference, "MoeFeedForward " + format);
  }
  // Float and 16-bit weights have no integer kernels: refused by name.
  try {
    GF(w1, up, w2, g, GF::Options{egelu::GatedForm::swiglu, 1e-5f, WeightFormat::bf16, egelu::InputFormat::q16_0});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("egelu::GatedFeedForward: q16_0 inputs need q8_0 or q4_0 weights (integer "
                                         "products), not bf16"),
              std::string::npos)
        << e.what();
  }
  FF::Options o{egelu::GeluForm::tanh, egelu::NormPlacement::post, 1e-5f, WeightFormat::f32};
  o.inputs = egelu::InputFormat::q16_0;
  EXPECT_THROW(FF(w1, b1, w2, b2, g, b, o), std::invalid_argument);
  o.weights = WeightFormat::mxfp4;  // (no integer kernel either)
  try {
    FF(w1, b1, w2, b2, g, b, o);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("q16_0 inputs need q8_0 or q4_0 weights (integer products), not mxfp4"),
              std::string::npos)
        << e.what();
  }
  EXPECT_STREQ(egelu::to_string(WeightFormat::mxfp4), "mxfp4");
  egelu::MoeFeedForward<float>::Options mo{
      egelu::GatedForm::swiglu, 1e-5f, WeightFormat::f16, {}, egelu::InputFormat::q16_0};
  try {
    egelu::MoeFeedForward<float>(Weights::Random(4, d), Weights::Random(4 * 64, d), Weights::Random(4 * 64, d),
                                 Weights::Random(4 * d, 64), g, mo);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("egelu::MoeFeedForward: q16_0 inputs need q8_0 or q4_0 weights (integer "
                                         "products), not f16"),
              std::string::npos)
        << e.what();
  }
  EXPECT_STREQ(egelu::to_string(egelu::InputFormat::q16_0), "q16_0");
}

}  // namespace
