// The .npy reader: valid files of each version load; every malformed one throws
// an exception naming the file and the problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <egelu/npy.hpp>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + char(major) + char(0);
  const std::size_t n = header.size();
  out += char(n & 0xff);
  out += char((n >> 8) & 0xff);
  if (major != 1) {
    out += char((n >> 16) & 0xff);
    out += char((n >> 24) & 0xff);
  }
  return out + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

egelu::npy::Array parse(const std::string& bytes) { return egelu::npy::parse(bytes.data(), bytes.size(), "x.npy"); }

// parse() throws format_error whose message names the file and contains `what`.
void expect_format_error(const std::string& bytes, const std::string& what) {
  try {
    parse(bytes);
    FAIL() << "no exception for: " << what;
  } catch (const egelu::npy::format_error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("x.npy: ", 0), 0u) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
  }
}

const std::string kFloat2x3 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

TEST(Npy, ReadsEveryVersionAndBothTypes) {
  const std::vector<float> f = {1, 2, 3, 4, 5, 6.5f};
  for (int major : {1, 2, 3}) {
    const auto a = parse(npy_bytes(kFloat2x3, raw(f), major));
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_FALSE(a.is_double);
    EXPECT_EQ(a.values<float>(), f);
  }
  const std::vector<double> d = {0.1, -2.5e300, 3};
  const auto b = parse(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", raw(d)));
  EXPECT_TRUE(b.is_double);
  EXPECT_EQ(b.values<double>(), d);
  const auto scalar = parse(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", raw(d).substr(0, 8)));
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.values<double>(), std::vector<double>{0.1});
  const auto empty = parse(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", ""));
  EXPECT_EQ(empty.size(), 0u);
}

TEST(Npy, RejectsMalformedFiles) {
  const std::string data = raw(std::vector<float>(6, 1.f));
  expect_format_error("", "truncated");
  expect_format_error(std::string("\x93NUMPX\x01\x00\x10\x00", 10) + std::string(16, ' '), "bad magic");
  expect_format_error(std::string("\x93NUMPY\x04\x00", 8) + std::string(64, ' '), "version 4.0");
  expect_format_error(npy_bytes(kFloat2x3, data).substr(0, 40), "truncated header");
  expect_format_error(npy_bytes(kFloat2x3, data.substr(0, 20)), "truncated");
  expect_format_error(npy_bytes(kFloat2x3, data + "xy"), "2 unexpected bytes");
  for (const char* dtype : {"<i4", ">f4", "<f2", "|u1", "<c8", ">f8"}) {
    expect_format_error(
        npy_bytes(std::string("{'descr': '") + dtype + "', 'fortran_order': False, 'shape': (2, 3), }", data),
        std::string("unsupported dtype '") + dtype + "'");
  }
  expect_format_error(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data), "Fortran");
  expect_format_error(npy_bytes("{'descr': '<f4', 'shape': (2, 3), }", data), "missing");
  expect_format_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", data), "bad shape");
  expect_format_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", data),
                      "unexpected or repeated key 'x'");
  expect_format_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (6,)}", data),
                      "repeated");
  expect_format_error(npy_bytes("['descr']", data), "expected '{'");
  expect_format_error(npy_bytes("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}", data), "unsupported dtype");
  expect_format_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", data), "expected ','");
  expect_format_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", data),
                      "too large");
  expect_format_error(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16)}", data), "too large");
}

TEST(Npy, LoadChecksShapesAndNamesTheFile) {
  const std::string path = ::testing::TempDir() + "egelu_npy_test.npy";
  {
    std::ofstream out(path, std::ios::binary);
    out << npy_bytes(kFloat2x3, raw(std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
  const auto m = egelu::npy::load_matrix<double>(path, 2, 3);
  EXPECT_EQ(m(1, 0), 4.0);  // C order
  try {
    egelu::npy::load_matrix<float>(path, 3, 2);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("(3, 2)"), std::string::npos) << message;
    EXPECT_NE(message.find("(2, 3)"), std::string::npos) << message;
  }
  EXPECT_THROW(egelu::npy::load_vector<float>(path, 6), std::invalid_argument);
  std::remove(path.c_str());
  try {
    egelu::npy::load(path);
    FAIL() << "no exception";
  } catch (const egelu::npy::format_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

}  // namespace
