// sweep_accuracy: the full accuracy sweep behind docs/ACCURACY.md and the README's
// accuracy table.
//
//   build/tests/sweep_accuracy docs/ACCURACY.md README.md            (x86-64: a few minutes)
//   sweep_accuracy --windows docs/ACCURACY-aarch64.md README.md      (under qemu-user)
//
// float: every float in [-120, 14] (with --windows, every float in a set of windows:
// for emulated runs) through egelu and through Eigen's composed expressions, measured
// in ulp against a double-precision evaluation of the formula written so that it does
// not cancel; each region's worst cases are then re-measured against quad precision
// (reference.hpp), and those are the figures reported. double: random samples against
// quad precision. Only results that are normal numbers count towards the ulp figures.
// The README's table keeps one set of rows per architecture: a run replaces its own.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unsupported/Eigen/SpecialFunctions>
#include <vector>

#include "accuracy_sweep.hpp"

namespace {

using reference::quad;

double ref_tanh(double x) {
  const double t = 2 * 0.79788456080286535588 * (x + 0.044715 * x * x * x);
  const double s = t >= 0 ? 1 / (1 + std::exp(-t)) : std::exp(t) / (1 + std::exp(t));
  return x * s;
}
double ref_erf(double x) { return 0.5 * x * std::erfc(-x * 0.70710678118654752440); }
double ref_tanh_grad(double x) {
  const double t = 2 * 0.79788456080286535588 * (x + 0.044715 * x * x * x);
  const double s = t >= 0 ? 1 / (1 + std::exp(-t)) : std::exp(t) / (1 + std::exp(t));
  return s + x * s * (1 - s) * 2 * 0.79788456080286535588 * (1 + 3 * 0.044715 * x * x);
}
double ref_erf_grad(double x) {
  return 0.5 * std::erfc(-x * 0.70710678118654752440) + x * std::exp(-0.5 * x * x) * 0.39894228040143267794;
}

// x sigmoid(alpha x), alpha as the float kernels hold it
double ref_swish(double x, double alpha) {
  const double t = alpha * x;
  return t >= 0 ? x / (1 + std::exp(-t)) : x * std::exp(t) / (1 + std::exp(t));
}
const double kQuickAlpha = double(1.702f);

double ulp_in_float(float got, double exact) {
  if (std::isnan(got) || std::isnan(exact)) return std::isnan(got) && std::isnan(exact) ? 0 : 1e30;
  int e;
  std::frexp(std::max(std::abs(exact), double(std::numeric_limits<float>::min())), &e);
  return std::abs(double(got) - exact) / std::ldexp(1.0, e - 24);
}

struct Region {
  const char* name;
  float lo, hi;  // [lo, hi)
};
const Region kRegions[] = {{"[-120, -14)", -120.f, -14.f}, {"[-14, -9)", -14.f, -9.f}, {"[-9, -3)", -9.f, -3.f},
                           {"[-3, -1)", -3.f, -1.f},       {"[-1, 1)", -1.f, 1.f},     {"[1, 3)", 1.f, 3.f},
                           {"[3, 14]", 3.f, 14.00001f}};
constexpr int kRegionCount = sizeof(kRegions) / sizeof(kRegions[0]);

enum Impl { kEgeluTanh, kEgeluErf, kEgeluSilu, kEgeluQuick, kEigenTanh, kEigenErf, kEigenSilu, kEigenQuick, kImpls };
const char* kImplNames[kImpls] = {"egelu gelu",          "egelu gelu_exact",         "egelu silu",
                                  "egelu quick_gelu",    "Eigen composed tanh",      "Eigen composed erf",
                                  "Eigen composed silu", "Eigen composed quick_gelu"};
// The function each implementation computes: 0 tanh form, 1 exact form, 2 silu, 3 quick_gelu.
int function_of(int impl) { return impl % 4; }
double ref_double(int function, double x) {
  switch (function) {
    case 0:
      return ref_tanh(x);
    case 1:
      return ref_erf(x);
    case 2:
      return ref_swish(x, 1);
    default:
      return ref_swish(x, kQuickAlpha);
  }
}
quad ref_quad(int function, quad x) {
  switch (function) {
    case 0:
      return reference::gelu_tanh(x);
    case 1:
      return reference::gelu_erf(x);
    case 2:
      return reference::silu(x);
    default:
      return reference::quick_gelu_float(x);
  }
}

struct Worst {
  std::vector<std::pair<double, float>> top;  // (ulp vs double reference, x), the few worst
  void add(double ulp, float x) {
    if (top.size() < 8 || ulp > top.back().first) {
      top.emplace_back(ulp, x);
      std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.first > b.first; });
      if (top.size() > 8) top.pop_back();
    }
  }
};

