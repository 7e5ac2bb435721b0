// ggml's matrix products on the CPU, as llama.cpp runs them: the comparator of egelu's 8-bit and 4-bit
// block weight formats (Q8_0, Q4_0, MXFP4). Not part of egelu's build: bench/ggml/setup installs the prebuilt
// ggml libraries of npm's @node-llama-cpp/linux-x64 into build-ggml/ and compiles this file with g++;
// nothing of ggml is compiled here, the libraries are dlopen()ed at run time.
//
//   ggml_products info                       which libraries, which CPU variant, ggml's version
//   ggml_products check                      products of every format against a float64 reference
//   ggml_products quantize --rows R --cols K (--in FILE | --seed S) --out PREFIX
//                          [--types q8_0,q4_0] [--write-input FILE] [--self-test]
//       ggml_quantize_chunk's bytes for each type into PREFIX.<type> (raw, row after row), from float32
//       rows read from FILE (raw little-endian float32, R*K values, row-major: numpy's tofile) or drawn
//       from seed S (with zero blocks, ties in magnitude and scales from 1e-6 to 1e3 mixed in, so that a
//       byte-for-byte comparison meets the corner cases); --write-input saves the drawn floats.
//       --self-test also checks this file's own reading of ggml's reference quantizers (q8_0_ref and
//       q4_0_ref below) against ggml's bytes, and the zero block's bytes.
//   ggml_products time [--formats f32,bf16,q8_0,q4_0,mxfp4] [--layouts repack,plain] [--tokens 1,128]
//                      [--threads 1,2] [--min-time S] [--min-iters N] [--rounds N] [--quick]
//       TinyLlama-1.1B's MLP products (d_model 2048, d_ff 5632): gate and up (5632 x 2048) and down
//       (2048 x 5632), f32 activations in. One call is one ggml graph of the three products (down's input
//       is a separate d_ff x T tensor, so no activation runs between them). The weights are cycled over
//       enough distinct copies that they total at least 4x the last-level cache (sysfs) and 1 GiB, each call using
//       the next copy, so that at T = 1 they are read from memory. A streaming read of as many bytes (over
//       as many copies) on as many threads is timed in the same process. Each call is timed alone; a
//       point's figure is the best of --rounds medians.
//
// Options for every mode: --lib-dir DIR (default $EGELU_GGML_LIB_DIR, else the npm package under this
// program's directory), --variant NAME (a libggml-cpu-NAME.so; default: the highest ggml_backend_score()).
// Output: one JSON object per line on stdout ("kind": info, check, mlp, stream_read, quantize); progress on
// stderr. Exit status 1 when a check fails.
//
// Layouts: "repack" puts a weight into ggml's CPU_REPACK buffer type when the CPU backend supports the
// product with it there (on x86 with AVX2: Q4_0 and MXFP4, repacked into 8-row interleaved blocks; not
// Q8_0, F32 or BF16), which is what llama.cpp does by default; "plain" keeps ggml's row-major blocks. A format the
// repack buffer does not take is timed once, as "plain".
//
// Numerics: ggml rounds the activations to the weights' vec_dot type inside its
// products: Q8_0 blocks for Q8_0 and Q4_0 weights, bf16 for BF16 weights. So even against a float64
// reference computed with the same (dequantized) weights, its quantized products are off by ~1e-3
// relative (max error over the largest output: ~4e-3 at K = 256); `check` allows 1e-2 for them and 1e-5 for F32.
//
// The ggml declarations below are copied from ggml's public headers (include/ggml.h, ggml-backend.h,
// ggml-alloc.h, ggml-cpu.h; ggml-org/ggml at d99724f2, the nearest source to the npm build's ggml 0.25.1,
// llama.cpp commit 0ad4a86) and reduced to what this file calls; only opaque pointers and the by-value
// struct ggml_init_params cross the boundary, and the enum values are checked at run time through
// ggml_type_name().

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EGELU_PAUSE() _mm_pause()
#else
#define EGELU_PAUSE() std::this_thread::yield()
#endif

// ---- ggml's API (copied from its headers, see above) ------------------------------------------------------
extern "C" {
struct ggml_context;
struct ggml_tensor;
struct ggml_cgraph;
struct ggml_threadpool;
struct ggml_backend;
struct ggml_backend_buffer;
struct ggml_backend_buffer_type;
struct ggml_backend_device;
struct ggml_backend_reg;
typedef struct ggml_backend* ggml_backend_t;
typedef struct ggml_backend_buffer* ggml_backend_buffer_t;
typedef struct ggml_backend_buffer_type* ggml_backend_buffer_type_t;
typedef struct ggml_backend_device* ggml_backend_dev_t;
typedef struct ggml_backend_reg* ggml_backend_reg_t;

enum ggml_type {
  GGML_TYPE_F32 = 0,
  GGML_TYPE_F16 = 1,
  GGML_TYPE_Q4_0 = 2,
  GGML_TYPE_Q8_0 = 8,
  GGML_TYPE_BF16 = 30,
  GGML_TYPE_MXFP4 = 39
};
enum ggml_status {
  GGML_STATUS_ALLOC_FAILED = -2,
  GGML_STATUS_FAILED = -1,
  GGML_STATUS_SUCCESS = 0,
  GGML_STATUS_ABORTED = 1
};

struct ggml_init_params {
  // memory pool
  size_t mem_size;   // bytes
  void* mem_buffer;  // if NULL, memory will be allocated internally
  bool no_alloc;     // don't allocate memory for the tensor data
};

typedef ggml_backend_buffer_type_t* (*ggml_backend_dev_get_extra_bufts_t)(ggml_backend_dev_t device);
}  // extern "C"

