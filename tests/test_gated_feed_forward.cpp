// GatedFeedForward against PyTorch's LLaMA and Gemma MLPs (Hugging Face's forms, with
// their RMSNorm and the residual), its threaded forward (the same bits for 1, 2 and 3
// threads, odd token counts, one token, in place), its allocation rule and its errors.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <egelu/egelu.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/npy.hpp>
#include <egelu/threads.hpp>
#include <thread>

#include "blocks/parallel.hpp"
#include "blocks/pass_timing.hpp"
#include "blocks/products.hpp"
#include "each_token_alone.hpp"
#include "malloc_counter.hpp"
#include "npy_tokens.hpp"

namespace {

const std::string kData = EGELU_TEST_DATA_DIR;

template <typename Scalar>
void expect_matches_pytorch(const char* name, egelu::GatedForm form, const char* expected_file, double tolerance) {
  const std::string dir = kData + "/gated_" + name;
  const double eps = egelu::npy::load(dir + "/eps.npy").values<double>()[0];
  auto block = egelu::GatedFeedForward<Scalar>::load(dir, form, Scalar(eps));
  const auto x = tokens<Scalar>(dir + "/X.npy");
  const auto expected = tokens<Scalar>(dir + "/" + expected_file);
  Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> y =
      Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>::Constant(x.rows(), x.cols(), NAN);
  block.forward(x, y);
  const Scalar worst = ((y - expected).array().abs() / (1 + expected.array().abs())).maxCoeff();
  EXPECT_LE(double(worst), tolerance) << name << " " << expected_file;
  EXPECT_FALSE(y.hasNaN());
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> on_pool = y;
  on_pool.setConstant(NAN);
  block.forward(x, on_pool, device);
  EXPECT_TRUE(on_pool == y) << name;
}

TEST(GatedFeedForward, MatchesPyTorchLlamaAndGemma) {
  expect_matches_pytorch<float>("swiglu", egelu::GatedForm::swiglu, "Y.npy", 1e-5);
  expect_matches_pytorch<float>("geglu", egelu::GatedForm::geglu, "Y.npy", 1e-5);
  expect_matches_pytorch<double>("swiglu", egelu::GatedForm::swiglu, "Y_f64.npy", 1e-12);
  expect_matches_pytorch<double>("geglu", egelu::GatedForm::geglu, "Y_f64.npy", 1e-12);
}

// The block the slow, obvious way, in double: the norm (RMSNorm unless `kind` says
// otherwise; LayerNorm: the mean taken out, then the variance's root; `bias` may be null),
// both products, act(g) * u, down, RMSNorm with weight `post` after it if not null, times
// `scale`.
Eigen::MatrixXd unfused(const Eigen::MatrixXf& gate, const Eigen::MatrixXf& up, const Eigen::MatrixXf& down,
                        const Eigen::VectorXf& norm, const Eigen::MatrixXf& x, double eps, egelu::GatedForm form,
                        egelu::GatedNorm kind = egelu::GatedNorm::rms, const Eigen::VectorXf* bias = nullptr,
                        const Eigen::VectorXf* post = nullptr, float scale = 1) {
  const auto rms = [eps](Eigen::MatrixXd& m, const Eigen::VectorXf& weight) {
    for (Eigen::Index t = 0; t < m.cols(); ++t) {
      m.col(t) = m.col(t) / std::sqrt(m.col(t).squaredNorm() / double(m.rows()) + eps);
      m.col(t).array() *= weight.cast<double>().array();
    }
  };
  Eigen::MatrixXd n = x.cast<double>();
  if (kind == egelu::GatedNorm::rms) rms(n, norm);
  if (kind == egelu::GatedNorm::layer) {
    for (Eigen::Index t = 0; t < n.cols(); ++t) {
      n.col(t).array() -= n.col(t).mean();
      n.col(t) = n.col(t) / std::sqrt(n.col(t).squaredNorm() / double(n.rows()) + eps);
      n.col(t).array() *= norm.cast<double>().array();
      if (bias) n.col(t) += bias->cast<double>();
    }
  }
  const Eigen::MatrixXd g = gate.cast<double>() * n, u = up.cast<double>() * n;
  Eigen::MatrixXd h(g.rows(), g.cols());
  for (Eigen::Index i = 0; i < g.size(); ++i) {
    if (form == egelu::GatedForm::clamped_swiglu) {  // gpt-oss's: quick_gelu(min(g, 7)) (clamp(u, -7, 7) + 1)
      const double v = std::min(g(i), 7.0);
      h(i) = v / (1 + std::exp(-1.702 * v)) * (std::clamp(u(i), -7.0, 7.0) + 1);
      continue;
    }
    const double v = g(i);
    const double act = form == egelu::GatedForm::swiglu ? v / (1 + std::exp(-v))
                       : form == egelu::GatedForm::geglu
                           ? 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
                           : 0.5 * v * std::erfc(-v / std::sqrt(2.0));
    h(i) = act * u(i);
  }
  Eigen::MatrixXd m = down.cast<double>() * h;
  if (post) rms(m, *post);
  return x.cast<double>() + m * double(scale);
}

TEST(GatedFeedForward, EveryFormThreadsAndTokenCounts) {
  const Eigen::Index d = 80, d_ff = 424;  // several row blocks of the stacked product, a short last one
  using GF = egelu::GatedFeedForward<float>;
  const GF::Weights gate = GF::Weights::Random(d_ff, d) * 0.4f, up = GF::Weights::Random(d_ff, d) * 0.3f,
                    down = GF::Weights::Random(d, d_ff) * 0.05f;
  const GF::Vector norm = GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.2f;
  // One pool a thread count, used for every token count (as a program's is) and every form.
  Eigen::ThreadPool pool_1(1), pool_2(2), pool_3(3);
  const Eigen::ThreadPoolDevice devices[] = {{&pool_1, 1}, {&pool_2, 2}, {&pool_3, 3}};
  for (egelu::GatedForm form : {egelu::GatedForm::swiglu, egelu::GatedForm::geglu, egelu::GatedForm::geglu_exact,
                                egelu::GatedForm::clamped_swiglu}) {
    GF block(gate, up, down, norm, form, 1e-5f);
    EXPECT_EQ(block.d_model(), d);
    EXPECT_EQ(block.d_ff(), d_ff);
    for (Eigen::Index t : {1, 3, 40, 130, 192, 257, 384}) {  // 130-384: tokens split between threads
      const GF::Matrix x = GF::Matrix::Random(d, t) * 3.f;
      GF::Matrix expected = GF::Matrix::Constant(d, t, NAN);
      block.forward(x, expected);
      const Eigen::MatrixXd reference =
          unfused(gate, up, down, norm, x, 1e-5, form);  // float products of up to d_ff terms against double
      EXPECT_LE(((expected.cast<double>() - reference).array().abs() / (1 + reference.array().abs())).maxCoeff(), 2e-5)
          << int(form) << ", " << t << " tokens";
      // Calls of 128 tokens or more run in chunks (blocks::token_chunks; here where L2 has
      // 424 KB or more): the tokens around the chunks' edges have their own bits, as alone.
      for (Eigen::Index column :
           {Eigen::Index(0), std::min<Eigen::Index>(63, t - 1), std::min<Eigen::Index>(64, t - 1), t - 1}) {
        GF::Matrix alone(d, 1);
        block.forward(x.col(column), alone);
        EXPECT_TRUE(alone.col(0) == expected.col(column)) << int(form) << ", " << t << " tokens, token " << column;
      }
      for (const Eigen::ThreadPoolDevice& device : devices) {
        const int threads = device.numThreads();
        GF::Matrix y = GF::Matrix::Constant(d, t, NAN);
        block.forward(x, y, device);
        EXPECT_EQ(0, std::memcmp(y.data(), expected.data(), sizeof(float) * std::size_t(y.size())))
            << int(form) << ", " << threads << " threads, " << t << " tokens";
        GF::Matrix z = x;
        block.forward(z, z, device);
        EXPECT_TRUE(z == expected) << "in place, " << threads << " threads, " << t << " tokens";
      }
    }
  }
}

TEST(GatedFeedForward, AllocatesNothingAfterWarmUp) {
  const Eigen::Index d = 512, d_ff = 1408, T = 48;
  using GF = egelu::GatedFeedForward<float>;
  GF block(GF::Weights::Random(d_ff, d) * 0.05f, GF::Weights::Random(d_ff, d) * 0.05f,
           GF::Weights::Random(d, d_ff) * 0.02f, GF::Vector::Ones(d));
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  const GF::Matrix x = GF::Matrix::Random(d, T);
  GF::Matrix y(d, T), y_again(d, T);
  block.forward(x, y);
  EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y_again); }));
  EXPECT_TRUE(y == y_again);
  block.forward(x, y_again, device);  // warm-up for the device
  EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y_again, device); }));
  EXPECT_TRUE(y == y_again);
  EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x.leftCols(1), y_again.leftCols(1), device); }));

  // reserve() instead of a first call.
  GF fresh(GF::Weights::Random(d_ff, d) * 0.05f, GF::Weights::Random(d_ff, d) * 0.05f,
           GF::Weights::Random(d, d_ff) * 0.02f, GF::Vector::Ones(d));
  fresh.reserve(T);
  y = GF::Matrix::Constant(d, T, NAN);
  EXPECT_EQ(0, malloc_counter::during([&] { fresh.forward(x, y); }));
  EXPECT_FALSE(y.array().isNaN().any());
}