Eigen::ArrayXf apply(Impl impl, const Eigen::ArrayXf& x) {
  switch (impl) {
    case kEgeluTanh:
      return egelu::gelu(x);
    case kEgeluErf:
      return egelu::gelu_exact(x);
    case kEigenTanh:
      return 0.5f * x * (1.f + (0.7978845608028654f * (x + 0.044715f * x * x * x)).tanh());
    case kEigenErf:
      return 0.5f * x * (1.f + (x * 0.70710678118654752f).erf());
    case kEgeluSilu:
      return egelu::silu(x);
    case kEgeluQuick:
      return egelu::quick_gelu(x);
    case kEigenSilu:
      return x * x.logistic();
    case kEigenQuick:
      return x * (1.702f * x).logistic();
    default:
      return x;
  }
}

std::string fmt(double v) {
  char b[64];
  if (v >= 1e4)
    std::snprintf(b, sizeof b, "%.2g", v);
  else
    std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

// Every float in these windows, for --windows (an emulated run): around 0, in the bulk,
// at each function's zero of the derivative and at the edge of each tail.
const Region kWindows[] = {{"around 0", 0x1p-12f, 0x1.1p-12f},
                           {"around -0", -0x1.1p-12f, -0x1p-12f},
                           {"bulk", -0.78f, -0.75f},
                           {"bulk", 1.f, 1.03f},
                           {"bulk", -2.5f, -2.48f},
                           {"silu' = 0", -1.29f, -1.27f},
                           {"bulk", 3.f, 3.02f},
                           {"gelu tail edge", -9.7f, -9.5f},
                           {"gelu_exact tail edge", -13.1f, -12.9f},
                           {"quick_gelu tail edge", -53.6f, -53.3f},
                           {"silu tail edge", -92.f, -91.5f},
                           {"large", 10.f, 10.05f}};

std::string fmt2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2g", v);
  return b;
}

// The machine class: the CPU's model where /proc/cpuinfo names one, and the SIMD sets in use.
std::string machine() {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
#if defined(__aarch64__)
  // An x86 CPU's name here means qemu-user, which shows the host's /proc/cpuinfo.
  model = model.empty() ? std::string("aarch64") : "aarch64 under qemu-user on " + model;
#endif
  return (model.empty() ? std::string("unknown CPU") : model) + ", " + Eigen::SimdInstructionSetsInUse();
}

#if defined(__aarch64__)
const char* kArch = "aarch64";
#elif defined(__x86_64__)
const char* kArch = "x86-64";
#else
const char* kArch = "other";
#endif

