// FeedForward against PyTorch's golden fixtures, its allocation rule, in-place
// use, the errors for wrong shapes, and the threaded forward: the same bits as the
// single-threaded one for 1, 2 and 3 threads, odd token counts and one token.
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <egelu/egelu.hpp>
#include <egelu/feed_forward.hpp>
#include <egelu/npy.hpp>
#include <thread>

#include "blocks/pass_timing.hpp"
#include "blocks/passes.hpp"
#include "blocks/products.hpp"
#include "each_token_alone.hpp"
#include "malloc_counter.hpp"
#include "npy_tokens.hpp"

namespace {

const std::string kData = EGELU_TEST_DATA_DIR;

template <typename Scalar>
void expect_matches_pytorch(const std::string& form_name, egelu::GeluForm form, const char* expected_file,
                            double tolerance) {
  const std::string dir = kData + "/ffn_" + form_name;
  auto block = egelu::FeedForward<Scalar>::load(dir, form);
  const auto x = tokens<Scalar>(dir + "/X.npy");
  const auto expected = tokens<Scalar>(dir + "/" + expected_file);
  Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> y =
      Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>::Constant(x.rows(), x.cols(), NAN);
  block.forward(x, y);
  const Scalar worst = ((y - expected).array().abs() / (1 + expected.array().abs())).maxCoeff();
  EXPECT_LE(double(worst), tolerance) << form_name << " " << expected_file;
  EXPECT_FALSE(y.hasNaN());
}

TEST(FeedForward, MatchesPyTorch) {
  expect_matches_pytorch<float>("tanh", egelu::GeluForm::tanh, "Y.npy", 1e-5);
  expect_matches_pytorch<float>("exact", egelu::GeluForm::exact, "Y.npy", 1e-5);
  expect_matches_pytorch<double>("tanh", egelu::GeluForm::tanh, "Y_f64.npy", 1e-12);
  expect_matches_pytorch<double>("exact", egelu::GeluForm::exact, "Y_f64.npy", 1e-12);
}

// The opt-in fast kernels inside the block: within their bound's effect on the output.
TEST(FeedForward, FastFormsMatchPyTorch) {
  expect_matches_pytorch<float>("tanh", egelu::GeluForm::fast_tanh, "Y.npy", 1e-5);
  expect_matches_pytorch<float>("exact", egelu::GeluForm::fast_exact, "Y.npy", 1e-5);
  expect_matches_pytorch<double>("exact", egelu::GeluForm::fast_exact, "Y_f64.npy", 1e-12);
  // and they are the fast kernels: float results differ from the default kernels' somewhere.
  const std::string dir = kData + "/ffn_tanh";
  const auto x = tokens<float>(dir + "/X.npy");
  Eigen::MatrixXf y_default(x.rows(), x.cols()), y_fast(x.rows(), x.cols());
  egelu::FeedForward<float>::load(dir, egelu::GeluForm::tanh).forward(x, y_default);
  egelu::FeedForward<float>::load(dir, egelu::GeluForm::fast_tanh).forward(x, y_fast);
  EXPECT_NE(y_default, y_fast);
}

TEST(FeedForward, AllocatesNothingAfterWarmUp) {
  const Eigen::Index d = 768, d_ff = 3072, T = 64;
  using FF = egelu::FeedForward<float>;
  FF block(FF::Weights::Random(d_ff, d) * 0.05f, FF::Vector::Random(d_ff), FF::Weights::Random(d, d_ff) * 0.02f,
           FF::Vector::Random(d), FF::Vector::Ones(d), FF::Vector::Zero(d), egelu::GeluForm::exact);
  const FF::Matrix x = FF::Matrix::Random(d, T);
  FF::Matrix y(d, T), y_again(d, T);
  block.forward(x, y);  // warm-up: sizes the workspace
  EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y_again); }));
  EXPECT_TRUE(y == y_again);
  EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x.leftCols(T / 2), y_again.leftCols(T / 2)); }));

  FF::Matrix z = x;
  block.forward(z, z);  // in place
  EXPECT_TRUE(z == y);

  // reserve() instead of a first call: the workspace and the packed input, for one thread or many.
  FF fresh(FF::Weights::Random(d_ff, d) * 0.05f, FF::Vector::Random(d_ff), FF::Weights::Random(d, d_ff) * 0.02f,
           FF::Vector::Random(d), FF::Vector::Ones(d), FF::Vector::Zero(d));
  fresh.reserve(T);
  y = FF::Matrix::Constant(d, T, NAN);
  EXPECT_EQ(0, malloc_counter::during([&] { fresh.forward(x, y); }));
  EXPECT_FALSE(y.array().isNaN().any());
}

