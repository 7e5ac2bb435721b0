// Several threads calling forward() on one block at once, as a server answering requests
// does: with and without devices of their own, sharing one device, with mixed token
// counts and in place. Every result must be the bits a lone serial call gives; after a
// warm-up (or reserve(tokens, callers, threads)) the callers allocate nothing. Built
// under ThreadSanitizer too (CI's TSan job).
#define EIGEN_USE_THREADS
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/moe_feed_forward.hpp>
#include <memory>
#include <string>
#include <thread>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "malloc_counter.hpp"
#include "test_scale.hpp"

namespace {

using Matrix = Eigen::MatrixXf;

// The inputs: a few token counts, odd ones among them, each with its serial result.
struct Requests {
  std::vector<Matrix> x, serial;
};

template <typename Block>
Requests requests_for(const Block& block) {
  Requests r;
  std::srand(99);
  for (Eigen::Index tokens : {1, 3, 8, 17, 40, 9, 2, 64}) {
    r.x.push_back(Matrix::Random(block.d_model(), tokens) * 2.f);
    r.serial.push_back(Matrix::Constant(block.d_model(), tokens, NAN));
    block.forward(r.x.back(), r.serial.back());
  }
  return r;
}

bool same_bits(const Matrix& a, const Matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * std::size_t(a.size())) == 0;
}

// How caller c runs its requests: alone, on a device of its own, on the device shared by
// all callers that share, or in place on its own device.
enum class Way { alone, own_device, shared_device, in_place };

// `callers` threads, caller c running every request `rounds` times (starting at request
// c, so that different token counts overlap) the way ways[c % size] says. Returns the
// number of results that differ from the serial ones.
template <typename Block>
int run_callers(const Block& block, const Requests& r, const std::vector<Way>& ways, int callers, int rounds) {
  Eigen::ThreadPool shared_pool(2);
  const Eigen::ThreadPoolDevice shared(&shared_pool, 3);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      const Way way = ways[std::size_t(c) % ways.size()];
      Eigen::ThreadPool own_pool(1);
      const Eigen::ThreadPoolDevice own(&own_pool, 2);
      std::vector<Matrix> y(r.x.size());
      for (std::size_t i = 0; i < r.x.size(); ++i) y[i] = Matrix::Constant(r.x[i].rows(), r.x[i].cols(), NAN);
      for (int round = 0; round < rounds; ++round) {
        for (std::size_t k = 0; k < r.x.size(); ++k) {
          const std::size_t i = (k + std::size_t(c)) % r.x.size();
          switch (way) {
            case Way::alone:
              block.forward(r.x[i], y[i]);
              break;
            case Way::own_device:
              block.forward(r.x[i], y[i], own);
              break;
            case Way::shared_device:
              block.forward(r.x[i], y[i], shared);
              break;
            case Way::in_place:
              y[i] = r.x[i];
              block.forward(y[i], y[i], own);
              break;
          }
          if (!same_bits(y[i], r.serial[i])) ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return wrong.load();
}

const std::vector<Way> kEveryWay = {Way::alone,    Way::own_device,    Way::shared_device,
                                    Way::in_place, Way::shared_device, Way::alone};

// Each caller's rounds over the requests: 20, and 5 in the builds that divide the long tests'
// samples (the emulated aarch64 run, the ASan/UBSan and other Eigens' jobs); the TSan job, made
// for these tests, divides nothing and runs the 20.
const int kRounds = test_scale::divisor > 1 ? 5 : 20;

TEST(Concurrency, FeedForwardCallersGetTheSerialBits) {
  using FF = egelu::FeedForward<float>;
  const Eigen::Index d = 128, d_ff = 448;
  for (egelu::NormPlacement norm : {egelu::NormPlacement::post, egelu::NormPlacement::pre}) {
    const FF block(FF::Weights::Random(d_ff, d) * 0.1f, FF::Vector::Random(d_ff), FF::Weights::Random(d, d_ff) * 0.05f,
                   FF::Vector::Random(d), FF::Vector::Ones(d), FF::Vector::Zero(d),
                   FF::Options{egelu::GeluForm::exact, norm, 1e-5f});
    const Requests r = requests_for(block);
    EXPECT_EQ(run_callers(block, r, kEveryWay, 6, kRounds), 0);
  }
}

TEST(Concurrency, GatedCallersGetTheSerialBits) {
  using GF = egelu::GatedFeedForward<float>;
  const Eigen::Index d = 128, d_ff = 352;
  for (egelu::WeightFormat format : {egelu::WeightFormat::f32, egelu::WeightFormat::bf16}) {
    const GF block(GF::Weights::Random(d_ff, d) * 0.2f, GF::Weights::Random(d_ff, d) * 0.1f,
                   GF::Weights::Random(d, d_ff) * 0.05f, GF::Vector::Ones(d),
                   GF::Options{egelu::GatedForm::swiglu, 1e-5f, format});
    const Requests r = requests_for(block);
    EXPECT_EQ(run_callers(block, r, kEveryWay, 6, kRounds), 0);
  }
}

// After reserve(tokens, callers, threads), concurrent calls allocate nothing; each extra
// caller costs its workspace, not a copy of the weights.
TEST(Concurrency, ReservedCallersAllocateNothing) {
  using GF = egelu::GatedFeedForward<float>;
  const Eigen::Index d = 128, d_ff = 352, tokens = 24;
  const GF block(GF::Weights::Random(d_ff, d), GF::Weights::Random(d_ff, d), GF::Weights::Random(d, d_ff),
                 GF::Vector::Ones(d));
  const int callers = 3;
  block.reserve(tokens, callers, 2);
  const Matrix x = Matrix::Random(d, tokens);
  std::vector<Matrix> y(callers, Matrix(d, tokens));
  std::vector<std::unique_ptr<Eigen::ThreadPool>> pools;
  std::vector<std::unique_ptr<Eigen::ThreadPoolDevice>> devices;
  for (int c = 0; c < callers; ++c) {
    pools.emplace_back(new Eigen::ThreadPool(1));
    devices.emplace_back(new Eigen::ThreadPoolDevice(pools.back().get(), 2));
  }
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<long> done{0};
  long before = 0;
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      ++ready;
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 5; ++i) {
        if (c == 0) {
          block.forward(x, y[std::size_t(c)]);
        } else {
          block.forward(x, y[std::size_t(c)], *devices[std::size_t(c)]);
        }
      }
      ++done;
    });
  }
  while (ready.load() < callers) std::this_thread::yield();
  before = malloc_counter::total();
  go = true;
  while (done.load() < callers) std::this_thread::yield();
  const long allocations = malloc_counter::total() - before;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(allocations, 0);
  for (int c = 1; c < callers; ++c) EXPECT_TRUE(same_bits(y[std::size_t(c)], y[0]));
}

