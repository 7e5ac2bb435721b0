// How long from_pretrained takes to make a block from a checkpoint as released: one layer of
// gpt-oss-20b (its MXFP4 experts: 32 of 2880 / 2880, bfloat16 router and biases), one of
// Llama-3-8B (bfloat16, 4096 / 14336) and one of Qwen3-8B-FP8 (E4M3 codes with a float scale
// per 128 x 128 block, 4096 / 12288), written here with random weights in a scratch
// directory (safetensors as its specification lays it out, then read from the page cache),
// each loaded into the weight formats given, the fastest of --rounds calls. Prints seconds
// a load and the nanoseconds a weight; with --threads N, N loads of the layer at once, each
// on a thread of its own (as a model's layers can be loaded), the wall time over N.
// docs/PERFORMANCE.md, "Loading a checkpoint".
//
//   load_speed [--model gpt_oss|llama|qwen3_fp8|all] [--formats mxfp4,bf16,...] [--rounds 3] [--threads 1] [--dir D]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <egelu/gated_feed_forward.hpp>
#include <egelu/moe_feed_forward.hpp>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct tensor {
  std::string name, dtype;
  std::vector<long long> shape;
  std::vector<std::uint8_t> bytes;
};

// A safetensors file: the header's length (8 bytes, little-endian), its JSON, the data.
void write_safetensors(const std::string& path, const std::vector<tensor>& tensors) {
  std::ostringstream header;
  header << "{\"__metadata__\":{\"format\":\"pt\"}";
  std::size_t offset = 0;
  for (const tensor& t : tensors) {
    header << ",\"" << t.name << "\":{\"dtype\":\"" << t.dtype << "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) header << (i ? "," : "") << t.shape[i];
    header << "],\"data_offsets\":[" << offset << "," << offset + t.bytes.size() << "]}";
    offset += t.bytes.size();
  }
  header << "}";
  std::string h = header.str();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out.put(char(n >> (8 * i) & 255));
  out << h;
  for (const tensor& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::mt19937_64 rng(7);

long long elements(const std::vector<long long>& shape) {
  long long n = 1;
  for (long long s : shape) n *= s;
  return n;
}

// bfloat16 weights of magnitude 2^-8 to 2^-4 and either sign.
tensor bf16_tensor(const std::string& name, std::vector<long long> shape) {
  const long long n = elements(shape);
  tensor t{name, "BF16", shape, std::vector<std::uint8_t>(std::size_t(2 * n))};
  for (long long i = 0; i < n; i += 4) {
    const std::uint64_t r = rng();
    for (long long k = i; k < std::min(n, i + 4); ++k) {
      const unsigned bits = unsigned(r >> (16 * (k - i))) & 0xffffu;
      const unsigned h = (0x3b80u + bits % 0x200u) | (bits & 0x8000u);
      t.bytes[std::size_t(2 * k)] = std::uint8_t(h), t.bytes[std::size_t(2 * k + 1)] = std::uint8_t(h >> 8);
    }
  }
  return t;
}
tensor u8_tensor(const std::string& name, std::vector<long long> shape, std::function<std::uint8_t()> byte,
                 const std::string& dtype = "U8") {
  const long long n = elements(shape);
  tensor t{name, dtype, shape, std::vector<std::uint8_t>(std::size_t(n))};
  for (auto& b : t.bytes) b = byte();
  return t;
}

void write_config(const std::string& path, const std::string& json) { std::ofstream(path) << json; }

// gpt-oss-20b's layer 0 (its MLP; the checkpoint's other tensors are not read).
long long write_gpt_oss(const std::string& dir) {
  const long long d = 2880, f = 2880, e = 32;
  write_config(dir + "/config.json", R"({"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
    "hidden_act": "silu", "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 1,
    "num_local_experts": 32, "num_experts_per_tok": 4, "experts_per_token": 4, "rms_norm_eps": 1e-05,
    "swiglu_limit": 7.0, "torch_dtype": "bfloat16", "vocab_size": 201088, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "attention_bias": true,
    "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn",
      "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}})");
  const auto code = [] { return std::uint8_t(rng()); };
  const auto scale = [] { return std::uint8_t(118 + rng() % 6); };
  const std::string p = "model.layers.0.";
  write_safetensors(dir + "/model.safetensors",
                    {bf16_tensor(p + "post_attention_layernorm.weight", {d}),
                     bf16_tensor(p + "mlp.router.weight", {e, d}), bf16_tensor(p + "mlp.router.bias", {e}),
                     u8_tensor(p + "mlp.experts.gate_up_proj_blocks", {e, 2 * f, d / 32, 16}, code),
                     u8_tensor(p + "mlp.experts.gate_up_proj_scales", {e, 2 * f, d / 32}, scale),
                     bf16_tensor(p + "mlp.experts.gate_up_proj_bias", {e, 2 * f}),
                     u8_tensor(p + "mlp.experts.down_proj_blocks", {e, d, f / 32, 16}, code),
                     u8_tensor(p + "mlp.experts.down_proj_scales", {e, d, f / 32}, scale),
                     bf16_tensor(p + "mlp.experts.down_proj_bias", {e, d})});
  return 3 * e * d * f;
}

// Llama-3-8B's layer 0 (its MLP).
long long write_llama(const std::string& dir) {
  const long long d = 4096, f = 14336;
  write_config(dir + "/config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 1,
    "mlp_bias": false, "rms_norm_eps": 1e-05, "torch_dtype": "bfloat16", "vocab_size": 128256,
    "num_attention_heads": 32, "num_key_value_heads": 8})");
  const std::string p = "model.layers.0.";
  write_safetensors(
      dir + "/model.safetensors",
      {bf16_tensor(p + "post_attention_layernorm.weight", {d}), bf16_tensor(p + "mlp.gate_proj.weight", {f, d}),
       bf16_tensor(p + "mlp.up_proj.weight", {f, d}), bf16_tensor(p + "mlp.down_proj.weight", {d, f})});
  return 3 * d * f;
}

// Qwen3-8B-FP8's layer 0 (its MLP): E4M3 codes (no NaN) and weight_scale_inv, here F32 as
// DeepSeek-V3's (some Qwen3 FP8 releases' are BF16: the same reader with its other scale type).
long long write_qwen3_fp8(const std::string& dir) {
  const long long d = 4096, f = 12288;
  write_config(dir + "/config.json", R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 1,
    "rms_norm_eps": 1e-06, "torch_dtype": "bfloat16", "vocab_size": 151936, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "quantization_config": {"activation_scheme": "dynamic",
      "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}})");
  const auto code = [] { return std::uint8_t(rng() % 0x7e | (rng() & 0x80)); };  // (0x7f and 0xff are NaN)
  const auto scales = [](const std::string& name, long long rows, long long cols) {
    tensor t{
        name, "F32", {rows / 128, cols / 128}, std::vector<std::uint8_t>(std::size_t(4 * (rows / 128) * (cols / 128)))};
    for (std::size_t at = 0; at < t.bytes.size(); at += 4) {
      const float s = 1e-3f * float(1 + rng() % 100);
      std::memcpy(&t.bytes[at], &s, 4);
    }
    return t;
  };
  const std::string p = "model.layers.0.";
  write_safetensors(
      dir + "/model.safetensors",
      {bf16_tensor(p + "post_attention_layernorm.weight", {d}),
       u8_tensor(p + "mlp.gate_proj.weight", {f, d}, code, "F8_E4M3"),
       scales(p + "mlp.gate_proj.weight_scale_inv", f, d), u8_tensor(p + "mlp.up_proj.weight", {f, d}, code, "F8_E4M3"),
       scales(p + "mlp.up_proj.weight_scale_inv", f, d), u8_tensor(p + "mlp.down_proj.weight", {d, f}, code, "F8_E4M3"),
       scales(p + "mlp.down_proj.weight_scale_inv", d, f)});
  return 3 * d * f;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

egelu::WeightFormat format_named(const std::string& name) {
  for (egelu::WeightFormat f : {egelu::WeightFormat::f32, egelu::WeightFormat::bf16, egelu::WeightFormat::f16,
                                egelu::WeightFormat::q8_0, egelu::WeightFormat::q4_0, egelu::WeightFormat::mxfp4}) {
    if (name == egelu::to_string(f)) return f;
  }
  throw std::invalid_argument("unknown weight format " + name);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "all", formats_given, dir;
  int rounds = 3, threads = 1;
  for (int i = 1; i < argc; i += 2) {
    // (An option without its value, --help say, gets the usage below: the empty key.)
    const std::string key = i + 1 < argc ? argv[i] : "", value = i + 1 < argc ? argv[i + 1] : "";
    if (key == "--model")
      model = value;
    else if (key == "--formats")
      formats_given = value;
    else if (key == "--rounds")
      rounds = std::max(1, std::atoi(value.c_str()));
    else if (key == "--threads")
      threads = std::max(1, std::atoi(value.c_str()));
    else if (key == "--dir")
      dir = value;
    else {
      std::fprintf(
          stderr,
          "usage: load_speed [--model gpt_oss|llama|qwen3_fp8|all] [--formats f32,bf16,...] [--rounds N] [--threads N] "
          "[--dir D]\n");
      return 2;
    }
  }
  if (dir.empty()) dir = (std::filesystem::temp_directory_path() / "egelu_load_speed").string();
  try {
    for (const std::string& which : {std::string("gpt_oss"), std::string("llama"), std::string("qwen3_fp8")}) {
      if (model != "all" && model != which) continue;
      const std::string at = dir + "/" + which;
      std::filesystem::create_directories(at);
      const long long weights = which == "gpt_oss" ? write_gpt_oss(at)
                                : which == "llama" ? write_llama(at)
                                                   : write_qwen3_fp8(at);
      const double file_mb = double(std::filesystem::file_size(at + "/model.safetensors")) / 1e6;
      const std::string list = !formats_given.empty() ? formats_given
                               : which == "gpt_oss"   ? "mxfp4,bf16"
                               : which == "llama"     ? "bf16,f32,q4_0"
                                                      : "f32,bf16,q8_0";
      for (const std::string& name : split(list)) {
        const egelu::WeightFormat f = format_named(name);
        double best = 1e30;
        for (int r = 0; r < rounds; ++r) {
          const auto load = [&] {
            if (which == "gpt_oss") {
              const auto block = egelu::MoeFeedForward<float>::from_pretrained(at, 0, f);
              (void)block;
            } else {
              const auto block = egelu::GatedFeedForward<float>::from_pretrained(at, 0, f);
              (void)block;
            }
          };
          // Each load on a thread of its own; a load's exception is kept, all joined, the first rethrown.
          std::vector<std::exception_ptr> failed(static_cast<std::size_t>(threads));
          const auto t0 = std::chrono::steady_clock::now();
          std::vector<std::thread> loads;
          for (int t = 0; t < threads; ++t) {
            loads.emplace_back([&, t] {
              try {
                load();
              } catch (...) {
                failed[std::size_t(t)] = std::current_exception();
              }
            });
          }
          for (std::thread& t : loads) t.join();
          for (const std::exception_ptr& e : failed)
            if (e) std::rethrow_exception(e);
          const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          best = std::min(best, wall / threads);
        }
        std::printf("%-8s %-6s %d thread(s) %9.3f s a load  %7.2f ns/weight  (%lld weights, checkpoint %.0f MB)\n",
                    which.c_str(), name.c_str(), threads, best, best * 1e9 / double(weights), weights, file_mb);
        std::fflush(stdout);
      }
      std::filesystem::remove_all(at);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_speed: %s\n", e.what());
    return 1;
  }
}