// bench/block_passes times the blocks' passes through a profile the blocks fill in
// (src/blocks/pass_timing.hpp): installed, it must not change a bit of the output nor
// allocate, and it must see every pass and the activation on every thread slot used.
TEST(GatedFeedForward, PassProfileSeesEveryPassAndChangesNothing) {
  const Eigen::Index d = 64, d_ff = 424, T = 40;
  using GF = egelu::GatedFeedForward<float>;
  const GF block(GF::Weights::Random(d_ff, d) * 0.3f, GF::Weights::Random(d_ff, d) * 0.3f,
                 GF::Weights::Random(d, d_ff) * 0.05f, GF::Vector::Ones(d));
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  const GF::Matrix x = GF::Matrix::Random(d, T);
  GF::Matrix expected(d, T), y = GF::Matrix::Constant(d, T, NAN);
  block.forward(x, expected, device);

  egelu::blocks::pass_profile profile;
  egelu::blocks::installed_pass_profile().store(&profile);
  EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y, device); }));
  egelu::blocks::installed_pass_profile().store(nullptr);
  EXPECT_EQ(0, std::memcmp(y.data(), expected.data(), sizeof(float) * std::size_t(y.size())));
  EXPECT_EQ(profile.calls, 1);
  for (int p = 0; p < 3; ++p) {
    ASSERT_NE(profile.name[p], nullptr) << p;
    EXPECT_GE(profile.seconds[p], 0.0) << profile.name[p];
  }
  EXPECT_EQ(profile.name[3], nullptr);  // no post-norm
  EXPECT_GT(profile.activation_seconds[0] + profile.activation_seconds[1], 0.0);

  // Uninstalled, a call adds nothing to it.
  block.forward(x, y, device);
  EXPECT_EQ(profile.calls, 1);
}