// Replaces this architecture's rows and note in the README's accuracy table (the lines
// ending in its marker) by `rows` and `note`, in place, or adds them; other lines stay.
void update_readme(const std::string& path, const std::vector<std::string>& rows, const std::string& note) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "sweep_accuracy: cannot read %s; its table is not updated\n", path.c_str());
    return;
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::string begin = "<!-- accuracy-table: written by tests/sweep_accuracy -->",
                    end = "<!-- /accuracy-table -->";
  const std::string marker = std::string("<!-- sweep:") + kArch + " -->";
  const auto first = std::find(lines.begin(), lines.end(), begin), last = std::find(lines.begin(), lines.end(), end);
  if (first == lines.end() || last == lines.end() || last < first) {
    std::fprintf(stderr, "sweep_accuracy: %s has no accuracy table markers; not updated\n", path.c_str());
    return;
  }
  std::vector<std::string> table(first + 1, last), updated;
  if (table.empty()) {
    table = {"| worst error, ulp | gelu | gelu_exact | silu | quick_gelu |", "|---|---|---|---|---|"};
  }
  bool rows_placed = false, note_placed = false;
  for (const std::string& line : table) {
    const bool mine = line.find(marker) != std::string::npos, is_row = !line.empty() && line[0] == '|';
    if (mine && is_row) {
      if (!rows_placed) updated.insert(updated.end(), rows.begin(), rows.end());
      rows_placed = true;
    } else if (mine) {
      if (!note_placed) updated.push_back(note);
      note_placed = true;
    } else {
      updated.push_back(line);
    }
  }
  if (!rows_placed) {
    auto after_rows = updated.begin();
    while (after_rows != updated.end() && !after_rows->empty() && (*after_rows)[0] == '|') ++after_rows;
    updated.insert(after_rows, rows.begin(), rows.end());
  }
  if (!note_placed) {
    auto after_rows = updated.begin();
    while (after_rows != updated.end() && !after_rows->empty() && (*after_rows)[0] == '|') ++after_rows;
    if (after_rows == updated.end()) updated.push_back("");
    updated.push_back(note);
  }
  std::vector<std::string> out(lines.begin(), first + 1);
  out.insert(out.end(), updated.begin(), updated.end());
  out.insert(out.end(), last, lines.end());
  std::ofstream file(path);
  for (const std::string& line : out) file << line << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool windows = !args.empty() && args.front() == "--windows";
  if (windows) args.erase(args.begin());
  const std::string out_path = !args.empty() ? args[0] : "docs/ACCURACY.md";
  const std::string readme_path = args.size() > 1 ? args[1] : "";
  const auto start = std::chrono::steady_clock::now();
  Worst worst[kImpls][kRegionCount];
  std::mutex mutex;

  // Every float in [-120, 14] (or in the windows), in chunks, over all cores.
  std::vector<std::pair<float, float>> chunks;
  const auto add_chunks = [&](float from, float to) {
    for (float lo = from; lo < to;) {
      float hi = lo;
      for (int i = 0; i < (1 << 22) && hi < to; ++i) hi = std::nextafter(hi, to);
      chunks.emplace_back(lo, hi);
      lo = hi;
    }
  };
  if (windows) {
    for (const Region& w : kWindows) add_chunks(w.lo, w.hi);
  } else {
    add_chunks(-120.f, 14.00001f);
  }
  std::size_t next = 0;
  long total = 0;
  // max |error| / (1 + |exact|) of the float derivatives: gelu, gelu_exact, silu, quick_gelu
  double grad_worst[4] = {0, 0, 0, 0};
  // The opt-in egelu::fast forms, which have an absolute bound: max |error| / |x| per region and where.
  double fast_worst[2][kRegionCount] = {};
  float fast_at[2][kRegionCount] = {};
  auto worker = [&] {
    Worst local[kImpls][kRegionCount];
    long count = 0;
    for (;;) {
      std::pair<float, float> chunk;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (next == chunks.size()) break;
        chunk = chunks[next++];
      }
      const std::vector<float> xs = accuracy::every_float(chunk.first, chunk.second);
      const Eigen::Map<const Eigen::ArrayXf> x(xs.data(), Eigen::Index(xs.size()));
      Eigen::ArrayXf y[kImpls];
      for (int k = 0; k < kImpls; ++k) y[k] = apply(Impl(k), x);
      const Eigen::ArrayXf grads[2] = {egelu::gelu_grad(x), egelu::gelu_exact_grad(x)};
      const Eigen::ArrayXf ft = egelu::fast::gelu(x), fe = egelu::fast::gelu_exact(x);
      double fw[2][kRegionCount] = {};
      float fa[2][kRegionCount] = {};
      double gw[2] = {0, 0};
      for (Eigen::Index i = 0; i < x.size(); ++i) {
        // gelu's derivatives against double here; silu's and quick_gelu's against quad below
        const double r[2] = {ref_tanh_grad(x(i)), ref_erf_grad(x(i))};
        for (int f = 0; f < 2; ++f) gw[f] = std::max(gw[f], std::abs(grads[f](i) - r[f]) / (1 + std::abs(r[f])));
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        for (int f = 0; f < 2; ++f) grad_worst[f] = std::max(grad_worst[f], gw[f]);
      }
      for (Eigen::Index i = 0; i < x.size(); ++i) {
        const float v = x(i);
        int r = 0;
        while (r + 1 < kRegionCount && v >= kRegions[r + 1].lo) ++r;
        const double min_normal = std::numeric_limits<float>::min();
        double exact[4];
        for (int f = 0; f < 4; ++f) exact[f] = ref_double(f, v);
        if (v != 0) {
          const double fast_errors[2] = {std::abs(ft(i) - exact[0]) / std::abs(v),
                                         std::abs(fe(i) - exact[1]) / std::abs(v)};
          for (int f = 0; f < 2; ++f) {
            const double e = std::isnan(fast_errors[f]) ? 1e300 : fast_errors[f];
            if (e > fw[f][r] && std::abs(exact[f]) >= min_normal) fw[f][r] = e, fa[f][r] = v;
          }
        }
        for (int k = 0; k < kImpls; ++k) {
          const double e = exact[function_of(k)];
          if (std::abs(e) >= min_normal) local[k][r].add(ulp_in_float(y[k](i), e), v);
        }
      }
      count += x.size();
      std::lock_guard<std::mutex> lock(mutex);
      for (int f = 0; f < 2; ++f)
        for (int q = 0; q < kRegionCount; ++q)
          if (fw[f][q] > fast_worst[f][q]) fast_worst[f][q] = fw[f][q], fast_at[f][q] = fa[f][q];
    }
    std::lock_guard<std::mutex> lock(mutex);
    total += count;
    for (int k = 0; k < kImpls; ++k)
      for (int r = 0; r < kRegionCount; ++r)
        for (auto& [u, v] : local[k][r].top) worst[k][r].add(u, v);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  // Confirm each region's worst cases against quad precision.
  double confirmed[kImpls][kRegionCount];
  float at[kImpls][kRegionCount];
  bool measured[kRegionCount] = {};
  for (int k = 0; k < kImpls; ++k) {
    for (int r = 0; r < kRegionCount; ++r) {
      confirmed[k][r] = 0;
      at[k][r] = 0;
      measured[r] = measured[r] || !worst[k][r].top.empty();
      for (auto& [u, v] : worst[k][r].top) {
        Eigen::ArrayXf one(1);
        one(0) = v;
        const float got = apply(Impl(k), one)(0);
        const double q = reference::ulp_error(got, ref_quad(function_of(k), quad(v)));
        if (q > confirmed[k][r]) {
          confirmed[k][r] = q;
          at[k][r] = v;
        }
      }
    }
  }

  // Derivatives in float against quad (silu, quick_gelu), and double: random samples against quad.
  const std::size_t samples = windows ? 20'000 : 1'000'000;
  const accuracy::Reference grad_refs[4] = {reference::gelu_tanh_grad, reference::gelu_erf_grad, reference::silu_grad,
                                            reference::quick_gelu_grad_float};
  double double_grad_worst[4];
  {
    std::uniform_real_distribution<double> uniform(-40, 14);
    std::mt19937_64 grng(11);
    std::vector<double> xs(samples);
    for (auto& v : xs) v = uniform(grng);
    std::vector<float> xf(samples);
    for (std::size_t i = 0; i < samples; ++i) xf[i] = float(xs[i] * 3 - 40);  // [-160, 2]: the silu tail too
    grad_worst[2] = accuracy::measure(xf, egelu::silu_grad_op<float>(), grad_refs[2]).relative_one;
    grad_worst[3] = accuracy::measure(xf, egelu::quick_gelu_grad_op<float>(), grad_refs[3]).relative_one;
    double_grad_worst[0] = accuracy::measure(xs, egelu::gelu_tanh_grad_op<double>(), grad_refs[0]).relative_one;
    double_grad_worst[1] = accuracy::measure(xs, egelu::gelu_erf_grad_op<double>(), grad_refs[1]).relative_one;
    double_grad_worst[2] = accuracy::measure(xs, egelu::silu_grad_op<double>(), grad_refs[2]).relative_one;
    double_grad_worst[3] =
        accuracy::measure(xs, egelu::quick_gelu_grad_op<double>(), reference::quick_gelu_grad_double).relative_one;
  }
  struct DoubleRow {
    std::string region;
    accuracy::Worst by_function[4];
  };
  std::vector<DoubleRow> double_rows;
  std::mt19937_64 rng(7);
  const auto double_row = [&](const std::string& name, double lo, double hi) {
    std::uniform_real_distribution<double> uniform(lo, hi);
    std::vector<double> xs(samples);
    for (auto& v : xs) v = uniform(rng);
    double_rows.push_back({name,
                           {accuracy::measure(xs, egelu::gelu_tanh_op<double>(), reference::gelu_tanh),
                            accuracy::measure(xs, egelu::gelu_erf_op<double>(), reference::gelu_erf),
                            accuracy::measure(xs, egelu::silu_op<double>(), reference::silu),
                            accuracy::measure(xs, egelu::quick_gelu_op<double>(), reference::quick_gelu_double)}});
  };
  double_row("[-760, -120)", -760, -120);
  for (const Region& region : kRegions) double_row(region.name, region.lo, region.hi);
  const double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;

  // The worst over every region, per implementation and per function in double.
  double overall[kImpls] = {}, double_overall[4] = {};
  for (int k = 0; k < kImpls; ++k)
    for (int r = 0; r < kRegionCount; ++r) overall[k] = std::max(overall[k], confirmed[k][r]);
  for (const auto& row : double_rows)
    for (int f = 0; f < 4; ++f) double_overall[f] = std::max(double_overall[f], row.by_function[f].ulp);

  std::ostringstream md;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const std::string command = std::string("sweep_accuracy ") + (windows ? "--windows " : "") + out_path +
                              (readme_path.empty() ? "" : " " + readme_path);
  const std::string inputs =
      windows ? "every float in " + std::to_string(std::size(kWindows)) + " windows" : "every float in [-120, 14]";
  md << "# egelu accuracy: " << kArch << "\n\n"
     << "Generated by `" << command << "` (source: `tests/sweep_accuracy.cpp`) on " << date << ", " << fmt(minutes)
     << " minutes. Machine: " << machine() << ".\n\n"
     << "Errors are in ulp of the exact result, over inputs whose exact result is a normal number. The exact "
        "result is the formula evaluated in quad precision (`"
     << reference::quad_name
     << "`): the tanh form *as defined* (with its constants √(2/π) and 0.044715), x·Φ(x) for the exact "
        "form, x·σ(x) for silu and x·σ(αx) for quick_gelu with α = 1.702 rounded to float, as the kernels and "
        "PyTorch hold it.\n\n"
     << "## float: " << inputs << " (" << total << " inputs)\n\n"
     << "Each float goes through the vectorized path (its lanes and scalar tail). The sweep measures against "
        "double precision and re-measures each region's 8 worst inputs against quad precision: the table shows "
        "those quad-confirmed worst errors.\n\n";
  if (windows) {
    md << "The windows:";
    for (const Region& w : kWindows) md << " " << w.name << " [" << w.lo << ", " << w.hi << ");";
    md << "\n\n";
  }
  md << "| region |";
  for (int k = 0; k < kImpls; ++k) md << " " << kImplNames[k] << " |";
  md << "\n|---|";
  for (int k = 0; k < kImpls; ++k) md << "---|";
  md << "\n";
  for (int r = 0; r < kRegionCount; ++r) {
    if (!measured[r]) continue;
    md << "| " << kRegions[r].name << " |";
    for (int k = 0; k < kImpls; ++k) md << " " << (worst[k][r].top.empty() ? "—" : fmt(confirmed[k][r])) << " |";
    md << "\n";
  }
  md << "\nWorst input per region (egelu):\n\n| region | gelu: x | gelu_exact: x | silu: x | quick_gelu: x |\n"
     << "|---|---|---|---|---|\n";
  for (int r = 0; r < kRegionCount; ++r) {
    if (!measured[r]) continue;
    md << "| " << kRegions[r].name << " |";
    for (int k : {kEgeluTanh, kEgeluErf, kEgeluSilu, kEgeluQuick}) {
      char a[40];
      std::snprintf(a, sizeof a, "%.9g", at[k][r]);
      md << " " << (worst[k][r].top.empty() ? "—" : a) << " |";
    }
    md << "\n";
  }
  md << "\nEigen's composed expressions are `0.5f*x*(1+tanh(0.7978845608f*(x+0.044715f*x*x*x)))`, "
        "`0.5f*x*(1+erf(x*0.70710678f))`, `x*x.logistic()` and `x*(1.702f*x).logistic()` on `Eigen::ArrayXf`; "
        "the textbook `1 + tanh` and `1 + erf` cancel for negative x.\n\n"
     << "## double: " << samples << " random inputs per region, against quad precision\n\n"
     << "| region | egelu gelu | egelu gelu_exact | egelu silu | egelu quick_gelu |\n|---|---|---|---|---|\n";
  for (const auto& row : double_rows) {
    md << "| " << row.region << " |";
    for (int f = 0; f < 4; ++f) md << " " << fmt(row.by_function[f].ulp) << " |";
    md << "\n";
  }
  md << "\n## Opt-in fast variants\n\n"
     << "`egelu::fast::gelu` and `egelu::fast::gelu_exact` have an absolute bound, |error| <= 4e-6 |x| "
        "(README, \"Fast variants\"): the table gives max |error| / |x| per region against the double-precision "
        "reference above (its own error is far below these figures), over results that are normal numbers, "
        "and where it is reached. This build's kernel: "
