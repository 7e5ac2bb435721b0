// exhaustive_rounding: every float through egelu's float activations, on every x86 ISA
// at once (or the build's own target elsewhere), against the correctly rounded result.
//
//   build/tests/exhaustive_rounding --report rounding.md --hard-cases tests/data/rounding_hard_cases.txt
//                                                    (x86-64: about an hour on 2 cores)
//   exhaustive_rounding --stride 4099 ...                                   (a sample: under qemu-user)
//
// For each float x (all 2^32 bit patterns, or every stride-th) and each function, the
// reference (reference.hpp: long double with a deliberately generous bound, MPFR where that
// does not decide, a theorem for |x| <= 2^-100) gives the correctly rounded float, and every
// ISA's build gives its results on each path (full, half and quarter packets, one float at a
// time); any difference is a misrounded result. It also counts which of the library's
// rounding stages decided each input and how close each stage's double result came to the
// edge of its window (correct_rounding.hpp), and checks Eigen::half and bfloat16 (all 2^16
// inputs) against the exact value rounded straight to those types. The report is markdown;
// the hard cases (inputs the long double reference could not decide, or that reached the
// library's slow stage on some ISA, and a sample of those that reached the medium stage) go
// to a data file that test_rounding checks in every CI job.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "isa.hpp"
#include "reference.hpp"