// At prefill the tiles fetch the next row block's weights into L2 in slices (products.hpp,
// multiply_tiles): the slices of a range cover its whole lines once, in order, whatever
// the number of slices (more slices than lines: some empty).
TEST(Products, NextWeightsAreFetchedInSlicesCoveringTheirLines) {
  for (std::ptrdiff_t bytes : {0L, 63L, 64L, 65L, 4096L, 6912L, 196608L, 196660L}) {
    for (egelu::gemm::index slices : {1L, 2L, 3L, 7L, 60L, 120L, 5000L}) {
      std::ptrdiff_t next = 0;
      for (egelu::gemm::index slice = 0; slice < slices; ++slice) {
        const egelu::blocks::byte_range r = egelu::blocks::line_slice(bytes, slices, slice);
        ASSERT_EQ(r.from, next) << bytes << " bytes, slice " << slice << " of " << slices;
        ASSERT_LE(r.from, r.to);
        ASSERT_EQ(r.to % 64, 0);
        next = r.to;
      }
      EXPECT_EQ(next, bytes / 64 * 64) << bytes << " bytes in " << slices << " slices";
    }
  }
}

// egelu::set_min_work_per_thread: how many threads a product of m multiply-adds is cut for,
// read when a call starts. (This suite sets 0 for its other tests: share_every_product.cpp.)
TEST(Threads, ProductsAreCutForThreadsWithEnoughWork) {
  const long before = egelu::set_min_work_per_thread(egelu::default_min_work_per_thread);
  EXPECT_EQ(egelu::default_min_work_per_thread, 1L << 17);
  Eigen::ThreadPool pool(3);
  const Eigen::ThreadPoolDevice device(&pool, 4);
  egelu::internal::owned_task_team team;
  {
    const egelu::blocks::task_runner runner(&device, *team);
    EXPECT_EQ(runner.threads(), 4);
    EXPECT_EQ(runner.threads_for(0), 1);
    EXPECT_EQ(runner.threads_for((1 << 18) - 1), 1);
    EXPECT_EQ(runner.threads_for(1 << 18), 2);
    EXPECT_EQ(runner.threads_for(3 << 17), 3);
    EXPECT_EQ(runner.threads_for(1e12), 4);
  }
  {  // a call runs on as many threads as its largest product is worth: one is the caller alone
    const egelu::blocks::task_runner small(&device, *team, (1 << 18) - 1);
    EXPECT_EQ(small.threads(), 1);
  }
  for (const int worth : {2, 3, 4}) {
    const egelu::blocks::task_runner runner(&device, *team, double(worth) * (1 << 17));
    EXPECT_EQ(runner.threads(), worth);
    EXPECT_EQ(runner.threads_for(1 << 17), 1);
    EXPECT_EQ(runner.threads_for(1e12), worth);
  }
  {  // and only on those: tasks that sleep let every helper of the session claim some
    const egelu::blocks::task_runner runner(&device, *team, 2 << 17);
    std::atomic<int> widest_slot{0};
    runner.run(64, [&](int, int slot) {
      int seen = widest_slot.load();
      while (slot > seen && !widest_slot.compare_exchange_weak(seen, slot)) {
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
    EXPECT_EQ(widest_slot.load(), 1) << "a call worth 2 of 4 threads ran a task on slot " << widest_slot.load();
  }
  egelu::set_min_work_per_thread(0);
  {
    const egelu::blocks::task_runner runner(&device, *team, 1);
    EXPECT_EQ(runner.threads(), 4);
    EXPECT_EQ(runner.threads_for(1), 4);
  }
  EXPECT_EQ(egelu::set_min_work_per_thread(-5), 0);  // negative: 0
  EXPECT_EQ(egelu::set_min_work_per_thread(before), 0);
}

// Under the default, a small block's call at one token runs on the calling thread alone (no
// pool thread runs a task of it); the same bits as one thread, and for a larger call too.
TEST(Threads, SmallCallsRunOnTheCallerWithTheSameBits) {
  const long before = egelu::set_min_work_per_thread(egelu::default_min_work_per_thread);
  using GF = egelu::GatedFeedForward<float>;
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  for (const Eigen::Index T : {1, 64}) {  // d x d_ff x T: 2^15 and 2^21 multiply-adds
    const Eigen::Index d = 64, d_ff = 512;
    const GF block(GF::Weights::Random(d_ff, d) * 0.3f, GF::Weights::Random(d_ff, d) * 0.3f,
                   GF::Weights::Random(d, d_ff) * 0.05f, GF::Vector::Ones(d));
    const GF::Matrix x = GF::Matrix::Random(d, T);
    GF::Matrix alone = GF::Matrix::Constant(d, T, NAN), shared = alone;
    block.forward(x, alone);
    egelu::blocks::pass_profile profile;
    egelu::blocks::installed_pass_profile().store(&profile);
    for (int call = 0; call < 20; ++call) block.forward(x, shared, device);
    egelu::blocks::installed_pass_profile().store(nullptr);
    EXPECT_FALSE(alone.hasNaN());
    EXPECT_EQ(0, std::memcmp(alone.data(), shared.data(), sizeof(float) * std::size_t(alone.size()))) << T;
    if (T == 1) {
      EXPECT_EQ(profile.task_seconds[1], 0.0) << "a pool thread ran a task of a call too small to share";
    }
  }
  egelu::set_min_work_per_thread(before);
}

// A call worth 2 of a device's 4 threads runs on 2 (slots 0 and 1 only), with more tasks than
// threads (300 tokens: two token blocks), each slot with the gated first pass's scratch for
// its task: the same bits as one thread. (A grid cut for 2 threads but run on 4 would write
// past the scratch sized for 2: AddressSanitizer's job in CI. On 2 cores the tasks are too
// short for a third helper to claim one even with every thread allowed, so the slot check
// is for larger machines; ProductsAreCutForThreadsWithEnoughWork tests the rule itself.)
TEST(Threads, CallsWorthFewerThreadsUseOnlyThose) {
  const long before = egelu::set_min_work_per_thread(egelu::default_min_work_per_thread);
  using GF = egelu::GatedFeedForward<float>;
  const Eigen::Index d = 16, d_ff = 64, T = 300;  // 16 x 64 x 300 = 2.3 x 2^17 multiply-adds
  const GF block(GF::Weights::Random(d_ff, d) * 0.3f, GF::Weights::Random(d_ff, d) * 0.3f,
                 GF::Weights::Random(d, d_ff) * 0.05f, GF::Vector::Ones(d));
  const GF::Matrix x = GF::Matrix::Random(d, T);
  GF::Matrix alone = GF::Matrix::Constant(d, T, NAN), shared = alone;
  block.forward(x, alone);
  Eigen::ThreadPool pool(4);
  const Eigen::ThreadPoolDevice device(&pool, 4);
  egelu::blocks::pass_profile profile;
  egelu::blocks::installed_pass_profile().store(&profile);
  for (int call = 0; call < 20; ++call) block.forward(x, shared, device);
  egelu::blocks::installed_pass_profile().store(nullptr);
  EXPECT_FALSE(alone.hasNaN());
  EXPECT_EQ(0, std::memcmp(alone.data(), shared.data(), sizeof(float) * std::size_t(alone.size())));
  EXPECT_EQ(profile.task_seconds[2] + profile.task_seconds[3], 0.0) << "a call worth 2 threads ran on more";
  egelu::set_min_work_per_thread(before);
}

// Long calls run in chunks (blocks::token_chunks), here with a post-norm (Gemma's), whose
// down product's output follows the chunk's normalised tokens: every token the same bits as
// alone, on 1, 2 and 3 threads, after reserve() without allocating for any of several token
// counts (the up product's scratch is not monotone in them: reserve takes every count's).
TEST(GatedFeedForward, LongCallsRunInChunksWithEachTokensOwnBits) {
  const std::size_t l2 = std::size_t(egelu::gemm::l2_cache_bytes());
  const Eigen::Index d = 48,
                     d_ff = std::min<Eigen::Index>(256, Eigen::Index(l2 * 3 / 4 / (3 * sizeof(float) * 64)) / 8 * 8);
  ASSERT_GE(d_ff, 8);
  using GF = egelu::GatedFeedForward<float>;
  const GF block(GF::Weights::Random(d_ff, d) * 0.4f, GF::Weights::Random(d_ff, d) * 0.3f,
                 GF::Weights::Random(d, d_ff) * 0.05f, GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.2f,
                 GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.2f, GF::Options{egelu::GatedForm::geglu, 1e-6f});
  if (egelu::gemm::llc_bytes() > 0) {
    EXPECT_EQ(
        egelu::blocks::token_chunks(321, 1, std::size_t(3 * d_ff) * sizeof(float), block.weight_bytes(), false).count(),
        5);
  }
  const Eigen::Index T = 321;
  const GF::Matrix x = GF::Matrix::Random(d, T) * 3.f;
  const GF::Matrix alone = each_token_alone(block, x);
  ASSERT_FALSE(alone.hasNaN());
  Eigen::ThreadPool pool_1(1), pool_2(2), pool_3(3);
  const Eigen::ThreadPoolDevice devices[] = {{&pool_1, 1}, {&pool_2, 2}, {&pool_3, 3}};
  block.reserve(T, 1, 3);
  for (const Eigen::ThreadPoolDevice& device : devices) {
    for (Eigen::Index tokens : {T, Eigen::Index(257), Eigen::Index(256), Eigen::Index(200), Eigen::Index(129)}) {
      GF::Matrix y = GF::Matrix::Constant(d, tokens, NAN);
      EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x.leftCols(tokens), y, device); }))
          << device.numThreads() << " threads, " << tokens << " tokens";
      EXPECT_TRUE(y == alone.leftCols(tokens)) << device.numThreads() << " threads, " << tokens << " tokens";
    }
    GF::Matrix z = x;
    block.forward(z, z, device);
    EXPECT_TRUE(z == alone) << device.numThreads() << " threads, in place";
  }
}