#if defined(EIGEN_VECTORIZE_AVX512)
     << "32 cubic pieces (AVX-512).\n\n"
#else
     << "the rational function (no AVX-512).\n\n"
#endif
     << "| region | fast::gelu | at x | fast::gelu_exact | at x |\n|---|---|---|---|---|\n";
  for (int r = 0; r < kRegionCount; ++r) {
    if (!measured[r]) continue;
    char row[160];
    std::snprintf(row, sizeof row, "| %s | %.3g | %.9g | %.3g | %.9g |\n", kRegions[r].name, fast_worst[0][r],
                  double(fast_at[0][r]), fast_worst[1][r], double(fast_at[1][r]));
    md << row;
  }
  md << "\n## Derivatives\n\n"
     << "The derivatives cross zero (gelu' near x = -0.75, silu' near -1.28), so their error is stated relative "
        "to 1 + |f'|: max |error| / (1 + |exact|).\n\n"
     << "| | gelu_grad | gelu_exact_grad | silu_grad | quick_gelu_grad |\n|---|---|---|---|---|\n"
     << "| float: gelu's over " << inputs << " (double reference); silu's and quick_gelu's over " << samples
     << " random inputs in [-160, 2] (quad) | " << fmt2(grad_worst[0]) << " | " << fmt2(grad_worst[1]) << " | "
     << fmt2(grad_worst[2]) << " | " << fmt2(grad_worst[3]) << " |\n"
     << "| double, " << samples << " random inputs in [-40, 14] (quad reference) | " << fmt2(double_grad_worst[0])
     << " | " << fmt2(double_grad_worst[1]) << " | " << fmt2(double_grad_worst[2]) << " | "
     << fmt2(double_grad_worst[3]) << " |\n";
  // The section tools/exhaustive_rounding writes (its proof of correct rounding) stays as it is.
  {
    std::ifstream old(out_path);
    const std::string text((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
    const std::string begin = "<!-- rounding: written by tools/exhaustive_rounding -->", end = "<!-- /rounding -->";
    const std::size_t from = text.find(begin), to = text.find(end);
    if (from != std::string::npos && to != std::string::npos && to > from) {
      md << "\n" << text.substr(from, to + end.size() - from) << "\n";
    }
  }
  std::ofstream(out_path) << md.str();
  std::fputs(md.str().c_str(), stdout);

  if (!readme_path.empty()) {
    const std::string marker = std::string(" <!-- sweep:") + kArch + " -->";
    const std::string float_in_what = egelu::internal::has_double_twin<Eigen::internal::packet_traits<float>::type>
                                          ? "computed in double"
                                          : "computed in two floats";
    std::vector<std::string> rows = {"| float, " + std::string(kArch) + " (" + float_in_what + "; " + inputs + ") | " +
                                     fmt(overall[kEgeluTanh]) + " | " + fmt(overall[kEgeluErf]) + " | " +
                                     fmt(overall[kEgeluSilu]) + " | " + fmt(overall[kEgeluQuick]) + " |" + marker};
    rows.push_back("| double, " + std::string(kArch) + " (" + std::to_string(samples) + " random per region) | " +
                   fmt(double_overall[0]) + " | " + fmt(double_overall[1]) + " | " + fmt(double_overall[2]) + " | " +
                   fmt(double_overall[3]) + " |" + marker);
    if (!windows) {
      rows.push_back("| Eigen's composed expression, float, " + std::string(kArch) + " | " + fmt(overall[kEigenTanh]) +
                     " | " + fmt(overall[kEigenErf]) + " | " + fmt(overall[kEigenSilu]) + " | " +
                     fmt(overall[kEigenQuick]) + " |" + marker);
    }
    update_readme(readme_path, rows,
                  std::string("*") + kArch + "*: " + machine() + ", " + date + ", `" + command + "`." + marker);
  }
  return 0;
}