// Q8_0, Q4_0 and MXFP4 blocks: reserve() sizes the per-thread memory their prefill widens weights
// into, so no call allocates after it.
TEST(FeedForward, BlockFormatsAllocateNothingAfterReserve) {
  const Eigen::Index d = 768, d_ff = 3072, T = 64;
  using FF = egelu::FeedForward<float>;
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  const FF::Matrix x = FF::Matrix::Random(d, T);
  for (egelu::WeightFormat f : {egelu::WeightFormat::q8_0, egelu::WeightFormat::q4_0, egelu::WeightFormat::mxfp4}) {
    const FF block(FF::Weights::Random(d_ff, d) * 0.05f, FF::Vector::Random(d_ff), FF::Weights::Random(d, d_ff) * 0.02f,
                   FF::Vector::Random(d), FF::Vector::Ones(d), FF::Vector::Zero(d),
                   FF::Options{egelu::GeluForm::exact, egelu::NormPlacement::post, 1e-12f, f});
    block.reserve(T, 1, 2);
    FF::Matrix y = FF::Matrix::Constant(d, T, NAN), y_again = y;
    EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y, device); })) << egelu::to_string(f);
    EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y_again); })) << egelu::to_string(f);
    EXPECT_TRUE(y == y_again) << egelu::to_string(f);
    EXPECT_FALSE(y.array().isNaN().any());
  }
}

// The threaded forward gives the single-threaded forward's bits, whatever the number of
// threads and tokens (the tiles are the same, whoever computes them), in place too.
TEST(FeedForward, ThreadedForwardIsBitIdentical) {
  const Eigen::Index d = 96, d_ff = 400;  // several row blocks, a short last one
  using FF = egelu::FeedForward<float>;
  // One pool a thread count, used for every token count (as a program's is) and both forms.
  Eigen::ThreadPool pool_1(1), pool_2(2), pool_3(3);
  const Eigen::ThreadPoolDevice devices[] = {{&pool_1, 1}, {&pool_2, 2}, {&pool_3, 3}};
  for (egelu::GeluForm form : {egelu::GeluForm::tanh, egelu::GeluForm::exact}) {
    FF block(FF::Weights::Random(d_ff, d) * 0.3f, FF::Vector::Random(d_ff), FF::Weights::Random(d, d_ff) * 0.05f,
             FF::Vector::Random(d), FF::Vector::Ones(d) + FF::Vector::Random(d) * 0.1f, FF::Vector::Random(d), form);
    for (Eigen::Index tokens : {1, 2, 7, 33, 128, 200, 300, 384, 601}) {  // 128-384: tokens split between threads
      const FF::Matrix x = FF::Matrix::Random(d, tokens) * 2.f;
      FF::Matrix expected = FF::Matrix::Constant(d, tokens, NAN);
      block.forward(x, expected);
      for (const Eigen::ThreadPoolDevice& device : devices) {
        const int threads = device.numThreads();
        FF::Matrix y = FF::Matrix::Constant(d, tokens, NAN);
        block.forward(x, y, device);
        EXPECT_EQ(0, std::memcmp(y.data(), expected.data(), sizeof(float) * std::size_t(y.size())))
            << threads << " threads, " << tokens << " tokens";
        FF::Matrix z = x;
        block.forward(z, z, device);  // in place
        EXPECT_TRUE(z == expected) << threads << " threads, " << tokens << " tokens, in place";
      }
    }
  }
}