// Q8_0, Q4_0 and MXFP4 blocks widen a row block's weights into per-thread memory when a call has
// several panels of tokens: reserve() sizes it, so no call allocates after it, decoding or not.
// With q16_0 inputs too (quantized in place of the packed floats).
TEST(GatedFeedForward, BlockFormatsAllocateNothingAfterReserve) {
  const Eigen::Index d = 512, d_ff = 1408, T = 48;
  using GF = egelu::GatedFeedForward<float>;
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  const GF::Matrix x = GF::Matrix::Random(d, T);
  for (int variant = 0; variant < 5; ++variant) {
    const egelu::WeightFormat f = variant == 4  ? egelu::WeightFormat::mxfp4
                                  : variant % 2 ? egelu::WeightFormat::q4_0
                                                : egelu::WeightFormat::q8_0;
    const egelu::InputFormat inputs =
        variant == 2 || variant == 3 ? egelu::InputFormat::q16_0 : egelu::InputFormat::f32;
    const GF block(GF::Weights::Random(d_ff, d) * 0.05f, GF::Weights::Random(d_ff, d) * 0.05f,
                   GF::Weights::Random(d, d_ff) * 0.02f, GF::Vector::Ones(d),
                   GF::Options{egelu::GatedForm::swiglu, 1e-6f, f, inputs});
    block.reserve(T, 1, 2);
    GF::Matrix y = GF::Matrix::Constant(d, T, NAN), y_again = y;
    EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y, device); })) << egelu::to_string(f);
    EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y_again); })) << egelu::to_string(f);
    EXPECT_TRUE(y == y_again) << egelu::to_string(f);
    EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x.leftCols(1), y_again.leftCols(1), device); }));
    EXPECT_TRUE(y.col(0) == y_again.col(0)) << egelu::to_string(f) << ": one token or many, the same bits";
  }
}

