// The safetensors reader: files written here byte by byte from the format's specification
// (never by the reader under test) load with their values, shapes, names and metadata,
// sharded folders too; every malformed file throws format_error naming the file, the
// tensor and the problem.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <egelu/safetensors.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "safetensors_bytes.hpp"

namespace {

namespace st = egelu::safetensors;
using namespace safetensors_bytes;

const std::string kName = "x.safetensors";

st::File parse(const std::string& bytes) { return st::File::parse(bytes.data(), bytes.size(), kName); }

// Runs f, which must throw format_error whose message contains every one of `parts`.
template <typename F>
void expect_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected: " << parts.back();
  } catch (const st::format_error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

// parse() throws format_error whose message starts with the file's name and contains `parts`.
void expect_malformed(const std::string& bytes, const std::vector<std::string>& parts) {
  expect_error([&] { parse(bytes); }, parts);
  try {
    parse(bytes);
  } catch (const st::format_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(kName + ": ", 0), 0u) << e.what();
  }
}

// The header and data of a file with one tensor 'a' of this entry and data.
std::string one_tensor(const std::string& entry, const std::string& data) {
  return file_bytes("{\"a\": " + entry + "}", data);
}

std::uint32_t float_bits(float f) { return std::uint32_t(bits_of(f)); }