// The workspace's buffers (tokens packed, block formats' weights widened, hidden layers)
// start on a 64-byte line in every build: the kernels load whole registers from them, and a
// build without -march=native had Eigen's 16-byte alignment (every load split two lines).
// From 2 MiB up they start on a huge page's boundary, as the packed weights do.
TEST(FeedForward, WorkspaceBuffersStartOnACacheLine) {
  egelu::blocks::growing_buffer<float> floats[6];
  egelu::blocks::growing_buffer<double> doubles[3];
  egelu::blocks::growing_buffer<int> ints[3];
  for (std::ptrdiff_t size : {1, 3, 17, 100, 1001, 5000}) {
    for (auto& b : floats) ASSERT_EQ(reinterpret_cast<std::uintptr_t>(b.reserve(size)) % 64, 0u) << size;
    for (auto& b : doubles) ASSERT_EQ(reinterpret_cast<std::uintptr_t>(b.reserve(size)) % 64, 0u) << size;
    for (auto& b : ints) ASSERT_EQ(reinterpret_cast<std::uintptr_t>(b.reserve(size)) % 64, 0u) << size;
  }
  // From 2 MiB up, on a 2 MiB boundary (huge pages, gemm/kernel_memory.hpp): just below, a line.
  constexpr std::ptrdiff_t huge = std::ptrdiff_t(1) << 21;
  for (std::ptrdiff_t floats_wanted : {huge / 4 + 1, 3 * huge / 4 + 5}) {
    egelu::blocks::growing_buffer<float> b;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.reserve(floats_wanted)) % huge, 0u) << floats_wanted;
    b.data()[floats_wanted - 1] = 1.f;  // the whole size is there (ASan)
  }
  egelu::blocks::growing_buffer<double> below;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(below.reserve(huge / 8 - 1)) % 64, 0u);
}

// Token blocks hold at most the panels of nt that 256 tokens fill, so that 512 tokens are two
// blocks for every kernel set's nt (with nt = 6 there were three, the last of 8 tokens), one a
// thread on two threads; every block but the last is a whole number of panels.
TEST(FeedForward, TokenBlocksOfFiveHundredTwelveTokensAreTwo) {
  using egelu::blocks::index;
  for (int nt : {4, 6, 8}) {
    for (int sharing : {1, 2}) {
      const egelu::blocks::token_layout layout(512, nt, sharing);
      EXPECT_EQ(layout.blocks(), 2) << "nt " << nt << ", " << sharing << " threads sharing";
      EXPECT_EQ(layout.size(0) % nt, 0) << "nt " << nt;
      EXPECT_EQ(layout.panels(0), layout.panels(1)) << "nt " << nt;
    }
    for (index tokens : {index(1), index(255), index(256), index(257), index(300), index(1000)}) {
      const egelu::blocks::token_layout layout(tokens, nt);
      index covered = 0;
      for (index c = 0; c < layout.blocks(); ++c) {
        EXPECT_LE(layout.size(c), egelu::blocks::widest_token_block(nt)) << tokens << " tokens, nt " << nt;
        EXPECT_LT(layout.size(c), 256 + nt) << tokens << " tokens, nt " << nt;
        if (c + 1 < layout.blocks()) {
          EXPECT_EQ(layout.size(c) % nt, 0) << tokens << " tokens, nt " << nt;
        }
        covered += layout.size(c);
      }
      EXPECT_EQ(covered, tokens) << "nt " << nt;
    }
  }
}

// blocks::pack_columns (a task's columns a panel at a time) writes the packed input exactly as
// pack_column, the specification, writes it column by column, for column ranges that start and
// end mid-panel (tasks split the tokens anywhere), token blocks of one or several threads, a
// last partial panel and two depth blocks; lanes outside the range stay as they were (NaN).
TEST(FeedForward, PackColumnsWritesWhatPackColumnWrites) {
  using egelu::blocks::index;
  const index depth = 300;  // depth blocks of 128, 128 and 44
  const std::vector<float> weights(std::size_t(8 * depth), 1.f);
  const egelu::gemm::packed_weights w(
      egelu::gemm::matrix_view{weights.data(), egelu::gemm::stored::f32, 8, depth, depth, 1}, egelu::gemm::stored::f32,
      4, egelu::gemm::blocking{128, 96});
  for (int nt : {4, 6, 8}) {
    for (index tokens : {index(1), index(5), index(13), index(130), index(300), index(515)}) {
      for (int sharing : {1, 2}) {
        const egelu::blocks::token_layout layout(tokens, nt, sharing);
        std::vector<float> values(std::size_t(depth * tokens));
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i % 1009) - 500.f;
        for (index parts : {index(1), index(2), index(3), index(7)}) {
          std::vector<float> want(std::size_t(layout.packed_size(depth)), NAN), got = want;
          for (index p = 0; p < parts; ++p) {
            const index first = tokens * p / parts, last = tokens * (p + 1) / parts;
            for (index t = first; t < last; ++t)
              egelu::blocks::pack_column(w, layout, values.data() + t * depth, 0, depth, t, want.data());
            egelu::blocks::pack_columns(w, layout, values.data(), depth, first, last, got.data());
          }
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << "nt " << nt << " tokens " << tokens << " sharing " << sharing << " parts " << parts;
        }
      }
    }
  }
}

