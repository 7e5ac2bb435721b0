// The blocks' micro-kernels and weight packing (src/gemm), against references written
// here: every kernel set this CPU runs (AVX-512, AVX2, SSE2, NEON and the portable one,
// whichever the build and CPU have), every stored type, every tile shape m <= mv,
// n <= nt, depths around the blocks' 256, and each way a tile starts (zero, itself, the
// residual, a bias). The 16-bit conversions against their IEEE definitions, bit pattern
// by bit pattern.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gemm/micro_kernel.hpp"
#include "gemm/narrow_floats.hpp"
#include "gemm/packed_weights.hpp"

namespace {

using namespace egelu::gemm;
using idx = egelu::gemm::index;  // (POSIX has an index() too)

// A half's value from its definition: (-1)^s 2^(e-15) (1 + f/1024), subnormals f 2^-24.
double half_value(std::uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 31, f = h & 1023;
  double v;
  if (e == 31) {
    v = f ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = e == 0 ? std::ldexp(double(f), -24) : std::ldexp(1.0 + f / 1024.0, e - 15);
  }
  return sign ? -v : v;
}

// bfloat16's value: a float whose low 16 bits are zero.
double bf16_value(std::uint16_t h) {
  const std::uint32_t u = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return double(f);
}

std::vector<const kernel_set*> runnable_sets() {
  std::vector<const kernel_set*> sets;
  for (const kernel_set* s : {avx512_kernels(), avx2_kernels(), sse2_kernels(), neon_kernels(), &portable_kernels()}) {
    if (s && cpu_has(*s)) sets.push_back(s);
  }
  return sets;
}

TEST(NarrowFloats, WidenEveryHalfAndBfloat16) {
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const double want = half_value(std::uint16_t(bits));
    const float got = widen(f16{std::uint16_t(bits)});
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << bits;
    } else {
      EXPECT_EQ(double(got), want) << bits;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << bits;
    }
    const float b = widen(bf16{std::uint16_t(bits)});
    if (!std::isnan(bf16_value(std::uint16_t(bits)))) {
      EXPECT_EQ(double(b), bf16_value(std::uint16_t(bits))) << bits;
    }
  }
}

// The nearest representable value to x, ties to the even pattern, by search. IEEE rounds
// as if the exponent went on: infinity stands at 2^(emax + 1), where the next binade starts.
template <typename Value>
std::uint16_t nearest(double x, Value value) {
  std::uint16_t best = 0;
  double best_error = std::numeric_limits<double>::infinity();
  double largest = 0;
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const double v = value(std::uint16_t(bits));
    if (std::isfinite(v)) largest = std::max(largest, v);
  }
  const double beyond = std::ldexp(1.0, std::ilogb(largest) + 1);
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    double v = value(std::uint16_t(bits));
    if (std::isinf(v)) v = std::copysign(beyond, v);
    if (std::isnan(v) || std::signbit(v) != std::signbit(x)) continue;
    const double error = std::fabs(v - x);
    if (error < best_error || (error == best_error && (bits & 1) == 0)) {
      best = std::uint16_t(bits);
      best_error = error;
    }
  }
  return best;
}