// A model's layers loaded on threads of their own at once (from_pretrained shares nothing but
// constant tables): each block gives the bits of the same layer loaded alone. gpt-oss's MXFP4
// experts (their blocks copied) and LLaMA's bf16 weights widened to f32, two layers each, four
// threads.
TEST(Concurrency, LayersLoadOnThreadsOfTheirOwn) {
  using MF = egelu::MoeFeedForward<float>;
  using GF = egelu::GatedFeedForward<float>;
  const std::string hf = std::string(EGELU_TEST_DATA_DIR) + "/hf/";
  const auto output = [](const auto& block) {
    Eigen::MatrixXf x(block.d_model(), 3), y(block.d_model(), 3);
    for (Eigen::Index k = 0; k < x.size(); ++k) x.data()[k] = std::sin(0.7f * float(k));  // (no shared RNG)
    block.forward(x, y);
    return y;
  };
  std::vector<Eigen::MatrixXf> alone, together(4);
  for (int layer : {0, 1}) alone.push_back(output(MF::from_pretrained(hf + "gpt_oss_mxfp4", layer)));
  for (int layer : {0, 1}) alone.push_back(output(GF::from_pretrained(hf + "llama", layer, egelu::WeightFormat::f32)));
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      try {
        together[std::size_t(t)] = t < 2 ? output(MF::from_pretrained(hf + "gpt_oss_mxfp4", t))
                                         : output(GF::from_pretrained(hf + "llama", t - 2, egelu::WeightFormat::f32));
      } catch (const std::exception& e) {
        errors[std::size_t(t)] = e.what();  // (a failure of the test, not of the binary)
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) ASSERT_EQ(e, "");
  for (std::size_t t = 0; t < 4; ++t) EXPECT_TRUE(same_bits(together[t], alone[t])) << t;
}

}  // namespace