TEST(Safetensors, ReadsF32AndF64WithTheirShapes) {
  // The header lists the tensors out of offset order; 'm' ends unaligned (data at odd offsets after it).
  const std::string header =
      R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [3, 27]},)"
      R"( "m": {"shape": [3], "data_offsets": [0, 3], "dtype": "U8"},)"
      R"( "d": {"dtype": "F64", "shape": [3], "data_offsets": [27, 51]},)"
      R"( "s": {"dtype": "F32", "shape": [], "data_offsets": [51, 55]},)"
      R"( "e": {"dtype": "F32", "shape": [0, 4], "data_offsets": [55, 55]}}   )";  // space padding
  const std::vector<float> w = {1.5f, -2, 3e-42f, 4, std::numeric_limits<float>::max(), -0.f};
  const std::vector<double> d = {0.1, -2.5e30, 1 + 0x1p-30};
  const st::File file = parse(file_bytes(header, "abc" + f32(w) + f64(d) + f32({7})));
  EXPECT_EQ(file.path(), kName);
  EXPECT_EQ(file.names(), (std::vector<std::string>{"d", "e", "m", "s", "w"}));

  // U8 (MXFP4's blocks and scales): the bytes' values.
  const st::Tensor& m = file.tensor("m");
  EXPECT_EQ(m.dtype, st::DType::U8);
  std::vector<double> bytes(3, NAN);
  m.copy_to(bytes.data());
  EXPECT_EQ(bytes, (std::vector<double>{97, 98, 99}));
  EXPECT_EQ(st::dtype_size(st::DType::U8), 1u);
  EXPECT_STREQ(st::dtype_name(st::DType::U8), "U8");

  const st::Tensor& t = file.tensor("w");
  EXPECT_EQ(t.name, "w");
  EXPECT_EQ(t.file, kName);
  EXPECT_EQ(t.dtype, st::DType::F32);
  EXPECT_EQ(t.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(t.shape_string(), "(2, 3)");
  EXPECT_EQ(t.size(), 6u);
  EXPECT_EQ(t.bytes, 24u);
  std::vector<float> wf(6);
  t.copy_to(wf.data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(float_bits(wf[i]), float_bits(w[i])) << i;
  std::vector<double> wd(6);
  t.copy_to(wd.data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(bits_of(wd[i]), bits_of(double(w[i]))) << i;

  const st::Tensor& dt = file.tensor("d");
  EXPECT_EQ(dt.dtype, st::DType::F64);
  EXPECT_EQ(dt.shape_string(), "(3,)");
  std::vector<double> dd(3);
  dt.copy_to(dd.data());
  EXPECT_EQ(dd, d);
  std::vector<float> df(3);
  dt.copy_to(df.data());  // rounded to nearest
  EXPECT_EQ(df, (std::vector<float>{0.1f, -2.5e30f, 1.f}));

  const st::Tensor& s = file.tensor("s");
  EXPECT_EQ(s.shape_string(), "()");
  EXPECT_EQ(s.size(), 1u);
  float sv = 0;
  s.copy_to(&sv);
  EXPECT_EQ(sv, 7.f);
  EXPECT_EQ(file.tensor("e").size(), 0u);
  EXPECT_EQ(file.tensor("e").bytes, 0u);
}

TEST(Safetensors, WidensF16AndBF16Exactly) {
  // binary16: 1, -2, the smallest and largest subnormals, the smallest normal, the largest finite,
  // +inf, -inf, -0, a quiet NaN, a negative NaN with a payload.
  const std::vector<std::uint16_t> half = {0x3c00, 0xc000, 0x0001, 0x03ff, 0x0400, 0x7bff,
                                           0x7c00, 0xfc00, 0x8000, 0x7e00, 0xfe01};
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> half_values = {1, -2, 0x1p-24f, 0x1.ff8p-15f, 0x1p-14f, 65504, inf, -inf, -0.f};
  const std::vector<std::uint32_t> half_nan_bits = {0x7fc00000, 0xffc02000};
  // bfloat16: 1, -3, the smallest subnormal (2^-133), the largest finite, +inf, -inf, -0, NaNs.
  const std::vector<std::uint16_t> bf16 = {0x3f80, 0xc040, 0x0001, 0x7f7f, 0x7f80, 0xff80, 0x8000, 0x7fc1, 0xff81};
  const std::vector<float> bf16_values = {1, -3, 0x1p-133f, 0x1.fep127f, inf, -inf, -0.f};
  const std::vector<std::uint32_t> bf16_nan_bits = {0x7fc10000, 0xff810000};

  const std::string header = R"({"h": {"dtype": "F16", "shape": [11], "data_offsets": [0, 22]},)"
                             R"( "b": {"dtype": "BF16", "shape": [3, 3], "data_offsets": [22, 40]}})";
  const st::File file = parse(file_bytes(header, u16(half) + u16(bf16)));
  const st::Tensor& h = file.tensor("h");
  const st::Tensor& b = file.tensor("b");
  EXPECT_EQ(h.dtype, st::DType::F16);
  EXPECT_EQ(b.dtype, st::DType::BF16);
  EXPECT_EQ(b.shape_string(), "(3, 3)");

  const auto check = [](const st::Tensor& t, const std::vector<float>& values,
                        const std::vector<std::uint32_t>& nan_bits) {
    std::vector<float> f(t.size());
    std::vector<double> d(t.size());
    t.copy_to(f.data());
    t.copy_to(d.data());
    ASSERT_EQ(f.size(), values.size() + nan_bits.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(float_bits(f[i]), float_bits(values[i])) << t.name << " " << i;
      EXPECT_EQ(bits_of(d[i]), bits_of(double(values[i]))) << t.name << " " << i;
    }
    for (std::size_t i = 0; i < nan_bits.size(); ++i) {
      const std::size_t k = values.size() + i;
      EXPECT_EQ(float_bits(f[k]), nan_bits[i]) << t.name << " " << k;  // sign and payload kept
      EXPECT_TRUE(std::isnan(d[k]));
      EXPECT_EQ(std::signbit(d[k]), (nan_bits[i] >> 31) != 0);
    }
  };
  check(h, half_values, half_nan_bits);
  check(b, bf16_values, bf16_nan_bits);

  // F8_E4M3 (OCP E4M3FN), from its definition: 1 (0.0111.000), -1.75 (1.0111.110), the largest, 448
  // (0.1111.110), the smallest subnormal, 2^-9 (0.0000.001), the largest subnormal, 7 * 2^-9, the
  // smallest normal, 2^-6, 0.1001.101 = 1.625 * 4, -0; NaN (S.1111.111), no infinities.
  const std::vector<std::uint8_t> e4m3 = {0x38, 0xbe, 0x7e, 0x01, 0x07, 0x08, 0x4d, 0x80, 0x7f, 0xff};
  const std::vector<float> e4m3_values = {1, -1.75f, 448, 0x1p-9f, 7 * 0x1p-9f, 0x1p-6f, 6.5f, -0.f};
  const st::File f8 = parse(file_bytes(R"({"q": {"dtype": "F8_E4M3", "shape": [10], "data_offsets": [0, 10]}})",
                                       std::string(e4m3.begin(), e4m3.end())));
  const st::Tensor& q = f8.tensor("q");
  EXPECT_EQ(q.dtype, st::DType::F8_E4M3);
  std::vector<float> qf(q.size());
  q.copy_to(qf.data());
  for (std::size_t i = 0; i < e4m3_values.size(); ++i) EXPECT_EQ(float_bits(qf[i]), float_bits(e4m3_values[i])) << i;
  EXPECT_TRUE(std::isnan(qf[8]) && !std::signbit(qf[8]));
  EXPECT_TRUE(std::isnan(qf[9]) && std::signbit(qf[9]));
  EXPECT_EQ(st::dtype_size(st::DType::F8_E4M3), 1u);
  EXPECT_STREQ(st::dtype_name(st::DType::F8_E4M3), "F8_E4M3");
}

TEST(Safetensors, NamesMetadataAndOtherDtypes) {
  const std::string header =
      R"({"__metadata__": {"format": "pt", "note": "\u00e9t\u00e9"},)"
      R"( "a.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
      R"( "a.bias": {"dtype": "I8", "shape": [2], "data_offsets": [4, 6]},)"
      R"( "caf\u00e9": {"dtype": "F32", "shape": [1], "data_offsets": [6, 10], "extra": [[[1]]]}})";
  const st::File file = parse(file_bytes(header, f32({1}) + "\x01\x02" + f32({2})));
  EXPECT_EQ(file.names(), (std::vector<std::string>{"a.bias", "a.weight", "caf\xc3\xa9"}));
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", "\xc3\xa9t\xc3\xa9"}}));
  EXPECT_TRUE(file.contains("a.bias"));  // a dtype egelu does not read: there, but not given
  EXPECT_FALSE(file.contains("a"));
  EXPECT_FALSE(file.contains("__metadata__"));
  expect_error([&] { file.tensor("a.bias"); },
               {kName, "tensor 'a.bias'", "dtype I8 is not supported: egelu reads F32, F64, F16, BF16, F8_E4M3, U8"});
  EXPECT_TRUE(parse(file_bytes("{}", "")).names().empty());
  EXPECT_TRUE(parse(file_bytes("{}", "")).metadata().empty());

  // Every dtype of the reference opens, with its size; the sub-byte ones must fill whole bytes.
  const std::vector<std::pair<const char*, int>> dtypes = {
      {"BOOL", 1},        {"U8", 1},          {"I8", 1},   {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1}, {"I16", 2},
      {"F8_E4M3FNUZ", 1}, {"F8_E5M2FNUZ", 1}, {"U16", 2},  {"I32", 4},     {"U32", 4},     {"I64", 8},     {"U64", 8},
      {"C64", 8},         {"F16", 2},         {"BF16", 2}, {"F32", 4},     {"F64", 8}};
  for (const auto& [dtype, size] : dtypes) {
    const std::string entry = std::string(R"({"dtype": ")") + dtype + R"(", "shape": [2, 2], "data_offsets": [0, )" +
                              std::to_string(4 * size) + "]}";
    EXPECT_TRUE(parse(one_tensor(entry, std::string(4 * size, '\0'))).contains("a")) << dtype;
  }
  EXPECT_TRUE(parse(one_tensor(R"({"dtype": "F4", "shape": [4], "data_offsets": [0, 2]})", "ab")).contains("a"));
  EXPECT_TRUE(parse(one_tensor(R"({"dtype": "F6_E2M3", "shape": [4], "data_offsets": [0, 3]})", "abc")).contains("a"));
  expect_malformed(one_tensor(R"({"dtype": "F4", "shape": [3], "data_offsets": [0, 2]})", "ab"),
                   {"tensor 'a'", "F4 (3,) does not fill a whole number of bytes"});
  EXPECT_EQ(st::dtype_size(st::DType::BF16), 2u);
  EXPECT_EQ(st::dtype_size(st::DType::F64), 8u);
  EXPECT_STREQ(st::dtype_name(st::DType::F16), "F16");
  EXPECT_STREQ(st::dtype_name(st::DType::F32), "F32");
}

TEST(Safetensors, MissingTensorListsWhatTheLayerHas) {
  std::string header = "{";
  std::size_t offset = 0;
  const auto add = [&](const std::string& name) {
    header += (offset ? ", \"" : "\"") + name + R"(": {"dtype": "F32", "shape": [1], "data_offsets": [)" +
              std::to_string(offset) + ", " + std::to_string(offset + 4) + "]}";
    offset += 4;
  };
  for (const char* name : {"model.embed_tokens.weight", "model.layers.3.self_attn.q_proj.weight",
                           "model.layers.3.mlp.up_proj.weight", "model.layers.3.mlp.down_proj.weight",
                           "model.layers.30.mlp.gate_proj.weight", "model.layers.3.input_layernorm.weight"}) {
    add(name);
  }
  for (int i = 0; i < 25; ++i) add("model.layers.4.w" + std::to_string(10 + i));
  const st::File file = parse(file_bytes(header + "}", std::string(offset, '\0')));

  expect_error([&] { file.tensor("model.layers.3.mlp.gate_proj.weight"); },
               {kName + ": no tensor 'model.layers.3.mlp.gate_proj.weight'; tensors under 'model.layers.3.mlp.': "
                        "model.layers.3.mlp.down_proj.weight, model.layers.3.mlp.up_proj.weight"});
  expect_error([&] { file.tensor("model.layers.3.post_attention_layernorm.weight"); },
               {"tensors under 'model.layers.3.': model.layers.3.input_layernorm.weight, "
                "model.layers.3.mlp.down_proj.weight, model.layers.3.mlp.up_proj.weight, "
                "model.layers.3.self_attn.q_proj.weight"});
  try {  // layer 30 is not under 'model.layers.3.'
    file.tensor("model.layers.3.post_attention_layernorm.weight");
  } catch (const st::format_error& e) {
    EXPECT_EQ(std::string(e.what()).find("layers.30"), std::string::npos) << e.what();
  }
  expect_error([&] { file.tensor("model.layers.4.w"); },
               {"tensors under 'model.layers.4.': model.layers.4.w10, ", "model.layers.4.w29 (and 5 more)"});
  expect_error([&] { file.tensor("lm_head.weight"); },
               {"no tensor 'lm_head.weight'; it holds model.embed_tokens.weight, ", "(and 11 more)"});
  expect_error([&] { parse(file_bytes("{}", "")).tensor("a.b"); }, {"no tensor 'a.b'; it holds no tensors"});
}

TEST(Safetensors, RejectsMalformedHeaders) {
  expect_malformed("", {"truncated: 0 bytes"});
  expect_malformed(std::string(7, '\0'), {"truncated: 7 bytes"});
  expect_malformed(le(999999, 8) + std::string(1226, ' '),
                   {"header length 999999 runs past the end of the file (1234 bytes)"});
  expect_malformed(le(3, 8) + "{}", {"header length 3 runs past the end of the file (10 bytes)"});
  expect_malformed(le(100'000'001, 8) + "{}", {"header length 100000001 exceeds the limit of 100 MB"});
  expect_malformed(le(~std::uint64_t(0), 8) + "{}", {"exceeds the limit"});
  expect_malformed(file_bytes("", ""), {"header does not start with '{'"});
  expect_malformed(file_bytes(" {}", ""), {"header does not start with '{'"});
  expect_malformed(file_bytes("[]", ""), {"header does not start with '{'"});
  for (const char* bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\x80"}) {
    expect_malformed(file_bytes(std::string("{\"a") + bad + "\": 1}", ""), {"header is not valid UTF-8 (byte 3"});
  }
  expect_malformed(file_bytes("{\"a\": }", ""), {"header is not valid JSON"});
  expect_malformed(file_bytes("{} x", ""), {"header is not valid JSON"});
  expect_malformed(file_bytes("{\"a\": 1", ""), {"header is not valid JSON"});
  expect_malformed(one_tensor(R"({"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]})", "abcd"),
                   {"header is not valid JSON"});
  expect_malformed(file_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                              R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                              std::string(8, '\0')),
                   {"header has the key 'a' twice"});
  expect_malformed(one_tensor(R"({"dtype": "F32", "dtype": "F64", "shape": [], "data_offsets": [0, 4]})", "abcd"),
                   {"header has the key 'dtype' twice"});
  expect_malformed(file_bytes(R"({"__metadata__": {"a": 1}})", ""), {"'__metadata__' entry 'a' is not a string"});
  expect_malformed(file_bytes(R"({"__metadata__": ["a"]})", ""), {"'__metadata__' is not an object of strings"});
  // Deep nesting is an error (or ignored), not a stack overflow.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_malformed(one_tensor(R"({"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 0]})", ""),
                   {"tensor 'a'", "'shape' holds array, not a non-negative integer"});
  EXPECT_TRUE(parse(one_tensor(R"({"dtype": "F32", "shape": [0], "data_offsets": [0, 0], "x": )" + deep + "}", ""))
                  .contains("a"));
}