// LayerNorm before the MLP (ModernBERT, StableLM, Cohere), with and without its bias, and no
// norm before it but one after (OLMo 2), against the double reference: every form, token
// counts across chunks and threads, the same bits on 1 and 3 threads and in place.
TEST(GatedFeedForward, LayerNormOrNoNormBeforeTheMlp) {
  const Eigen::Index d = 72, d_ff = 200;
  using GF = egelu::GatedFeedForward<float>;
  const GF::Weights gate = GF::Weights::Random(d_ff, d) * 0.4f, up = GF::Weights::Random(d_ff, d) * 0.3f,
                    down = GF::Weights::Random(d, d_ff) * 0.05f;
  const GF::Vector weight = GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.2f, bias = GF::Vector::Random(d) * 0.5f,
                   post = GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.3f, none;
  Eigen::ThreadPool pool(3);
  const Eigen::ThreadPoolDevice device(&pool, 3);
  struct variant {
    egelu::GatedNorm kind;
    const GF::Vector *weight, *bias, *post;
    const char* name;
  };
  for (const variant& v : {variant{egelu::GatedNorm::layer, &weight, &bias, nullptr, "LayerNorm with a bias"},
                           variant{egelu::GatedNorm::layer, &weight, nullptr, nullptr, "LayerNorm without bias"},
                           variant{egelu::GatedNorm::layer, &weight, nullptr, &post, "LayerNorm, RMSNorm after"},
                           variant{egelu::GatedNorm::none, nullptr, nullptr, &post, "no norm, RMSNorm after"},
                           variant{egelu::GatedNorm::none, nullptr, nullptr, nullptr, "no norm at all"}}) {
    for (egelu::GatedForm form : {egelu::GatedForm::swiglu, egelu::GatedForm::geglu_exact}) {
      GF::Options options{form, 1e-5f};
      options.norm = v.kind;
      const GF block(gate, up, down, v.weight ? *v.weight : none, v.bias ? *v.bias : none, v.post ? *v.post : none,
                     options);
      EXPECT_EQ(block.norm_type(), v.kind);
      EXPECT_EQ(block.has_post_norm(), v.post != nullptr);
      for (Eigen::Index t : {1, 40, 257}) {
        // Offset from zero, so that a LayerNorm that forgot the mean would show.
        const GF::Matrix x = (GF::Matrix::Random(d, t) * 3.f).array() + 1.5f;
        GF::Matrix y = GF::Matrix::Constant(d, t, NAN);
        block.forward(x, y);
        const Eigen::MatrixXd reference =
            unfused(gate, up, down, v.weight ? *v.weight : GF::Vector::Ones(d), x, 1e-5, form, v.kind, v.bias, v.post);
        EXPECT_LE(((y.cast<double>() - reference).array().abs() / (1 + reference.array().abs())).maxCoeff(), 2e-5)
            << v.name << ", form " << int(form) << ", " << t << " tokens";
        GF::Matrix on_pool = GF::Matrix::Constant(d, t, NAN);
        block.forward(x, on_pool, device);
        EXPECT_TRUE(on_pool == y) << v.name << ", 3 threads, " << t << " tokens";
        GF::Matrix z = x;
        block.forward(z, z, device);
        EXPECT_TRUE(z == y) << v.name << ", in place, " << t << " tokens";
      }
    }
  }
}

