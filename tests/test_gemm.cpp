// The blocks' micro-kernels and weight packing (src/gemm), against references written
// here: every kernel set this CPU runs (AVX-512, AVX2, SSE2, NEON and the portable one,
// whichever the build and CPU have), every stored type, every tile shape m <= mv,
// n <= nt, depths around the blocks' 256, and each way a tile starts (zero, itself, the
// residual, a bias). The 16-bit conversions against their IEEE definitions, bit pattern
// by bit pattern.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gemm/block_formats.hpp"
#include "gemm/micro_kernel.hpp"
#include "gemm/narrow_floats.hpp"
#include "gemm/packed_weights.hpp"
#include "gemm/quantized_inputs.hpp"
#include "ggml_reference.hpp"

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

// FP8 E4M3FN from its definition (OCP OFP8): sign, 4 exponent bits (bias 7), 3 mantissa bits,
// exponent 0 subnormal (m / 8 * 2^-6), S.1111.111 NaN and no infinities.
double e4m3_value(unsigned code) {
  const unsigned e = code >> 3 & 15, m = code & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, int(e) - 7);
  return code & 128 ? -magnitude : magnitude;
}

std::vector<const kernel_set*> runnable_sets() {
  std::vector<const kernel_set*> sets;
  for (const kernel_set* s :
       {avx512_vnni_kernels(), avx512_kernels(), avx2_kernels(), sse2_kernels(), neon_kernels(), &portable_kernels()}) {
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

// MXFP4's codes and scales from the OCP MX definition: E2M1 is sign, 2 exponent bits (bias 1), 1 mantissa
// bit, exponent 0 subnormal (0 or 0.5); E8M0 is 2^(bits - 127), 255 NaN.
TEST(NarrowFloats, Mxfp4CodesAndScales) {
  for (unsigned code = 0; code < 16; ++code) {
    const unsigned e = code >> 1 & 3, m = code & 1;
    const double magnitude = e == 0 ? m * 0.5 : std::ldexp(1 + m * 0.5, int(e) - 1);
    const float got = widen(e2m1{std::uint8_t(code)});
    EXPECT_EQ(double(got), code & 8 ? -magnitude : magnitude) << code;
    EXPECT_EQ(std::signbit(got), code >= 8) << code;  // (code 8 is -0)
  }
  EXPECT_EQ(widen(e2m1{7}), 6.f);
  EXPECT_EQ(widen(e8m0{127}), 1.0);
  EXPECT_EQ(widen(e8m0{0}), 0x1p-127);
  EXPECT_EQ(widen(e8m0{254}), 0x1p127);
  EXPECT_EQ(widen(e8m0{121}), 0x1p-6);
  EXPECT_TRUE(std::isnan(widen(e8m0{255})));
}

TEST(NarrowFloats, E4m3EveryCode) {
  for (unsigned code = 0; code < 256; ++code) {
    const float got = widen(e4m3{std::uint8_t(code)});
    if (std::isnan(e4m3_value(code))) {
      EXPECT_TRUE(std::isnan(got)) << code;
      continue;
    }
    EXPECT_EQ(double(got), e4m3_value(code)) << code;
    EXPECT_EQ(std::signbit(got), code >= 128) << code;
  }
  EXPECT_EQ(widen(e4m3{0x7e}), 448.f);
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
                            1.00146484375,
                            3.4028235677973366e38,  // (above float's largest, rounds down to it)
                            3.5e38,                 // (float(x) is infinite)
                            -1e39};
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
  for (idx depth : {idx(1), idx(2), idx(3), idx(255), idx(256), idx(257)}) {
    // a_value: row i's weight at step k, at k mv + i; a holds it where the kernel reads it:
    // there too, or with its steps in pairs (kernel::paired_steps; packed_weights' layout,
    // written here from its description).
    std::vector<W> a(std::size_t(depth * mv));
    std::vector<double> a_value(a.size());
    for (idx k = 0; k < depth; ++k) {
      for (idx i = 0; i < mv; ++i) {
        const std::size_t value_at = std::size_t(k * mv + i);
        const std::size_t at =
            kern.paired_steps && k < depth / 2 * 2 ? std::size_t(k / 2 * 2 * mv + 2 * i + k % 2) : value_at;
        const double v = u(rng);
        if constexpr (std::is_same<W, bf16>::value) {
          a[at] = round_to_bf16(v), a_value[value_at] = double(widen(a[at]));
        } else if constexpr (std::is_same<W, f16>::value) {
          a[at] = round_to_f16(v), a_value[value_at] = double(widen(a[at]));
        } else {
          a[at] = W(v), a_value[value_at] = double(a[at]);
        }
      }
    }
    std::vector<Scalar> b(std::size_t(depth * nt));
    for (Scalar& v : b) v = Scalar(u(rng));
    const std::vector<char> fetched(70000);  // what tile::fetch names: no effect on the results
    for (int mode = 0; mode < 4; ++mode) {   // no src, src = c, a residual, a bias (ld 0)
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
          tile<Scalar> t{depth, a.data(), b.data(), c.data(), ldc, src, ld_src, m, n};
          if ((m + n) % 2) {  // half the tiles also fetch lines into L2 (none to more than a line a step)
            t.fetch = fetched.data();
            t.fetch_bytes = idx(m * 1237 + n * 64) % idx(fetched.size());
          }
          kern.run(t);
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

// A pair kernel's outputs (two tiles side by side) against run's, one tile at a time: the same
// elements written (the rest still NaN), each with the same bits.
::testing::AssertionResult same_written_bits(const std::vector<float>& single, const std::vector<float>& paired) {
  for (std::size_t i = 0; i < single.size(); ++i) {
    const bool written = !std::isnan(single[i]);
    if (written != !std::isnan(paired[i])) {
      return ::testing::AssertionFailure()
             << "element " << i << (written ? " written by run only" : " by the pair only");
    }
    if (written && std::memcmp(&single[i], &paired[i], sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << "element " << i << ": " << single[i] << " against " << paired[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs tile_of(0, ·) and tile_of(1, ·) into `single` by run, one after the other, and into
// `paired` by run_pair, side by side, and compares them (same_written_bits).
template <typename TileOf>
::testing::AssertionResult pair_gives_runs_bits(const kernel<float>& kern, const TileOf& tile_of,
                                                std::vector<float>& single, std::vector<float>& paired) {
  kern.run(tile_of(0, single));
  kern.run(tile_of(1, single));
  kern.run_pair(tile_of(0, paired), tile_of(1, paired));
  return same_written_bits(single, paired);
}

// The float kernels' pair (two tiles of one token side by side, as decoding runs them) gives
// each tile the bits `run` gives it, with f32, bf16 (in paired steps where the kernel reads them
// so: kernel::paired_steps) and f16 weights, at depths with an odd last step, shorter than the
// loop's tail and longer: adjacent panels of one product (whose last steps fetch one panel
// further), and panels of two; full and partial rows; with and without a src.
TEST(MicroKernels, FloatPairGivesEachTileTheBitsOfRun) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::mt19937 rng(5);
  for (const kernel_set* set : runnable_sets()) {
    for (stored type : {stored::f32, stored::bf16, stored::f16}) {
      const kernel<float>& kern = float_kernel(*set, type);
      ASSERT_NE(kern.run_pair, nullptr) << set->isa;
      const int mv = kern.mv, nt = kern.nt;
      for (idx depth : {idx(1), idx(3), idx(64), idx(257), idx(601)}) {
        const idx rows = 2 * mv + (mv + 1) / 2;  // the third panel partial
        const idx ld = mv + 2;                   // each tile's column, and two elements past it
        std::vector<float> gate(static_cast<std::size_t>(rows * depth)), up(gate.size()),
            src(static_cast<std::size_t>(2 * ld)), b(static_cast<std::size_t>(depth * nt), 0.f);
        for (std::vector<float>* v : {&gate, &up, &src})
          for (float& e : *v) e = u(rng);
        for (idx d = 0; d < depth; ++d) b[std::size_t(d * nt)] = u(rng);
        const packed_weights w(matrix_view{gate.data(), stored::f32, rows, depth, depth, 1}, type, mv,
                               blocking{depth, 3 * mv}, kern.paired_steps);
        const packed_weights w2(matrix_view{up.data(), stored::f32, rows, depth, depth, 1}, type, mv,
                                blocking{depth, 3 * mv}, kern.paired_steps);
        struct case_ {
          const packed_weights *first, *second;
          idx p, q;
          bool with_src;
        };
        for (const case_& k : {case_{&w, &w, 0, 1, false}, case_{&w, &w, 1, 2, true}, case_{&w, &w2, 2, 0, false},
                               case_{&w2, &w, 1, 1, true}}) {
          std::vector<float> single(std::size_t(2 * ld), NAN), paired(single.size(), NAN);
          const idx m[2] = {std::min<idx>(mv, rows - k.p * mv), std::min<idx>(mv, rows - k.q * mv)};
          const auto tile_of = [&](int which, std::vector<float>& out) {
            float* c = out.data() + which * ld;
            const float* from = k.with_src ? src.data() + which * ld : nullptr;
            const packed_weights& weights = which == 0 ? *k.first : *k.second;
            return tile<float>{
                depth, weights.panel(0, 0, which == 0 ? k.p : k.q), b.data(), c, ld, from, ld, int(m[which]), 1};
          };
          ASSERT_TRUE(pair_gives_runs_bits(kern, tile_of, single, paired))
              << set->isa << " " << name_of(type) << " depth " << depth << " panels " << k.p << ", " << k.q;
        }
      }
    }
  }
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

// The last-level cache the blocks count on (token sharing, token chunks): the OS's figure,
// at most 96 MB where each core reaches only its own complex's L3 (AMD's Zen), so that a VM
// reporting its host socket's L3 (508 MB on two vCPUs of a Zen 5 EPYC) is not taken at its
// word; an Intel socket's shared L3 as reported. This CPU's figure from sysconf and the
// vendor read here.
TEST(Caches, AmdCountsOneCoreComplexAtMost) {
  constexpr std::ptrdiff_t MB = std::ptrdiff_t(1) << 20;
  EXPECT_EQ(llc_bytes_to_count_on(508 * MB, true), 96 * MB);
  EXPECT_EQ(llc_bytes_to_count_on(96 * MB + 1, true), 96 * MB);
  EXPECT_EQ(llc_bytes_to_count_on(96 * MB, true), 96 * MB);
  EXPECT_EQ(llc_bytes_to_count_on(32 * MB, true), 32 * MB);
  EXPECT_EQ(llc_bytes_to_count_on(480 * MB, false), 480 * MB);  // (a Xeon's socket)
  EXPECT_EQ(llc_bytes_to_count_on(0, true), 0);                 // (none reported)
  bool amd = false;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // (the library reads the vendor where it has x86 kernels)
  amd = sse2_kernels() != nullptr && __builtin_cpu_is("amd");
#endif
  std::ptrdiff_t reported = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  reported = std::max<std::ptrdiff_t>(0, sysconf(_SC_LEVEL3_CACHE_SIZE));
#endif
  EXPECT_EQ(llc_bytes(), amd ? std::min(reported, 96 * MB) : reported) << "reported " << reported << ", AMD " << amd;
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
        for (const auto& [type, paired] : {std::pair(stored::f32, false), std::pair(stored::bf16, false),
                                           std::pair(stored::bf16, true), std::pair(stored::f16, false)}) {
          // Depth blocks of 128, 128 and 44; with paired steps 89, 89, 89 and 33 (odd).
          const packed_weights w(view, type, mv, blocking{paired ? 89 : 128, 96}, paired);
          ASSERT_EQ(w.rows(), rows);
          ASSERT_EQ(w.paired_steps(), paired);
          for (idx r = 0; r < w.row_blocks(); ++r) {
            for (idx k = 0; k < w.depth_blocks(); ++k) {
              for (idx p = 0; p < w.panels(r); ++p) {
                const void* panel = w.panel(r, k, p);
                for (idx d = 0; d < w.depth_size(k); ++d) {
                  for (int i = 0; i < mv; ++i) {
                    const idx row = w.row_start(r) + p * mv + i, col = w.depth_start(k) + d;
                    // Paired: row i's steps 2s and 2s + 1 adjacent, a depth block's odd last step as it is.
                    const bool in_pair = paired && d < w.depth_size(k) / 2 * 2;
                    const std::size_t at = std::size_t(in_pair ? d / 2 * 2 * mv + 2 * i + d % 2 : d * mv + i);
                    float got;
                    if (type == stored::f32) got = static_cast<const float*>(panel)[at];
                    if (type == stored::bf16) got = widen(static_cast<const bf16*>(panel)[at]);
                    if (type == stored::f16) got = widen(static_cast<const f16*>(panel)[at]);
                    const float want = row >= rows            ? 0.f
                                       : type == stored::f32  ? element(row, col)
                                       : type == stored::bf16 ? widen(round_to_bf16(element(row, col)))
                                                              : widen(round_to_f16(element(row, col)));
                    ASSERT_EQ(got, want) << "mv " << mv << " rows " << rows << " paired " << paired << " (" << row
                                         << ", " << col << ")";
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

// Every element of w's panels (a kernel of 16 rows) against value(row, col) rounded to w's
// plain type by the library's roundings (themselves tested against a search over every
// bf16 and f16: NarrowFloats.RoundToNearestEven), zero past the last row, signs of zero too.
void expect_panels_hold(const packed_weights& w, idx rows, idx depth, const std::function<double(idx, idx)>& value,
                        const std::string& what) {
  ASSERT_EQ(w.rows(), rows) << what;
  ASSERT_EQ(w.depth(), depth) << what;
  const stored to = w.type();
  for (idx r = 0; r < w.row_blocks(); ++r)
    for (idx k = 0; k < w.depth_blocks(); ++k)
      for (idx p = 0; p < w.panels(r); ++p)
        for (idx d = 0; d < w.depth_size(k); ++d)
          for (idx i = 0; i < 16; ++i) {
            const idx row = w.row_start(r) + p * 16 + i, col = w.depth_start(k) + d;
            const std::size_t in_panel = std::size_t(d * 16 + i);
            const void* panel = w.panel(r, k, p);
            double got = std::numeric_limits<double>::quiet_NaN();
            if (to == stored::f64) got = static_cast<const double*>(panel)[in_panel];
            if (to == stored::f32) got = double(static_cast<const float*>(panel)[in_panel]);
            if (to == stored::bf16) got = bf16_value(static_cast<const std::uint16_t*>(panel)[in_panel]);
            if (to == stored::f16) got = half_value(static_cast<const std::uint16_t*>(panel)[in_panel]);
            const double v = row < rows ? value(row, col) : 0.0;
            const double want = to == stored::f64    ? v
                                : to == stored::f32  ? double(float(v))
                                : to == stored::bf16 ? bf16_value(round_to_bf16(v).bits)
                                                     : half_value(round_to_f16(v).bits);
            ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want))
                << what << " to " << name_of(to) << " (" << row << ", " << col << "): " << got << " against " << want;
          }
}

// Sources of every plain type (double, float, bfloat16 and half, random bits), rows along
// the depth or columns along it (GPT-2's Conv1D), packed into every plain type: each
// packed weight is the source's value from its definition (half_value, bf16_value),
// widened exactly or rounded once to nearest even; the block formats from 16-bit and
// double sources hold the bytes they hold packed from the same values as floats.
TEST(PackedWeights, EverySourceTypeReadAsItsValue) {
  std::mt19937 rng(11);
  const idx rows = 61, depth = 96;
  std::vector<double> value(std::size_t(rows * depth));
  std::vector<std::uint16_t> half(value.size()), brain(value.size());
  std::vector<float> single(value.size());
  std::uniform_int_distribution<int> bits(0, 0x7bff);  // (finite halves)
  for (std::size_t at = 0; at < value.size(); ++at) {
    half[at] = std::uint16_t(bits(rng) | (rng() & 1 ? 0x8000 : 0));
    brain[at] = std::uint16_t((0x3580 + rng() % 0x1180) | (rng() & 1 ? 0x8000 : 0));  // (2^-20 to 2^15)
    value[at] = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), int(rng() % 35) - 20);  // (< 2^14)
    single[at] = float(value[at]);
  }
  for (bool transposed : {false, true}) {
    // Element (i, j) at i * rs + j * cs: rows along the depth, or stored (depth, rows).
    const idx rs = transposed ? 1 : depth, cs = transposed ? rows : 1;
    const auto at = [&](idx i, idx j) { return std::size_t(i * rs + j * cs); };
    struct source {
      matrix_view view;
      std::function<double(std::size_t)> value;
    };
    const std::vector<source> sources = {
        {{value.data(), stored::f64, rows, depth, rs, cs}, [&](std::size_t k) { return value[k]; }},
        {{single.data(), stored::f32, rows, depth, rs, cs}, [&](std::size_t k) { return double(single[k]); }},
        {{brain.data(), stored::bf16, rows, depth, rs, cs}, [&](std::size_t k) { return bf16_value(brain[k]); }},
        {{half.data(), stored::f16, rows, depth, rs, cs}, [&](std::size_t k) { return half_value(half[k]); }}};
    for (const source& from : sources) {
      for (stored to : {stored::f64, stored::f32, stored::bf16, stored::f16}) {
        const packed_weights w(from.view, to, 16, blocking{48, 32});  // (runs of 32 and 16 steps)
        expect_panels_hold(
            w, rows, depth, [&](idx row, idx col) { return from.value(at(row, col)); },
            std::string(name_of(from.view.type)) + (transposed ? " transposed" : ""));
      }
      if (from.view.type == stored::f32) continue;
      std::vector<float> as_float(value.size());
      for (std::size_t k = 0; k < value.size(); ++k) as_float[k] = float(from.value(k));
      const matrix_view floats{as_float.data(), stored::f32, rows, depth, rs, cs};
      for (stored to : {stored::q8_0, stored::q4_0, stored::mxfp4}) {
        const packed_weights w(from.view, to, 16, blocking{64, 32}), want(floats, to, 16, blocking{64, 32});
        ASSERT_EQ(std::memcmp(w.panel(0, 0, 0), want.panel(0, 0, 0), w.bytes()), 0)
            << name_of(from.view.type) << " to " << name_of(to) << " transposed " << transposed;
      }
    }
  }
}

// FP8 checkpoints' weights (E4M3 codes, each times its block's scale: f32 as DeepSeek-V3's,
// bf16 as some of Qwen3's FP8 releases', f16), packed into every plain type: each weight the
// exact product of the two (in double: 4 significant bits times 24), rounded once to the
// packed type; into the block formats, as the same products packed from floats. Blocks of
// 2 x 8 (shifts) and 3 x 5 (divisions), partial at the ends; codes and scales stored with
// rows along the depth, and both transposed; NaN scales past the last, where no index goes.
TEST(PackedWeights, Fp8CodesTimesTheirScales) {
  std::mt19937 rng(13);
  const idx rows = 37, depth = 83;
  std::vector<std::uint8_t> codes(std::size_t(rows * depth));
  for (auto& c : codes) {
    do c = std::uint8_t(rng());
    while ((c & 0x7f) == 0x7f);  // (no NaN)
  }
  codes[5] = 0x80;  // (-0)
  for (bool transposed : {false, true})
    for (const auto& block : {std::pair<idx, idx>{2, 8}, std::pair<idx, idx>{3, 5}}) {
      const idx rs = transposed ? 1 : depth, cs = transposed ? rows : 1;
      const idx scale_rows = (rows + block.first - 1) / block.first,
                scale_cols = (depth + block.second - 1) / block.second;
      const idx srs = transposed ? 1 : scale_cols, scs = transposed ? scale_rows : 1;
      const std::size_t n_scales = std::size_t(scale_rows * scale_cols);
      std::vector<float> single(n_scales + 8, std::numeric_limits<float>::quiet_NaN());
      std::vector<std::uint16_t> brain(n_scales + 8, 0x7fc0), half(n_scales + 8, 0x7e00);
      for (std::size_t k = 0; k < n_scales; ++k) {
        // (24 significant bits, 2^-31 to 2^-10 as checkpoints' are, a few up to 2^4: 448 times it fits f16)
        single[k] = std::ldexp(float(0x800000 + rng() % 0x800000), -24 - int(rng() % 21) - 10 + (k % 7 == 0 ? 14 : 0));
        brain[k] = std::uint16_t(0x3000 + rng() % 0xa00);
        half[k] = std::uint16_t(0x0400 + rng() % 0x2000);
      }
      struct scales {
        const void* data;
        stored type;
        std::function<double(std::size_t)> value;
      };
      const std::vector<scales> kinds = {
          {single.data(), stored::f32, [&](std::size_t k) { return double(single[k]); }},
          {brain.data(), stored::bf16, [&](std::size_t k) { return bf16_value(brain[k]); }},
          {half.data(), stored::f16, [&](std::size_t k) { return half_value(half[k]); }}};
      for (const scales& scale : kinds) {
        const auto value = [&](idx row, idx col) {
          return e4m3_value(codes[std::size_t(row * rs + col * cs)]) *
                 scale.value(std::size_t(row / block.first * srs + col / block.second * scs));
        };
        const std::string what = "scales " + std::string(name_of(scale.type)) + (transposed ? " transposed" : "") +
                                 " blocks " + std::to_string(block.first) + " x " + std::to_string(block.second);
        const matrix_view view{codes.data(), stored::f8_e4m3, rows,        depth,        rs,  cs,
                               scale.data,   scale.type,      block.first, block.second, srs, scs};
        for (stored to : {stored::f64, stored::f32, stored::bf16, stored::f16})
          expect_panels_hold(packed_weights(view, to, 16, blocking{48, 32}), rows, depth, value, what);
        // The first 64 steps into the block formats (whole blocks of 32).
        matrix_view first_64 = view;
        first_64.cols = 64;
        std::vector<float> as_float(std::size_t(rows * 64));
        for (idx i = 0; i < rows; ++i)
          for (idx j = 0; j < 64; ++j) as_float[std::size_t(i * 64 + j)] = float(value(i, j));
        const matrix_view floats{as_float.data(), stored::f32, rows, 64, 64, 1};
        for (stored to : {stored::q8_0, stored::q4_0, stored::mxfp4}) {
          const packed_weights w(first_64, to, 16, blocking{64, 32}), want(floats, to, 16, blocking{64, 32});
          ASSERT_EQ(std::memcmp(w.panel(0, 0, 0), want.panel(0, 0, 0), w.bytes()), 0) << what << " to " << name_of(to);
        }
      }
    }
}

// MXFP4 checkpoints' blocks (E2M1 codes two a byte along a row, an E8M0 scale per 32, as
// gpt-oss's experts: here the odd rows of a gate_up tensor) packed as mxfp4 keep the
// release's bytes: each row's scale and its 16 bytes of codes in the group's layout
// (block_formats.hpp), whatever the codes (-0 included) and the scale (0 included). Scales
// of 253 and 254, where a code's value can overflow float, go through the values: the
// finite ones quantized again (the same values), the infinite one an error naming it.
TEST(PackedWeights, Mxfp4CheckpointBlocksKeepTheirBytes) {
  std::mt19937 rng(12);
  const idx rows = 50, depth = 128, stride = 2 * depth;  // (codes a row of the whole tensor: two rows of ours)
  std::vector<std::uint8_t> codes(std::size_t(2 * rows * depth / 2)), scales(std::size_t(2 * rows * depth / 32));
  for (auto& c : codes) c = std::uint8_t(rng());
  for (auto& s : scales) s = std::uint8_t(rng() % 253);
  scales[std::size_t(3 * 2 * depth / 32 + 4 + 1)] = 0;  // (row 3's second block: 2^-127)
  const matrix_view view{codes.data() + depth / 2,   stored::e2m1, rows, depth, stride,         1,
                         scales.data() + depth / 32, stored::e8m0, 1,    32,    2 * depth / 32, 1};
  const auto code_at = [&](idx i, idx j) {  // (row i of ours is the tensor's row 2i + 1)
    const std::uint8_t byte = codes[std::size_t(((2 * i + 1) * depth + j) / 2)];
    return j % 2 ? byte >> 4 : byte & 15;
  };
  const auto scale_at = [&](idx i, idx j) { return scales[std::size_t((2 * i + 1) * depth / 32 + j / 32)]; };
  const int mv = 16;
  const packed_weights w(view, stored::mxfp4, mv, blocking{64, 32});
  for (idx r = 0; r < w.row_blocks(); ++r)
    for (idx k = 0; k < w.depth_blocks(); ++k)
      for (idx p = 0; p < w.panels(r); ++p) {
        const auto* group = static_cast<const std::uint8_t*>(w.panel(r, k, p));
        for (idx g = 0; g < w.depth_size(k); g += 32, group += 17 * mv) {
          for (idx i = 0; i < mv; ++i) {
            const idx row = w.row_start(r) + p * mv + i, col = w.depth_start(k) + g;
            ASSERT_EQ(group[i], row < rows ? scale_at(row, col) : 0) << row << ", " << col;
            for (idx step = 0; step < 32; ++step) {
              const int nibble = group[mv + step / 2 * mv + i] >> (step % 2 * 4) & 15;
              ASSERT_EQ(nibble, row < rows ? code_at(row, col + step) : 0) << row << ", " << col + step;
            }
          }
        }
      }
  // Scale 253: codes up to 3 are finite (3 2^126), 4 and 6 are not.
  std::vector<std::uint8_t> big_codes(16, 0x35), big_scale(1, 253);  // (codes 5 and 3: 3 and 1.5)
  const matrix_view big{big_codes.data(), stored::e2m1, 1, 32, 32, 1, big_scale.data(), stored::e8m0, 1, 32, 1, 1};
  const packed_weights kept(big, stored::mxfp4, mv, blocking{});
  const auto* group = static_cast<const std::uint8_t*>(kept.panel(0, 0, 0));
  for (idx step = 0; step < 32; ++step) {
    const int nibble = group[mv + step / 2 * mv] >> (step % 2 * 4) & 15;
    const double got = std::ldexp(double(widen(e2m1{std::uint8_t(nibble)})), group[0] - 127);
    EXPECT_EQ(got, step % 2 ? 1.5 * 0x1p126 : 3 * 0x1p126) << step;
  }
  std::vector<std::uint8_t> top_scale(1, 254), small_codes(16, 0x3b);  // (codes 11 and 3: -1.5 and 1.5, 2^127)
  const matrix_view top{small_codes.data(), stored::e2m1, 1, 32, 32, 1, top_scale.data(), stored::e8m0, 1, 32, 1, 1};
  const packed_weights top_kept(top, stored::mxfp4, mv, blocking{});
  group = static_cast<const std::uint8_t*>(top_kept.panel(0, 0, 0));
  for (idx step = 0; step < 32; ++step) {
    const int nibble = group[mv + step / 2 * mv] >> (step % 2 * 4) & 15;
    const double got = std::ldexp(double(widen(e2m1{std::uint8_t(nibble)})), group[0] - 127);
    EXPECT_EQ(got, step % 2 ? 1.5 * 0x1p127 : -1.5 * 0x1p127) << step;
  }
  big_codes[5] = 0x60;  // (code 6: 4 2^126 = 2^128)
  try {
    const packed_weights w2(big, stored::mxfp4, mv, blocking{});
    FAIL() << "no exception";
  } catch (const out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("at (0, 11) is beyond float32's range"), std::string::npos) << e.what();
  }
}

// Every panel starts on a 64-byte line, whatever the weights' size (small ones were
// malloc'd, 16-byte aligned, and every whole-register load of the AVX-512 kernels split
// two lines). 16-bit panels of an odd depth (48 rows: 96 bytes a step) end on half a line;
// no model has an odd hidden size, so they are not padded.
TEST(PackedWeights, PanelsStartOnACacheLine) {
  for (idx rows : {idx(1), idx(47), idx(200)}) {
    for (idx depth : {idx(3), idx(34), idx(300)}) {
      const std::vector<float> source(std::size_t(rows * depth), 0.5f);
      const matrix_view view{source.data(), stored::f32, rows, depth, depth, 1};
      for (const auto& [type, paired] :
           {std::pair(stored::f32, false), std::pair(stored::bf16, true), std::pair(stored::f16, false)}) {
        if (type != stored::f32 && depth % 2 != 0) continue;
        const packed_weights w(view, type, 48, blocking{128, 96}, paired);
        for (idx r = 0; r < w.row_blocks(); ++r)
          for (idx k = 0; k < w.depth_blocks(); ++k)
            for (idx p = 0; p < w.panels(r); ++p)
              ASSERT_EQ(reinterpret_cast<std::uintptr_t>(w.panel(r, k, p)) % 64, 0u)
                  << "rows " << rows << " depth " << depth << " type " << int(type) << " panel " << r << ", " << k
                  << ", " << p;
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

// Blocks of ggml's formats: the edge cases the specification names (an all-zero block, a
// largest magnitude that is negative, values that land on .5 and so round away from zero
// or sit on Q4_0's +8.5 boundary, equal magnitudes of both signs), and random blocks of
// every scale, against the reference written from the specification (ggml_reference.hpp);
// Q4_0's bytes as ggml lays them: weight j in byte j's low nibble, weight j + 16 in its high.
std::vector<std::vector<float>> quantization_cases() {
  std::vector<std::vector<float>> cases;
  cases.push_back(std::vector<float>(32, 0.f));
  std::vector<float> v(32);
  for (int j = 0; j < 32; ++j) v[std::size_t(j)] = float(j - 16) * 0.25f;  // largest magnitude -4, negative
  cases.push_back(v);
  for (int j = 0; j < 32; ++j) v[std::size_t(j)] = j == 5 ? 127.f : float(j) - 15.5f;  // d = 1: q = w rounded, .5 away
  cases.push_back(v);
  for (int j = 0; j < 32; ++j) v[std::size_t(j)] = j == 3 ? -8.f : float(j % 17) * 0.5f - 4.f;  // Q4_0: d = 1, .5 steps
  cases.push_back(v);
  for (int j = 0; j < 32; ++j) v[std::size_t(j)] = j % 2 ? 3.f : -3.f;  // equal magnitudes: the first (negative) is m
  cases.push_back(v);
  for (int j = 0; j < 32; ++j) v[std::size_t(j)] = j == 31 ? 1e-6f : 0.f;  // one tiny weight: d below half's normals
  cases.push_back(v);
  std::mt19937 rng(35);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> e(-40, 15);  // (Q4_0's d = 2^15 / 8 fits half)
  for (int i = 0; i < 4000; ++i) {
    const float scale = std::ldexp(1.f, e(rng));
    for (float& x : v) x = u(rng) * scale;
    if (i % 3 == 0) v[std::size_t(i % 32)] = 0.f;
    cases.push_back(v);
  }
  return cases;
}

TEST(BlockFormats, QuantizationIsGgmlsReference) {
  using egelu::WeightFormat;
  for (const std::vector<float>& x : quantization_cases()) {
    const ggml_reference::block r8 = ggml_reference::quantize(x.data(), WeightFormat::q8_0);
    const q8_0_block b8 = quantize_q8_0(x.data());
    ASSERT_EQ(widen(b8.d), r8.d) << x[0];
    for (int j = 0; j < 32; ++j) ASSERT_EQ(int(b8.q[j]), r8.q[j]) << j << ": " << x[std::size_t(j)];
    const ggml_reference::block r4 = ggml_reference::quantize(x.data(), WeightFormat::q4_0);
    const q4_0_block b4 = quantize_q4_0(x.data());
    ASSERT_EQ(widen(b4.d), r4.d) << x[0];
    for (int j = 0; j < 16; ++j) {
      ASSERT_EQ((b4.q[j] & 15) - 8, r4.q[j]) << j << ": " << x[std::size_t(j)];
      ASSERT_EQ((b4.q[j] >> 4) - 8, r4.q[j + 16]) << j + 16 << ": " << x[std::size_t(j + 16)];
    }
    const ggml_reference::block rm = ggml_reference::quantize(x.data(), WeightFormat::mxfp4);
    const mxfp4_block bm = quantize_mxfp4(x.data());
    for (int j = 0; j < 32; ++j) {
      ASSERT_EQ(dequantized(b8, j), float(r8.q[j]) * r8.d);
      ASSERT_EQ(dequantized(b4, j), float(r4.q[j]) * r4.d);
      ASSERT_EQ(dequantized(bm, j), float(rm.q[j]) * rm.d) << j << ": " << x[std::size_t(j)];
    }
  }
  // MXFP4 worked by hand: amax 7.5 gives 2^(floor(log2 7.5) - 2) = 2^0, so each weight is its
  // nearest E2M1 value, ties to the even code (0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2,
  // 2.5 -> 2, 3.5 -> 4, 5 -> 4), beyond 6 saturating (7.5 -> 6); the sign kept (-0.25 -> -0).
  {
    std::vector<float> x(32, 0.f);
    const float w[] = {7.5f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.f, -5.f, -0.25f, 6.f, 0.5f, -3.f, 1.5f};
    const float want[] = {6.f, 0.f, 1.f, 1.f, 2.f, 2.f, 4.f, 4.f, -4.f, -0.f, 6.f, 0.5f, -3.f, 1.5f};
    std::copy(std::begin(w), std::end(w), x.begin());
    const mxfp4_block b = quantize_mxfp4(x.data());
    EXPECT_EQ(b.scale, 127);
    for (std::size_t j = 0; j < std::size(w); ++j) {
      EXPECT_EQ(dequantized(b, int(j)), want[j]) << w[j];
      EXPECT_EQ(std::signbit(dequantized(b, int(j))), std::signbit(want[j])) << w[j];
    }
    std::vector<float> one(32, 0.f);
    one[7] = 0.1f;  // 1.6 2^-4: the scale 2^-6, and 0.1 / 2^-6 = 6.4 saturates to 6
    const mxfp4_block small = quantize_mxfp4(one.data());
    EXPECT_EQ(small.scale, 127 - 6);
    EXPECT_EQ(dequantized(small, 7), 0.09375f);
    const mxfp4_block zeros = quantize_mxfp4(quantization_cases()[0].data());
    EXPECT_EQ(zeros.scale, 0);  // 2^-127 for a block of zeros
  }
  // The hand-worked cases: d = 1 blocks give q = w rounded half away from zero (Q8_0) ...
  const std::vector<float> halves = quantization_cases()[2];
  const q8_0_block h = quantize_q8_0(halves.data());
  EXPECT_EQ(widen(h.d), 1.f);
  EXPECT_EQ(h.q[0], -16);  // -15.5
  EXPECT_EQ(h.q[16], 1);   // 0.5
  EXPECT_EQ(h.q[15], -1);  // -0.5
  // ... and Q4_0's m = -8: d = 1, q = min(15, (int)(w + 8.5)) - 8, so -0.5 -> 0 and 0.5 -> 1.
  const std::vector<float> steps = quantization_cases()[3];
  const q4_0_block s4 = quantize_q4_0(steps.data());
  EXPECT_EQ(widen(s4.d), 1.f);
  EXPECT_EQ((s4.q[0] & 15) - 8, -4);  // -4
  EXPECT_EQ((s4.q[7] & 15) - 8, 0);   // -0.5
  EXPECT_EQ((s4.q[9] & 15) - 8, 1);   // 0.5
  const q4_0_block z = quantize_q4_0(quantization_cases()[0].data());
  EXPECT_EQ(z.d.bits, 0x8000);                           // -0: ggml divides 0 by -8
  for (int j = 0; j < 16; ++j) EXPECT_EQ(z.q[j], 0x88);  // q = 0 is nibble 8
}

// An MXFP4 checkpoint's block, read as its values (code x 2^(s - 127) in float), quantizes back
// to the same values, bit for bit (the sign of a zero included): for every scale s whose values
// are finite, and every largest code (the blocks whose largest code is below 4 come back with a
// smaller scale and their codes times 2, 4 or 8; the scales 0 to 2 meet the clamp at 2^-127).
TEST(BlockFormats, Mxfp4BlocksQuantizeBackToTheirValues) {
  const float magnitudes[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};  // (OCP MX v1.0, E2M1)
  std::mt19937 rng(44);
  int blocks = 0;
  for (int s = 0; s <= 254; ++s) {
    for (int largest = 1; largest < 8; ++largest) {
      for (int sample = 0; sample < 4; ++sample) {
        std::uniform_int_distribution<int> code_of(0, largest);
        float x[32];
        bool finite = true;
        for (int j = 0; j < 32; ++j) {
          const int code = j == sample * 7 ? largest : code_of(rng);  // the largest somewhere, the rest below
          const bool negative = (rng() & 1) != 0;                     // (-0 for code 0 half the time)
          const float v = float(std::ldexp(double(magnitudes[code]), s - 127));
          finite = finite && std::isfinite(v);
          x[j] = negative ? -v : v;
        }
        if (!finite) continue;
        const mxfp4_block b = quantize_mxfp4(x);
        for (int j = 0; j < 32; ++j) {
          const float back = dequantized(b, j);
          ASSERT_EQ(std::memcmp(&back, &x[j], 4), 0)
              << "s " << s << ", largest code " << largest << ": " << x[j] << " came back as " << back;
        }
        ++blocks;
      }
    }
  }
  EXPECT_GT(blocks, 7000);  // (s 253 and 254 lose the blocks whose largest values overflow)
  // At the clamp, against the reference: weights between the codes of scale 2^-127 (and beyond its
  // largest), which floor(log2) would give a smaller scale.
  std::vector<float> tiny(32);
  for (int j = 0; j < 32; ++j) tiny[std::size_t(j)] = float(std::ldexp((j % 2 ? -0.3 : 0.3) + 0.55 * (j % 13), -129));
  const ggml_reference::block r = ggml_reference::quantize(tiny.data(), egelu::WeightFormat::mxfp4);
  const mxfp4_block t = quantize_mxfp4(tiny.data());
  EXPECT_EQ(t.scale, 0);
  int nonzero = 0;
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(dequantized(t, j), float(r.q[j]) * r.d) << j;
    nonzero += r.q[j] != 0;
  }
  EXPECT_GT(nonzero, 16);
}

// A block format's packed panels, widened by every kernel set, are the reference's
// dequantized weights in the float panels' layout, bit for bit, a zero weight +0 in every set
// (q d is -0 for q = 0 and d < 0, as Q4_0's all-zero block's d = -0 is: the sets agree on +0,
// compared by their bits); each set's direct kernel gives the
// float kernel's bits on them, for every tile shape; a depth that is not a whole number of
// blocks is refused.
TEST(BlockFormats, PanelsWidenToTheDequantizedWeightsAndTheKernelsAgree) {
  using egelu::WeightFormat;
  std::mt19937 rng(36);
  std::uniform_real_distribution<float> u(-1, 1);
  const idx rows = 100, depth = 320;
  std::vector<float> source(std::size_t(rows * depth));
  for (float& v : source) v = u(rng) * (1.f + float(&v - source.data()) / 4000.f);
  std::fill(source.begin() + 3 * depth + 32, source.begin() + 3 * depth + 64, 0.f);           // an all-zero block
  for (int j = 0; j < 32; ++j) source[std::size_t(5 * depth + 64 + j)] = u(rng) * 0x1p-124f;  // MXFP4's scale 2^-127
  const matrix_view view{source.data(), stored::f32, rows, depth, depth, 1};
  const auto bits_of = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  };
  for (const kernel_set* set : runnable_sets()) {
    for (stored type : {stored::q8_0, stored::q4_0, stored::mxfp4}) {
      const WeightFormat format = type == stored::q8_0   ? WeightFormat::q8_0
                                  : type == stored::q4_0 ? WeightFormat::q4_0
                                                         : WeightFormat::mxfp4;
      const block_kernel& bk = block_kernel_of(*set, type);
      ASSERT_EQ(bk.direct.mv, set->f32.mv);
      ASSERT_EQ(bk.direct.nt, set->f32.nt);
      const int mv = bk.direct.mv, nt = bk.direct.nt;
      const packed_weights w(view, type, mv, blocking{128, 96});
      EXPECT_EQ(w.bytes() * 32, std::size_t((rows + mv - 1) / mv * mv * depth) * bytes_per_block(type));
      for (idx r = 0; r < w.row_blocks(); ++r) {
        for (idx k = 0; k < w.depth_blocks(); ++k) {
          for (idx p = 0; p < w.panels(r); ++p) {
            const idx kc = w.depth_size(k), first = w.row_start(r) + p * mv;
            std::vector<float> wide(std::size_t(kc * mv), NAN);
            bk.widen(w.panel(r, k, p), kc, wide.data());
            for (int i = 0; i < mv; ++i) {
              float x[32] = {};
              for (idx g = 0; g < kc; g += 32) {
                for (int j = 0; j < 32 && first + i < rows; ++j)
                  x[j] = source[std::size_t((first + i) * depth + w.depth_start(k) + g + j)];
                const ggml_reference::block b = ggml_reference::quantize(x, format);
                for (int j = 0; j < 32; ++j) {
                  // (+ 0.f: a zero weight as +0)
                  ASSERT_EQ(bits_of(wide[std::size_t((g + j) * mv + i)]), bits_of(float(b.q[j]) * b.d + 0.f))
                      << set->isa << " " << name_of(type) << " row " << first + i << " depth " << g + j << ": "
                      << wide[std::size_t((g + j) * mv + i)] << " against q d = " << float(b.q[j]) * b.d
                      << " (a zero weight is +0)";
                }
              }
            }
            // The direct kernel against the float kernel on the widened panel, every token count.
            std::vector<float> b(std::size_t(kc * nt));
            for (float& v : b) v = u(rng);
            for (int n = 1; n <= nt; ++n) {
              const int m = int(std::min<idx>(mv, rows - first));
              std::vector<float> src(std::size_t(mv * nt)), direct(src.size(), NAN), widened(src.size(), NAN);
              for (float& v : src) v = u(rng);
              bk.direct.run(tile<float>{kc, w.panel(r, k, p), b.data(), direct.data(), mv, src.data(), mv, m, n});
              set->f32.run(tile<float>{kc, wide.data(), b.data(), widened.data(), mv, src.data(), mv, m, n});
              for (std::size_t at = 0; at < direct.size(); ++at) {
                if (std::isnan(widened[at])) {
                  ASSERT_TRUE(std::isnan(direct[at])) << at;  // (outside the tile: unwritten by both)
                } else {
                  ASSERT_EQ(direct[at], widened[at]) << set->isa << " " << name_of(type) << " n " << n << " at " << at;
                }
              }
            }
          }
        }
      }
    }
  }
  try {
    const packed_weights w(matrix_view{source.data(), stored::f32, 10, 48, 48, 1}, stored::q4_0, 16, blocking{});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("48 (the matrix is 10 x 48), is not a whole number of q4_0's blocks of 32"),
              std::string::npos)
        << e.what();
  }
  std::vector<float> row(32, 1.f);
  row[7] = NAN;
  EXPECT_THROW(packed_weights(matrix_view{row.data(), stored::f32, 1, 32, 32, 1}, stored::q8_0, 16, blocking{}),
               out_of_range);
}

// ---- Quantized inputs (InputFormat::q16_0, gemm/quantized_inputs.hpp).

// One group of 32 values of a token, quantized as the specification says: d = max|x| /
// 32767 in float, q = x / d rounded to nearest even, in -32767..32767 (written here from
// the header's words, not from its code).
struct spec_group {
  float d;
  int q[32];
};
spec_group spec_quantize(const float* x, idx stride) {
  spec_group g{};
  float amax = 0;
  for (int s = 0; s < 32; ++s) amax = std::max(amax, std::fabs(x[s * stride]));
  g.d = amax / 32767.f;
  for (int s = 0; s < 32; ++s) {
    const double r = g.d > 0 ? std::nearbyint(double(x[s * stride]) / double(g.d)) : 0.0;
    g.q[s] = int(std::max(-32767.0, std::min(32767.0, r)));
  }
  return g;
}

std::int32_t word(const float* panel, idx at) {
  std::int32_t w;
  std::memcpy(&w, panel + at, 4);
  return w;
}

// The panel's words are the specification's layout of its integers; each value is within
// d / 2 of q d; a group that is not finite gets a NaN scale; tokens past n are untouched.
void expect_panel_of_the_specification(input_quantizer quantize, int nt, int n) {
  std::mt19937 rng(16);
  std::uniform_real_distribution<float> u(-3, 3);
  const idx kc = 256;
  std::vector<float> panel(std::size_t(kc * nt));
  for (float& v : panel) v = u(rng) * float(1 + (&v - panel.data()) % 7);
  // Special groups beside ordinary ones (the last special token 4: at n <= 4, tokens past
  // n are not written, and the special groups are beside no token).
  const int zeros = std::min(1, n - 1), with_nan = std::min(2, n - 1), with_inf = std::min(3, n - 1),
            ties = std::min(4, n - 1);
  for (int s = 0; s < 32; ++s) panel[std::size_t(s * nt + zeros)] = 0;  // a group of zeros
  panel[std::size_t((32 + 5) * nt + with_nan)] = NAN;                   // a group with a NaN
  panel[std::size_t((64 + 3) * nt + with_inf)] = -INFINITY;             // and one with -inf
  // Ties: with max|x| = 32767 2^-16, d = 2^-16 and x / d = s % 5 - 1.5 lands on halves.
  for (int s = 0; s < 32; ++s) panel[std::size_t((96 + s) * nt + ties)] = (float(s % 5) - 1.5f) * 0x1p-16f;
  panel[std::size_t((96 + 31) * nt + ties)] = 32767.f * 0x1p-16f;
  // And, for the token-by-token quantizer (one or two tokens; even and odd steps apart), a
  // +inf and a NaN at even steps past the first 16, and a group of negative zeros.
  panel[std::size_t((128 + 30) * nt + with_inf)] = INFINITY;
  panel[std::size_t((160 + 20) * nt + with_nan)] = NAN;
  for (int s = 0; s < 32; ++s) panel[std::size_t((192 + s) * nt + zeros)] = -0.f;
  const std::vector<float> original = panel;
  quantize(panel.data(), kc, nt, n);
  for (idx g = 0; g < kc / 32; ++g) {
    const float* words = panel.data() + g * quantized_words_per_token * nt;
    for (int t = 0; t < n; ++t) {
      const float* x = original.data() + g * 32 * nt + t;
      bool finite = true;
      for (int s = 0; s < 32; ++s) finite = finite && std::isfinite(x[s * nt]);
      float d;
      std::memcpy(&d, words + t, 4);
      if (!finite) {  // scale NaN, integers and offset 0
        EXPECT_TRUE(std::isnan(d)) << "group " << g << " token " << t;
        for (int w = 1; w < quantized_words_per_token; ++w)
          EXPECT_EQ(0, word(words, w * nt + t)) << "group " << g << " token " << t << " word " << w;
        continue;
      }
      const spec_group want = spec_quantize(x, nt);
      ASSERT_EQ(d, want.d) << "group " << g << " token " << t;
      int sum = 0;
      for (int s = 0; s < 32; ++s) {
        sum += want.q[s];
        const std::int32_t pair = word(words, 2 * nt + (s / 2) * nt + t);
        const int got = s % 2 ? std::int16_t(std::uint32_t(pair) >> 16) : std::int16_t(std::uint32_t(pair) & 0xffffu);
        ASSERT_EQ(got, want.q[s]) << "group " << g << " token " << t << " step " << s;
        ASSERT_LE(std::fabs(double(x[s * nt]) - double(got) * d), double(d) / 2 * (1 + 1e-9))
            << g << " " << t << " " << s;
      }
      EXPECT_EQ(word(words, nt + t), 8 * sum) << "group " << g << " token " << t;
    }
  }
  // Tokens past n keep their floats.
  for (idx k = 0; k < kc; ++k)
    for (int t = n; t < nt; ++t)
      ASSERT_EQ(0, std::memcmp(&panel[std::size_t(k * nt + t)], &original[std::size_t(k * nt + t)], 4))
          << "token " << t << " of " << n << " written";
  // The ties of group 3's token `ties`: x / d = -1.5, -0.5, 0.5, 1.5, 2.5 round to -2, 0, 0, 2, 2.
  const float* last = panel.data() + 3 * quantized_words_per_token * nt;
  const int even[5] = {-2, 0, 0, 2, 2};
  for (int s = 0; s < 5; ++s) {
    const std::uint32_t pair = std::uint32_t(word(last, 2 * nt + (s / 2) * nt + ties));
    EXPECT_EQ(s % 2 ? std::int16_t(pair >> 16) : std::int16_t(pair & 0xffffu), even[s]) << "step " << s;
  }
}

// quantized_inputs.hpp's quantizer, and each set's own (a vectorized one gives the same words),
// on panels of 8 tokens (AVX-512's) and 6 (AVX2's), full and partial; 1 of 6 and 2 of 8 run the
// sets' token-by-token quantizer (AVX2's for one token only, AVX-512's for one or two).
TEST(QuantizedInputs, PanelsHoldTheSpecificationsIntegers) {
  std::vector<std::pair<std::string, input_quantizer>> quantizers = {{"quantize_input_panel", &quantize_input_panel}};
  for (const kernel_set* set : runnable_sets()) {
    if (set->quantize_inputs) quantizers.emplace_back(set->isa, set->quantize_inputs);
  }
  for (const auto& [name, quantize] : quantizers) {
    for (const auto& [nt, n] :
         std::vector<std::pair<int, int>>{{8, 6}, {8, 8}, {8, 1}, {8, 2}, {6, 6}, {6, 5}, {6, 1}, {4, 4}}) {
      SCOPED_TRACE(name + ", " + std::to_string(n) + " of " + std::to_string(nt) + " tokens");
      expect_panel_of_the_specification(quantize, nt, n);
    }
  }
}

// Every set's integer kernels, every tile shape, against sums in long double of the
// reference's dequantized weights times the specification's quantized inputs; and every
// set with FMA gives the portable set's bits on the same 48 rows and 4 tokens.
TEST(QuantizedInputs, IntegerKernelsOfEverySetAgainstTheReference) {
  using egelu::WeightFormat;
  std::uniform_real_distribution<float> u(-1, 1);
  const idx depth = 160, rows = 48, tokens = 4;
  std::mt19937 rng(7);
  std::vector<float> source(std::size_t(rows * depth)), x(std::size_t(depth * tokens)), residual(std::size_t(rows * 8));
  for (float& v : source) v = u(rng) * (1.f + float(&v - source.data()) / 900.f);
  for (float& v : x) v = (&v - x.data()) % 11 == 0 ? 0.f : u(rng) * 4.f;
  for (float& v : residual) v = u(rng);
  for (stored type : {stored::q8_0, stored::q4_0}) {
    const WeightFormat format = type == stored::q8_0 ? WeightFormat::q8_0 : WeightFormat::q4_0;
    std::vector<float> portable_output;
    std::vector<const kernel_set*> sets = runnable_sets();
    std::reverse(sets.begin(), sets.end());  // the portable set first
    for (const kernel_set* set : sets) {
      const kernel<float>& kern = (type == stored::q8_0 ? set->q8_0 : set->q4_0).integer;
      ASSERT_EQ(kern.mv, set->f32.mv);
      ASSERT_EQ(kern.nt, set->f32.nt);
      const int mv = kern.mv, nt = kern.nt;
      const packed_weights w(matrix_view{source.data(), stored::f32, rows, depth, depth, 1}, type, mv,
                             blocking{depth, rows}, true);
      // The token panel: the 4 tokens, then zeros; quantized in place.
      std::vector<float> b(std::size_t(depth * nt), 0.f);
      for (idx d = 0; d < depth; ++d)
        for (idx t = 0; t < tokens && t < nt; ++t) b[std::size_t(d * nt + t)] = x[std::size_t(t * depth + d)];
      std::vector<float> quantized = b;
      quantize_input_panel(quantized.data(), depth, nt, nt);
      for (int with_src = 0; with_src < 2; ++with_src) {
        for (int m = 1; m <= mv; m += (m < 3 ? 1 : std::max(1, mv / 3))) {
          for (int n = 1; n <= nt; ++n) {
            const idx ldc = mv + 3;
            std::vector<float> c(std::size_t(ldc * (nt + 1)), NAN);
            kern.run(tile<float>{depth, w.panel(0, 0, 0), quantized.data(), c.data(), ldc,
                                 with_src ? residual.data() : nullptr, mv, m, n});
            for (int t = 0; t <= nt; ++t) {
              for (idx i = 0; i < ldc; ++i) {
                const float got = c[std::size_t(t * ldc + i)];
                if (t >= n || i >= m) {
                  ASSERT_TRUE(std::isnan(got)) << set->isa << ": wrote outside the tile at (" << i << ", " << t << ")";
                  continue;
                }
                long double want = with_src ? residual[std::size_t(t * mv + i)] : 0, magnitude = std::fabs(want);
                for (idx g = 0; g < depth; g += 32) {
                  const ggml_reference::block wb =
                      ggml_reference::quantize(&source[std::size_t(i * depth + g)], format);
                  const spec_group xb = spec_quantize(&b[std::size_t(g * nt + t)], nt);
                  long double sum = 0;
                  for (int s = 0; s < 32; ++s) sum += (long double)wb.q[s] * xb.q[s];
                  want += sum * wb.d * xb.d;
                  magnitude += std::fabs(sum * wb.d * xb.d);
                }
                const double bound =
                    double(depth / 32 + 2) * 2 * std::numeric_limits<float>::epsilon() * double(magnitude);
                ASSERT_LE(std::fabs(double(got) - double(want)), bound)
                    << set->isa << " " << name_of(type) << " m " << m << " n " << n << " at (" << i << ", " << t << ")";
              }
            }
          }
        }
      }
      // All 48 rows of the 4 tokens, panel by panel.
      std::vector<float> output(std::size_t(rows * tokens), NAN);
      for (idx p = 0; p < rows / mv; ++p) {
        kern.run(tile<float>{depth, w.panel(0, 0, p), quantized.data(), output.data() + p * mv, rows,
                             residual.data() + p * mv, 0, mv, int(tokens)});
      }
      if (std::string(set->isa) == "portable") {
        portable_output = output;
      } else if (std::string(set->isa) != "sse2") {  // (no FMA: other bits by design)
        ASSERT_EQ(0, std::memcmp(output.data(), portable_output.data(), output.size() * 4))
            << set->isa << " " << name_of(type) << ": other bits than the portable set's";
      }
    }
  }
}

// The integer kernels' pair (two tiles of one token side by side, as decoding runs them)
// gives each tile the bits `run` gives it: for adjacent panels (one product's p and p + 1,
// whose last steps fetch further ahead where the format takes the tail fetch: Q4_0), with full and partial rows, and
// for panels of two products (a gated block's gate and up); without src, with a src of each tile's own, and
// accumulating (src = c, as depth blocks after the first do).
TEST(QuantizedInputs, IntegerPairGivesEachTileTheBitsOfRun) {
  enum class start { zero, own_src, accumulate };
  std::uniform_real_distribution<float> u(-1, 1);
  std::mt19937 rng(11);
  const idx depth = 640;  // long enough that Q4_0's tail fetch is a loop of its own on every set
  for (stored type : {stored::q8_0, stored::q4_0}) {
    for (const kernel_set* set : runnable_sets()) {
      const kernel<float>& kern = (type == stored::q8_0 ? set->q8_0 : set->q4_0).integer;
      ASSERT_NE(kern.run_pair, nullptr) << set->isa;
      const int mv = kern.mv, nt = kern.nt;
      const idx rows = 2 * mv + (mv + 1) / 2;  // the third panel partial
      const idx ld = mv + 2;                   // each tile's column, and two elements past it
      std::vector<float> gate(static_cast<std::size_t>(rows * depth)), up(gate.size()),
          x(static_cast<std::size_t>(depth)), src(static_cast<std::size_t>(2 * ld));
      for (std::vector<float>* v : {&gate, &up, &x, &src})
        for (float& e : *v) e = u(rng);
      const packed_weights w(matrix_view{gate.data(), stored::f32, rows, depth, depth, 1}, type, mv,
                             blocking{depth, 3 * mv}, true);
      const packed_weights w2(matrix_view{up.data(), stored::f32, rows, depth, depth, 1}, type, mv,
                              blocking{depth, 3 * mv}, true);
      std::vector<float> b(std::size_t(depth * nt), 0.f);
      for (idx d = 0; d < depth; ++d) b[std::size_t(d * nt)] = x[std::size_t(d)];
      quantize_input_panel(b.data(), depth, nt, 1);
      struct case_ {
        const packed_weights *first, *second;
        idx p, q;
        start from;
      };
      for (const case_& k : {case_{&w, &w, 0, 1, start::zero}, case_{&w, &w, 1, 2, start::own_src},
                             case_{&w, &w, 1, 2, start::accumulate}, case_{&w, &w2, 2, 0, start::zero},
                             case_{&w2, &w, 1, 1, start::own_src}, case_{&w2, &w, 0, 2, start::accumulate}}) {
        std::vector<float> single(std::size_t(2 * ld), NAN), paired(single.size(), NAN);
        const idx m[2] = {std::min<idx>(mv, rows - k.p * mv), std::min<idx>(mv, rows - k.q * mv)};
        if (k.from == start::accumulate) {
          for (int t = 0; t < 2; ++t)
            for (idx i = 0; i < m[t]; ++i)
              single[std::size_t(t * ld + i)] = paired[std::size_t(t * ld + i)] = src[std::size_t(t * ld + i)];
        }
        const auto tile_of = [&](int which, std::vector<float>& out) {
          float* c = out.data() + which * ld;
          const float* from = k.from == start::zero ? nullptr : k.from == start::own_src ? src.data() + which * ld : c;
          const packed_weights& weights = which == 0 ? *k.first : *k.second;
          return tile<float>{
              depth, weights.panel(0, 0, which == 0 ? k.p : k.q), b.data(), c, ld, from, ld, int(m[which]), 1};
        };
        ASSERT_TRUE(pair_gives_runs_bits(kern, tile_of, single, paired))
            << set->isa << " " << name_of(type) << " panels " << k.p << ", " << k.q;
      }
    }
  }
}

}  // namespace