TEST(NarrowFloats, RoundToNearestEven) {
  std::mt19937 rng(7);
  std::vector<double> xs = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            65504.0,
                            65519.99,
                            65520.0,
                            1e6,
                            -1e6,
                            5.960464477539063e-08,
                            2.98023223876953125e-08,
                            2.98023223876953126e-08,
                            6.103515625e-05,
                            3.0517578125e-05,
                            1e-30,
                            3.4e38,
                            -3.4e38,
                            1.00048828125,
                            1.000732421875,
                            1.0009765625,
                            1.00146484375};
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int i = 0; i < 150; ++i) xs.push_back((i % 2 ? -1 : 1) * std::ldexp(mantissa(rng), exponent(rng)));
  for (double x : xs) {
    // Through float (exactly representable here or not: round_to_f16(double) must round once).
    EXPECT_EQ(round_to_f16(x).bits, nearest(x, half_value)) << x;
    EXPECT_EQ(round_to_bf16(x).bits, nearest(x, bf16_value)) << x;
    const float f = float(x);
    EXPECT_EQ(round_to_f16(f).bits, nearest(double(f), half_value)) << f;
    EXPECT_EQ(round_to_bf16(f).bits, nearest(double(f), bf16_value)) << f;
  }
  EXPECT_TRUE(std::isnan(widen(round_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(widen(round_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

// A reference tile: c(i, t) = src(i, t) + sum_k a(k, i) b(k, t), in long double, with the
// bound of its rounding in float or double.
template <typename Scalar, typename W>
void check_kernel(const kernel<Scalar>& kern, const char* isa, const char* type, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  const int mv = kern.mv, nt = kern.nt;
  for (idx depth : {idx(1), idx(3), idx(255), idx(256), idx(257)}) {
    std::vector<W> a(std::size_t(depth * mv));
    std::vector<double> a_value(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double v = u(rng);
      if constexpr (std::is_same<W, bf16>::value) {
        a[i] = round_to_bf16(v), a_value[i] = double(widen(a[i]));
      } else if constexpr (std::is_same<W, f16>::value) {
        a[i] = round_to_f16(v), a_value[i] = double(widen(a[i]));
      } else {
        a[i] = W(v), a_value[i] = double(a[i]);
      }
    }
    std::vector<Scalar> b(std::size_t(depth * nt));
    for (Scalar& v : b) v = Scalar(u(rng));
    for (int mode = 0; mode < 4; ++mode) {  // no src, src = c, a residual, a bias (ld 0)
      for (int m = 1; m <= mv; ++m) {
        for (int n = 1; n <= nt; ++n) {
          const idx ldc = mv + 3;
          std::vector<Scalar> c(std::size_t(ldc * (nt + 1)), std::numeric_limits<Scalar>::quiet_NaN());
          std::vector<Scalar> residual(std::size_t(ldc * nt)), bias(static_cast<std::size_t>(mv));
          for (Scalar& v : residual) v = Scalar(u(rng));
          for (Scalar& v : bias) v = Scalar(u(rng));
          if (mode == 1) {
            for (int t = 0; t < n; ++t)
              for (int i = 0; i < m; ++i) c[std::size_t(t * ldc + i)] = residual[std::size_t(t * ldc + i)];
          }
          const Scalar* src = mode == 0 ? nullptr : mode == 1 ? c.data() : mode == 2 ? residual.data() : bias.data();
          const idx ld_src = mode == 3 ? 0 : ldc;
          kern.run(tile<Scalar>{depth, a.data(), b.data(), c.data(), ldc, src, ld_src, m, n});
          for (int t = 0; t <= nt; ++t) {
            for (idx i = 0; i < ldc; ++i) {
              const Scalar got = c[std::size_t(t * ldc + i)];
              if (t >= n || i >= m) {
                ASSERT_TRUE(std::isnan(got)) << isa << " " << type << ": wrote outside the tile at (" << i << ", " << t
                                             << "), m " << m << " n " << n;
                continue;
              }
              long double want = mode == 0 ? 0 : mode == 3 ? bias[std::size_t(i)] : residual[std::size_t(t * ldc + i)];
              long double magnitude = std::fabs(double(want));
              for (idx k = 0; k < depth; ++k) {
                const long double p = (long double)a_value[std::size_t(k * mv + i)] * b[std::size_t(k * nt + t)];
                want += p;
                magnitude += std::fabs(double(p));
              }
              const double bound = double(depth + 2) * std::numeric_limits<Scalar>::epsilon() * double(magnitude);
              ASSERT_LE(std::fabs(double(got) - double(want)), bound)
                  << isa << " " << type << " depth " << depth << " mode " << mode << " m " << m << " n " << n << " at ("
                  << i << ", " << t << ")";
            }
          }
        }
      }
    }
  }
}

TEST(MicroKernels, EveryTileShapeOfEverySetAgainstTheReference) {
  std::mt19937 rng(11);
  const auto sets = runnable_sets();
  ASSERT_FALSE(sets.empty());
  for (const kernel_set* s : sets) {
    check_kernel<float, float>(s->f32, s->isa, "f32", rng);
    check_kernel<float, bf16>(s->bf16, s->isa, "bf16", rng);
    check_kernel<float, f16>(s->f16, s->isa, "f16", rng);
    check_kernel<double, double>(s->f64, s->isa, "f64", rng);
  }
  std::printf("kernel sets tested: ");
  for (const kernel_set* s : sets) std::printf("%s ", s->isa);
  std::printf("(selected: %s)\n", selected_kernels().isa);
}

// Half weights that are subnormal, infinite or NaN widen in the kernels as widen() does.
TEST(MicroKernels, SpecialHalfWeights) {
  for (const kernel_set* s : runnable_sets()) {
    const kernel<float>& k = s->f16;
    std::vector<f16> a(std::size_t(k.mv));
    const std::uint16_t patterns[] = {0x0001, 0x03ff, 0x8001, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x8000};
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = f16{patterns[i % 8]};
    std::vector<float> b(std::size_t(k.nt), 0.f), c(std::size_t(k.mv * k.nt));
    b[0] = 1.f;
    k.run(tile<float>{1, a.data(), b.data(), c.data(), k.mv, nullptr, 0, k.mv, 1});
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(c[i], widen(a[i])) << s->isa << " pattern " << a[i].bits;
  }
}

// packed_weights puts element (i, j) of any source where the kernels read it, converted
// to the stored type, with zero rows past the last.
TEST(PackedWeights, LayoutAndConversion) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int mv : {4, 16, 48}) {
    for (idx rows : {idx(1), idx(47), idx(200), idx(385)}) {
      const idx depth = 300;
      std::vector<float> source(std::size_t(rows * depth));
      for (float& v : source) v = u(rng);
      for (bool transposed : {false, true}) {
        // transposed: stored (depth, rows) as GPT-2's Conv1D
        const matrix_view view = transposed ? matrix_view{source.data(), stored::f32, rows, depth, 1, rows}
                                            : matrix_view{source.data(), stored::f32, rows, depth, depth, 1};
        const auto element = [&](idx i, idx j) {
          return transposed ? source[std::size_t(j * rows + i)] : source[std::size_t(i * depth + j)];
        };
        for (stored type : {stored::f32, stored::bf16, stored::f16}) {
          const packed_weights w(view, type, mv, blocking{128, 96});
          ASSERT_EQ(w.rows(), rows);
          for (idx r = 0; r < w.row_blocks(); ++r) {
            for (idx k = 0; k < w.depth_blocks(); ++k) {
              for (idx p = 0; p < w.panels(r); ++p) {
                const void* panel = w.panel(r, k, p);
                for (idx d = 0; d < w.depth_size(k); ++d) {
                  for (int i = 0; i < mv; ++i) {
                    const idx row = w.row_start(r) + p * mv + i, col = w.depth_start(k) + d;
                    const std::size_t at = std::size_t(d * mv + i);
                    float got;
                    if (type == stored::f32) got = static_cast<const float*>(panel)[at];
                    if (type == stored::bf16) got = widen(static_cast<const bf16*>(panel)[at]);
                    if (type == stored::f16) got = widen(static_cast<const f16*>(panel)[at]);
                    const float want = row >= rows            ? 0.f
                                       : type == stored::f32  ? element(row, col)
                                       : type == stored::bf16 ? widen(round_to_bf16(element(row, col)))
                                                              : widen(round_to_f16(element(row, col)));
                    ASSERT_EQ(got, want) << "mv " << mv << " rows " << rows << " (" << row << ", " << col << ")";
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(PackedWeights, ValuesBeyondTheStoredRangeAreErrors) {
  const float values[] = {1.f, 70000.f, 2.f, 3.f};
  const matrix_view view{values, stored::f32, 2, 2, 2, 1};
  try {
    const packed_weights w(view, stored::f16, 4, blocking{});
    FAIL() << "no exception";
  } catch (const out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("70000 at (0, 1) is beyond float16's range"), std::string::npos) << e.what();
  }
  const float infinite[] = {1.f, std::numeric_limits<float>::infinity()};
  EXPECT_NO_THROW(packed_weights(matrix_view{infinite, stored::f32, 1, 2, 2, 1}, stored::f16, 4, blocking{}));
  const double huge[] = {1e300};
  EXPECT_THROW(packed_weights(matrix_view{huge, stored::f64, 1, 1, 1, 1}, stored::f32, 4, blocking{}), out_of_range);
}

}  // namespace
