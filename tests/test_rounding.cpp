// Correct rounding of the float activations, on a sample every CI job can afford (the
// exhaustive check of all 2^32 floats is tools/exhaustive_rounding, run once per kernel
// change: docs/ACCURACY.md). The inputs: the hard cases that tool found
// (data/rounding_hard_cases.txt: the floats nearest a midpoint between two floats, and those
// that reached the library's medium and slow stages), every float in windows where results
// are tiny, subnormal or about to be, special values, and random bit patterns. Each goes
// through every lane position of every packet size, the scalar tail, Eigen::Tensor (default
// device and a thread pool), the gated product, the fused dense product and the Tensor
// contraction's output kernel, and is compared, bit for bit, with an independent reference:
// the formula in quad precision (reference.hpp) with its own rounding test, the Taylor rule
// for tiny x, and, for the few inputs quad precision cannot decide, the data file's result
// (decided by MPFR).
#include <gtest/gtest.h>

#define EIGEN_USE_THREADS
#include <cstdint>
#include <cstring>
#include <egelu/egelu.hpp>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reference.hpp"
#include "test_scale.hpp"

namespace {

using reference::quad;

enum class Fn { gelu, gelu_exact, silu, quick_gelu };
constexpr Fn kFunctions[] = {Fn::gelu, Fn::gelu_exact, Fn::silu, Fn::quick_gelu};
const char* name(Fn f) {
  switch (f) {
    case Fn::gelu:
      return "gelu";
    case Fn::gelu_exact:
      return "gelu_exact";
    case Fn::silu:
      return "silu";
    case Fn::quick_gelu:
      return "quick_gelu";
  }
  return "?";
}

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
float from_bits(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

quad exact(Fn f, quad x) {
  switch (f) {
    case Fn::gelu:
      return reference::gelu_tanh(x);
    case Fn::gelu_exact:
      return reference::gelu_erf(x);
    case Fn::silu:
      return reference::silu(x);
    case Fn::quick_gelu:
      return reference::quick_gelu_float(x);
  }
  return 0;
}

// The reference's rounding: false when quad precision cannot decide. Its functions are good
// to a few units of 2^-113 times the condition of exp (|t| <= 110) and erfc (2 z^2 <= 230) on
// the inputs whose results are not zero to float: 2^-96 of the value is generous.
bool round_reference(Fn f, float x, float& out) {
  if (std::isnan(x)) {
    out = x;
    return true;
  }
  if (std::isinf(x)) {  // +inf -> +inf, -inf -> -0
    out = x > 0 ? x : -0.f;
    return true;
  }
  if (x == 0) {
    out = x;
    return true;
  }
  if (std::fabs(x) <= 0x1p-100f) {
    // The Taylor rule: each function is x s(x), s - 1/2 of x's sign with |s - 1/2| <= 0.43 |x|,
    // so f(x) lies above x/2 by at most 2^-201, closer than any float or midpoint: f(x) rounds
    // to x/2 where that is a float, and to the float above it where x/2 is a midpoint.
    const double half = double(x) / 2;
    const float c = float(half);
    out = double(c) >= half ? c : std::nextafter(c, std::numeric_limits<float>::infinity());
    return true;
  }
  const quad v = exact(f, quad(x));
  const float c = float(v);  // rounded to nearest even, subnormals included
  const quad to_c = v - quad(c);
  if (to_c == 0 || std::isinf(c)) {
    out = c;
    return true;
  }
  const float neighbour =
      std::nextafter(c, to_c > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
  const quad midpoint = (quad(c) + quad(neighbour)) / 2;  // exact
  const quad to_midpoint = v - midpoint;
  if (fabsq(to_midpoint) <= ldexpq(fabsq(v), -96)) return false;
  out = (to_midpoint > 0) == (to_c > 0) ? neighbour : c;
  return true;
}

// The tool's hard cases: function, x's bits, the correctly rounded result's bits (MPFR's).
struct HardCases {
  std::map<std::string, std::vector<std::pair<float, float>>> by_function;

  HardCases() {
    const std::string path = std::string(EGELU_TEST_DATA_DIR) + "/rounding_hard_cases.txt";
    std::ifstream file(path);
    if (!file) throw std::runtime_error("cannot read " + path);
    for (std::string line; std::getline(file, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream in(line);
      std::string function, x, y;
      in >> function >> x >> y;
      by_function[function].emplace_back(from_bits(std::uint32_t(std::stoul(x, nullptr, 16))),
                                         from_bits(std::uint32_t(std::stoul(y, nullptr, 16))));
    }
  }
};

const HardCases& hard_cases() {
  static const HardCases cases;
  return cases;
}

// Every float in [from, from + count) by bit pattern.
void add_run(std::vector<float>& v, std::uint32_t from, std::uint32_t count) {
  for (std::uint32_t i = 0; i < count; ++i) v.push_back(from_bits(from + i));
}
// count floats on each side of x (by bit pattern, within x's sign).
void add_around(std::vector<float>& v, float x, std::uint32_t count) {
  const std::uint32_t b = bits(x);
  add_run(v, b - count, 2 * count);
}

// The largest x (of either sign, by the function's shape: towards -inf) whose exact result
// has magnitude at least `size`: the edge of the far negative tail's subnormal results.
float tail_edge(Fn f, quad size) {
  float lo = -200.f, hi = -1.f;  // |f(lo)| < size <= |f(hi)|
  for (int i = 0; i < 60; ++i) {
    const float mid = (lo + hi) / 2;
    (fabsq(exact(f, quad(mid))) < size ? lo : hi) = mid;
  }
  return hi;
}

struct Case {
  float x, expected;
};

// The sample for one function, each input with its correctly rounded result.
std::vector<Case> sample(Fn f) {
  std::vector<float> x;
  for (const auto& [input, result] : hard_cases().by_function.at(name(f))) x.push_back(input);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float s : {1.f, -1.f}) {
    for (float v : {0.f, inf, std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                    std::numeric_limits<float>::max(), 0x1p-125f, 0x1p-30f, 0x1p-24f, 1.f, 11.f, 15.f, 104.f, 1e30f}) {
      x.push_back(s * v);
    }
  }
  x.push_back(nan);
  x.push_back(-nan);
  using test_scale::samples;
  const std::uint32_t run = std::uint32_t(samples(4096, 1024));
  add_run(x, 1, run);                                           // the least positive subnormals
  add_run(x, 0x80000001u, run);                                 // and negative ones
  add_around(x, 0x1p-125f, run / 2);                            // x/2 about to be normal
  add_around(x, -0x1p-125f, run / 2);                           //
  add_around(x, 0x1p-30f, run / 2);                             // the tiny rule's edge
  add_around(x, -0x1p-30f, run / 2);                            //
  add_around(x, tail_edge(f, ldexpq(quad(1), -126)), run / 2);  // results about to be subnormal
  add_around(x, tail_edge(f, ldexpq(quad(1), -150)), run / 2);  // about to round to -0
  add_around(x, 1.f, run / 2);                                  // the bulk
  add_around(x, -0.75f, run / 2);
  std::mt19937 rng(7);
  for (std::size_t i = 0; i < samples(200'000, 20'000); ++i) x.push_back(from_bits(rng()));
  // The hard cases' results are MPFR's; the reference must agree wherever quad decides.
  std::map<std::uint32_t, float> known;
  for (const auto& [input, result] : hard_cases().by_function.at(name(f))) known[bits(input)] = result;
  std::vector<Case> cases;
  for (float input : x) {
    float expected;
    const bool decided = round_reference(f, input, expected);
    const auto it = known.find(bits(input));
    if (it != known.end()) {
      if (decided) {
        EXPECT_EQ(bits(expected), bits(it->second)) << name(f) << ": quad and the data file disagree at x = " << input;
      }
      expected = it->second;
    } else if (!decided) {
      ADD_FAILURE() << name(f) << ": quad precision cannot decide x = " << input << " (0x" << std::hex << bits(input)
                    << "), and data/rounding_hard_cases.txt has no result for it (tools/exhaustive_rounding writes it)";
      continue;
    }
    cases.push_back({input, expected});
  }
  return cases;
}

bool same(float got, float expected) { return std::isnan(expected) ? std::isnan(got) : bits(got) == bits(expected); }

template <typename Get>
void expect_all(Fn f, const char* path, const std::vector<Case>& cases, Get got, bool skip_zeros = false) {
  int failures = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (skip_zeros && cases[i].x == 0) continue;
    const float y = got(i);
    if (!same(y, cases[i].expected) && ++failures <= 5) {
      ADD_FAILURE() << name(f) << ", " << path << ": x = " << cases[i].x << " (0x" << std::hex << bits(cases[i].x)
                    << ") gave " << y << " (0x" << bits(y) << "), correctly rounded " << cases[i].expected << " (0x"
                    << bits(cases[i].expected) << ")";
    }
  }
  EXPECT_EQ(failures, 0) << name(f) << ", " << path << ": misrounded of " << cases.size();
}

// One function's functor and its array forms.
template <typename Op>
void check_paths(Fn f, const Op& op, const std::vector<Case>& cases) {
  const Eigen::Index n = Eigen::Index(cases.size());
  Eigen::ArrayXf x(n);
  for (Eigen::Index i = 0; i < n; ++i) x(i) = cases[std::size_t(i)].x;

  // Every lane position of the widest packet: the inputs shifted by s places, so that each
  // input meets every lane; the last few of each run go through the scalar tail.
  constexpr int lanes = Eigen::internal::packet_traits<float>::size;
  for (int s = 0; s < lanes; ++s) {
    Eigen::ArrayXf shifted = Eigen::ArrayXf::Constant(n + s + 3, 0.5f);
    shifted.segment(s, n) = x;
    Eigen::ArrayXf y = Eigen::ArrayXf::Constant(shifted.size(), std::numeric_limits<float>::quiet_NaN());
    y = shifted.unaryExpr(op);
    expect_all(f, ("lane shift " + std::to_string(s)).c_str(), cases, [&](std::size_t i) { return y(s + i); });
  }
  // One float at a time (what the tail and a plain call run).
  expect_all(f, "scalar", cases, [&](std::size_t i) { return op(cases[i].x); });
  // Fixed-size objects of 8 and 4 floats: AVX-512's half and quarter packets.
  expect_all(f, "fixed size 8", cases, [&](std::size_t i) {
    Eigen::Array<float, 8, 1> a = Eigen::Array<float, 8, 1>::Constant(cases[i].x);
    const Eigen::Array<float, 8, 1> b = a.unaryExpr(op);
    return b(int(i % 8));
  });
  expect_all(f, "fixed size 4", cases, [&](std::size_t i) {
    Eigen::Array<float, 4, 1> a = Eigen::Array<float, 4, 1>::Constant(cases[i].x);
    const Eigen::Array<float, 4, 1> b = a.unaryExpr(op);
    return b(int(i % 4));
  });
  // Eigen::Tensor, on the default device and on a pool, through the const map the issue names.
  Eigen::TensorMap<const Eigen::Tensor<const float, 1>> t(x.data(), n);
  Eigen::Tensor<float, 1> ty = t.unaryExpr(op);
  expect_all(f, "Tensor", cases, [&](std::size_t i) { return ty(Eigen::Index(i)); });
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  Eigen::Tensor<float, 1> tp(n);
  tp.device(device) = t.unaryExpr(op);
  expect_all(f, "Tensor on a thread pool", cases, [&](std::size_t i) { return tp(Eigen::Index(i)); });
  // The gated product with up = 1: act(gate) * 1 is act(gate) exactly.
  Eigen::ArrayXf gated = x.binaryExpr(Eigen::ArrayXf::Ones(n), egelu::gated_op<Op>(op));
  expect_all(f, "gated (up = 1)", cases, [&](std::size_t i) { return gated(Eigen::Index(i)); });
}

class Rounding : public ::testing::TestWithParam<Fn> {};

TEST_P(Rounding, EveryPathGivesTheCorrectlyRoundedFloat) {
  const Fn f = GetParam();
  const std::vector<Case> cases = sample(f);
  std::printf("  %s: %zu inputs (%zu hard cases), %s\n", name(f), cases.size(),
              hard_cases().by_function.at(name(f)).size(), Eigen::SimdInstructionSetsInUse());
  switch (f) {
    case Fn::gelu:
      check_paths(f, egelu::gelu_tanh_op<float>(), cases);
      break;
    case Fn::gelu_exact:
      check_paths(f, egelu::gelu_erf_op<float>(), cases);
      break;
    case Fn::silu:
      check_paths(f, egelu::silu_op<float>(), cases);
      check_paths(f, egelu::swish_op<float>(1.f), cases);
      break;
    case Fn::quick_gelu:
      check_paths(f, egelu::quick_gelu_op<float>(), cases);
      check_paths(f, egelu::swish_op<float>(1.702f), cases);
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Float, Rounding, ::testing::ValuesIn(kFunctions),
                         [](const ::testing::TestParamInfo<Fn>& info) { return std::string(name(info.param)); });

// The fused forms of GELU: gelu(A * B + b) (dense) and the Tensor contraction's output kernel,
// with A = 1 and b = -0, so that the product is each input exactly (zeros aside: the product
// sums from +0).
TEST(Rounding, FusedProductsGiveTheCorrectlyRoundedFloat) {
  for (Fn f : {Fn::gelu, Fn::gelu_exact}) {
    const std::vector<Case> cases = sample(f);
    const Eigen::Index n = Eigen::Index(cases.size());
    Eigen::MatrixXf A = Eigen::MatrixXf::Ones(1, 1), B(1, n);
    for (Eigen::Index i = 0; i < n; ++i) B(0, i) = cases[std::size_t(i)].x;
    const Eigen::VectorXf b = Eigen::VectorXf::Constant(1, -0.f);
    Eigen::MatrixXf y(1, n);
    if (f == Fn::gelu) {
      y = egelu::gelu(A * B + b.replicate(1, n));
    } else {
      y = egelu::gelu_exact(A * B + b.replicate(1, n));
    }
    expect_all(
        f, "fused dense product", cases, [&](std::size_t i) { return y(0, Eigen::Index(i)); }, true);

    Eigen::Tensor<float, 2> W(1, 1), X(1, n), Y(1, n);
    W.setConstant(1.f);
    for (Eigen::Index i = 0; i < n; ++i) X(0, i) = cases[std::size_t(i)].x;
    Eigen::Tensor<float, 1> bias(1);
    bias.setConstant(-0.f);
    const Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
    if (f == Fn::gelu) {
      Y = W.contract(X, dims, egelu::BiasGeluOutputKernel<float>(bias));
    } else {
      Y = W.contract(X, dims, egelu::BiasGeluExactOutputKernel<float>(bias));
    }
    expect_all(
        f, "output kernel", cases, [&](std::size_t i) { return Y(0, Eigen::Index(i)); }, true);
  }
}

}  // namespace