TEST(Safetensors, RejectsMalformedEntries) {
  const std::string data = f32({1, 2, 3, 4, 5, 6});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3", "the entry is number, not an object"},
      {R"({"shape": [6], "data_offsets": [0, 24]})", "no 'dtype' in its entry"},
      {R"({"dtype": "F32", "data_offsets": [0, 24]})", "no 'shape' in its entry"},
      {R"({"dtype": "F32", "shape": [6]})", "no 'data_offsets' in its entry"},
      {R"({"dtype": 32, "shape": [6], "data_offsets": [0, 24]})", "'dtype' is number, not a string"},
      {R"({"dtype": "F17", "shape": [6], "data_offsets": [0, 24]})", "unknown dtype 'F17'"},
      {R"({"dtype": "f32", "shape": [6], "data_offsets": [0, 24]})", "unknown dtype 'f32'"},
      {R"({"dtype": "F32", "shape": 6, "data_offsets": [0, 24]})", "'shape' is number, not an array"},
      {R"({"dtype": "F32", "shape": [-6], "data_offsets": [0, 24]})", "'shape' holds -6, not a non-negative integer"},
      {R"({"dtype": "F32", "shape": [6.0], "data_offsets": [0, 24]})", "'shape' holds 6.0, not a non-negative"},
      {R"({"dtype": "F32", "shape": ["6"], "data_offsets": [0, 24]})", "'shape' holds string"},
      {R"({"dtype": "F32", "shape": [6], "data_offsets": [0, 24, 24]})", "'data_offsets' is not [begin, end]"},
      {R"({"dtype": "F32", "shape": [6], "data_offsets": [-1, 24]})", "'data_offsets' is not [begin, end]"},
      {R"({"dtype": "F32", "shape": [6], "data_offsets": {"0": 24}})", "'data_offsets' is not [begin, end]"},
      {R"({"dtype": "F32", "shape": [6], "data_offsets": [24, 0]})", "data_offsets [24, 0) begin after they end"},
      {R"({"dtype": "F32", "shape": [10], "data_offsets": [0, 40]})",
       "data_offsets [0, 40) run past the end of the data section (24 bytes)"},
      {R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 24]})",
       "data_offsets [0, 24) hold 24 bytes but F32 (2, 2) needs 16"},
      {R"({"dtype": "F64", "shape": [6], "data_offsets": [0, 24]})",
       "data_offsets [0, 24) hold 24 bytes but F64 (6,) needs 48"},
      {R"({"dtype": "F32", "shape": [4294967296, 4294967296, 0], "data_offsets": [0, 24]})",
       "shape (4294967296, 4294967296, 0) overflows a size_t"},
      {R"({"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 24]})",
       "F32 (4611686018427387904,) has more bits than a size_t can count"},
      {R"({"dtype": "F32", "shape": [18446744073709551616], "data_offsets": [0, 24]})",
       "'shape' holds 1.8446744073709552e+19, not a non-negative integer"},
  };
  for (const auto& [entry, what] : cases) {
    SCOPED_TRACE(entry);
    expect_malformed(one_tensor(entry, data), {"tensor 'a': ", what});
  }
  // The message of the brief, word for word.
  try {
    parse(
        file_bytes(R"({"a.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 12]}})", data.substr(0, 12)));
    ADD_FAILURE() << "no exception";
  } catch (const st::format_error& e) {
    EXPECT_STREQ(e.what(),
                 "x.safetensors: tensor 'a.weight': data_offsets [0, 12) hold 12 bytes but F32 (2, 3) needs 24");
  }
  // A zero-size tensor whose count does not overflow, as the reference accepts it.
  EXPECT_EQ(parse(one_tensor(R"({"dtype": "F32", "shape": [1152921504606846976, 0], "data_offsets": [0, 0]})", ""))
                .tensor("a")
                .size(),
            0u);
  EXPECT_EQ(parse(one_tensor(R"({"dtype": "F32", "shape": [-0], "data_offsets": [0, 0]})", "")).tensor("a").size(), 0u);
}

