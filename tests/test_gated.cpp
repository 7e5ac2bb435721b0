// The gated products swiglu, geglu and geglu_exact: act(gate) * up against quad
// precision on dense and Tensor operands (and gpt-oss's clamped SwiGLU, its functor), shape errors naming both shapes,
// and H.noalias() = swiglu(Wg * X, Wu * X) writing the gate product straight into H with at most one temporary (the up
// product's) beyond what the two bare products allocate.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "checks.hpp"
#include "malloc_counter.hpp"

namespace {

using checks::Form;

constexpr bool kFloatInDouble = egelu::internal::has_double_twin<Eigen::internal::packet_traits<float>::type>;
// act(gate) rounded (within the activation's bound), then the product rounded: half an ulp more.
constexpr double kGatedUlp = (kFloatInDouble ? 1.0 : 2.0) + 0.5 + 1e-6;

template <typename Gate, typename Up, typename Out>
void expect_gated(Form act, const Gate& gate, const Up& up, const Out& out) {
  ASSERT_EQ(out.size(), gate.size());
  for (Eigen::Index i = 0; i < gate.size(); ++i) {
    const reference::quad e = checks::exact(act, reference::quad(gate(i))) * reference::quad(up(i));
    if (reference::is_normal_result<float>(e)) {
      EXPECT_LE(reference::ulp_error(out(i), e), kGatedUlp) << "gate " << gate(i) << ", up " << up(i);
    } else {
      EXPECT_LE(std::abs(double(out(i)) - double(e)), double(std::numeric_limits<float>::min()));
    }
  }
}

TEST(Gated, DenseValues) {
  const Eigen::ArrayXXf gate = Eigen::ArrayXXf::Random(37, 9) * 12.f, up = Eigen::ArrayXXf::Random(37, 9) * 3.f;
  Eigen::ArrayXXf out = Eigen::ArrayXXf::Constant(37, 9, std::numeric_limits<float>::quiet_NaN());
  out = egelu::swiglu(gate, up);
  expect_gated(Form::silu, gate, up, out);
  out = egelu::geglu(gate, up);
  expect_gated(Form::tanh, gate, up, out);
  out = egelu::geglu_exact(gate.matrix(), up.matrix()).array();
  expect_gated(Form::erf, gate, up, out);
  // lazy and fused with what surrounds it
  const Eigen::ArrayXXf scaled = 2.f * egelu::swiglu(gate - 1.f, up);
  for (Eigen::Index i = 0; i < gate.size(); ++i) {
    EXPECT_EQ(scaled(i), 2.f * (egelu::silu_op<float>()(gate(i) - 1.f) * up(i)));
  }
}

// gpt-oss's clamped SwiGLU against quad precision: quick_gelu(min(gate, 7)) (correctly rounded in
// float where float runs in double), clamp(up, -7, 7) + 1 and the product, each rounded: 1.5 ulp there.
template <typename Scalar>
void expect_clamped_swiglu(const Eigen::Array<Scalar, Eigen::Dynamic, 1>& gate,
                           const Eigen::Array<Scalar, Eigen::Dynamic, 1>& up) {
  Eigen::Array<Scalar, Eigen::Dynamic, 1> out(gate.size());
  out.setConstant(std::numeric_limits<Scalar>::quiet_NaN());
  out = gate.binaryExpr(up, egelu::clamped_swiglu_op<Scalar>());  // packets and a scalar tail
  // (quick_gelu's own bound elsewhere: 2 ulp in double, and in float without double twins)
  const double bound = std::is_same<Scalar, float>::value && kFloatInDouble ? 1.5 + 1e-6 : 3 + 1e-6;
  for (Eigen::Index i = 0; i < gate.size(); ++i) {
    const reference::quad g = std::min(reference::quad(gate(i)), reference::quad(7));
    const reference::quad u = std::max(std::min(reference::quad(up(i)), reference::quad(7)), reference::quad(-7));
    const reference::quad e = checks::exact<Scalar>(Form::quick_gelu, g) * (u + 1);
    EXPECT_EQ(out(i), egelu::clamped_swiglu_op<Scalar>()(gate(i), up(i))) << "the tail's path, gate " << gate(i);
    if (reference::is_normal_result<Scalar>(e)) {
      EXPECT_LE(reference::ulp_error(out(i), e), bound) << "gate " << gate(i) << ", up " << up(i);
    } else {
      EXPECT_LE(std::abs(double(out(i)) - double(e)), double(std::numeric_limits<Scalar>::min()))
          << "gate " << gate(i) << ", up " << up(i);
    }
  }
}

TEST(Gated, ClampedSwigluAgainstQuad) {
  std::srand(7);
  // Gates and ups well past the limit on both sides, and near it.
  const Eigen::ArrayXf gate = Eigen::ArrayXf::Random(333) * 20.f, up = Eigen::ArrayXf::Random(333) * 12.f;
  expect_clamped_swiglu<float>(gate, up);
  expect_clamped_swiglu<double>(gate.cast<double>(), up.cast<double>());
  Eigen::ArrayXf near(6), one(6);
  near << 6.9999995f, 7.f, 7.0000005f, -7.0000005f, -7.f, -6.9999995f;
  one.setConstant(1.5f);
  expect_clamped_swiglu<float>(near, one);
  expect_clamped_swiglu<float>(one, near);
  // The clamps: every gate above 7 gives the gate 7's value, every up beyond 7 the up 7's.
  const egelu::clamped_swiglu_op<float> op;
  EXPECT_EQ(op(100.f, 2.f), op(7.f, 2.f));
  EXPECT_EQ(op(3.f, 100.f), op(3.f, 7.f));
  EXPECT_EQ(op(3.f, -100.f), op(3.f, -7.f));
  EXPECT_NE(op(-100.f, 2.f), op(-7.f, 2.f));  // (no lower clamp on the gate)
  // Lazy, on dense and Tensor expressions: the functor's bits.
  const Eigen::ArrayXXf gate2 = Eigen::ArrayXXf::Random(19, 7) * 20.f, up2 = Eigen::ArrayXXf::Random(19, 7) * 12.f;
  const Eigen::ArrayXXf dense = 2.f * egelu::clamped_swiglu(gate2, up2);
  Eigen::Tensor<float, 3> tensor_gate(19, 7, 3), tensor_up(19, 7, 3);
  tensor_gate.setRandom();
  tensor_up.setRandom();
  tensor_gate = (tensor_gate - 0.5f) * 40.f;
  tensor_up = (tensor_up - 0.5f) * 24.f;
  const Eigen::Tensor<float, 3> tensor = egelu::clamped_swiglu(tensor_gate, tensor_up);
  for (Eigen::Index i = 0; i < gate2.size(); ++i) EXPECT_EQ(dense(i), 2.f * op(gate2(i), up2(i)));
  for (Eigen::Index i = 0; i < tensor.size(); ++i) {
    EXPECT_EQ(tensor.data()[i], op(tensor_gate.data()[i], tensor_up.data()[i]));
  }
  EXPECT_THROW(egelu::clamped_swiglu(gate2, up2.transpose()), std::invalid_argument);
  // Infinities end finite, never NaN: -Inf gates give -0 times up + 1; NaN stays NaN.
  constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Eigen::ArrayXf special_gate(20), special_up(20);
  special_gate << inf, -inf, inf, -inf, 1.f, 1.f, nan, 1.f, -inf, 0.f, inf, -inf, inf, -inf, 1.f, 1.f, nan, 1.f, -inf,
      0.f;
  special_up << 1.f, 1.f, inf, -inf, inf, -inf, 1.f, nan, 3.f, nan, 1.f, 1.f, inf, -inf, inf, -inf, 1.f, nan, 3.f, nan;
  Eigen::ArrayXf out = special_gate.binaryExpr(special_up, op);
  for (int half : {0, 10}) {
    EXPECT_EQ(out(half + 0), op(7.f, 1.f));
    EXPECT_TRUE(out(half + 1) == 0.f && std::signbit(out(half + 1)));  // -0 (1 + 1)
    EXPECT_EQ(out(half + 2), op(7.f, 7.f));
    EXPECT_TRUE(out(half + 3) == 0.f && !std::signbit(out(half + 3)));  // -0 (-7 + 1)
    EXPECT_EQ(out(half + 4), op(1.f, 7.f));
    EXPECT_EQ(out(half + 5), op(1.f, -7.f));
    EXPECT_TRUE(std::isnan(out(half + 6)));
    EXPECT_TRUE(std::isnan(out(half + 7)));
    EXPECT_TRUE(out(half + 8) == 0.f && std::signbit(out(half + 8)));
    EXPECT_TRUE(std::isnan(out(half + 9)));
  }
}

TEST(Gated, TensorValuesOnEveryDevice) {
  Eigen::Tensor<float, 3> gate(5, 40, 7), up(5, 40, 7);
  gate.setRandom();
  up.setRandom();
  gate = (gate - 0.5f) * 30.f;
  Eigen::Tensor<float, 3> out = egelu::swiglu(gate, up);
  for (Eigen::Index i = 0; i < gate.size(); ++i) {
    const reference::quad e = reference::silu(reference::quad(gate.data()[i])) * reference::quad(up.data()[i]);
    if (reference::is_normal_result<float>(e)) {
      EXPECT_LE(reference::ulp_error(out.data()[i], e), kGatedUlp);
    }
  }
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  Eigen::Tensor<float, 3> on_pool(5, 40, 7);
  on_pool.setConstant(std::numeric_limits<float>::quiet_NaN());
  on_pool.device(device) = egelu::swiglu(gate, up);
  EXPECT_EQ(0, std::memcmp(on_pool.data(), out.data(), sizeof(float) * std::size_t(out.size())));
  const Eigen::Tensor<float, 3> geglu = egelu::geglu(gate, up), exact = egelu::geglu_exact(gate, up);
  for (Eigen::Index i = 0; i < gate.size(); ++i) {
    EXPECT_EQ(geglu.data()[i], egelu::gelu_tanh_op<float>()(gate.data()[i]) * up.data()[i]);
    EXPECT_EQ(exact.data()[i], egelu::gelu_erf_op<float>()(gate.data()[i]) * up.data()[i]);
  }
}

TEST(Gated, ShapeMismatchThrowsNamingBoth) {
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(4, 6), b = Eigen::MatrixXf::Random(6, 4);
  const auto expect_message = [](const auto& make, const std::string& message) {
    try {
      make();
      ADD_FAILURE() << "no exception: " << message;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  };
  expect_message([&] { return Eigen::MatrixXf(egelu::swiglu(a, b)); }, "egelu::swiglu: gate is 4x6 but up is 6x4");
  expect_message([&] { return Eigen::MatrixXf(egelu::geglu(a, b)); }, "egelu::geglu: gate is 4x6 but up is 6x4");
  expect_message([&] { return Eigen::MatrixXf(egelu::geglu_exact(a, b)); },
                 "egelu::geglu_exact: gate is 4x6 but up is 6x4");
  Eigen::Tensor<float, 2> t(4, 6), u(4, 5);
  t.setRandom();
  u.setRandom();
  expect_message([&] { return Eigen::Tensor<float, 2>(egelu::swiglu(t, u)); },
                 "egelu::swiglu: gate is [4, 6] but up is [4, 5]");
  // inside the fused assignment: the product's own operands
  Eigen::MatrixXf h(4, 4);
  Eigen::MatrixXf h2(4, 6);
#ifdef NDEBUG  // with assertions on, Eigen's own eigen_assert stops a * a first, where it is built
  expect_message([&] { h2.noalias() = egelu::swiglu(a * a, a); }, "egelu: swiglu(A * B, up): A is 4x6 but B is 4x6");
#endif
  Eigen::Block<Eigen::MatrixXf> corner = h.topLeftCorner(2, 2);
  expect_message([&] { corner.noalias() = egelu::swiglu(a * b, a * b); },
                 "egelu: swiglu(A * B, up) is 4x4 but the destination is 2x2");
}

struct Fused : ::testing::Test {
  const Eigen::Index d = 64, d_ff = 176, tokens = 33;
  const Eigen::MatrixXf Wg = Eigen::MatrixXf::Random(d_ff, d) * 0.5f, Wu = Eigen::MatrixXf::Random(d_ff, d),
                        X = Eigen::MatrixXf::Random(d, tokens) * 4.f;
  const Eigen::VectorXf x = Eigen::VectorXf::Random(d) * 4.f;

  // What `G.noalias() = Wg * X` allocates: its packing buffers.
  long bare_product_allocations() const {
    Eigen::MatrixXf G(d_ff, tokens);
    return malloc_counter::during([&] { G.noalias() = Wg * X; });
  }
  // The unfused computation: both products into temporaries, then the coefficient-wise op.
  template <typename Op>
  Eigen::MatrixXf unfused(const Eigen::MatrixXf& in, Op op) const {
    const Eigen::MatrixXf g = Wg * in, u = Wu * in;
    return g.binaryExpr(u, op);
  }
};

// Eigen resizes through the wrappers that pass a resize on: an empty row vector taking a
// column vector's result (Eigen transposes the destination), and .array() of an empty matrix.
TEST_F(Fused, WrappedDestinationsAreResized) {
  const Eigen::MatrixXf column = Eigen::MatrixXf(x);
  Eigen::RowVectorXf r;
  r.noalias() = egelu::swiglu(Wg * x, Wu * x);
  EXPECT_TRUE(r.transpose().cwiseEqual(unfused(column, egelu::swiglu_op<float>())).all());
  Eigen::MatrixXf H;
  H.array() = egelu::geglu(Wg * X, Wu * X);
  EXPECT_TRUE(H.cwiseEqual(unfused(X, egelu::geglu_op<float>())).all());
}

TEST_F(Fused, GateGoesStraightIntoTheDestination) {
  const long bare = bare_product_allocations();
  Eigen::MatrixXf H = Eigen::MatrixXf::Constant(d_ff, tokens, std::numeric_limits<float>::quiet_NaN());
  // the two bare products and the up product's temporary
  EXPECT_LE(malloc_counter::during([&] { H.noalias() = egelu::swiglu(Wg * X, Wu * X); }), 2 * bare + 1);
  EXPECT_TRUE(H.cwiseEqual(unfused(X, egelu::swiglu_op<float>())).all());
  const Eigen::MatrixXf g = Wg * X, u = Wu * X;
  expect_gated(Form::silu, g.array(), u.array(), H.array());

  H.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { H.noalias() = egelu::geglu(Wg * X, Wu * X); }), 2 * bare + 1);
  EXPECT_TRUE(H.cwiseEqual(unfused(X, egelu::geglu_op<float>())).all());
  H.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { H = egelu::geglu_exact(Wg * X, Wu * X); }), 2 * bare + 1);
  EXPECT_TRUE(H.cwiseEqual(unfused(X, egelu::geglu_exact_op<float>())).all());
  H.setConstant(std::numeric_limits<float>::quiet_NaN());  // (the products reach past 7: the clamps act)
  EXPECT_LE(malloc_counter::during([&] { H.noalias() = egelu::clamped_swiglu(Wg * X, Wu * X); }), 2 * bare + 1);
  EXPECT_TRUE(H.cwiseEqual(unfused(X, egelu::clamped_swiglu_op<float>())).all());
  EXPECT_TRUE((g.array() > 7).any() && (u.array().abs() > 7).any());

  // A given up operand needs no temporary at all: only the gate product's packing.
  H.setConstant(std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { H.noalias() = egelu::swiglu(Wg * X, u); }), bare);
  EXPECT_TRUE(H.cwiseEqual(g.binaryExpr(u, egelu::swiglu_op<float>())).all());

  // GEMV: one token, nothing but the up vector.
  Eigen::VectorXf h = Eigen::VectorXf::Constant(d_ff, std::numeric_limits<float>::quiet_NaN());
  EXPECT_LE(malloc_counter::during([&] { h.noalias() = egelu::swiglu(Wg * x, Wu * x); }), 1);
  const Eigen::VectorXf gv = Wg * x, uv = Wu * x;
  EXPECT_TRUE(h.cwiseEqual(gv.binaryExpr(uv, egelu::swiglu_op<float>())).all());
}

// A destination that overlaps an operand gets the right values (through temporaries).
TEST_F(Fused, OverlapGoesThroughTemporaries) {
  const Eigen::MatrixXf Sg = Eigen::MatrixXf::Random(d, d), Su = Eigen::MatrixXf::Random(d, d);
  Eigen::MatrixXf Y = X;
  const Eigen::MatrixXf g = Sg * X, u = Su * X, expected = g.binaryExpr(u, egelu::swiglu_op<float>());
  Y = egelu::swiglu(Sg * Y, Su * Y);  // Y is the right operand of both products
  EXPECT_TRUE(Y.cwiseEqual(expected).all());
  // up given as the destination itself
  Eigen::MatrixXf Z = u;
  Z = egelu::swiglu(Sg * X, Z);
  EXPECT_TRUE(Z.cwiseEqual(expected).all());
}

}  // namespace
