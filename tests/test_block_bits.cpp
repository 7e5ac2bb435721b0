// The same bits on every kernel set with FMA: each block, in each weight format, on fixed
// inputs, hashed and compared with golden hashes made on x86 (tests/block_bits_golden.inc).
// CI runs this test on every kernel set the CPU has (EGELU_ISA=avx512, avx2, portable), in
// every build (portable, native, sanitizers, each Eigen) and on aarch64 under qemu (NEON), so
// a kernel set or a build whose sums run in another order, or whose activations round
// differently, fails here. SSE2 has no FMA: its products round each multiplication, and its
// hashes differ by design (docs/DESIGN.md, "The same bits on every CPU"); there the test
// checks only that the results are finite and the same for 1, 2 and 3 threads.
//
// The inputs come from an integer hash, scaled by powers of two (exact, no libm, no
// std::rand), so every platform builds the same weights. Regenerate the golden file after a
// deliberate change of results: EGELU_PRINT_BLOCK_HASHES=1 build/tests/test_block_bits
// prints its lines (between the file's clang-format off and on).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/moe_feed_forward.hpp>
#include <functional>
#include <map>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "gemm/micro_kernel.hpp"

namespace {

using Weights = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;
using Matrix = Eigen::MatrixXf;
using egelu::WeightFormat;

struct Golden {
  const char* name;
  std::uint64_t hash;
};
const std::vector<Golden> kGolden = {
#include "block_bits_golden.inc"
};

// splitmix64: a fixed stream of 64-bit values from a seed.
struct Stream {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // A multiple of 2^-20 in [-scale, scale), scale a power of two: exact in float.
  float uniform(float scale) { return float(std::int64_t(next() >> 43) - (1 << 20)) * 0x1p-20f * scale; }
};

Weights random_weights(Eigen::Index rows, Eigen::Index cols, float scale, std::uint64_t seed) {
  Stream s{seed};
  Weights w(rows, cols);
  for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = s.uniform(scale);
  return w;
}
Vector random_vector(Eigen::Index n, float offset, float scale, std::uint64_t seed) {
  Stream s{seed};
  Vector v(n);
  for (Eigen::Index i = 0; i < n; ++i) v[i] = offset + s.uniform(scale);
  return v;
}

// FNV-1a over the outputs' bits.
std::uint64_t hash_of(const Matrix& y) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &y.data()[i], 4);
    for (int b = 0; b < 4; ++b) h = (h ^ ((bits >> (8 * b)) & 0xffu)) * 0x100000001b3ull;
  }
  return h;
}

bool same_bits(const Matrix& a, const Matrix& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * std::size_t(a.size())) == 0;
}

// A block's outputs for 1, 5 and 37 tokens, concatenated; checked equal on 1, 2 and 3 threads.
template <typename Block>
Matrix outputs(const Block& block, const std::string& what) {
  const Eigen::Index d = block.d_model(), all = 1 + 5 + 37;
  Stream s{0x5eed};
  Matrix x(d, all);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = s.uniform(4.f);
  Matrix y = Matrix::Constant(d, all, NAN);
  Eigen::Index first = 0;
  for (Eigen::Index tokens : {1, 5, 37}) {
    Matrix part = Matrix::Constant(d, tokens, NAN);
    block.forward(x.middleCols(first, tokens), part);
    y.middleCols(first, tokens) = part;
    for (int threads : {2, 3}) {
      Eigen::ThreadPool pool(threads);
      const Eigen::ThreadPoolDevice device(&pool, threads);
      Matrix again = Matrix::Constant(d, tokens, NAN);
      block.forward(x.middleCols(first, tokens), again, device);
      EXPECT_TRUE(same_bits(part, again)) << what << ": " << tokens << " tokens, " << threads << " threads";
    }
    first += tokens;
  }
  EXPECT_TRUE(y.allFinite()) << what;
  return y;
}