// A long call runs in chunks of at least 64 tokens a thread (blocks::token_chunks) when 64
// tokens' hidden layers fit three quarters of L2 and the weights, not widened by the products,
// the last-level cache. The rule's cases; then a block whose calls run in chunks: every
// token's output the same bits as the token's alone on 1, 2 and 3 threads (five chunks, two,
// one), in place, pre- and post-norm, after reserve() without allocating, the pass profile
// counting one call.
TEST(FeedForward, LongCallsRunInChunksWithEachTokensOwnBits) {
  using egelu::blocks::token_chunks;
  const std::size_t l2 = std::size_t(egelu::gemm::l2_cache_bytes()), fits = l2 * 3 / 4 / 64;
  const std::size_t llc = std::size_t(egelu::gemm::llc_bytes());
  if (llc > 0) {
    EXPECT_EQ(token_chunks(127, 1, fits, llc, false).count(), 1);
    const token_chunks two(128, 1, fits, llc, false);
    EXPECT_EQ(two.count(), 2);
    EXPECT_EQ(two.first(1), 64);
    EXPECT_EQ(two.size(1), 64);
    const token_chunks five(1000, 3, fits, 1, false);
    EXPECT_EQ(five.count(), 5);  // of 200: none below 64 a thread
    EXPECT_EQ(five.first(4), 800);
    EXPECT_EQ(token_chunks(383, 3, fits, 1, false).count(), 1);
    EXPECT_EQ(token_chunks(1000, 1, fits + 1, 1, false).count(), 1);    // the hidden layers do not fit L2
    EXPECT_EQ(token_chunks(1000, 1, fits, llc + 1, false).count(), 1);  // the weights do not stay in the LLC
    EXPECT_EQ(token_chunks(1000, 1, fits, 1, true).count(), 1);         // block formats, widened again by every chunk
  } else {
    EXPECT_EQ(token_chunks(1000, 1, 1, 1, false).count(), 1);  // no last-level cache reported: no chunks
  }

  // d_ff 256 (less where L2 has under 171 KB), so that this block's calls run in chunks.
  const Eigen::Index d = 64, T = 333,
                     d_ff = std::min<Eigen::Index>(256, Eigen::Index(l2 * 3 / 4 / (2 * sizeof(float) * 64)) / 8 * 8);
  using FF = egelu::FeedForward<float>;
  ASSERT_GE(d_ff, 8);
  Eigen::ThreadPool pool_1(1), pool_2(2), pool_3(3);
  const Eigen::ThreadPoolDevice devices[] = {{&pool_1, 1}, {&pool_2, 2}, {&pool_3, 3}};
  for (egelu::NormPlacement norm : {egelu::NormPlacement::post, egelu::NormPlacement::pre}) {
    const FF block(FF::Weights::Random(d_ff, d) * 0.3f, FF::Vector::Random(d_ff), FF::Weights::Random(d, d_ff) * 0.05f,
                   FF::Vector::Random(d), FF::Vector::Ones(d) + FF::Vector::Random(d) * 0.1f, FF::Vector::Random(d),
                   FF::Options{egelu::GeluForm::exact, norm, 1e-5f});
    if (llc > 0) {
      ASSERT_EQ(token_chunks(T, 1, std::size_t(2 * d_ff) * sizeof(float), block.weight_bytes(), false).count(), 5);
    }
    const FF::Matrix x = FF::Matrix::Random(d, T) * 2.f;
    const FF::Matrix alone = each_token_alone(block, x);
    ASSERT_FALSE(alone.hasNaN());
    block.reserve(T, 1, 3);
    FF::Matrix y = FF::Matrix::Constant(d, T, NAN);
    egelu::blocks::pass_profile profile;
    egelu::blocks::installed_pass_profile().store(&profile);
    EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y); }));
    egelu::blocks::installed_pass_profile().store(nullptr);
    EXPECT_EQ(profile.calls, 1);
    EXPECT_EQ(0, std::memcmp(y.data(), alone.data(), sizeof(float) * std::size_t(y.size()))) << int(norm);
    for (const Eigen::ThreadPoolDevice& device : devices) {
      y.setConstant(NAN);
      EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y, device); })) << device.numThreads() << " threads";
      EXPECT_EQ(0, std::memcmp(y.data(), alone.data(), sizeof(float) * std::size_t(y.size())))
          << int(norm) << ", " << device.numThreads() << " threads";
      FF::Matrix z = x;
      block.forward(z, z, device);
      EXPECT_TRUE(z == alone) << int(norm) << ", " << device.numThreads() << " threads, in place";
    }
  }
}

