// Accuracy against quad precision: every float in windows around 0, in the
// bulk and at the edge of the far negative tail, plus random samples over the
// whole range; random samples for double. Bounds: README "Accuracy". The sample
// counts and windows shrink with EGELU_TEST_SAMPLE_DIVISOR (test_scale.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "accuracy_sweep.hpp"
#include "random_inputs.hpp"
#include "test_scale.hpp"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace {

using accuracy::Worst;

struct Form {
  const char* name;
  accuracy::Reference exact;
  double ulp_bound;  // over normal results
};

template <typename T, typename Op>
void expect_bounds(const char* what, const std::vector<T>& inputs, Op op, accuracy::Reference exact, double ulp_bound,
                   double relative_bound) {
  const Worst w = accuracy::measure(inputs, op, exact);
  std::printf("  %-28s n=%-9ld max %.3f ulp at %.9g, max rel(1+|y|) %.3g\n", what, w.count, w.ulp, w.at,
              w.relative_one);
  EXPECT_LE(w.ulp, ulp_bound) << what << " worst at x=" << w.at;
  EXPECT_LE(w.relative_one, relative_bound) << what;
}

// Every float in windows around 0, in the bulk and at the tail's edge, and random samples.
template <typename Op>
void float_windows_and_samples(const char* name, Op op, accuracy::Reference exact, double ulp_bound, float tail_edge) {
  auto run = [&](const char* region, const std::vector<float>& x) {
    expect_bounds((std::string(name) + " " + region).c_str(), x, op, exact, ulp_bound, 2e-6);
  };
  using test_scale::samples;
  using test_scale::window;
  run("around 0 [2^-12,1.0625*2^-12)", window(accuracy::every_float(0x1p-12f, 0x1.1p-12f)));
  run("around 0 [-1.0625*2^-12,-2^-12)", window(accuracy::every_float(-0x1.1p-12f, -0x1p-12f)));
  run("bulk [-0.78,-0.75]", window(accuracy::every_float(-0.78f, -0.75f)));
  run("bulk [1.0,1.03]", window(accuracy::every_float(1.0f, 1.03f)));
  run("bulk [-2.5,-2.48]", window(accuracy::every_float(-2.5f, -2.48f)));
  run("tail edge", window(accuracy::every_float(tail_edge - 0.3f, tail_edge)));
  run("random [-14,14]", random_inputs::uniform<float>(samples(1'000'000), -14.f, 14.f, 1));
  run("random log-uniform", random_inputs::log_uniform<float>(samples(300'000), 0x1p-40f, 1e6f, 2));
  run("random tiny, down to 2^-125", random_inputs::log_uniform<float>(samples(100'000), 0x1p-125f, 0x1p-10f, 8));
}

// Where float packets have double twins (x86), both float forms (value and
// derivative) run in double and round once: within a hair of 0.5 ulp, the hair
// being the double kernel's relative error times 2^24 (tanh: 8e-11, 0.0014 ulp;
// erf: 2.0e-10, 0.0034 ulp). Elsewhere they run in two floats.
constexpr bool kFloatInDouble = egelu::internal::has_double_twin<Eigen::internal::packet_traits<float>::type>;

// What this build runs on: the SIMD instruction sets, how float is computed, the
// quad-precision type, the sample divisor and, on aarch64 Linux, the CPU features the
// kernel (or qemu-user) reports.
TEST(Accuracy, Target) {
  std::printf("  SIMD: %s; float packets of %d, computed in %s; quad precision: %s; sample divisor %zu\n",
              Eigen::SimdInstructionSetsInUse(), Eigen::internal::packet_traits<float>::size,
              kFloatInDouble ? "double" : "two floats", reference::quad_name, test_scale::divisor);
#if defined(__aarch64__) && defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  struct Feature {
    const char* name;
    unsigned long bit;
  };
  const Feature features[] = {{"fp", HWCAP_FP},           {"asimd", HWCAP_ASIMD},     {"fphp", HWCAP_FPHP},
                              {"asimdhp", HWCAP_ASIMDHP}, {"asimddp", HWCAP_ASIMDDP}, {"sve", HWCAP_SVE}};
  std::printf("  AT_HWCAP 0x%lx:", hwcap);
  for (const Feature& f : features) std::printf(" %s%s", f.bit & hwcap ? "" : "no-", f.name);
  std::printf("\n");
  EXPECT_TRUE(hwcap & HWCAP_ASIMD) << "the CPU reports no Advanced SIMD (NEON)";
#endif
#if defined(__ARM_NEON) && !defined(EIGEN_VECTORIZE_NEON)
  ADD_FAILURE() << "the compiler targets NEON, but Eigen does not vectorize with it";
#endif
}

TEST(Accuracy, FloatWindowsAndSamples) {
  float_windows_and_samples("tanh", egelu::gelu_tanh_op<float>(), reference::gelu_tanh, kFloatInDouble ? 0.502 : 2.0,
                            -9.6f);
  float_windows_and_samples("erf", egelu::gelu_erf_op<float>(), reference::gelu_erf, kFloatInDouble ? 0.504 : 2.0,
                            -13.0f);
}

// 2^(v / exp2_steps), the float tanh kernel's exponential in double, against long
// double over the kernel's range |v| / steps <= 163 (and beyond): within 1e-10,
// every lane, narrower packet and the scalar path giving the same bits.
TEST(Accuracy, Exp2InDouble) {
  using namespace Eigen::internal;
  using Packet = packet_traits<double>::type;
  using Half = packet_traits<double>::half;
  constexpr int lanes = unpacket_traits<Packet>::size, half_lanes = unpacket_traits<Half>::size;
  const double steps = egelu::internal::exp2_steps;
  std::vector<double> v = random_inputs::uniform<double>(test_scale::samples(200'000), -170 * steps, 170 * steps, 11);
  for (int k = -4000; k <= 4000; ++k) v.push_back(k / 8.0);  // around every table entry's ties
  v.resize(v.size() / lanes * lanes);
  double worst = 0, at = 0;
  for (std::size_t i = 0; i < v.size(); i += lanes) {
    double got[lanes], got_half[lanes];
    pstoreu(got, egelu::internal::exp2_of_steps(ploadu<Packet>(&v[i])));
    for (int h = 0; h < lanes; h += half_lanes)
      pstoreu(got_half + h, egelu::internal::exp2_of_steps(ploadu<Half>(&v[i + h])));
    for (int k = 0; k < lanes; ++k) {
      const long double exact = std::exp2(static_cast<long double>(v[i + k]) / steps);
      const double rel = double(std::abs(got[k] - exact) / exact);
      if (rel > worst) worst = rel, at = v[i + k];
      ASSERT_EQ(got_half[k], got[k]) << "half packet, v = " << v[i + k];
      ASSERT_EQ(egelu::internal::exp2_of_steps(v[i + k]), got[k]) << "scalar path, v = " << v[i + k];
    }
  }
  std::printf("  exp2 in double, %d steps: max rel %.3g at v = %.9g\n", int(steps), worst, at);
  EXPECT_LE(worst, 1e-10);
}

// The two-float kernels, which float uses on targets without double twins.
template <typename Kernel>
struct two_float_op : egelu::internal::kernel_op<float, Kernel> {};

#define EGELU_TWO_FLOAT_KERNEL(NAME, FUNCTION, DEFAULT_KERNEL)                                         \
  struct NAME {                                                                                        \
    template <typename Packet>                                                                         \
    static EIGEN_STRONG_INLINE Packet run(const Packet& x) {                                           \
      return egelu::internal::FUNCTION(x);                                                             \
    }                                                                                                  \
    static constexpr int additions = DEFAULT_KERNEL::additions, divisions = DEFAULT_KERNEL::divisions; \
  };
EGELU_TWO_FLOAT_KERNEL(tanh_two_float, pgelu_tanh_double_word, egelu::internal::tanh_kernel)
EGELU_TWO_FLOAT_KERNEL(tanh_grad_two_float, pgelu_tanh_grad_double_word, egelu::internal::tanh_grad_kernel)
EGELU_TWO_FLOAT_KERNEL(erf_two_float, pgelu_erf_double_word, egelu::internal::erf_kernel)
EGELU_TWO_FLOAT_KERNEL(erf_grad_two_float, pgelu_erf_grad_double_word, egelu::internal::erf_grad_kernel)
#undef EGELU_TWO_FLOAT_KERNEL

}  // namespace

template <typename Kernel>
struct Eigen::internal::functor_traits<two_float_op<Kernel>> : egelu::internal::kernel_op_traits<float, Kernel> {};

namespace {

TEST(Accuracy, FloatInTwoFloats) {
  float_windows_and_samples("tanh in two floats", two_float_op<tanh_two_float>(), reference::gelu_tanh, 2.0, -9.6f);
  float_windows_and_samples("erf in two floats", two_float_op<erf_two_float>(), reference::gelu_erf, 2.0, -13.0f);
  for (float lo : {-14.f, -3.f}) {
    const auto x = random_inputs::uniform<float>(test_scale::samples(300'000), lo, 6.f, 5);
    expect_bounds("tanh grad in two floats", x, two_float_op<tanh_grad_two_float>(), reference::gelu_tanh_grad, 1e300,
                  1.5e-7);
    expect_bounds("erf grad in two floats", x, two_float_op<erf_grad_two_float>(), reference::gelu_erf_grad, 1e300,
                  1.5e-7);
  }
}

TEST(Accuracy, DoubleSamples) {
  for (const auto& form : {Form{"tanh", reference::gelu_tanh, 2.0}, Form{"erf", reference::gelu_erf, 2.0}}) {
    const bool tanh = form.name[0] == 't';
    auto run = [&](const char* region, const std::vector<double>& x) {
      const std::string what = std::string(form.name) + " double " + region;
      if (tanh) {
        expect_bounds(what.c_str(), x, egelu::gelu_tanh_op<double>(), form.exact, form.ulp_bound, 1e-14);
      } else {
        expect_bounds(what.c_str(), x, egelu::gelu_erf_op<double>(), form.exact, form.ulp_bound, 1e-14);
      }
    };
    using test_scale::samples;
    run("random [-40,10]", random_inputs::uniform<double>(samples(400'000), -40., 10., 3));
    run("random [-3,3]", random_inputs::uniform<double>(samples(200'000), -3., 3., 7));
    run("random log-uniform", random_inputs::log_uniform<double>(samples(200'000), 0x1p-40, 1e6, 4));
    run("random tiny, down to 2^-1021", random_inputs::log_uniform<double>(samples(100'000), 0x1p-1021, 0x1p-10, 9));
  }
}

TEST(Accuracy, Gradients) {
  struct Case {
    const char* name;
    accuracy::Reference exact;
  };
  // Gradients are bounded relative to 1 + |exact| (they cross zero near x = -0.75).
  for (double lo : {-14.0, -3.0}) {
    const auto xf = random_inputs::uniform<float>(test_scale::samples(300'000), float(lo), 6.f, 5);
    const auto xd = random_inputs::uniform<double>(test_scale::samples(200'000), lo, 6., 6);
    // in double: the final rounding, 2^-25 (1 + |y|)
    const double float_bound = kFloatInDouble ? 3.0e-8 : 1.5e-7;
    expect_bounds("tanh grad float", xf, egelu::gelu_tanh_grad_op<float>(), reference::gelu_tanh_grad, 1e300,
                  float_bound);
    expect_bounds("erf grad float", xf, egelu::gelu_erf_grad_op<float>(), reference::gelu_erf_grad, 1e300, float_bound);
    expect_bounds("tanh grad double", xd, egelu::gelu_tanh_grad_op<double>(), reference::gelu_tanh_grad, 1e300, 5e-16);
    expect_bounds("erf grad double", xd, egelu::gelu_erf_grad_op<double>(), reference::gelu_erf_grad, 1e300, 5e-16);
  }
}

}  // namespace