namespace exhaustive {
namespace {

const char* function_name(Function f) {
  switch (f) {
    case Function::gelu:
      return "gelu";
    case Function::gelu_exact:
      return "gelu_exact";
    case Function::silu:
      return "silu";
    case Function::quick_gelu:
      return "quick_gelu";
    case Function::swish_1:
      return "swish(x, 1)";
    case Function::swish_1702:
      return "swish(x, 1.702f)";
  }
  return "?";
}

Exact exact_of(Function f) {
  switch (f) {
    case Function::gelu:
      return Exact::gelu;
    case Function::gelu_exact:
      return Exact::gelu_exact;
    case Function::silu:
    case Function::swish_1:
      return Exact::silu;
    case Function::quick_gelu:
    case Function::swish_1702:
      return Exact::quick_gelu;
  }
  return Exact::gelu;
}

const char* path_name(int p) {
  static const char* names[kPathCount] = {"packet", "half packet", "quarter packet", "scalar"};
  return names[p];
}

std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
float float_of(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

// Two results agree when both are NaN or their bits are equal (so +0 and -0 differ).
bool same(float got, double expected) {
  if (std::isnan(expected)) return std::isnan(got);
  return bits_of(got) == bits_of(float(expected));
}

// Half and bfloat16 bit patterns, to and from the values they hold.
double half_value(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, fraction = h & 1023;
  double v;
  if (exponent == 31) {
    v = fraction ? NAN : INFINITY;
  } else if (exponent == 0) {
    v = std::ldexp(fraction, -24);
  } else {
    v = std::ldexp(1024 + fraction, exponent - 25);
  }
  return sign ? -v : v;
}
double bfloat16_value(std::uint16_t b) { return float_of(std::uint32_t(b) << 16); }
// A value the type holds (or NaN) as its bit pattern.
std::uint16_t half_bits(double v) {
  if (std::isnan(v)) return 0x7e00;
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  v = std::fabs(v);
  if (std::isinf(v)) return sign | 0x7c00;
  if (v == 0) return sign;
  if (v < std::ldexp(1.0, -14)) return std::uint16_t(sign | std::uint16_t(std::ldexp(v, 24)));
  const int e = std::ilogb(v);
  return std::uint16_t(sign | ((e + 15) << 10) | (std::uint16_t(std::ldexp(v, 10 - e)) & 1023));
}
std::uint16_t bfloat16_bits(double v) {
  if (std::isnan(v)) return 0x7fc0;
  return std::uint16_t(bits_of(float(v)) >> 16);
}
bool same16(std::uint16_t got, std::uint16_t expected, bool bf16) {
  const double g = bf16 ? bfloat16_value(got) : half_value(got),
               e = bf16 ? bfloat16_value(expected) : half_value(expected);
  if (std::isnan(e)) return std::isnan(g);
  return got == expected;
}

std::string hex_float(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%a", v);
  return b;
}
std::string show(float x) {
  char b[96];
  std::snprintf(b, sizeof b, "%.9g (0x%08x)", double(x), bits_of(x));
  return b;
}

struct Options {
  std::vector<Function> functions = {Function::gelu,       Function::gelu_exact, Function::silu,
                                     Function::quick_gelu, Function::swish_1,    Function::swish_1702};
  std::vector<std::string> isa_names;  // empty: every one the CPU runs
  unsigned threads = 2;
  std::uint64_t stride = 1, first = 0, count = std::uint64_t(1) << 32;
  std::uint64_t cross_check_every = 4096;  // long double against MPFR on every n-th decided input
  bool stages = true, narrow = true;
  std::size_t medium_sample = 64;  // per function: inputs that reached the medium stage, for the data file
  // The slow stage alone on every input this close to a midpoint (ulps), and on every n-th input:
  // it must be right everywhere, not only where the other stages send it.
  double slow_near = 0x1p-12;
  std::uint64_t slow_every = 1021;
  std::string report, hard_cases, accuracy;
};

// What one ISA's build did with one function.
struct IsaTally {
  std::uint64_t misrounded[kPathCount] = {};
  std::vector<std::pair<float, float>> examples[kPathCount];  // (x, got), the first few
  std::uint64_t stage_count[3] = {};
  double fast_margin = 0, medium_margin = 0;  // max |result - exact| / window, over normal results
  float fast_margin_at = 0, medium_margin_at = 0;
  std::vector<float> slow, medium;                 // inputs that reached those stages
  std::uint64_t slow_checked = 0, slow_wrong = 0;  // the slow stage alone
  std::vector<std::pair<float, float>> slow_examples;
};

struct FunctionTally {
  std::uint64_t inputs = 0, decided_by[5] = {};
  std::map<int, std::uint64_t> mpfr_bits;
  double worst_long_double = 0;  // max observed |long double - MPFR| / (its bound |MPFR|)
  float worst_long_double_at = 0;
  double worst_double = 0;  // the same for the double filter
  float worst_double_at = 0;
  std::uint64_t cross_checked = 0;
  std::vector<std::pair<double, float>> closest;  // (distance to a midpoint in ulps, x), the nearest few
  std::vector<float> undecided_by_long_double;
  std::vector<IsaTally> isa;
};

constexpr std::size_t kClosestKept = 24, kExamplesKept = 8;

void keep_closest(std::vector<std::pair<double, float>>& v, double d, float x) {
  if (v.size() < kClosestKept || d < v.back().first) {
    v.emplace_back(d, x);
    std::sort(v.begin(), v.end());
    if (v.size() > kClosestKept) v.pop_back();
  }
}

// The unit in the last place of a normal double r, from its bits.
double ulp_of_double(double r) {
  std::uint64_t b;
  std::memcpy(&b, &r, sizeof b);
  b = (b & 0x7ff0000000000000ull) - (std::uint64_t(52) << 52);
  double u;
  std::memcpy(&u, &b, sizeof u);
  return u;
}

class Sweep {
 public:
  Sweep(const Options& options, std::vector<Isa> isas) : options_(options), isas_(std::move(isas)) {
    tallies_.resize(options.functions.size());
    for (auto& t : tallies_) t.isa.resize(isas_.size());
  }

  void run() {
    const std::uint64_t inputs = (options_.count + options_.stride - 1) / options_.stride;
    const std::uint64_t chunk = 1 << 16, chunks = (inputs + chunk - 1) / chunk;
    std::atomic<std::uint64_t> next{0}, done{0};
    const auto start = std::chrono::steady_clock::now();
    auto worker = [&] {
      std::vector<float> x;
      for (std::uint64_t c; (c = next++) < chunks;) {
        x.clear();
        for (std::uint64_t i = c * chunk; i < std::min(inputs, (c + 1) * chunk); ++i) {
          x.push_back(float_of(std::uint32_t(options_.first + i * options_.stride)));
        }
        for (std::size_t k = 0; k < options_.functions.size(); ++k) check(k, x);
        const std::uint64_t d = ++done;
        if (d % std::max<std::uint64_t>(1, chunks / 100) == 0 || d == chunks) {
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          std::fprintf(stderr, "\r%5.1f%% of %llu inputs, %.0f s", 100.0 * double(d) / double(chunks),
                       static_cast<unsigned long long>(inputs), s);
        }
      }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < options_.threads; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    std::fprintf(stderr, "\n");
  }

  const std::vector<FunctionTally>& tallies() const { return tallies_; }

 private:
  void check(std::size_t k, const std::vector<float>& x) {
    const Function function = options_.functions[k];
    const Exact exact = exact_of(function);
    const std::size_t n = x.size();
    FunctionTally local;
    local.isa.resize(isas_.size());
    local.inputs = n;
    // The reference. Functions sharing an exact function share its values (silu and swish(x, 1)).
    std::vector<Rounded> expected(n);
    for (std::size_t i = 0; i < n; ++i) {
      expected[i] = round_exact(exact, x[i], kFloat);
      const Rounded& r = expected[i];
      ++local.decided_by[int(r.decider)];
      if (r.decider == Decider::mpfr) {
        ++local.mpfr_bits[r.mpfr_bits];
        local.undecided_by_long_double.push_back(x[i]);
      }
      if (r.decider == Decider::double_precision || r.decider == Decider::long_double || r.decider == Decider::mpfr) {
        keep_closest(local.closest, r.midpoint_ulps, x[i]);
        // The long double evaluation against MPFR: its bound must hold with room to spare, where it
        // matters: for values that can round to a nonzero float (far below, the long double
        // argument of exp is less precise, and the values are zero to float by hundreds of binades).
        const std::uint64_t index = bits_of(x[i]);
        if (have_mpfr() &&
            (r.decider == Decider::mpfr || r.decider == Decider::long_double ||
             index % options_.cross_check_every == 0) &&
            fabsl(r.estimate) >= 0x1p-152L) {
          const long double m = mpfr_value(exact, x[i], 256), ld = long_double_value(exact, x[i]);
          const long double d = double_value(exact, x[i]);
          const double ratio = m == 0 ? 0 : double(fabsl(ld - m) / (long_double_bound() * fabsl(m)));
          const double ratio_d = m == 0 ? 0 : double(fabsl(d - m) / (double_bound() * fabsl(m)));
          ++local.cross_checked;
          if (ratio > local.worst_long_double) {
            local.worst_long_double = ratio;
            local.worst_long_double_at = x[i];
          }
          if (ratio_d > local.worst_double) {
            local.worst_double = ratio_d;
            local.worst_double_at = x[i];
          }
        }
      }
    }
    std::vector<float> y(n);
    std::vector<Stage> stage(n);
    std::vector<double> fast(n), medium(n);
    for (std::size_t s = 0; s < isas_.size(); ++s) {
      const Isa& isa = isas_[s];
      IsaTally& tally = local.isa[s];
      for (int p = 0; p < kPathCount; ++p) {
        if (!isa.lanes[p]) continue;
        isa.run(function, Path(p), x.data(), y.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
          if (!same(y[i], expected[i].value)) {
            ++tally.misrounded[p];
            if (tally.examples[p].size() < kExamplesKept) tally.examples[p].emplace_back(x[i], y[i]);
          }
        }
      }
      if (!options_.stages || !isa.stages) continue;
      // The slow stage alone, on the inputs nearest a midpoint and a sample of the rest.
      std::vector<float> slow_x, slow_y;
      std::vector<double> slow_expected;
      for (std::size_t i = 0; i < n; ++i) {
        const Rounded& r = expected[i];
        if (r.decider == Decider::special) continue;
        if (r.midpoint_ulps <= options_.slow_near || bits_of(x[i]) % options_.slow_every == 0) {
          slow_x.push_back(x[i]);
          slow_expected.push_back(r.value);
        }
      }
      slow_y.resize(slow_x.size());
      isa.slow(function, slow_x.data(), slow_y.data(), slow_x.size());
      for (std::size_t i = 0; i < slow_x.size(); ++i) {
        ++tally.slow_checked;
        if (!same(slow_y[i], slow_expected[i])) {
          ++tally.slow_wrong;
          if (tally.slow_examples.size() < kExamplesKept) tally.slow_examples.emplace_back(slow_x[i], slow_y[i]);
        }
      }
      isa.stages(function, x.data(), stage.data(), fast.data(), medium.data(), n);
      const double fast_window = isa.window(function, false), medium_window = isa.window(function, true);
      for (std::size_t i = 0; i < n; ++i) {
        ++tally.stage_count[int(stage[i])];
        if (stage[i] == Stage::slow) tally.slow.push_back(x[i]);
        if (stage[i] == Stage::medium) tally.medium.push_back(x[i]);
        const Rounded& r = expected[i];
        const double v = r.value;
        // Margins over inputs with normal float results, against the value the reference decided
        // on (good to 2^-45 or better: far inside the fast stage's window of 2^-39 or so); the
        // medium stage's (a window of 2^-50) against long double.
        if (r.decider == Decider::special || r.decider == Decider::tiny_rule || !(std::fabs(v) >= 0x1p-126)) {
          continue;
        }
        const double fast_error = double(fabsl(fast[i] - r.estimate)) / (fast_window * ulp_of_double(fast[i]));
        if (fast_error > tally.fast_margin) {
          tally.fast_margin = fast_error;
          tally.fast_margin_at = x[i];
        }
        if (stage[i] != Stage::fast) {
          const long double precise =
              r.decider == Decider::double_precision ? long_double_value(exact, x[i]) : r.estimate;
          const double e = double(fabsl(medium[i] - precise)) / (medium_window * ulp_of_double(medium[i]));
          if (e > tally.medium_margin) {
            tally.medium_margin = e;
            tally.medium_margin_at = x[i];
          }
        }
      }
    }
    merge(k, local);
  }

  void merge(std::size_t k, FunctionTally& local) {
    std::lock_guard<std::mutex> lock(mutex_);
    FunctionTally& t = tallies_[k];
    t.inputs += local.inputs;
    for (int d = 0; d < 5; ++d) t.decided_by[d] += local.decided_by[d];
    for (const auto& [bits, c] : local.mpfr_bits) t.mpfr_bits[bits] += c;
    if (local.worst_long_double > t.worst_long_double) {
      t.worst_long_double = local.worst_long_double;
      t.worst_long_double_at = local.worst_long_double_at;
    }
    if (local.worst_double > t.worst_double) {
      t.worst_double = local.worst_double;
      t.worst_double_at = local.worst_double_at;
    }
    t.cross_checked += local.cross_checked;
    for (const auto& [d, x] : local.closest) keep_closest(t.closest, d, x);
    t.undecided_by_long_double.insert(t.undecided_by_long_double.end(), local.undecided_by_long_double.begin(),
                                      local.undecided_by_long_double.end());
    for (std::size_t s = 0; s < isas_.size(); ++s) {
      IsaTally& a = t.isa[s];
      const IsaTally& b = local.isa[s];
      for (int p = 0; p < kPathCount; ++p) {
        a.misrounded[p] += b.misrounded[p];
        for (const auto& e : b.examples[p]) {
          if (a.examples[p].size() < kExamplesKept) a.examples[p].push_back(e);
        }
      }
      for (int g = 0; g < 3; ++g) a.stage_count[g] += b.stage_count[g];
      if (b.fast_margin > a.fast_margin) a.fast_margin = b.fast_margin, a.fast_margin_at = b.fast_margin_at;
      if (b.medium_margin > a.medium_margin) a.medium_margin = b.medium_margin, a.medium_margin_at = b.medium_margin_at;
      a.slow.insert(a.slow.end(), b.slow.begin(), b.slow.end());
      a.slow_checked += b.slow_checked;
      a.slow_wrong += b.slow_wrong;
      for (const auto& e : b.slow_examples) {
        if (a.slow_examples.size() < kExamplesKept) a.slow_examples.push_back(e);
      }
      a.medium.insert(a.medium.end(), b.medium.begin(), b.medium.end());
    }
  }

  const Options& options_;
  std::vector<Isa> isas_;
  std::vector<FunctionTally> tallies_;
  std::mutex mutex_;
};

// Half and bfloat16: every bit pattern, through the array path and one at a time, against the
// exact value rounded straight to the type, and against the correctly rounded float rounded to it.
struct NarrowTally {
  std::uint64_t differs_from_exact[2] = {};  // [scalar]: library result != exact value rounded to the type
  std::uint64_t differs_from_float = 0;      // library result != correctly rounded float rounded to the type
  std::vector<std::string> examples;         // where the exact rounding and the rounding through float differ
  std::uint64_t double_rounding = 0;         // inputs where those two differ
  std::vector<std::string> wrong;            // library results not as through float: the first few
};

NarrowTally check_narrow(const Isa& isa, Function function, bool bf16) {
  const Exact exact = exact_of(function);
  const Format format = bf16 ? kBfloat16 : kHalf;
  std::vector<std::uint16_t> x(65536), y(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) x[i] = std::uint16_t(i);
  NarrowTally tally;
  std::vector<std::uint16_t> direct(65536), through_float(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const double v = bf16 ? bfloat16_value(x[i]) : half_value(x[i]);
    const Rounded r = round_exact(exact, float(v), format);
    const double f = round_exact(exact, float(v), kFloat).value;
    direct[i] = bf16 ? bfloat16_bits(r.value) : half_bits(r.value);
    through_float[i] = bf16 ? bfloat16_bits(round_value(f, format)) : half_bits(round_value(f, format));
    if (!same16(through_float[i], direct[i], bf16)) {
      ++tally.double_rounding;
      if (tally.examples.size() < 16) {
        char b[160];
        std::snprintf(b, sizeof b, "x = %a: exact rounding %a, through float %a (float %a)", v,
                      bf16 ? bfloat16_value(direct[i]) : half_value(direct[i]),
                      bf16 ? bfloat16_value(through_float[i]) : half_value(through_float[i]), f);
        tally.examples.push_back(b);
      }
    }
  }
  for (int scalar = 0; scalar < 2; ++scalar) {
    isa.run_narrow(function, bf16, scalar, x.data(), y.data(), x.size());
    for (std::uint32_t i = 0; i < 65536; ++i) {
      if (!same16(y[i], direct[i], bf16)) ++tally.differs_from_exact[scalar];
      if (!same16(y[i], through_float[i], bf16)) {
        ++tally.differs_from_float;
        if (tally.wrong.size() < 4) {
          char b[160];
          std::snprintf(b, sizeof b, "x = 0x%04x (%a)%s: got 0x%04x, through float 0x%04x", unsigned(x[i]),
                        bf16 ? bfloat16_value(x[i]) : half_value(x[i]), scalar ? " one at a time" : "", unsigned(y[i]),
                        unsigned(through_float[i]));
          tally.wrong.push_back(b);
        }
      }
    }
  }
  return tally;
}

std::string now_utc() {
  char b[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return b;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

bool cpu_runs(const std::string& name) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (name == "sse2") return true;
  if (name == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (name == "avx512f") return __builtin_cpu_supports("avx512f");
  if (name == "avx512") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  }
  return false;
#else
  return name == "native";
#endif
}

std::vector<Isa> all_isas() {
#if defined(__x86_64__) || defined(__i386__)
  return {isa_sse2(), isa_avx2(), isa_avx512f(), isa_avx512()};
#else
  return {isa_native()};
#endif
}

int usage() {
  std::fprintf(stderr,
               "usage: exhaustive_rounding [--functions gelu,gelu_exact,silu,quick_gelu,swish_1,swish_1702]\n"
               "         [--isas sse2,avx2,avx512f,avx512|native] [--threads N] [--stride K] [--first BITS]\n"
               "         [--count N] [--no-stages] [--no-narrow] [--report FILE] [--hard-cases FILE]\n"
               "         [--accuracy docs/ACCURACY.md]\n");
  return 2;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

}  // namespace
}  // namespace exhaustive

int main(int argc, char** argv) {
  using namespace exhaustive;
  Options options;
  const std::string command = [&] {
    std::string c;
    for (int i = 0; i < argc; ++i) c += (i ? " " : "") + std::string(i ? argv[i] : "exhaustive_rounding");
    return c;
  }();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--functions") {
      options.functions.clear();
      for (const std::string& name : split_list(value())) {
        bool found = false;
        for (int f = 0; f < kFunctionCount; ++f) {
          const std::string n = function_name(Function(f));
          const std::string alias = f == int(Function::swish_1)      ? "swish_1"
                                    : f == int(Function::swish_1702) ? "swish_1702"
                                                                     : n;
          if (name == n || name == alias) options.functions.push_back(Function(f)), found = true;
        }
        if (!found) return usage();
      }
    } else if (a == "--isas") {
      options.isa_names = split_list(value());
    } else if (a == "--threads") {
      options.threads = unsigned(std::stoul(value()));
    } else if (a == "--stride") {
      options.stride = std::stoull(value());
    } else if (a == "--first") {
      options.first = std::stoull(value(), nullptr, 0);
    } else if (a == "--count") {
      options.count = std::stoull(value(), nullptr, 0);
    } else if (a == "--no-stages") {
      options.stages = false;
    } else if (a == "--no-narrow") {
      options.narrow = false;
    } else if (a == "--report") {
      options.report = value();
    } else if (a == "--hard-cases") {
      options.hard_cases = value();
    } else if (a == "--accuracy") {
      options.accuracy = value();
    } else {
      return usage();
    }
  }
  if (options.stride == 0 || options.first + options.count > (std::uint64_t(1) << 32)) return usage();

  std::vector<Isa> isas;
  std::vector<std::string> skipped;
  for (const Isa& isa : all_isas()) {
    const bool asked = options.isa_names.empty() || std::find(options.isa_names.begin(), options.isa_names.end(),
                                                              std::string(isa.name)) != options.isa_names.end();
    if (!asked) continue;
    if (cpu_runs(isa.name)) {
      isas.push_back(isa);
    } else {
      skipped.push_back(isa.name);
    }
  }
  if (isas.empty()) {
    std::fprintf(stderr, "exhaustive_rounding: no ISA to check on this CPU\n");
    return 2;
  }

  const auto start = std::chrono::steady_clock::now();
  Sweep sweep(options, isas);
  sweep.run();
  struct NarrowRow {
    Function function;
    std::string isa;
    bool bf16;
    NarrowTally tally;
  };
  std::vector<NarrowRow> narrow;
  if (options.narrow) {
    for (Function f : options.functions) {
      // swish_op<half>'s alpha is rounded to half (1.702 -> 1.7021484375): another function
      if (f == Function::swish_1702) continue;
      for (const Isa& isa : isas) {
        for (bool bf16 : {false, true}) narrow.push_back({f, isa.name, bf16, check_narrow(isa, f, bf16)});
      }
    }
  }
  const double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;

  // The report.
  std::ostringstream out;
  const auto& tallies = sweep.tallies();
  out << "## Exhaustive check of correct rounding (`tools/exhaustive_rounding`)\n\n";
  out << "`" << command << "`, " << now_utc() << ", " << std::fixed;
  out.precision(1);
  out << minutes << " minutes on " << options.threads << " threads. Machine: " << cpu_model() << ".\n\n";
  out << "Inputs: "
      << (options.stride == 1 && options.count == (std::uint64_t(1) << 32)
              ? "every float (all 2^32 bit patterns)"
              : "every " + std::to_string(options.stride) + "-th bit pattern from " + std::to_string(options.first))
      << ", " << tallies.front().inputs << " per function.";
  if (!skipped.empty()) {
    out << " Not run (this CPU lacks them):";
    for (const auto& s : skipped) out << " " << s;
    out << ".";
  }
  out << "\n\n";
  out << "Builds: ";
  for (std::size_t s = 0; s < isas.size(); ++s)
    out << (s ? "; " : "") << "**" << isas[s].name << "** (`" << isas[s].flags << "`)";
  out << ".\n\n";

  out << "### Misrounded results\n\nResults that differ from the correctly rounded float (NaN for NaN; zeros compared "
         "with "
         "their signs), per path: full packets, half and quarter packets (where narrower), one float at a time.\n\n";
  out << "| function |";
  for (const Isa& isa : isas) {
    for (int p = 0; p < kPathCount; ++p) {
      if (isa.lanes[p]) out << " " << isa.name << " " << path_name(p) << " |";
    }
  }
  out << "\n|---|";
  for (const Isa& isa : isas) {
    for (int p = 0; p < kPathCount; ++p) {
      if (isa.lanes[p]) out << "---|";
    }
  }
  out << "\n";
  std::uint64_t total_misrounded = 0;
  for (std::size_t k = 0; k < tallies.size(); ++k) {
    out << "| " << function_name(options.functions[k]) << " |";
    for (std::size_t s = 0; s < isas.size(); ++s) {
      for (int p = 0; p < kPathCount; ++p) {
        if (!isas[s].lanes[p]) continue;
        out << " " << tallies[k].isa[s].misrounded[p] << " |";
        total_misrounded += tallies[k].isa[s].misrounded[p];
      }
    }
    out << "\n";
  }
  out << "\n";
  for (std::size_t k = 0; k < tallies.size(); ++k) {
    for (std::size_t s = 0; s < isas.size(); ++s) {
      for (int p = 0; p < kPathCount; ++p) {
        const auto& ex = tallies[k].isa[s].examples[p];
        if (ex.empty()) continue;
        out << "- " << function_name(options.functions[k]) << ", " << isas[s].name << " " << path_name(p) << ":";
        for (const auto& [x, got] : ex) {
          out << " x = " << show(x) << " gave " << hex_float(got) << " for "
              << hex_float(round_exact(exact_of(options.functions[k]), x, kFloat).value) << ";";
        }
        out << "\n";
      }
    }
  }

  out << "\n### The reference\n\nInputs decided by each of its stages, and on a sample (every "
      << options.cross_check_every
      << "th input and every one MPFR decided) the double and long double evaluations' largest error against MPFR at "
         "256 "
         "bits, as a fraction of the bound they are trusted to (below 1: the bound holds):\n\n"
         "| function | special | tiny rule | double | long double | MPFR (bits: inputs) | double's worst / bound | "
         "long double's worst / bound (inputs checked) |\n|---|---|---|---|---|---|---|---|\n";
  for (std::size_t k = 0; k < tallies.size(); ++k) {
    const FunctionTally& t = tallies[k];
    out << "| " << function_name(options.functions[k]) << " | " << t.decided_by[0] << " | " << t.decided_by[1] << " | "
        << t.decided_by[2] << " | " << t.decided_by[3] << " | ";
    for (const auto& [bits, c] : t.mpfr_bits) out << bits << ": " << c << " ";
    out.precision(4);
    out << "| " << std::defaultfloat << t.worst_double << " at " << show(t.worst_double_at) << " | "
        << t.worst_long_double << " at " << show(t.worst_long_double_at) << " (" << t.cross_checked << ") |\n"
        << std::fixed;
  }
  out << "\nThe inputs nearest a midpoint between two floats (distance in ulps of the result):\n\n";
  for (std::size_t k = 0; k < tallies.size(); ++k) {
    out << "- " << function_name(options.functions[k]) << ":";
    out << std::defaultfloat;
    for (std::size_t i = 0; i < std::min<std::size_t>(6, tallies[k].closest.size()); ++i) {
      out << " " << show(tallies[k].closest[i].second) << " at " << tallies[k].closest[i].first << ";";
    }
    out << std::fixed << "\n";
  }

  bool have_stages = false;
  for (const Isa& isa : isas) have_stages = have_stages || isa.stages;
  if (options.stages && have_stages) {
    out << "\n### The library's rounding stages\n\nInputs decided by each stage (fast: the float kernel in double and "
           "its window, with the tiny rule and the test on the subnormal grid; medium: the double kernel; slow: "
           "double-double), as the scalar path's tests see them, and each stage's largest error over normal results as "
           "a fraction of its window (below 1: the window holds). The last column runs the slow stage alone, wherever "
           "the other stages would send an input, on every input within 2^-12 ulp of a midpoint and every 1021st "
           "bit pattern:\n\n"
           "| function | ISA | fast | medium | slow | fast error / window | medium error / window | slow stage alone: "
           "wrong of checked |\n"
           "|---|---|---|---|---|---|---|---|\n";
    for (std::size_t k = 0; k < tallies.size(); ++k) {
      for (std::size_t s = 0; s < isas.size(); ++s) {
        if (!isas[s].stages) continue;
        const IsaTally& a = tallies[k].isa[s];
        out << "| " << function_name(options.functions[k]) << " | " << isas[s].name << " | " << a.stage_count[0]
            << " | " << a.stage_count[1] << " | " << a.stage_count[2] << " | " << std::defaultfloat;
        out.precision(3);
        out << a.fast_margin << " at " << show(a.fast_margin_at) << " | " << a.medium_margin << " at "
            << show(a.medium_margin_at) << " | " << a.slow_wrong << " of " << a.slow_checked << " |\n"
            << std::fixed;
        for (const auto& [xx, got] : a.slow_examples) {
          out << "  (slow stage alone: x = " << show(xx) << " gave " << hex_float(got) << ")\n";
        }
      }
    }
  }

  if (!narrow.empty()) {
    out << "\n### Eigen::half and bfloat16\n\nEvery bit pattern, through an array expression and one value at a time, "
           "against the exact value rounded straight to the type. \"Through float\" counts the inputs where rounding "
           "the correctly rounded float to the type differs from rounding the exact value (double rounding); "
           "\"not as through float\" counts library results that differ from the former.\n\n"
           "| function | ISA | type | differ from exact (array / one at a time) | double roundings | not as through "
           "float |\n"
           "|---|---|---|---|---|---|\n";
    for (const NarrowRow& r : narrow) {
      out << "| " << function_name(r.function) << " | " << r.isa << " | " << (r.bf16 ? "bfloat16" : "half") << " | "
          << r.tally.differs_from_exact[0] << " / " << r.tally.differs_from_exact[1] << " | " << r.tally.double_rounding
          << " | " << r.tally.differs_from_float << " |\n";
    }
    for (const NarrowRow& r : narrow) {
      for (const auto& w : r.tally.wrong) {
        out << "- " << function_name(r.function) << " " << r.isa << (r.bf16 ? " bfloat16" : " half")
            << ", not as through float: " << w << "\n";
      }
    }
    std::set<std::string> shown;
    for (const NarrowRow& r : narrow) {
      const std::string key = std::string(function_name(r.function)) + (r.bf16 ? " bfloat16" : " half");
      if (r.tally.examples.empty() || !shown.insert(key).second) continue;
      out << "\n" << key << ", where rounding through float differs:\n";
      for (const auto& e : r.tally.examples) out << "- " << e << "\n";
    }
  }
  const std::string report = out.str();
  std::fputs(report.c_str(), stdout);
  if (!options.report.empty()) {
    std::ofstream file(options.report);
    file << report;
  }

  if (!options.accuracy.empty()) {
    // The report replaces its section of docs/ACCURACY.md (between the markers, which
    // tests/sweep_accuracy keeps when it rewrites the rest), or is added at its end.
    std::string text;
    {
      std::ifstream in(options.accuracy);
      text.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    const std::string begin = "<!-- rounding: written by tools/exhaustive_rounding -->", end = "<!-- /rounding -->";
    const std::string section = begin + "\n" + report + end;
    const std::size_t from = text.find(begin), to = text.find(end);
    if (from != std::string::npos && to != std::string::npos && to > from) {
      text.replace(from, to + end.size() - from, section);
    } else {
      text += "\n" + section + "\n";
    }
    std::ofstream(options.accuracy) << text;
  }

  if (!options.hard_cases.empty()) {
    // function, x's bits, the correctly rounded result's bits, why it is here
    std::ofstream file(options.hard_cases);
    file << "# Hard cases for test_rounding, written by tools/exhaustive_rounding (" << now_utc() << ").\n"
         << "# function x_bits expected_bits reason; reason: midpoint (the long double reference could not decide),\n"
         << "# closest (among the nearest to a midpoint), slow or medium (reached that library stage on some ISA).\n";
    for (std::size_t k = 0; k < tallies.size(); ++k) {
      const Function function = options.functions[k];
      if (function == Function::swish_1 || function == Function::swish_1702) continue;  // the same inputs
      std::map<std::uint32_t, std::string> cases;
      for (float x : tallies[k].undecided_by_long_double) cases.emplace(bits_of(x), "midpoint");
      for (const auto& [d, x] : tallies[k].closest) cases.emplace(bits_of(x), "closest");
      std::vector<float> medium;
      for (const IsaTally& a : tallies[k].isa) {
        for (float x : a.slow) cases.emplace(bits_of(x), "slow");
        medium.insert(medium.end(), a.medium.begin(), a.medium.end());
      }
      std::sort(medium.begin(), medium.end());
      medium.erase(std::unique(medium.begin(), medium.end()), medium.end());
      const std::size_t step = std::max<std::size_t>(1, medium.size() / options.medium_sample);
      for (std::size_t i = 0; i < medium.size(); i += step) cases.emplace(bits_of(medium[i]), "medium");
      for (const auto& [bits, why] : cases) {
        const double v = round_exact(exact_of(function), float_of(bits), kFloat).value;
        char line[96];
        std::snprintf(line, sizeof line, "%s 0x%08x 0x%08x %s\n", function_name(function), bits, bits_of(float(v)),
                      why.c_str());
        file << line;
      }
    }
  }
  for (const auto& t : tallies) {
    for (const auto& a : t.isa) total_misrounded += a.slow_wrong;
  }
  std::uint64_t narrow_bad = 0;
  for (const NarrowRow& r : narrow) narrow_bad += r.tally.differs_from_float;
  return total_misrounded == 0 && narrow_bad == 0 ? 0 : 1;
}
