// Where the blocks' forward calls spend their time, pass by pass (issue 36's breakdown):
// BERT-base's FeedForward (post-norm, exact GELU) and TinyLlama's GatedFeedForward
// (SwiGLU), f32 weights, at T = 1, 32, 128 and 512 on 1 and 2 threads. The blocks time
// themselves (src/blocks/pass_timing.hpp): each pass's wall time, the threads' time in tasks
// (busy: of the call's wall time on as many threads; the rest is waiting at the ends of
// passes and the calling thread's own work), and the thread time spent in the activation
// fused into the first product's tiles, so the table shows the blocks' own code. Prints a Markdown table
// (docs/PERFORMANCE.md, "Per pass").
//
//   block_passes [--seconds S]        at least S seconds of calls a point (default 0.5)
//                [--format F]         the weights: f32 (default), bf16, f16, q8_0, q4_0, mxfp4, or q8_0+q16_0,
//                                     q4_0+q16_0 (InputFormat::q16_0)
//                [--thread-linger US] egelu::set_thread_linger (default 300 µs; 0: none)
//                [--from-memory]      T = 1 only, each call on the next of as many copies of the block
//                                     as total at least four times the last-level cache and 1 GiB
//                                     (decode_memory.hpp; EGELU_DECODE_MIB overrides), each reserved
//                                     for the call beforehand, so that the products read their weights
//                                     from memory as a model's decoding does
//
// Not a benchmark run by Google Benchmark: the figures are means over the calls, after two
// calls of warm-up; compare them within one run.
#define EIGEN_USE_THREADS
#include <chrono>
#include <cstdio>
#include <cstring>
#include <egelu/feed_forward.hpp>
#include <egelu/gated_feed_forward.hpp>
#include <memory>
#include <random>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>
#include <utility>
#include <vector>

#include "bench_blocks.hpp"
#include "blocks/pass_timing.hpp"
#include "decode_memory.hpp"