TEST(Safetensors, RejectsDataSectionsTheTensorsDoNotTile) {
  const auto two = [](const std::string& a, const std::string& b, std::size_t data_size) {
    return file_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": )" + a +
                          R"(}, "b": {"dtype": "F32", "shape": [2], "data_offsets": )" + b + "}}",
                      std::string(data_size, '\0'));
  };
  EXPECT_EQ(parse(two("[8, 16]", "[0, 8]", 16)).names().size(), 2u);
  expect_malformed(two("[0, 8]", "[12, 20]", 20),
                   {"tensor 'b': data_offsets [12, 20) leave bytes [8, 12) of the data section unused"});
  expect_malformed(two("[4, 12]", "[12, 20]", 20), {"tensor 'a': data_offsets [4, 12) leave bytes [0, 4)"});
  expect_malformed(two("[0, 8]", "[4, 12]", 12), {"tensor 'b': data_offsets [4, 12) overlap tensor 'a' at [0, 8)"});
  expect_malformed(two("[0, 8]", "[0, 8]", 8), {"tensor 'b': data_offsets [0, 8) overlap tensor 'a' at [0, 8)"});
  expect_malformed(two("[0, 8]", "[8, 16]", 18),
                   {"2 bytes after the last tensor's data (the data section holds 18 bytes, the tensors 16)"});
  expect_malformed(file_bytes("{}", "abc"), {"3 bytes after the last tensor's data"});
  // Zero-size tensors may sit anywhere, several at one offset.
  const std::string header = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                             R"( "z1": {"dtype": "F16", "shape": [0], "data_offsets": [8, 8]},)"
                             R"( "z2": {"dtype": "F32", "shape": [3, 0], "data_offsets": [8, 8]},)"
                             R"( "z0": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},)"
                             R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})";
  EXPECT_EQ(parse(file_bytes(header, std::string(16, '\0'))).names().size(), 5u);
}