// Every block in format f on weights of d_model d and d_ff d_ff (the experts' 64), hashed
// into `hashes` under "block/format"; with q16_0 inputs under "block/format+q16_0".
void add_hashes(WeightFormat f, Eigen::Index d, Eigen::Index d_ff, std::map<std::string, std::uint64_t>& hashes,
                egelu::InputFormat inputs = egelu::InputFormat::f32) {
  const Eigen::Index experts = 6;
  const Weights w1 = random_weights(d_ff, d, 0.25f, 1), w2 = random_weights(d, d_ff, 0.125f, 2),
                w3 = random_weights(d_ff, d, 0.25f, 3);
  const Vector b1 = random_vector(d_ff, 0.f, 0.5f, 4), b2 = random_vector(d, 0.f, 0.5f, 5),
               gamma = random_vector(d, 1.f, 0.125f, 6), beta = random_vector(d, 0.f, 0.25f, 7);
  const Weights router = random_weights(experts, d, 0.5f, 8), gates = random_weights(experts * 64, d, 0.25f, 9),
                ups = random_weights(experts * 64, d, 0.25f, 10), downs = random_weights(experts * d, 64, 0.125f, 11);
  const bool q16 = inputs == egelu::InputFormat::q16_0;
  const std::string format = std::string(egelu::to_string(f)) + (q16 ? "+q16_0" : "");
  using FF = egelu::FeedForward<float>;
  const std::pair<const char*, FF::Options> dense[] = {
      {"bert_tanh", {egelu::GeluForm::tanh, egelu::NormPlacement::post, 1e-12f, f}},
      {"gpt2_exact", {egelu::GeluForm::exact, egelu::NormPlacement::pre, 1e-5f, f}},
      {"clip_quick", {egelu::GeluForm::quick, egelu::NormPlacement::pre, 1e-5f, f}}};
  for (auto [name, options] : dense) {
    const std::string what = std::string(name) + "/" + format;
    options.inputs = inputs;
    hashes[what] = hash_of(outputs(FF(w1, b1, w2, b2, gamma, beta, options), what));
  }
  using Gated = egelu::GatedFeedForward<float>;
  const std::pair<const char*, egelu::GatedForm> gated[] = {{"swiglu", egelu::GatedForm::swiglu},
                                                            {"geglu", egelu::GatedForm::geglu},
                                                            {"geglu_exact", egelu::GatedForm::geglu_exact}};
  for (const auto& [name, form] : gated) {
    const std::string what = std::string(name) + "/" + format;
    hashes[what] = hash_of(outputs(Gated(w1, w3, w2, gamma, Gated::Options{form, 1e-6f, f, inputs}), what));
  }
  const std::string sandwich = "gemma2_sandwich/" + format;
  hashes[sandwich] = hash_of(
      outputs(Gated(w1, w3, w2, gamma, beta, Gated::Options{egelu::GatedForm::geglu, 1e-6f, f, inputs}), sandwich));
  // LayerNorm with its bias before the MLP (StableLM) and without (ModernBERT), no norm before it but
  // RMSNorm after (OLMo 2), and a factor on its output (Granite).
  Gated::Options layer_norm{egelu::GatedForm::swiglu, 1e-5f, f, inputs}, no_norm = layer_norm, scaled = layer_norm;
  layer_norm.norm = egelu::GatedNorm::layer;
  no_norm.norm = egelu::GatedNorm::none;
  scaled.output_scale = 0.22f;
  Gated::Options modernbert = layer_norm;
  modernbert.form = egelu::GatedForm::geglu_exact;
  const std::string stablelm = "stablelm_layer_norm/" + format, olmo2 = "olmo2_no_pre_norm/" + format,
                    granite = "granite_output_scale/" + format, modern = "modernbert_layer_norm/" + format;
  hashes[stablelm] = hash_of(outputs(Gated(w1, w3, w2, gamma, beta, Vector(), layer_norm), stablelm));
  hashes[olmo2] = hash_of(outputs(Gated(w1, w3, w2, Vector(), Vector(), gamma, no_norm), olmo2));
  hashes[granite] = hash_of(outputs(Gated(w1, w3, w2, gamma, Vector(), Vector(), scaled), granite));
  hashes[modern] = hash_of(outputs(Gated(w1, w3, w2, gamma, Vector(), Vector(), modernbert), modern));
  using Moe = egelu::MoeFeedForward<float>;
  Moe::Options moe_options{egelu::GatedForm::swiglu, 1e-6f, f, {}, inputs};
  moe_options.routing.experts_per_token = 2;
  const std::string moe = "moe_softmax_top2/" + format;
  hashes[moe] = hash_of(outputs(Moe(router, gates, ups, downs, gamma, moe_options), moe));
}

std::map<std::string, std::uint64_t> all_hashes() {
  std::map<std::string, std::uint64_t> hashes;
  for (WeightFormat f : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::f16}) add_hashes(f, 72, 200, hashes);
  // The block formats need whole blocks of 32 along every input.
  for (WeightFormat f : {WeightFormat::q8_0, WeightFormat::q4_0, WeightFormat::mxfp4}) add_hashes(f, 96, 224, hashes);
  for (WeightFormat f : {WeightFormat::q8_0, WeightFormat::q4_0})
    add_hashes(f, 96, 224, hashes, egelu::InputFormat::q16_0);
  return hashes;
}

TEST(BlockBits, SameBitsOnEveryKernelSetWithFma) {
  const char* isa = egelu::gemm::selected_kernels().isa;
  const std::map<std::string, std::uint64_t> hashes = all_hashes();
  if (const char* print = std::getenv("EGELU_PRINT_BLOCK_HASHES"); print && *print == '1') {
    for (const auto& [name, hash] : hashes) {
      std::printf("    {\"%s\", 0x%016llxull},\n", name.c_str(), static_cast<unsigned long long>(hash));
    }
  }
  if (std::string(isa) == "sse2") {
    GTEST_SKIP() << "the SSE2 kernels have no FMA: their bits differ by design (checked: finite, and the same "
                    "for 1, 2 and 3 threads)";
  }
  ASSERT_EQ(hashes.size(), kGolden.size()) << "regenerate tests/block_bits_golden.inc";
  for (const Golden& g : kGolden) {
    const auto it = hashes.find(g.name);
    ASSERT_NE(it, hashes.end()) << g.name;
    EXPECT_EQ(it->second, g.hash) << g.name << " on the " << isa << " kernels: other bits than the golden file's";
  }
}

}  // namespace