namespace {

// The functions, resolved with dlsym. X(name, return type, parameters).
#define GGML_BASE_FUNCTIONS(X)                                                                                      \
  X(ggml_version, const char*, (void))                                                                              \
  X(ggml_commit, const char*, (void))                                                                               \
  X(ggml_type_name, const char*, (enum ggml_type type))                                                             \
  X(ggml_type_size, size_t, (enum ggml_type type))                                                                  \
  X(ggml_row_size, size_t, (enum ggml_type type, int64_t ne))                                                       \
  X(ggml_init, struct ggml_context*, (struct ggml_init_params params))                                              \
  X(ggml_free, void, (struct ggml_context * ctx))                                                                   \
  X(ggml_tensor_overhead, size_t, (void))                                                                           \
  X(ggml_graph_overhead, size_t, (void))                                                                            \
  X(ggml_new_tensor_2d, struct ggml_tensor*,                                                                        \
    (struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1))                                     \
  X(ggml_nbytes, size_t, (const struct ggml_tensor* tensor))                                                        \
  X(ggml_mul_mat, struct ggml_tensor*, (struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b)) \
  X(ggml_new_graph, struct ggml_cgraph*, (struct ggml_context * ctx))                                               \
  X(ggml_build_forward_expand, void, (struct ggml_cgraph * cgraph, struct ggml_tensor * tensor))                    \
  X(ggml_quantize_chunk, size_t,                                                                                    \
    (enum ggml_type type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row,             \
     const float* imatrix))                                                                                         \
  X(ggml_threadpool_params_init, void, (void* p, int n_threads)) /* struct ggml_threadpool_params* */               \
  X(ggml_backend_graph_compute, enum ggml_status, (ggml_backend_t backend, struct ggml_cgraph * cgraph))            \
  X(ggml_backend_free, void, (ggml_backend_t backend))                                                              \
  X(ggml_backend_cpu_buffer_type, ggml_backend_buffer_type_t, (void))                                               \
  X(ggml_backend_alloc_ctx_tensors_from_buft, ggml_backend_buffer_t,                                                \
    (struct ggml_context * ctx, ggml_backend_buffer_type_t buft))                                                   \
  X(ggml_backend_alloc_ctx_tensors, ggml_backend_buffer_t, (struct ggml_context * ctx, ggml_backend_t backend))     \
  X(ggml_backend_buffer_free, void, (ggml_backend_buffer_t buffer))                                                 \
  X(ggml_backend_tensor_set, void, (struct ggml_tensor * tensor, const void* data, size_t offset, size_t size))     \
  X(ggml_backend_tensor_get, void, (const struct ggml_tensor* tensor, void* data, size_t offset, size_t size))      \
  X(ggml_backend_get_device, ggml_backend_dev_t, (ggml_backend_t backend))                                          \
  X(ggml_backend_dev_supports_op, bool, (ggml_backend_dev_t device, const struct ggml_tensor* op))                  \
  X(ggml_backend_reg_get_proc_address, void*, (ggml_backend_reg_t reg, const char* name))                           \
  X(ggml_backend_buft_name, const char*, (ggml_backend_buffer_type_t buft))

#define GGML_CPU_FUNCTIONS(X)                                                                                 \
  X(ggml_backend_score, int, (void))                                                                          \
  X(ggml_backend_cpu_init, ggml_backend_t, (void))                                                            \
  X(ggml_backend_cpu_set_n_threads, void, (ggml_backend_t backend_cpu, int n_threads))                        \
  X(ggml_backend_cpu_set_threadpool, void, (ggml_backend_t backend_cpu, struct ggml_threadpool * threadpool)) \
  X(ggml_backend_cpu_reg, ggml_backend_reg_t, (void))                                                         \
  X(ggml_threadpool_new, struct ggml_threadpool*, (void* params)) /* struct ggml_threadpool_params* */        \
  X(ggml_threadpool_free, void, (struct ggml_threadpool * threadpool))

struct Ggml {
#define DECLARE(name, ret, params) ret(*name) params = nullptr;
  GGML_BASE_FUNCTIONS(DECLARE)
  GGML_CPU_FUNCTIONS(DECLARE)
#undef DECLARE
  std::string lib_dir, variant;
  int score = 0;
  void* base = nullptr;
  void* cpu = nullptr;
};

Ggml G;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "ggml_products: %s\n", what.c_str());
  std::exit(2);
}

void log(const std::string& s) { std::fprintf(stderr, "ggml_products: %s\n", s.c_str()); }

std::string self_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, std::size_t(n));
  return p.substr(0, p.find_last_of('/'));
}

bool file_exists(const std::string& p) { return access(p.c_str(), R_OK) == 0; }

const char* const kVariants[] = {"x64",        "sse42",    "sandybridge", "ivybridge",     "piledriver",
                                 "haswell",    "skylakex", "cannonlake",  "cascadelake",   "icelake",
                                 "cooperlake", "zen4",     "alderlake",   "sapphirerapids"};

// dlopen()s libggml-base.so (global: the CPU variants link against it by soname) and the CPU variant
// with the highest ggml_backend_score() (0: cannot run here), as ggml's own backend loader does.
void load(std::string lib_dir, const std::string& variant) {
  if (lib_dir.empty()) {
    const char* env = std::getenv("EGELU_GGML_LIB_DIR");
    lib_dir = env && *env ? env : self_dir() + "/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";
  }
  G.lib_dir = lib_dir;
  const std::string base = lib_dir + "/libggml-base.so";
  if (!file_exists(base)) fail("no " + base + " (run bench/ggml/setup, or pass --lib-dir)");
  G.base = dlopen(base.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!G.base) fail(std::string("dlopen: ") + dlerror());
#define RESOLVE_BASE(name, ret, params)                           \
  G.name = reinterpret_cast<ret(*) params>(dlsym(G.base, #name)); \
  if (!G.name) fail("libggml-base.so has no " #name);
  GGML_BASE_FUNCTIONS(RESOLVE_BASE)
#undef RESOLVE_BASE

  std::vector<std::string> candidates;
  if (!variant.empty()) {
    candidates.push_back(variant);
  } else {
    for (const char* v : kVariants) candidates.push_back(v);
  }
  for (const std::string& v : candidates) {
    const std::string path = lib_dir + "/libggml-cpu-" + v + ".so";
    if (!file_exists(path)) continue;
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      log("cannot load " + path + ": " + dlerror());
      continue;
    }
    auto score = reinterpret_cast<int (*)(void)>(dlsym(h, "ggml_backend_score"));
    const int s = score ? score() : 0;
    if (s > G.score || (!variant.empty() && s > 0)) {
      if (G.cpu) dlclose(G.cpu);
      G.cpu = h;
      G.score = s;
      G.variant = v;
    } else {
      dlclose(h);
    }
  }
  if (!G.cpu)
    fail("no libggml-cpu-*.so in " + lib_dir + " can run on this CPU" + (variant.empty() ? "" : " (" + variant + ")"));
#define RESOLVE_CPU(name, ret, params)                           \
  G.name = reinterpret_cast<ret(*) params>(dlsym(G.cpu, #name)); \
  if (!G.name) fail("libggml-cpu-" + G.variant + ".so has no " #name);
  GGML_CPU_FUNCTIONS(RESOLVE_CPU)
#undef RESOLVE_CPU
  // The enum values this file uses, against the library's own names.
  const std::pair<ggml_type, const char*> types[] = {{GGML_TYPE_F32, "f32"},   {GGML_TYPE_F16, "f16"},
                                                     {GGML_TYPE_Q4_0, "q4_0"}, {GGML_TYPE_Q8_0, "q8_0"},
                                                     {GGML_TYPE_BF16, "bf16"}, {GGML_TYPE_MXFP4, "mxfp4"}};
  for (const auto& t : types)
    if (std::strcmp(G.ggml_type_name(t.first), t.second) != 0)
      fail("ggml_type " + std::to_string(int(t.first)) + " is " + G.ggml_type_name(t.first) + " in this ggml, not " +
           t.second);
  if (G.ggml_row_size(GGML_TYPE_Q4_0, 32) != 18 || G.ggml_row_size(GGML_TYPE_Q8_0, 32) != 34 ||
      G.ggml_row_size(GGML_TYPE_MXFP4, 32) != 17)
    fail("unexpected Q4_0/Q8_0/MXFP4 block sizes");
}

// ---- small helpers --------------------------------------------------------------------------------------

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    r += c;
  }
  return r;
}

// A JSON object built field by field, printed on one line.
struct Json {
  std::ostringstream o;
  bool first = true;
  Json& key(const std::string& k) {
    o << (first ? "{" : ", ") << '"' << k << "\": ";
    first = false;
    return *this;
  }
  Json& str(const std::string& k, const std::string& v) {
    key(k).o << '"' << json_escape(v) << '"';
    return *this;
  }
  Json& num(const std::string& k, double v) {
    key(k);
    if (std::isfinite(v)) {
      char b[64];
      std::snprintf(b, sizeof b, "%.6g", v);
      o << b;
    } else {
      o << "null";
    }
    return *this;
  }
  Json& integer(const std::string& k, long long v) {
    key(k).o << v;
    return *this;
  }
  Json& boolean(const std::string& k, bool v) {
    key(k).o << (v ? "true" : "false");
    return *this;
  }
  Json& list(const std::string& k, const std::vector<double>& v) {
    key(k).o << '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      char b[64];
      std::snprintf(b, sizeof b, "%.6g", v[i]);
      o << (i ? ", " : "") << b;
    }
    o << ']';
    return *this;
  }
  void print() {
    std::printf("%s}\n", first ? "{" : o.str().c_str());
    std::fflush(stdout);
  }
};

// splitmix64: the same numbers on every machine.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  float uniform() { return float(double(next() >> 40) * (2.0 / double(1ULL << 24)) - 1.0); }  // [-1, 1)
};

std::vector<int> parse_ints(const std::string& s) {
  std::vector<int> r;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) r.push_back(std::stoi(item));
  return r;
}