// Granite's residual_multiplier: Y = X + MLP * output_scale, with and without a norm after the MLP,
// against the double reference; the same bits on 3 threads and in place.
TEST(GatedFeedForward, OutputScaleMultipliesTheMlpsOutput) {
  const Eigen::Index d = 40, d_ff = 104;
  using GF = egelu::GatedFeedForward<float>;
  const GF::Weights gate = GF::Weights::Random(d_ff, d) * 0.4f, up = GF::Weights::Random(d_ff, d) * 0.3f,
                    down = GF::Weights::Random(d, d_ff) * 0.05f;
  const GF::Vector norm = GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.2f,
                   post = GF::Vector::Ones(d) + GF::Vector::Random(d) * 0.3f, none;
  Eigen::ThreadPool pool(3);
  const Eigen::ThreadPoolDevice device(&pool, 3);
  for (const GF::Vector* post_norm : {static_cast<const GF::Vector*>(nullptr), &post}) {
    GF::Options options{egelu::GatedForm::swiglu, 1e-5f};
    options.output_scale = 0.22f;
    const GF block(gate, up, down, norm, none, post_norm ? *post_norm : none, options);
    EXPECT_EQ(block.output_scale(), 0.22f);
    options.output_scale = 1;
    const GF unscaled_block(gate, up, down, norm, none, post_norm ? *post_norm : none, options);
    for (Eigen::Index t : {1, 37, 130}) {
      const GF::Matrix x = GF::Matrix::Random(d, t) * 3.f;
      GF::Matrix y = GF::Matrix::Constant(d, t, NAN);
      block.forward(x, y);
      const Eigen::MatrixXd reference = unfused(gate, up, down, norm, x, 1e-5, egelu::GatedForm::swiglu,
                                                egelu::GatedNorm::rms, nullptr, post_norm, 0.22f);
      EXPECT_LE(((y.cast<double>() - reference).array().abs() / (1 + reference.array().abs())).maxCoeff(), 2e-5)
          << (post_norm ? "with" : "without") << " a post-norm, " << t << " tokens";
      // Scaled, not ignored: the same block without the factor is far from it.
      GF::Matrix unscaled = GF::Matrix::Constant(d, t, NAN);
      unscaled_block.forward(x, unscaled);
      EXPECT_GT((unscaled - y).cwiseAbs().maxCoeff(), 1e-2f);
      GF::Matrix on_pool = GF::Matrix::Constant(d, t, NAN);
      block.forward(x, on_pool, device);
      EXPECT_TRUE(on_pool == y) << t << " tokens, 3 threads";
      GF::Matrix z = x;
      block.forward(z, z, device);
      EXPECT_TRUE(z == y) << t << " tokens, in place";
    }
  }
  GF::Options infinite;
  infinite.output_scale = INFINITY;
  try {
    GF(gate, up, down, norm, none, none, infinite);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("output_scale must be finite"), std::string::npos) << e.what();
  }
}

