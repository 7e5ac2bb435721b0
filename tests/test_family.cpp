// SiLU, QuickGELU and swish (x sigmoid(alpha x)) and their derivatives: accuracy
// against quad precision over the whole range (the far negative tail, where
// x / (1 + e^-x) must not become -inf / inf, included), special values in lanes and
// the scalar tail, lanes against the scalar path bit for bit, ONNX Swish's
// definition, and the dense, Tensor and thread-pool forms. The sample counts and windows
// shrink with EGELU_TEST_SAMPLE_DIVISOR (test_scale.hpp).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "accuracy_sweep.hpp"
#include "checks.hpp"
#include "random_inputs.hpp"
#include "test_scale.hpp"

namespace {

using checks::Form;

// Where float packets have double twins (x86) float results run in double and round
// once: the README's bound there is 1 ulp (measured: the final rounding, 0.5 and a hair).
constexpr bool kFloatInDouble = egelu::internal::has_double_twin<Eigen::internal::packet_traits<float>::type>;
constexpr double kFloatUlp = kFloatInDouble ? 1.0 : 2.0, kDoubleUlp = 2.0;
// Derivatives, bounded relative to 1 + |f'| (they cross zero): the final rounding in double.
constexpr double kFloatGrad = kFloatInDouble ? 3.0e-8 : 1.5e-7, kDoubleGrad = 5e-16;

using random_inputs::log_uniform;
using random_inputs::uniform;

template <typename T, typename Op>
void expect_within(const std::string& what, const std::vector<T>& x, Op op, accuracy::Reference exact, double ulp,
                   double relative_one) {
  const accuracy::Worst w = accuracy::measure(x, op, exact);
  std::printf("  %-44s n=%-8ld max %.3f ulp at %.9g, max rel(1+|y|) %.3g\n", what.c_str(), w.count, w.ulp, w.at,
              w.relative_one);
  EXPECT_LE(w.ulp, ulp) << what << " worst at x = " << w.at;
  EXPECT_LE(w.relative_one, relative_one) << what;
}

// Every float in windows around 0, in the bulk, at the zero of the derivative and at the
// edge where results leave the normal range, and random floats over the whole range.
template <typename Op>
void float_accuracy(const char* name, Op op, accuracy::Reference exact, float tail_edge) {
  const auto run = [&](const char* region, const std::vector<float>& x) {
    expect_within(std::string(name) + " " + region, x, op, exact, kFloatUlp, 2e-6);
  };
  run("around 0", test_scale::window(accuracy::every_float(0x1p-12f, 0x1.1p-12f)));
  run("around -0", test_scale::window(accuracy::every_float(-0x1.1p-12f, -0x1p-12f)));
  run("bulk [-1.3,-1.27]", test_scale::window(accuracy::every_float(-1.3f, -1.27f)));
  run("bulk [2,2.04]", test_scale::window(accuracy::every_float(2.f, 2.04f)));
  run("tail edge", test_scale::window(accuracy::every_float(tail_edge - 0.3f, tail_edge)));
  run("random [-120,20]", uniform<float>(test_scale::samples(1'000'000), -120.f, 20.f, 1));
  run("random [-8,8]", uniform<float>(test_scale::samples(300'000), -8.f, 8.f, 2));
  run("random log-uniform to 1e30", log_uniform<float>(test_scale::samples(300'000), 0x1p-40f, 1e30f, 3));
  run("random tiny, down to 2^-125", log_uniform<float>(test_scale::samples(100'000), 0x1p-125f, 0x1p-10f, 4));
}

template <typename Op>
void double_accuracy(const char* name, Op op, accuracy::Reference exact) {
  const auto run = [&](const char* region, const std::vector<double>& x) {
    expect_within(std::string(name) + " " + region, x, op, exact, kDoubleUlp, 1e-14);
  };
  run("random [-760,20]", uniform<double>(test_scale::samples(300'000), -760., 20., 5));
  run("random [-8,8]", uniform<double>(test_scale::samples(200'000), -8., 8., 6));
  run("random log-uniform to 1e300", log_uniform<double>(test_scale::samples(200'000), 0x1p-60, 1e300, 7));
  run("random tiny, down to 2^-1021", log_uniform<double>(test_scale::samples(100'000), 0x1p-1021, 0x1p-10, 8));
}

TEST(Family, SiluAccuracy) {
  // silu(x) = x e^x / (1 + e^x) leaves the normal range near x = -91.9 (float), -715 (double).
  float_accuracy("silu float", egelu::silu_op<float>(), reference::silu, -91.6f);
  double_accuracy("silu double", egelu::silu_op<double>(), reference::silu);
}

TEST(Family, QuickGeluAccuracy) {
  float_accuracy("quick_gelu float", egelu::quick_gelu_op<float>(), reference::quick_gelu_float, -53.4f);
  double_accuracy("quick_gelu double", egelu::quick_gelu_op<double>(), reference::quick_gelu_double);
}

TEST(Family, Gradients) {
  for (double lo : {-120.0, -6.0}) {
    const auto xf = uniform<float>(test_scale::samples(300'000), float(lo), 8.f, 9);
    const auto xd = uniform<double>(test_scale::samples(200'000), lo, 8., 10);
    expect_within("silu grad float", xf, egelu::silu_grad_op<float>(), reference::silu_grad, 1e300, kFloatGrad);
    expect_within("quick_gelu grad float", xf, egelu::quick_gelu_grad_op<float>(), reference::quick_gelu_grad_float,
                  1e300, kFloatGrad);
    expect_within("silu grad double", xd, egelu::silu_grad_op<double>(), reference::silu_grad, 1e300, kDoubleGrad);
    expect_within("quick_gelu grad double", xd, egelu::quick_gelu_grad_op<double>(), reference::quick_gelu_grad_double,
                  1e300, kDoubleGrad);
  }
  // around the zero of silu' (x = -1.2785), every float
  expect_within("silu grad float at its zero", test_scale::window(accuracy::every_float(-1.29f, -1.27f)),
                egelu::silu_grad_op<float>(), reference::silu_grad, 1e300, kFloatGrad);
}

// ONNX Swish (opset 24): y = x * Sigmoid(alpha * x), alpha a float attribute (default 1).
// alpha = 1 and 1.702 are silu and quick_gelu bit for bit (one kernel); other alphas,
// negative ones included, against the definition in quad precision.
TEST(Family, SwishIsOnnxSwish) {
  const std::vector<float> x = uniform<float>(test_scale::samples(200'000), -150.f, 30.f, 11);
  const Eigen::Map<const Eigen::ArrayXf> xs(x.data(), Eigen::Index(x.size()));
  const Eigen::ArrayXf silu = egelu::silu(xs), swish_1 = egelu::swish(xs, 1.f);
  EXPECT_EQ(0, std::memcmp(silu.data(), swish_1.data(), sizeof(float) * x.size()));
  const Eigen::ArrayXf quick = egelu::quick_gelu(xs), swish_1702 = egelu::swish(xs, 1.702f);
  EXPECT_EQ(0, std::memcmp(quick.data(), swish_1702.data(), sizeof(float) * x.size()));

  for (float alpha : {0.5f, 2.f, 0.01f, 37.f, -1.f, -0.25f, 0x1p-24f, -0x1p24f}) {
    const Eigen::ArrayXf y = Eigen::ArrayXf(egelu::swish(xs, alpha));
    double worst = 0, at = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const reference::quad e = reference::swish(reference::quad(x[i]), reference::quad(alpha));
      if (!reference::is_normal_result<float>(e)) continue;
      const double u = reference::ulp_error(y(Eigen::Index(i)), e);
      if (u > worst) worst = u, at = x[i];
    }
    std::printf("  swish alpha %-10g max %.3f ulp at %.9g\n", double(alpha), worst, at);
    EXPECT_LE(worst, kFloatUlp) << "alpha " << alpha << " at x = " << at;
  }
  const std::vector<double> xd = uniform<double>(test_scale::samples(100'000), -800., 30., 12);
  const Eigen::Map<const Eigen::ArrayXd> xds(xd.data(), Eigen::Index(xd.size()));
  for (double alpha : {0.5, -3.0, 1e-5}) {
    const Eigen::ArrayXd y = Eigen::ArrayXd(egelu::swish(xds, alpha));
    double worst = 0;
    for (std::size_t i = 0; i < xd.size(); ++i) {
      const reference::quad e = reference::swish(reference::quad(xd[i]), reference::quad(alpha));
      if (reference::is_normal_result<double>(e)) worst = std::max(worst, reference::ulp_error(y(Eigen::Index(i)), e));
    }
    EXPECT_LE(worst, kDoubleUlp) << "double alpha " << alpha;
  }
}

TEST(Family, SwishRefusesAlphaOutOfRange) {
  const Eigen::ArrayXf x = Eigen::ArrayXf::Ones(4);
  for (float alpha :
       {0.f, 1e-9f, -1e9f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    try {
      const Eigen::ArrayXf y = egelu::swish(x, alpha);
      ADD_FAILURE() << "no exception for alpha " << alpha;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("egelu::swish: alpha"), std::string::npos) << e.what();
    }
  }
}

// NaN -> NaN, +inf -> +inf, -inf -> -0, +-0 -> +-0, +-max -> x or -0, in every lane and the tail.
template <typename T, typename Op>
void check_specials(Op op) {
  using L = std::numeric_limits<T>;
  const T values[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), -T(0), L::max(), -L::max(), L::lowest()};
  for (std::size_t k = 0; k < 8; ++k) {
    // the value in every position of a vectorized run of 37, the last ones being the scalar tail
    for (Eigen::Index at = 0; at < 37; ++at) {
      Eigen::Array<T, Eigen::Dynamic, 1> x = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(37, T(0.5));
      x(at) = values[k];
      Eigen::Array<T, Eigen::Dynamic, 1> y = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(37, L::quiet_NaN());
      y = x.unaryExpr(op);
      const T v = values[k], r = y(at);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(r)) << "at " << at;
      } else if (v > 0) {
        EXPECT_EQ(r, v) << "x = " << v << " at " << at;
      } else if (v < 0) {
        EXPECT_EQ(r, T(0)) << "x = " << v << " at " << at;
        EXPECT_TRUE(std::signbit(r)) << "x = " << v << " must give -0, at " << at;
      } else {
        EXPECT_EQ(r, T(0));
        EXPECT_EQ(std::signbit(r), std::signbit(v)) << "the sign of zero, at " << at;
      }
    }
  }
}

template <typename T, typename Grad>
void check_grad_specials(Grad grad) {
  using L = std::numeric_limits<T>;
  Eigen::Array<T, Eigen::Dynamic, 1> x = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(21, T(0.5));
  x.head(5) << L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), L::max();
  const Eigen::Array<T, Eigen::Dynamic, 1> y = x.unaryExpr(grad);
  EXPECT_TRUE(std::isnan(y(0)));
  EXPECT_EQ(y(1), T(1));
  EXPECT_EQ(y(2), T(0));
  EXPECT_EQ(y(3), T(0.5));
  EXPECT_EQ(y(4), T(1));
  EXPECT_EQ(y(20), grad(T(0.5)));  // the scalar tail
}

TEST(Family, SpecialValues) {
  check_specials<float>(egelu::silu_op<float>());
  check_specials<double>(egelu::silu_op<double>());
  check_specials<float>(egelu::quick_gelu_op<float>());
  check_specials<double>(egelu::quick_gelu_op<double>());
  check_specials<float>(egelu::swish_op<float>(3.f));
  check_specials<double>(egelu::swish_op<double>(0.125));
  check_grad_specials<float>(egelu::silu_grad_op<float>());
  check_grad_specials<double>(egelu::silu_grad_op<double>());
  check_grad_specials<float>(egelu::quick_gelu_grad_op<float>());
  check_grad_specials<double>(egelu::quick_gelu_grad_op<double>());
}

// A negative alpha reflects: swish_-a(-inf) = -inf * sigmoid(+inf) = -inf, swish_-a(+inf) = +0.
TEST(Family, SwishNegativeAlphaSpecialValues) {
  Eigen::ArrayXf x(5);
  x << -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(), 0.f, -0.f,
      std::numeric_limits<float>::quiet_NaN();
  const Eigen::ArrayXf y = egelu::swish(x, -1.f);
  EXPECT_EQ(y(0), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(y(1), 0.f);
  EXPECT_FALSE(std::signbit(y(1)));
  EXPECT_EQ(y(2), 0.f);
  EXPECT_FALSE(std::signbit(y(2)));
  EXPECT_TRUE(std::signbit(y(3)));
  EXPECT_TRUE(std::isnan(y(4)));
}

// Every lane of a vectorized loop gives the scalar path's bits.
template <typename T, typename Op>
void check_lanes(Op op, T lo, T hi) {
  const std::vector<T> v = uniform<T>(100'003, lo, hi, 13);
  const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> x(v.data(), Eigen::Index(v.size()));
  Eigen::Array<T, Eigen::Dynamic, 1> y = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(x.size(), T(7));
  y = x.unaryExpr(op);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const T s = op(x(i));
    ASSERT_EQ(0, std::memcmp(&s, &y(i), sizeof(T))) << "x = " << x(i) << ": lane " << y(i) << ", scalar " << s;
  }
}

TEST(Family, LanesAgreeWithScalarPath) {
  EXPECT_TRUE(bool(Eigen::internal::functor_traits<egelu::silu_op<float>>::PacketAccess));
  EXPECT_TRUE(bool(Eigen::internal::functor_traits<egelu::swish_op<double>>::PacketAccess));
  check_lanes<float>(egelu::silu_op<float>(), -120.f, 30.f);
  check_lanes<double>(egelu::silu_op<double>(), -800., 30.);
  check_lanes<float>(egelu::quick_gelu_op<float>(), -70.f, 30.f);
  check_lanes<double>(egelu::quick_gelu_op<double>(), -500., 30.);
  check_lanes<float>(egelu::swish_op<float>(-0.7f), -200.f, 200.f);
  check_lanes<float>(egelu::silu_grad_op<float>(), -120.f, 30.f);
  check_lanes<double>(egelu::quick_gelu_grad_op<double>(), -500., 30.);
  // the half packet of AVX-512 and other narrower packets: fixed-size objects
  Eigen::Array<float, 8, 1> small = Eigen::Array<float, 8, 1>::LinSpaced(-90.f, 4.f), out = egelu::silu(small);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out(i), egelu::silu_op<float>()(small(i)));
}

TEST(Family, DenseForms) {
  const Eigen::MatrixXf m = Eigen::MatrixXf::Random(13, 7) * 6.f;
  const Eigen::MatrixXf s = egelu::silu(m), q = egelu::quick_gelu(m.transpose()).transpose();
  const Eigen::MatrixXf g = egelu::silu_grad(m.array()).matrix(), w = egelu::swish(2.f * m, 0.5f);
  checks::expect_coefficientwise(Form::silu, m, s);
  checks::expect_coefficientwise(Form::quick_gelu, m, q);
  checks::expect_coefficientwise(Form::silu_grad, m, g);
  const Eigen::MatrixXf m2 = 2.f * m;
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    EXPECT_LE(reference::ulp_error(w(i), reference::swish(reference::quad(m2(i)), 0.5)), kFloatUlp);
  }
  // backward: dy * f'(x), and a shape mismatch throws naming both shapes
  const Eigen::MatrixXf dy = Eigen::MatrixXf::Random(13, 7);
  const Eigen::MatrixXf dx = egelu::silu_backward(dy, m), dq = egelu::quick_gelu_backward(dy, m);
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    EXPECT_EQ(dx(i), dy(i) * egelu::silu_grad_op<float>()(m(i)));
    EXPECT_EQ(dq(i), dy(i) * egelu::quick_gelu_grad_op<float>()(m(i)));
  }
  try {
    const Eigen::MatrixXf bad = egelu::silu_backward(dy, m.transpose());
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "egelu::silu_backward: dy is 13x7 but x is 7x13");
  }
}

TEST(Family, TensorFormsAndThreadPool) {
  Eigen::Tensor<float, 3> x(4, 50, 33);
  x.setRandom();
  x = (x - 0.5f) * 40.f;
  Eigen::Tensor<float, 3> s = egelu::silu(x), q = egelu::quick_gelu(x), w = egelu::swish(x, -2.f);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    checks::expect_close(Form::silu, x.data()[i], s.data()[i]);
    checks::expect_close(Form::quick_gelu, x.data()[i], q.data()[i]);
  }
  Eigen::ThreadPool pool(3);
  const Eigen::ThreadPoolDevice device(&pool, 3);
  Eigen::Tensor<float, 3> on_pool(4, 50, 33);
  for (int f = 0; f < 4; ++f) {
    on_pool.setConstant(std::numeric_limits<float>::quiet_NaN());
    const Eigen::Tensor<float, 3>* expected = nullptr;
    Eigen::Tensor<float, 3> g;
    if (f == 0) on_pool.device(device) = egelu::silu(x), expected = &s;
    if (f == 1) on_pool.device(device) = egelu::quick_gelu(x), expected = &q;
    if (f == 2) on_pool.device(device) = egelu::swish(x, -2.f), expected = &w;
    if (f == 3) {
      g = egelu::silu_grad(x);
      on_pool.device(device) = egelu::silu_grad(x);
      expected = &g;
    }
    EXPECT_EQ(0, std::memcmp(on_pool.data(), expected->data(), sizeof(float) * std::size_t(x.size()))) << f;
  }
  Eigen::Tensor<float, 3> dy(4, 50, 33);
  dy.setRandom();
  const Eigen::Tensor<float, 3> dx = egelu::silu_backward(dy, x);
  for (Eigen::Index i = 0; i < x.size(); ++i)
    EXPECT_EQ(dx.data()[i], dy.data()[i] * egelu::silu_grad_op<float>()(x.data()[i]));
  try {
    const Eigen::Tensor<float, 3> bad = egelu::quick_gelu_backward(
        dy.slice(Eigen::array<Eigen::Index, 3>{0, 0, 0}, Eigen::array<Eigen::Index, 3>{4, 50, 32}), x);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "egelu::quick_gelu_backward: dy is [4, 50, 32] but x is [4, 50, 33]");
  }
}

// The opt-in fast SiLU: float arithmetic alone, within 4 ulp over the whole range, the
// default's special values, lanes = scalar; half and bfloat16 through it, double the default.
TEST(Family, FastSiluWithinItsBound) {
  const auto run = [](const char* region, const std::vector<float>& x) {
    expect_within(std::string("fast::silu float ") + region, x, egelu::fast::silu_op<float>(), reference::silu, 4.0,
                  2e-6);
  };
  run("bulk [-1.3,-1.27]", test_scale::window(accuracy::every_float(-1.3f, -1.27f)));
  run("bulk [2,2.04]", test_scale::window(accuracy::every_float(2.f, 2.04f)));
  run("tail edge", test_scale::window(accuracy::every_float(-91.9f, -91.6f)));
  run("random [-120,20]", uniform<float>(test_scale::samples(1'000'000), -120.f, 20.f, 21));
  run("random log-uniform to 1e30", log_uniform<float>(test_scale::samples(300'000), 0x1p-40f, 1e30f, 22));
  run("random tiny, down to 2^-125", log_uniform<float>(test_scale::samples(100'000), 0x1p-125f, 0x1p-10f, 23));
  check_specials<float>(egelu::fast::silu_op<float>());
  check_lanes<float>(egelu::fast::silu_op<float>(), -120.f, 30.f);
  EXPECT_TRUE(bool(Eigen::internal::functor_traits<egelu::fast::silu_op<float>>::PacketAccess));
  EXPECT_LT(int(Eigen::internal::functor_traits<egelu::fast::silu_op<float>>::Cost),
            int(Eigen::internal::functor_traits<egelu::silu_op<float>>::Cost));
  // double: the default kernel, bit for bit
  const std::vector<double> xd = uniform<double>(test_scale::samples(100'000), -800., 30., 24);
  const Eigen::Map<const Eigen::ArrayXd> xds(xd.data(), Eigen::Index(xd.size()));
  const Eigen::ArrayXd fast_d = egelu::fast::silu(xds), default_d = egelu::silu(xds);
  EXPECT_EQ(0, std::memcmp(fast_d.data(), default_d.data(), sizeof(double) * xd.size()));
  // half: the float result rounded once
  Eigen::Array<Eigen::half, Eigen::Dynamic, 1> h(64);
  for (Eigen::Index i = 0; i < h.size(); ++i) h(i) = Eigen::half(float(i) / 4 - 10);
  const Eigen::Array<Eigen::half, Eigen::Dynamic, 1> fh = egelu::fast::silu(h);
  for (Eigen::Index i = 0; i < h.size(); ++i) {
    EXPECT_EQ(float(fh(i)), float(Eigen::half(egelu::fast::silu_op<float>()(float(h(i))))));
  }
  // and it is the fast kernel: some float results differ from the default's
  const Eigen::ArrayXf xf = Eigen::ArrayXf::LinSpaced(1001, -20.f, 20.f);
  EXPECT_FALSE(Eigen::ArrayXf(egelu::fast::silu(xf)).cwiseEqual(Eigen::ArrayXf(egelu::silu(xf))).all());
}

}  // namespace