std::vector<std::string> parse_list(const std::string& s) {
  std::vector<std::string> r;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) r.push_back(item);
  return r;
}

ggml_type type_of(const std::string& name) {
  if (name == "f32") return GGML_TYPE_F32;
  if (name == "f16") return GGML_TYPE_F16;
  if (name == "bf16") return GGML_TYPE_BF16;
  if (name == "q8_0") return GGML_TYPE_Q8_0;
  if (name == "q4_0") return GGML_TYPE_Q4_0;
  if (name == "mxfp4") return GGML_TYPE_MXFP4;
  fail("unknown type " + name + " (f32, f16, bf16, q8_0, q4_0, mxfp4)");
}

float half_to_float(uint16_t h) {  // exact
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(man), -24);
  } else if (exp == 31) {
    f = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    f = std::ldexp(float(man | 0x400), int(exp) - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= sign;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }

// Decodes ggml's bytes of n_rows rows of k values of `type` into floats (the ggml dequantizers' results).
std::vector<float> dequantize(ggml_type type, const std::vector<uint8_t>& bytes, int64_t n_rows, int64_t k) {
  std::vector<float> w(std::size_t(n_rows * k));
  const uint8_t* p = bytes.data();
  for (std::size_t i = 0; i < w.size();) {
    switch (type) {
      case GGML_TYPE_F32:
        std::memcpy(&w[i], p, 4);
        p += 4;
        ++i;
        break;
      case GGML_TYPE_F16:
        w[i++] = half_to_float(load_u16(p));
        p += 2;
        break;
      case GGML_TYPE_BF16: {
        const uint32_t bits = uint32_t(load_u16(p)) << 16;
        std::memcpy(&w[i++], &bits, 4);
        p += 2;
        break;
      }
      case GGML_TYPE_Q8_0: {
        const float d = half_to_float(load_u16(p));
        for (int j = 0; j < 32; ++j) w[i + j] = float(int8_t(p[2 + j])) * d;
        p += 34;
        i += 32;
        break;
      }
      case GGML_TYPE_Q4_0: {
        const float d = half_to_float(load_u16(p));
        for (int j = 0; j < 16; ++j) {
          w[i + j] = float((p[2 + j] & 0x0f) - 8) * d;
          w[i + j + 16] = float((p[2 + j] >> 4) - 8) * d;
        }
        p += 18;
        i += 32;
        break;
      }
      case GGML_TYPE_MXFP4: {  // block_mxfp4: e (E8M0), then 16 bytes of E2M1 codes, weight j + 16 in the high nibbles
        const float magnitudes[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
        const auto value = [&](int code) {
          const float v = std::ldexp(magnitudes[code & 7], int(p[0]) - 127);
          return code & 8 ? -v : v;
        };
        for (int j = 0; j < 16; ++j) {
          w[i + j] = value(p[1 + j] & 0x0f);
          w[i + j + 16] = value(p[1 + j] >> 4);
        }
        p += 17;
        i += 32;
        break;
      }
    }
  }
  return w;
}

std::vector<uint8_t> quantize(ggml_type type, const float* src, int64_t n_rows, int64_t k) {
  std::vector<uint8_t> out(G.ggml_row_size(type, k) * std::size_t(n_rows));
  const size_t n = G.ggml_quantize_chunk(type, src, out.data(), 0, n_rows, k, nullptr);
  if (n != out.size())
    fail("ggml_quantize_chunk wrote " + std::to_string(n) + " bytes, not " + std::to_string(out.size()));
  return out;
}

// This file's reading of ggml's reference quantizers (research notes: 1/d from the f32 d, roundf for Q8_0,
// (int8_t)(x*id + 8.5f) clamped to 15 for Q4_0, the signed extreme with the first one winning a tie, low
// nibble = element j and high nibble = element j + 16). Compiled with -ffp-contract=off (setup): x*id and
// the + 8.5f must stay two roundings. Used by --self-test only.
uint16_t float_to_half_rne(float f) {
#if defined(__F16C__)
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#else
  // IEEE round to nearest even via double arithmetic (every float is exact in double).
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  if ((x & 0x7fffffff) > 0x7f800000) return sign | 0x7e00;
  const double a = std::fabs(double(f));
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) return sign | uint16_t(std::nearbyint(a * std::ldexp(1.0, 24)));
  int e;
  std::frexp(a, &e);                                       // a = m * 2^e, m in [0.5, 1)
  const double q = std::nearbyint(std::ldexp(a, 11 - e));  // 11 significant bits
  const double r = std::ldexp(q, e - 11);
  int e2;
  const double m2 = std::frexp(r, &e2);
  const uint16_t man = uint16_t(uint32_t(std::ldexp(m2, 11)) & 0x3ff);
  return sign | uint16_t(((e2 - 1 + 15) << 10) | man);
#endif
}

void q8_0_ref(const float* x, uint8_t* y, int64_t k) {
  for (int64_t i = 0; i < k / 32; ++i, x += 32, y += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = float_to_half_rne(d);
    y[0] = uint8_t(h);
    y[1] = uint8_t(h >> 8);
    for (int j = 0; j < 32; ++j) y[2 + j] = uint8_t(int8_t(std::roundf(x[j] * id)));
  }
}

void q4_0_ref(const float* x, uint8_t* y, int64_t k) {
  for (int64_t i = 0; i < k / 32; ++i, x += 32, y += 18) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = float_to_half_rne(d);
    y[0] = uint8_t(h);
    y[1] = uint8_t(h >> 8);
    for (int j = 0; j < 16; ++j) {
      const float x0 = x[j] * id, x1 = x[j + 16] * id;
      const int q0 = std::min(15, int(int8_t(x0 + 8.5f))), q1 = std::min(15, int(int8_t(x1 + 8.5f)));
      y[2 + j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

// Rows of k floats with the corner cases mixed in, block by block.
std::vector<float> draw_rows(uint64_t seed, int64_t rows, int64_t k) {
  Rng rng(seed);
  std::vector<float> x(std::size_t(rows * k));
  for (std::size_t b = 0; b * 32 < x.size(); ++b) {
    float* v = &x[b * 32];
    const std::size_t n = std::min<std::size_t>(32, x.size() - b * 32);
    const float scale = float(std::pow(10.0, -6.0 + 9.0 * (0.5 + 0.5 * double(rng.uniform()))));
    for (std::size_t j = 0; j < n; ++j) v[j] = rng.uniform() * scale;
    if (n < 32) continue;
    switch (b % 16) {
      case 3:
        std::fill(v, v + 32, 0.0f);
        break;  // zero block: Q4_0 d = -0
      case 5:
        v[4] = scale;
        v[9] = -scale;
        break;  // tie in magnitude: first wins
      case 7:
        for (int j = 0; j < 32; ++j) v[j] = float(j - 16) * 0.25f;
        break;  // Q4_0: x*id + 8.5 integral
      case 9:
        v[0] = 127.0f;
        for (int j = 1; j < 32; ++j) v[j] = float(j - 16) + 0.5f;
        break;  // Q8_0: d = 1, halves

      case 11:
        v[0] = scale;
        for (int j = 1; j < 32; ++j) v[j] = -v[j - 1] * 0.97f;
        break;  // alternating signs
      case 13:
        for (int j = 0; j < 32; ++j) v[j] = 1e-6f * rng.uniform();
        break;  // f16-subnormal scale
      case 15:  // Q4_0 with max 3: 2.8125f * id + 8.5f is 1 rounded twice, 0 with a fused multiply-add
        for (int j = 0; j < 32; ++j) v[j] = 0.5f * rng.uniform();
        v[0] = 3.0f;
        v[1] = 2.8125f;
        v[20] = -1.3125f;
        break;
      default:
        break;
    }
  }
  return x;
}

std::size_t llc_bytes() {
  std::size_t best = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level(dir + "level"), size(dir + "size"), type(dir + "type");
    if (!level || !size) continue;
    int l = 0;
    std::string s, t;
    level >> l;
    size >> s;
    type >> t;
    if (t == "Instruction" || s.empty()) continue;
    std::size_t v = std::stoull(s);
    const char unit = s.back();
    if (unit == 'K')
      v <<= 10;
    else if (unit == 'M')
      v <<= 20;
    best = std::max(best, v);
  }
  return best ? best : std::size_t(32) << 20;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// ---- the backend: CPU backend, persistent threadpool, weights in CPU_REPACK or plain buffers ----------

struct Backend {
  ggml_backend_t be = nullptr;
  ggml_threadpool* pool = nullptr;
  int threads = 0;
  ggml_backend_buffer_type_t repack = nullptr;

  Backend() {
    be = G.ggml_backend_cpu_init();
    if (!be) fail("ggml_backend_cpu_init failed");
    auto extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
        G.ggml_backend_reg_get_proc_address(G.ggml_backend_cpu_reg(), "ggml_backend_dev_get_extra_bufts"));
    if (extra)
      for (ggml_backend_buffer_type_t* b = extra(G.ggml_backend_get_device(be)); b && *b; ++b)
        if (std::strcmp(G.ggml_backend_buft_name(*b), "CPU_REPACK") == 0) repack = *b;
  }
  ~Backend() {
    G.ggml_backend_free(be);
    if (pool) G.ggml_threadpool_free(pool);
  }
  // A persistent threadpool of n threads (llama.cpp attaches one; without it every graph_compute
  // creates and joins its threads).
  void set_threads(int n) {
    if (n == threads) return;
    std::vector<unsigned char> params(std::size_t(1) << 16, 0);  // > sizeof(struct ggml_threadpool_params)
    G.ggml_threadpool_params_init(params.data(), n);
    ggml_threadpool* p = G.ggml_threadpool_new(params.data());
    if (!p) fail("ggml_threadpool_new failed");
    G.ggml_backend_cpu_set_n_threads(be, n);
    G.ggml_backend_cpu_set_threadpool(be, p);
    if (pool) G.ggml_threadpool_free(pool);
    pool = p;
    threads = n;
  }
  // Whether the CPU backend runs mul_mat with an (n x k) weight of `type` in the CPU_REPACK buffer.
  bool repack_supports(ggml_type type, int64_t n, int64_t k) {
    if (!repack) return false;
    ggml_init_params p{8 * G.ggml_tensor_overhead(), nullptr, true};
    ggml_context* ctx = G.ggml_init(p);
    ggml_tensor* w = G.ggml_new_tensor_2d(ctx, type, k, n);
    ggml_backend_buffer_t buf = G.ggml_backend_alloc_ctx_tensors_from_buft(ctx, repack);
    ggml_tensor* x = G.ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, 1);
    ggml_tensor* y = G.ggml_mul_mat(ctx, w, x);
    const bool ok = buf && G.ggml_backend_dev_supports_op(G.ggml_backend_get_device(be), y);
    if (buf) G.ggml_backend_buffer_free(buf);
    G.ggml_free(ctx);
    return ok;
  }
};

// The weights of one format: `copies` copies of each matrix, in one buffer.
struct Weights {
  ggml_context* ctx = nullptr;
  ggml_backend_buffer_t buf = nullptr;
  std::vector<std::vector<ggml_tensor*>> m;  // [copy][matrix]
  std::size_t bytes_per_copy = 0;
  ~Weights() {
    if (buf) G.ggml_backend_buffer_free(buf);
    if (ctx) G.ggml_free(ctx);
  }
};

struct Shape {
  int64_t n, k;
};

// Allocates copies x shapes weights of `type` in `buft` and sets each from `bytes[matrix]` (ggml's row-major
// blocks; the repack buffer repacks them here).
std::unique_ptr<Weights> make_weights(ggml_type type, const std::vector<Shape>& shapes,
                                      const std::vector<std::vector<uint8_t>>& bytes, int copies,
                                      ggml_backend_buffer_type_t buft) {
  auto w = std::make_unique<Weights>();
  ggml_init_params p{std::size_t(copies * shapes.size() + 4) * G.ggml_tensor_overhead(), nullptr, true};
  w->ctx = G.ggml_init(p);
  for (int c = 0; c < copies; ++c) {
    w->m.emplace_back();
    for (const Shape& s : shapes) w->m.back().push_back(G.ggml_new_tensor_2d(w->ctx, type, s.k, s.n));
  }
  w->buf = G.ggml_backend_alloc_ctx_tensors_from_buft(w->ctx, buft);
  if (!w->buf) fail("could not allocate the weights");
  for (int c = 0; c < copies; ++c)
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      ggml_tensor* t = w->m[c][i];
      if (G.ggml_nbytes(t) != bytes[i].size()) fail("weight size mismatch");
      G.ggml_backend_tensor_set(t, bytes[i].data(), 0, bytes[i].size());
    }
  for (const auto& b : bytes) w->bytes_per_copy += b.size();
  return w;
}

// One graph per weight copy: y_i = W_i x_i for the given (matrix, input) pairs.
struct Graphs {
  ggml_context* in_ctx = nullptr;
  ggml_backend_buffer_t in_buf = nullptr;
  std::vector<ggml_tensor*> inputs;
  std::vector<ggml_context*> ctxs;
  std::vector<ggml_backend_buffer_t> bufs;
  std::vector<ggml_cgraph*> graphs;
  std::vector<std::vector<ggml_tensor*>> outputs;
  ~Graphs() {
    for (auto b : bufs) G.ggml_backend_buffer_free(b);
    for (auto c : ctxs) G.ggml_free(c);
    if (in_buf) G.ggml_backend_buffer_free(in_buf);
    if (in_ctx) G.ggml_free(in_ctx);
  }
};

// inputs: (k, T) f32 tensors with the given data (input_of[i] names the input of matrix i).
std::unique_ptr<Graphs> make_graphs(Backend& b, Weights& w, const std::vector<Shape>& shapes,
                                    const std::vector<std::vector<float>>& input_data,
                                    const std::vector<int64_t>& input_k, const std::vector<int>& input_of,
                                    int64_t tokens) {
  auto g = std::make_unique<Graphs>();
  ggml_init_params p{(input_data.size() + 2) * G.ggml_tensor_overhead(), nullptr, true};
  g->in_ctx = G.ggml_init(p);
  for (std::size_t i = 0; i < input_data.size(); ++i)
    g->inputs.push_back(G.ggml_new_tensor_2d(g->in_ctx, GGML_TYPE_F32, input_k[i], tokens));
  g->in_buf = G.ggml_backend_alloc_ctx_tensors(g->in_ctx, b.be);
  if (!g->in_buf) fail("could not allocate the inputs");
  for (std::size_t i = 0; i < input_data.size(); ++i) {
    if (input_data[i].size() != std::size_t(input_k[i] * tokens)) fail("input size mismatch");
    G.ggml_backend_tensor_set(g->inputs[i], input_data[i].data(), 0, input_data[i].size() * sizeof(float));
  }
  for (auto& copy : w.m) {
    ggml_init_params q{(shapes.size() + 4) * G.ggml_tensor_overhead() + G.ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = G.ggml_init(q);
    ggml_cgraph* graph = G.ggml_new_graph(ctx);
    std::vector<ggml_tensor*> outs;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      ggml_tensor* y = G.ggml_mul_mat(ctx, copy[i], g->inputs[std::size_t(input_of[i])]);
      G.ggml_build_forward_expand(graph, y);
      outs.push_back(y);
    }
    ggml_backend_buffer_t buf = G.ggml_backend_alloc_ctx_tensors(ctx, b.be);
    if (!buf) fail("could not allocate the outputs");
    g->ctxs.push_back(ctx);
    g->bufs.push_back(buf);
    g->graphs.push_back(graph);
    g->outputs.push_back(outs);
  }
  return g;
}

void compute(Backend& b, ggml_cgraph* graph) {
  const ggml_status s = G.ggml_backend_graph_compute(b.be, graph);
  if (s != GGML_STATUS_SUCCESS) fail("ggml_backend_graph_compute returned " + std::to_string(int(s)));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// ---- check: products of every format and layout against float64 ------------------------------------------

struct CheckLimits {
  double f32 = 1e-5, other = 1e-2;
};

// max |y - ref| / max |ref| over the outputs of a small product.
int run_check(bool print_all) {
  const int64_t n = 64, k = 256;
  const std::vector<int64_t> token_counts = {1, 5, 32};
  Rng rng(20261202);
  std::vector<float> w(std::size_t(n * k));
  for (auto& v : w) v = rng.uniform() / 16.0f;
  Backend b;
  int failures = 0;
  const CheckLimits limits;
  for (const char* fname : {"f32", "bf16", "q8_0", "q4_0", "mxfp4"}) {
    const ggml_type type = type_of(fname);
    const std::vector<uint8_t> bytes = quantize(type, w.data(), n, k);
    const std::vector<float> deq = dequantize(type, bytes, n, k);
    for (const char* layout : {"repack", "plain"}) {
      const bool repack = std::strcmp(layout, "repack") == 0;
      if (repack && !b.repack_supports(type, n, k)) continue;
      auto weights = make_weights(type, {{n, k}}, {bytes}, 1, repack ? b.repack : G.ggml_backend_cpu_buffer_type());
      for (int threads : {1, 2}) {
        b.set_threads(threads);
        for (int64_t t : token_counts) {
          std::vector<float> x(std::size_t(k * t));
          for (auto& v : x) v = rng.uniform();
          auto graphs = make_graphs(b, *weights, {{n, k}}, {x}, {k}, {0}, t);
          compute(b, graphs->graphs[0]);
          std::vector<float> y(std::size_t(n * t));
          G.ggml_backend_tensor_get(graphs->outputs[0][0], y.data(), 0, y.size() * sizeof(float));
          double worst = 0, worst_orig = 0, scale = 0, scale_orig = 0;
          std::vector<double> ref(y.size()), ref_orig(y.size());
          for (int64_t j = 0; j < t; ++j)
            for (int64_t i = 0; i < n; ++i) {
              double s = 0, s0 = 0;
              for (int64_t c = 0; c < k; ++c) {
                s += double(deq[std::size_t(i * k + c)]) * double(x[std::size_t(j * k + c)]);
                s0 += double(w[std::size_t(i * k + c)]) * double(x[std::size_t(j * k + c)]);
              }
              ref[std::size_t(j * n + i)] = s;
              ref_orig[std::size_t(j * n + i)] = s0;
              scale = std::max(scale, std::fabs(s));
              scale_orig = std::max(scale_orig, std::fabs(s0));
            }
          for (std::size_t i = 0; i < y.size(); ++i) {
            worst = std::max(worst, std::fabs(double(y[i]) - ref[i]));
            worst_orig = std::max(worst_orig, std::fabs(double(y[i]) - ref_orig[i]));
          }
          const double err = worst / scale, err_orig = worst_orig / scale_orig;
          const double limit = type == GGML_TYPE_F32 ? limits.f32 : limits.other;
          const bool ok = std::isfinite(err) && err <= limit;
          failures += !ok;
          if (print_all || !ok)
            Json()
                .str("kind", "check")
                .str("format", fname)
                .str("layout", layout)
                .integer("n", n)
                .integer("k", k)
                .integer("tokens", t)
                .integer("threads", threads)
                .num("max_rel_err", err)
                .num("max_rel_err_vs_f32_weights", err_orig)
                .num("limit", limit)
                .boolean("ok", ok)
                .print();
        }
      }
    }
  }
  if (failures)
    log(std::to_string(failures) + " product check(s) FAILED");
  else
    log("all product checks passed (max |y - ref| / max |ref|, float64 reference with the dequantized weights)");
  return failures ? 1 : 0;
}

// ---- time: TinyLlama's MLP products ------------------------------------------------------------------------

// A helper thread for the streaming read: spins on a generation counter (started and joined around one
// measurement only, so that it never competes with ggml's threads).
class Partner {
 public:
  explicit Partner(std::function<void()> job) : job_(std::move(job)), thread_([this] { loop(); }) {}
  ~Partner() {
    stop_.store(true);
    thread_.join();
  }
  void start() { go_.fetch_add(1, std::memory_order_release); }
  void wait() {
    while (done_.load(std::memory_order_acquire) != go_.load(std::memory_order_relaxed)) EGELU_PAUSE();
  }

 private:
  void loop() {
    uint64_t seen = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      if (go_.load(std::memory_order_acquire) != seen) {
        ++seen;
        job_();
        done_.store(seen, std::memory_order_release);
      } else {
        EGELU_PAUSE();
      }
    }
  }
  std::function<void()> job_;
  std::atomic<uint64_t> go_{0}, done_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

typedef float v8f __attribute__((vector_size(32)));

float sum_floats(const float* p, std::size_t n) {  // four independent vector chains
  v8f a = {}, b = {}, c = {}, d = {};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    v8f x0, x1, x2, x3;
    std::memcpy(&x0, p + i, 32);
    std::memcpy(&x1, p + i + 8, 32);
    std::memcpy(&x2, p + i + 16, 32);
    std::memcpy(&x3, p + i + 24, 32);
    a += x0;
    b += x1;
    c += x2;
    d += x3;
  }
  v8f s = (a + b) + (c + d);
  float r = 0;
  for (int j = 0; j < 8; ++j) r += s[j];
  for (; i < n; ++i) r += p[i];
  return r;
}

volatile float g_sink;

struct TimeOptions {
  std::vector<std::string> formats = {"f32", "bf16", "q8_0", "q4_0", "mxfp4"}, layouts = {"repack", "plain"};
  std::vector<int> tokens = {1, 128}, threads = {1, 2};
  double min_time = 0.5;
  int min_iters = 5, rounds = 1;
};

struct Timing {
  std::vector<double> medians;
  double min = std::numeric_limits<double>::infinity();
  std::size_t calls = 0;
};

// Calls f(i) (i = 0, 1, ...) for at least min_time and min_iters calls after a warm-up, each call timed.
void time_calls(const std::function<void(std::size_t)>& f, const TimeOptions& o, std::size_t warm, Timing& t) {
  using clock = std::chrono::steady_clock;
  std::size_t i = 0;
  const auto warm_end = clock::now() + std::chrono::milliseconds(50);
  for (std::size_t w = 0; w < warm || clock::now() < warm_end; ++w) f(i++);
  std::vector<double> ms;
  const auto end = clock::now() + std::chrono::duration<double>(o.min_time);
  while (ms.size() < std::size_t(o.min_iters) || clock::now() < end) {
    const auto t0 = clock::now();
    f(i++);
    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  t.medians.push_back(median(ms));
  t.min = std::min(t.min, *std::min_element(ms.begin(), ms.end()));
  t.calls += ms.size();
}

int run_time(const TimeOptions& o) {
  if (run_check(false)) return 1;
  const int64_t d = 2048, d_ff = 5632;
  const std::vector<Shape> shapes = {{d_ff, d}, {d_ff, d}, {d, d_ff}};  // gate, up, down (n x k)
  const double scales[] = {1.0 / 22, 1.0 / 45, 1.0 / 75};               // as bench/bench_blocks.hpp draws them
  // As bench/bench_decode.cpp's layers: at least 4x the LLC and at least 1 GiB, so that both sides read
  // their weights from memory alike (4x a 32 MiB LLC is one f32 copy of 132 MiB, of which the L3 kept
  // enough that ggml's f32 products outran a streaming read).
  const std::size_t llc = llc_bytes(), target = std::max(4 * llc, std::size_t(1) << 30);
  log("drawing TinyLlama's MLP weights (2048 / 5632)");
  std::vector<std::vector<float>> w(3);
  Rng rng(20261201);
  for (int i = 0; i < 3; ++i) {
    w[std::size_t(i)].resize(std::size_t(shapes[std::size_t(i)].n * shapes[std::size_t(i)].k));
    for (auto& v : w[std::size_t(i)]) v = float(rng.uniform() * scales[i]);
  }
  const int max_t = *std::max_element(o.tokens.begin(), o.tokens.end());
  std::vector<float> x_all(std::size_t(d * max_t)), h_all(std::size_t(d_ff * max_t));
  for (auto& v : x_all) v = rng.uniform();
  for (auto& v : h_all) v = rng.uniform() * 0.25f;

  Json()
      .str("kind", "info")
      .str("comparator", "ggml")
      .str("ggml_version", G.ggml_version())
      .str("ggml_commit", G.ggml_commit())
      .str("cpu_variant", G.variant)
      .integer("variant_score", G.score)
      .str("lib_dir", G.lib_dir)
      .str("cpu", cpu_model())
      .integer("cpus", long(std::thread::hardware_concurrency()))
      .integer("llc_bytes", long(llc))
      .str("model", "TinyLlama-1.1B MLP products: gate, up (5632 x 2048), down (2048 x 5632)")
      .num("min_time_s", o.min_time)
      .integer("min_iters", o.min_iters)
      .integer("rounds", o.rounds)
      .print();

  Backend b;
  std::map<int, std::size_t> stream_bytes;  // threads -> bytes per MLP of the formats timed (for the read)
  std::vector<std::size_t> weight_bytes_seen;
  for (const std::string& fname : o.formats) {
    const ggml_type type = type_of(fname);
    log("quantizing the weights to " + fname);
    std::vector<std::vector<uint8_t>> bytes;
    for (int i = 0; i < 3; ++i)
      bytes.push_back(quantize(type, w[std::size_t(i)].data(), shapes[std::size_t(i)].n, shapes[std::size_t(i)].k));
    std::size_t per_copy = 0;
    for (auto& v : bytes) per_copy += v.size();
    weight_bytes_seen.push_back(per_copy);
    const int copies = int((target + per_copy - 1) / per_copy);
    bool timed_plain = false;
    for (const std::string& layout : o.layouts) {
      bool repack = layout == "repack";
      if (layout != "repack" && layout != "plain") fail("unknown layout " + layout + " (repack, plain)");
      if (repack && !b.repack_supports(type, d_ff, d)) {
        repack = false;  // what llama.cpp would do: this format stays plain
        if (std::find(o.layouts.begin(), o.layouts.end(), "plain") != o.layouts.end()) continue;
      }
      if (!repack && timed_plain) continue;
      timed_plain = timed_plain || !repack;
      const char* lay = repack ? "repack" : "plain";
      log(fname + ", " + lay + ": " + std::to_string(copies) + " copies of " + std::to_string(per_copy >> 20) + " MiB");
      auto weights = make_weights(type, shapes, bytes, copies, repack ? b.repack : G.ggml_backend_cpu_buffer_type());
      for (int t : o.tokens) {
        std::vector<float> x(x_all.begin(), x_all.begin() + d * t), h(h_all.begin(), h_all.begin() + d_ff * t);
        auto graphs = make_graphs(b, *weights, shapes, {x, h}, {d, d_ff}, {0, 0, 1}, t);
        for (int n : o.threads) {
          b.set_threads(n);
          Timing timing;
          for (int r = 0; r < o.rounds; ++r)
            time_calls([&](std::size_t i) { compute(b, graphs->graphs[i % graphs->graphs.size()]); }, o,
                       std::size_t(copies), timing);
          const double best = *std::min_element(timing.medians.begin(), timing.medians.end());
          const double flops = 2.0 * double(t) * double(2 * d_ff * d + d * d_ff);
          Json()
              .str("kind", "mlp")
              .str("comparator", "ggml")
              .str("format", fname)
              .str("layout", lay)
              .integer("tokens", t)
              .integer("threads", n)
              .num("median_ms", best)
              .num("min_ms", timing.min)
              .list("round_medians_ms", timing.medians)
              .integer("calls", long(timing.calls))
              .integer("copies", copies)
              .integer("weight_bytes", long(per_copy))
              .num("weights_GBps", double(per_copy) / (best * 1e-3) / 1e9)
              .num("gflops", flops / (best * 1e-3) / 1e9)
              .print();
          log(fname + "/" + lay + "/T=" + std::to_string(t) + "/" + std::to_string(n) + " thread(s): median " +
              std::to_string(best) + " ms");
        }
      }
    }
  }
  // Free ggml's threads before the streaming read (its persistent pool polls).
  b.set_threads(1);

  // The streaming read of each format's bytes per MLP, over as many copies (>= 4x the LLC).
  std::sort(weight_bytes_seen.begin(), weight_bytes_seen.end());
  weight_bytes_seen.erase(std::unique(weight_bytes_seen.begin(), weight_bytes_seen.end()), weight_bytes_seen.end());
  for (std::size_t bytes : weight_bytes_seen) {
    const std::size_t copies = (target + bytes - 1) / bytes, floats = bytes / sizeof(float);
    std::vector<float> data(copies * floats, 1.0f);
    for (int n : o.threads) {
      std::atomic<std::size_t> current{0};
      std::unique_ptr<Partner> partner;
      const std::size_t half = floats / 2;
      if (n == 2)
        partner = std::make_unique<Partner>([&] {
          const float* p = data.data() + current.load() * floats;
          g_sink = sum_floats(p + half, floats - half);
        });
      else if (n != 1)
        continue;
      Timing timing;
      for (int r = 0; r < o.rounds; ++r)
        time_calls(
            [&](std::size_t i) {
              current.store(i % copies);
              const float* p = data.data() + (i % copies) * floats;
              if (partner) {
                partner->start();
                g_sink = sum_floats(p, half);
                partner->wait();
              } else {
                g_sink = sum_floats(p, floats);
              }
            },
            o, copies, timing);
      const double best = *std::min_element(timing.medians.begin(), timing.medians.end());
      Json()
          .str("kind", "stream_read")
          .str("comparator", "ggml")
          .integer("bytes", long(bytes))
          .integer("copies", long(copies))
          .integer("threads", n)
          .num("median_ms", best)
          .num("min_ms", timing.min)
          .list("round_medians_ms", timing.medians)
          .num("GBps", double(bytes) / (best * 1e-3) / 1e9)
          .print();
    }
  }
  return 0;
}

// ---- quantize --------------------------------------------------------------------------------------------

int run_quantize(int64_t rows, int64_t cols, const std::string& in, long long seed, const std::string& out,
                 const std::vector<std::string>& types, const std::string& write_input, bool self_test) {
  if (rows <= 0 || cols <= 0) fail("quantize needs --rows and --cols");
  if (out.empty()) fail("quantize needs --out PREFIX");
  std::vector<float> x;
  if (!in.empty()) {
    std::ifstream f(in, std::ios::binary);
    if (!f) fail("cannot read " + in);
    x.resize(std::size_t(rows * cols));
    f.read(reinterpret_cast<char*>(x.data()), std::streamsize(x.size() * sizeof(float)));
    if (std::size_t(f.gcount()) != x.size() * sizeof(float)) fail(in + " holds fewer than rows*cols float32 values");
  } else {
    if (seed < 0) fail("quantize needs --in FILE or --seed S");
    x = draw_rows(uint64_t(seed), rows, cols);
  }
  if (!write_input.empty()) {
    std::ofstream f(write_input, std::ios::binary);
    f.write(reinterpret_cast<const char*>(x.data()), std::streamsize(x.size() * sizeof(float)));
    if (!f) fail("cannot write " + write_input);
  }
  int failures = 0;
  for (const std::string& name : types) {
    const ggml_type type = type_of(name);
    if ((type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0) && cols % 32)
      log("warning: cols " + std::to_string(cols) +
          " is not a multiple of 32; ggml's release build does not check it "
          "and quantizes rows*cols values as one run of blocks (blocks straddle rows, the tail is dropped)");
    const std::vector<uint8_t> bytes = quantize(type, x.data(), rows, cols);
    const std::string path = out + "." + name;
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!f) fail("cannot write " + path);
    Json j;
    j.str("kind", "quantize")
        .str("type", name)
        .integer("rows", rows)
        .integer("cols", cols)
        .str("file", path)
        .integer("bytes", long(bytes.size()))
        .str("ggml_version", G.ggml_version())
        .str("ggml_commit", G.ggml_commit());
    if (self_test && (type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0) && cols % 32 == 0) {
      std::vector<uint8_t> mine(bytes.size());
      for (int64_t r = 0; r < rows; ++r) {
        const std::size_t row = G.ggml_row_size(type, cols);
        (type == GGML_TYPE_Q8_0 ? q8_0_ref : q4_0_ref)(&x[std::size_t(r * cols)], &mine[std::size_t(r) * row], cols);
      }
      std::size_t differing = 0;
      for (std::size_t i = 0; i < bytes.size(); ++i) differing += bytes[i] != mine[i];
      j.integer("self_test_differing_bytes", long(differing));
      failures += differing != 0;
    }
    j.print();
  }
  if (self_test) {
    // The zero block, and a tie in magnitude, straight from ggml.
    float zero[32] = {}, tie[32] = {};
    tie[3] = 2.0f;
    tie[7] = -2.0f;
    const auto z4 = quantize(GGML_TYPE_Q4_0, zero, 1, 32), z8 = quantize(GGML_TYPE_Q8_0, zero, 1, 32);
    const auto t4 = quantize(GGML_TYPE_Q4_0, tie, 1, 32);
    bool z4_ok = z4[0] == 0x00 && z4[1] == 0x80, z8_ok = true;
    for (int i = 2; i < 18; ++i) z4_ok = z4_ok && z4[std::size_t(i)] == 0x88;
    for (uint8_t v : z8) z8_ok = z8_ok && v == 0;
    // tie: the first (+2) is max, so d = -0.25 (0xB400); +2 -> q 0 (low nibble of byte 3), -2 -> q 16 -> 15.
    const bool tie_ok = load_u16(&t4[0]) == 0xB400 && (t4[2 + 3] & 0x0f) == 0 && (t4[2 + 7] & 0x0f) == 15;
    failures += !z4_ok + !z8_ok + !tie_ok;
    char hex[8];
    std::snprintf(hex, sizeof hex, "%02x%02x", z4[1], z4[0]);
    Json()
        .str("kind", "quantize_self_test")
        .boolean("q4_0_zero_block_is_d_0x8000_and_0x88", z4_ok)
        .str("q4_0_zero_block_d_bits", std::string("0x") + hex)
        .boolean("q8_0_zero_block_is_all_zero", z8_ok)
        .boolean("q4_0_tie_takes_first_and_clamps_16_to_15", tie_ok)
        .print();
  }
  return failures ? 1 : 0;
}

void usage() {
  std::fputs(
      "usage: ggml_products info | check | quantize --rows R --cols K (--in FILE | --seed S) --out PREFIX\n"
      "         [--types q8_0,q4_0] [--write-input FILE] [--self-test]\n"
      "       | time [--formats f32,bf16,q8_0,q4_0,mxfp4] [--layouts repack,plain] [--tokens 1,128] [--threads 1,2]\n"
      "         [--min-time S] [--min-iters N] [--rounds N] [--quick]\n"
      "       every mode: [--lib-dir DIR] [--variant NAME]   (header of bench/ggml/ggml_products.cpp)\n",
      stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string mode = argv[1];
  std::string lib_dir, variant, in, out, write_input;
  TimeOptions o;
  int64_t rows = 0, cols = 0;
  long long seed = -1;
  std::vector<std::string> types = {"q8_0", "q4_0"};
  bool self_test = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--lib-dir")
      lib_dir = value();
    else if (a == "--variant")
      variant = value();
    else if (a == "--formats")
      o.formats = parse_list(value());
    else if (a == "--layouts")
      o.layouts = parse_list(value());
    else if (a == "--tokens")
      o.tokens = parse_ints(value());
    else if (a == "--threads")
      o.threads = parse_ints(value());
    else if (a == "--min-time")
      o.min_time = std::stod(value());
    else if (a == "--min-iters")
      o.min_iters = std::stoi(value());
    else if (a == "--rounds")
      o.rounds = std::stoi(value());
    else if (a == "--quick")
      o.min_time = 0.05, o.min_iters = 3;
    else if (a == "--rows")
      rows = std::stoll(value());
    else if (a == "--cols")
      cols = std::stoll(value());
    else if (a == "--in")
      in = value();
    else if (a == "--seed")
      seed = std::stoll(value());
    else if (a == "--out")
      out = value();
    else if (a == "--types")
      types = parse_list(value());
    else if (a == "--write-input")
      write_input = value();
    else if (a == "--self-test")
      self_test = true;
    else {
      usage();
      fail("unknown option " + a);
    }
  }
  if (o.rounds < 1 || o.min_iters < 1 || o.tokens.empty() || o.threads.empty())
    fail("bad --rounds, --min-iters, --tokens or --threads");
  load(lib_dir, variant);
  if (mode == "info") {
    Json j;
    j.str("kind", "info")
        .str("comparator", "ggml")
        .str("ggml_version", G.ggml_version())
        .str("ggml_commit", G.ggml_commit())
        .str("cpu_variant", G.variant)
        .integer("variant_score", G.score)
        .str("lib_dir", G.lib_dir)
        .str("cpu", cpu_model())
        .integer("llc_bytes", long(llc_bytes()));
    Backend b;
    j.boolean("repack_buffer", b.repack != nullptr);
    for (const char* f : {"f32", "bf16", "q8_0", "q4_0", "mxfp4"})
      j.boolean(std::string("repack_") + f, b.repack_supports(type_of(f), 5632, 2048));
    j.print();
    return 0;
  }
  if (mode == "check") return run_check(true);
  if (mode == "time") return run_time(o);
  if (mode == "quantize") return run_quantize(rows, cols, in, seed, out, types, write_input, self_test);
  usage();
  fail("unknown mode " + mode);
}