TEST(GatedFeedForward, RejectsWrongShapesNamingThem) {
  using GF = egelu::GatedFeedForward<double>;
  const auto expect_message = [](const auto& make, const std::string& part) {
    try {
      make();
      ADD_FAILURE() << "no exception: " << part;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  const GF::Weights g = GF::Weights::Random(8, 4);
  expect_message([&] { GF(g, GF::Weights::Random(8, 5), GF::Weights::Random(4, 8), GF::Vector::Ones(4)); },
                 "egelu::GatedFeedForward: up is 8x5 but must be 8x4");
  expect_message([&] { GF(g, g, GF::Weights::Random(4, 7), GF::Vector::Ones(4)); }, "down is 4x7 but must be 4x8");
  expect_message([&] { GF(g, g, GF::Weights::Random(4, 8), GF::Vector::Ones(3)); }, "norm is 3x1 but must be 4x1");
  GF::Options layer_norm, no_norm;
  layer_norm.norm = egelu::GatedNorm::layer;
  no_norm.norm = egelu::GatedNorm::none;
  const GF::Vector four = GF::Vector::Ones(4), empty;
  expect_message([&] { GF(g, g, GF::Weights::Random(4, 8), four, four, empty, GF::Options{}); },
                 "norm_bias is 4x1 but must be 0x1 (empty: GatedNorm::rms has no bias)");
  expect_message([&] { GF(g, g, GF::Weights::Random(4, 8), four, GF::Vector::Ones(5), empty, layer_norm); },
                 "norm_bias is 5x1 but must be 4x1");
  expect_message([&] { GF(g, g, GF::Weights::Random(4, 8), four, empty, empty, no_norm); },
                 "norm is 4x1 but must be 0x1 (empty: GatedNorm::none has no weight)");
  expect_message([&] { GF(g, g, GF::Weights::Random(4, 8), empty, empty, empty, layer_norm); },
                 "norm is 0x1 but must be 4x1");
  GF block(g, g, GF::Weights::Random(4, 8), GF::Vector::Ones(4));
  GF::Matrix x(5, 3), y(4, 3), x4(4, 3), y2(4, 2), both(4, 4);
  expect_message([&] { block.forward(x, y); }, "x is 5x3 but must be 4x3");
  expect_message([&] { block.forward(x4, y2); }, "y is 4x2 but must be 4x3");
  expect_message([&] { block.forward(both.leftCols(3), both.rightCols(3)); }, "y overlaps x without being x");
  EXPECT_THROW(GF::load(kData + "/no_such_directory"), egelu::npy::format_error);
  // a directory of the other block's files: a missing gate_proj.npy names the file
  try {
    GF::load(kData + "/ffn_tanh");
    ADD_FAILURE() << "no exception";
  } catch (const egelu::npy::format_error& e) {
    EXPECT_NE(std::string(e.what()).find("gate_proj.npy: cannot open the file"), std::string::npos) << e.what();
  }
}

}  // namespace