namespace {

// x: unit normal tokens.
Eigen::MatrixXf tokens_of(Eigen::Index d_model, Eigen::Index tokens) {
  std::mt19937 rng(36);
  std::normal_distribution<float> unit(0.f, 1.f);
  Eigen::MatrixXf x(d_model, tokens);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = unit(rng);
  return x;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One row: `forward(x, y, device)` timed with a profile installed.
template <typename Forward>
void measure(const char* block, double flops_per_token, Eigen::Index d_model, Eigen::Index tokens, int threads,
             double min_seconds, const Forward& forward) {
  const Eigen::MatrixXf x = tokens_of(d_model, tokens);
  Eigen::MatrixXf y(d_model, tokens);
  Eigen::ThreadPool pool(threads);
  const Eigen::ThreadPoolDevice device(&pool, threads);
  for (int i = 0; i < 2; ++i) forward(x, y, device);

  egelu::blocks::pass_profile profile;
  egelu::blocks::installed_pass_profile().store(&profile, std::memory_order_release);
  const double start = seconds_now();
  double elapsed = 0;
  do {
    forward(x, y, device);
    elapsed = seconds_now() - start;
  } while (elapsed < min_seconds || profile.calls < 3);
  egelu::blocks::installed_pass_profile().store(nullptr, std::memory_order_release);

  const double calls = double(profile.calls), ms = 1e3 / calls, call = elapsed * ms;
  double activation = 0;
  for (double s : profile.activation_seconds) activation += s;
  activation *= ms / threads;  // thread time per call, per thread: about its share of the wall time
  double busy = 0;             // the threads' time in tasks, of the call's wall time on as many threads
  for (double s : profile.task_seconds) busy += s;
  busy *= ms / (call * threads);
  std::printf("| %s | %ld | %d | %.3f | %.0f | %.0f%% |", block, long(tokens), threads, call,
              flops_per_token * double(tokens) / (call * 1e-3) * 1e-9, 100 * busy);
  for (int p = 0; p < egelu::blocks::pass_profile::max_passes; ++p) {
    if (!profile.name[p]) {
      std::printf(" – |");
      continue;
    }
    const double pass = profile.seconds[p] * ms;
    std::printf(" %.3f (%.0f%%) |", pass, 100 * pass / call);
    if (p == 1) std::printf(" %.3f (%.1f%%) |", activation, 100 * activation / call);
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

// "f32", "q4_0+q16_0", ...: the weight and input formats.
std::pair<egelu::WeightFormat, egelu::InputFormat> formats_of(const std::string& name) {
  const bool q16 = name.size() > 6 && name.compare(name.size() - 6, 6, "+q16_0") == 0;
  const std::string weights = q16 ? name.substr(0, name.size() - 6) : name;
  const bool integer_ok = weights == "q8_0" || weights == "q4_0";  // (q16_0 inputs: these only)
  for (egelu::WeightFormat f : {egelu::WeightFormat::f32, egelu::WeightFormat::bf16, egelu::WeightFormat::f16,
                                egelu::WeightFormat::q8_0, egelu::WeightFormat::q4_0, egelu::WeightFormat::mxfp4}) {
    if (weights == egelu::to_string(f) && (!q16 || integer_ok))
      return {f, q16 ? egelu::InputFormat::q16_0 : egelu::InputFormat::f32};
  }
  std::fprintf(stderr, "block_passes: --format takes f32, bf16, f16, q8_0, q4_0, mxfp4 or q8_0/q4_0+q16_0, not %s\n",
               name.c_str());
  std::exit(2);
}

int main(int argc, char** argv) {
  double min_seconds = 0.5;
  std::string format = "f32";
  bool from_memory = false;
  for (int i = 1; i < argc; ++i) {
    const bool valued = i + 1 < argc;
    if (std::strcmp(argv[i], "--from-memory") == 0) {
      from_memory = true;
    } else if (valued && std::strcmp(argv[i], "--seconds") == 0) {
      min_seconds = std::atof(argv[++i]);
    } else if (valued && std::strcmp(argv[i], "--format") == 0) {
      format = argv[++i];
    } else if (valued && std::strcmp(argv[i], "--thread-linger") == 0) {
      egelu::set_thread_linger(std::chrono::microseconds(std::atol(argv[++i])));
    } else {
      std::fprintf(stderr,
                   "block_passes: unknown argument %s (--seconds S, --format F, --thread-linger US, --from-memory)\n",
                   argv[i]);
      return 2;
    }
  }
  const auto [weights, inputs] = formats_of(format);
  std::printf(
      "| block | T | threads | forward (ms) | products' GFLOP/s | threads busy | pass 1: norm, input packed (ms, %%) | "
      "pass 2: first "
      "products, activation, packed | of which the activation (ms a thread) | pass 3: last product from the residual "
      "| pass 4: norm after | pass 5: inputs quantized (q16_0) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const std::vector<Eigen::Index> token_counts =
      from_memory ? std::vector<Eigen::Index>{1} : std::vector<Eigen::Index>{1, 32, 128, 512};
  // The block, or enough copies of it to total bench::model_bytes(), called in turn.
  const auto run = [&](const char* name, double flops_per_token, Eigen::Index d, const auto& make) {
    std::vector<decltype(make())> blocks;
    do {
      blocks.push_back(make());
    } while (from_memory && blocks.size() * blocks.front()->weight_bytes() < bench::model_bytes());
    // Each copy's workspace made before the timed calls (measure warms up two calls, not every copy).
    for (const auto& block : blocks) block->reserve(1, 1, 2);
    std::size_t next = 0;
    for (Eigen::Index tokens : token_counts)
      for (int threads : {1, 2})
        measure(name, flops_per_token, d, tokens, threads, min_seconds,
                [&](const Eigen::MatrixXf& x, Eigen::MatrixXf& y, const Eigen::ThreadPoolDevice& device) {
                  blocks[next]->forward(x, y, device);
                  next = (next + 1) % blocks.size();
                });
  };
  {  // BERT-base: post-norm, exact GELU; the weights of the other block benchmarks (bench_blocks.hpp)
    const bench::BertWeights w;
    egelu::FeedForward<float>::Options o{egelu::GeluForm::exact, egelu::NormPlacement::post, 1e-12f, weights};
    o.inputs = inputs;
    run("FeedForward (BERT-base, exact GELU)", w.flops_per_token, w.d,
        [&] { return std::make_unique<egelu::FeedForward<float>>(w.w1, w.b1, w.w2, w.b2, w.gamma, w.beta, o); });
  }
  {  // TinyLlama-1.1B: SwiGLU
    const bench::LlamaWeights w;
    const egelu::GatedFeedForward<float>::Options o{egelu::GatedForm::swiglu, 1e-6f, weights, inputs};
    run("GatedFeedForward (TinyLlama, SwiGLU)", w.flops_per_token, w.d,
        [&] { return std::make_unique<egelu::GatedFeedForward<float>>(w.gate, w.up, w.down, w.norm, o); });
  }
  return 0;
}