TEST(FeedForward, ThreadedForwardMatchesPyTorch) {
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  for (const char* form_name : {"tanh", "exact"}) {
    const std::string dir = kData + "/ffn_" + form_name;
    const egelu::GeluForm form = form_name[0] == 't' ? egelu::GeluForm::tanh : egelu::GeluForm::exact;
    auto block = egelu::FeedForward<double>::load(dir, form);
    const auto x = tokens<double>(dir + "/X.npy");
    const auto expected = tokens<double>(dir + "/Y_f64.npy");
    Eigen::MatrixXd y = Eigen::MatrixXd::Constant(x.rows(), x.cols(), NAN);
    block.forward(x, y, device);
    EXPECT_LE(((y - expected).array().abs() / (1 + expected.array().abs())).maxCoeff(), 1e-12) << form_name;
  }
}

// A post-norm float block of random weights, for the threaded allocation tests.
egelu::FeedForward<float> random_block(Eigen::Index d, Eigen::Index d_ff) {
  using FF = egelu::FeedForward<float>;
  return FF(FF::Weights::Random(d_ff, d) * 0.05f, FF::Vector::Random(d_ff), FF::Weights::Random(d, d_ff) * 0.02f,
            FF::Vector::Random(d), FF::Vector::Ones(d), FF::Vector::Zero(d));
}

TEST(FeedForward, ThreadedForwardAllocatesNothingAfterWarmUp) {
  const Eigen::Index d = 768, d_ff = 3072, T = 64;
  using FF = egelu::FeedForward<float>;
  const FF block = random_block(d, d_ff);
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  const FF::Matrix x = FF::Matrix::Random(d, T);
  FF::Matrix y(d, T), y_again(d, T);
  block.forward(x, y, device);  // warm-up: the workspace and the packed input
  // (the pool's own bookkeeping of a scheduled task counts here too: std::function may allocate)
  const long allocations = malloc_counter::during([&] { block.forward(x, y_again, device); });
  EXPECT_EQ(allocations, 0);
  EXPECT_TRUE(y == y_again);
  EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x.leftCols(1), y_again.leftCols(1), device); }));
}

// The same without the pool tasks' linger (egelu::set_thread_linger(0)): every call
// schedules its helper anew, and the task (a pointer to its berth) fits std::function.
TEST(FeedForward, ThreadedForwardAllocatesNothingWithoutLinger) {
  const auto before = egelu::set_thread_linger(std::chrono::microseconds(0));
  EXPECT_EQ(before, egelu::default_thread_linger);  // no other test of this binary sets it
  const Eigen::Index d = 256, d_ff = 1024, T = 16;
  using FF = egelu::FeedForward<float>;
  const FF block = random_block(d, d_ff);
  Eigen::ThreadPool pool(2);
  const Eigen::ThreadPoolDevice device(&pool, 2);
  const FF::Matrix x = FF::Matrix::Random(d, T);
  FF::Matrix y(d, T), y_again(d, T);
  block.forward(x, y, device);
  for (int call = 0; call < 5; ++call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the helper gone
    EXPECT_EQ(0, malloc_counter::during([&] { block.forward(x, y_again, device); }));
    EXPECT_TRUE(y == y_again);
  }
  EXPECT_EQ(egelu::set_thread_linger(before), std::chrono::microseconds(0));
}

TEST(FeedForward, RejectsWrongShapesNamingThem) {
  using FF = egelu::FeedForward<double>;
  auto make = [](Eigen::Index w2_cols) {
    return FF(FF::Weights::Random(8, 4), FF::Vector::Random(8), FF::Weights::Random(4, w2_cols), FF::Vector::Random(4),
              FF::Vector::Ones(4), FF::Vector::Zero(4));
  };
  try {
    make(7);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("W2 is 4x7 but must be 4x8"), std::string::npos) << e.what();
  }
  FF block = make(8);
  FF::Matrix x(5, 3), y(4, 3);
  try {
    block.forward(x, y);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("x is 5x3 but must be 4x3"), std::string::npos) << e.what();
  }
  FF::Matrix x4(4, 3), y2(4, 2);
  EXPECT_THROW(block.forward(x4, y2), std::invalid_argument);
  FF::Matrix both(4, 4);
  EXPECT_THROW(block.forward(both.leftCols(3), both.rightCols(3)), std::invalid_argument);  // partial overlap
  EXPECT_THROW(FF::load(kData + "/no_such_directory"), egelu::npy::format_error);
}

}  // namespace