// A fresh folder under the test temporary directory, removed afterwards.
class SafetensorsFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "egelu_safetensors_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream out(path(name), std::ios::binary);
    out << bytes;
  }

  std::string dir_;
};

// A shard with F32 tensors of one value each, named `names`.
std::string shard(const std::vector<std::string>& names, float first = 1) {
  std::string header = "{", data;
  for (std::size_t i = 0; i < names.size(); ++i) {
    header += (i ? ", \"" : "\"") + names[i] + R"(": {"dtype": "F32", "shape": [1], "data_offsets": [)" +
              std::to_string(4 * i) + ", " + std::to_string(4 * i + 4) + "]}";
    data += f32({first + float(i)});
  }
  return file_bytes(header + "}", data);
}

float value(const st::Tensor& t) {
  float v = 0;
  t.copy_to(&v);
  return v;
}

TEST_F(SafetensorsFiles, OpensMapsAndNamesTheFile) {
  write("w.safetensors", shard({"a", "b"}));
  st::File file = st::File::open(path("w.safetensors"));
  EXPECT_EQ(file.path(), path("w.safetensors"));
  const st::Tensor& b = file.tensor("b");
  EXPECT_EQ(b.file, path("w.safetensors"));
  const st::File moved = std::move(file);  // the views stay valid
  EXPECT_EQ(value(b), 2.f);
  EXPECT_EQ(&moved.tensor("b"), &b);

  write("empty.safetensors", file_bytes("{}  ", ""));  // an empty data section: nothing to map past the header
  EXPECT_TRUE(st::File::open(path("empty.safetensors")).names().empty());
  write("zero.safetensors", "");
  expect_error([&] { st::File::open(path("zero.safetensors")); }, {path("zero.safetensors") + ": truncated: 0 bytes"});
  write("bad.safetensors", shard({"a"}) + "x");
  expect_error([&] { st::File::open(path("bad.safetensors")); },
               {path("bad.safetensors") + ": 1 bytes after the last tensor's data"});
  expect_error([&] { st::File::open(path("none.safetensors")); },
               {"cannot open " + path("none.safetensors") + ": No such file or directory"});
  expect_error([&] { st::File::open(dir_); }, {dir_ + ": not a regular file"});
}

TEST_F(SafetensorsFiles, CheckpointOfOneFile) {
  write("model.safetensors", shard({"model.norm.weight", "model.layers.0.mlp.up_proj.weight"}));
  const st::Checkpoint checkpoint = st::Checkpoint::open(dir_);
  EXPECT_EQ(checkpoint.directory(), dir_);
  EXPECT_EQ(checkpoint.names(), (std::vector<std::string>{"model.layers.0.mlp.up_proj.weight", "model.norm.weight"}));
  EXPECT_TRUE(checkpoint.contains("model.norm.weight"));
  EXPECT_EQ(value(checkpoint.tensor("model.norm.weight")), 1.f);
  EXPECT_EQ(checkpoint.tensor("model.norm.weight").file, path("model.safetensors"));
  expect_error([&] { checkpoint.tensor("model.layers.0.mlp.gate_proj.weight"); },
               {dir_ + ": no tensor 'model.layers.0.mlp.gate_proj.weight'; tensors under 'model.layers.0.mlp.': "
                       "model.layers.0.mlp.up_proj.weight"});
  // With an index as well, the single file is read (the index here names a shard that is not there).
  write("model.safetensors.index.json", R"({"weight_map": {"x": "model-00001-of-00002.safetensors"}})");
  EXPECT_EQ(st::Checkpoint::open(dir_ + "/").names().size(), 2u);
}

TEST_F(SafetensorsFiles, ShardedCheckpoint) {
  write("model-00001-of-00002.safetensors",
        shard({"model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight"}, 1));
  write("model-00002-of-00002.safetensors", shard({"model.layers.1.mlp.up_proj.weight", "model.norm.weight"}, 10));
  write("model.safetensors.index.json", R"({"metadata": {"total_size": 16}, "weight_map": {
      "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
      "model.layers.0.mlp.down_proj.weight": "model-00001-of-00002.safetensors",
      "model.layers.1.mlp.up_proj.weight": "model-00002-of-00002.safetensors",
      "model.norm.weight": "model-00002-of-00002.safetensors"}})");
  st::Checkpoint opened = st::Checkpoint::open(dir_);
  const st::Checkpoint checkpoint = std::move(opened);
  EXPECT_EQ(checkpoint.names().size(), 4u);
  EXPECT_EQ(checkpoint.names_with_prefix("model.layers.0."),
            (std::vector<std::string>{"model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.up_proj.weight"}));
  EXPECT_TRUE(checkpoint.names_with_prefix("model.layers.2.").empty());
  EXPECT_EQ(value(checkpoint.tensor("model.layers.0.mlp.down_proj.weight")), 2.f);
  EXPECT_EQ(value(checkpoint.tensor("model.norm.weight")), 11.f);
  EXPECT_EQ(checkpoint.tensor("model.norm.weight").file, path("model-00002-of-00002.safetensors"));
  expect_error([&] { checkpoint.tensor("model.layers.1.mlp.gate_proj.weight"); },
               {dir_ + ": no tensor 'model.layers.1.mlp.gate_proj.weight'; tensors under 'model.layers.1.mlp.': "
                       "model.layers.1.mlp.up_proj.weight"});

  const std::string index = path("model.safetensors.index.json");
  // A tensor the index maps to a shard without it.
  write("model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors"}})");
  expect_error([&] { st::Checkpoint::open(dir_); },
               {index + ": tensor 'model.norm.weight': the index maps it to shard 'model-00001-of-00002.safetensors'",
                path("model-00001-of-00002.safetensors") + " does not hold it"});
  // A missing shard.
  write("model.safetensors.index.json", R"({"weight_map": {"a": "model-00003-of-00003.safetensors"}})");
  expect_error([&] { st::Checkpoint::open(dir_); },
               {index + ": shard 'model-00003-of-00003.safetensors': cannot open " +
                path("model-00003-of-00003.safetensors") + ": No such file or directory"});
  // A malformed shard: the index and the shard's own message.
  write("bad.safetensors", "1234");
  write("model.safetensors.index.json", R"({"weight_map": {"a": "bad.safetensors"}})");
  expect_error([&] { st::Checkpoint::open(dir_); },
               {index + ": shard 'bad.safetensors': " + path("bad.safetensors") + ": truncated"});
  // Shard names that would lead out of the folder.
  for (const char* bad : {"../model.safetensors", "/etc/passwd", "sub/x.safetensors", "..", ""}) {
    write("model.safetensors.index.json", std::string(R"({"weight_map": {"a": ")") + bad + "\"}}");
    expect_error([&] { st::Checkpoint::open(dir_); },
                 {index + ": tensor 'a': shard '" + bad + "' is not a file name in the folder"});
  }
  // Malformed indexes.
  write("model.safetensors.index.json", R"({"weight_map": {"a": 1}})");
  expect_error([&] { st::Checkpoint::open(dir_); }, {index + ": tensor 'a': its shard is not a string"});
  write("model.safetensors.index.json", R"({"metadata": {}})");
  expect_error([&] { st::Checkpoint::open(dir_); }, {index + ": no \"weight_map\" object"});
  write("model.safetensors.index.json", R"([])");
  expect_error([&] { st::Checkpoint::open(dir_); }, {index + ": the index is not a JSON object"});
  write("model.safetensors.index.json", "");
  expect_error([&] { st::Checkpoint::open(dir_); }, {index + ": the index is not valid JSON"});
  write("model.safetensors.index.json", R"({"weight_map": {"a": "x", "a": "y"}})");
  expect_error([&] { st::Checkpoint::open(dir_); }, {index + ": the index has the key 'a' twice"});
}

TEST_F(SafetensorsFiles, CheckpointErrors) {
  expect_error([&] { st::Checkpoint::open(dir_); },
               {dir_ + ": no model.safetensors or model.safetensors.index.json in the folder"});
  expect_error([&] { st::Checkpoint::open(path("nowhere")); },
               {"cannot open " + path("nowhere") + ": No such file or directory"});
  write("file", "");
  expect_error([&] { st::Checkpoint::open(path("file")); }, {path("file") + ": not a directory"});
  // A dtype egelu does not read: the checkpoint names the file that holds the tensor.
  write("model.safetensors",
        file_bytes(R"({"ids": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", std::string(8, '\0')));
  const st::Checkpoint checkpoint = st::Checkpoint::open(dir_);
  EXPECT_TRUE(checkpoint.contains("ids"));
  expect_error([&] { checkpoint.tensor("ids"); },
               {path("model.safetensors") + ": tensor 'ids': dtype I64 is not supported"});
}

}  // namespace
