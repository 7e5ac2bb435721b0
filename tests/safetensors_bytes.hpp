// safetensors files written byte by byte from the format's specification, for the tests
// of the reader and of the checkpoints built on it (never written by the reader under
// test): an 8-byte little-endian header length, the JSON header, the data section.
#ifndef EGELU_TESTS_SAFETENSORS_BYTES_HPP
#define EGELU_TESTS_SAFETENSORS_BYTES_HPP

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace safetensors_bytes {

// `bytes` little-endian bytes of `bits`.
inline std::string le(std::uint64_t bits, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += char((bits >> (8 * i)) & 0xff);
  return out;
}

template <typename T>
std::uint64_t bits_of(T v) {
  static_assert(sizeof(T) <= 8);
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);  // the tests run on little-endian hosts, as the reader does
  return b;
}

inline std::string f32(std::vector<float> v) {
  std::string out;
  for (float x : v) out += le(bits_of(x), 4);
  return out;
}

inline std::string f64(std::vector<double> v) {
  std::string out;
  for (double x : v) out += le(bits_of(x), 8);
  return out;
}

inline std::string u16(std::vector<std::uint16_t> v) {
  std::string out;
  for (std::uint16_t x : v) out += le(x, 2);
  return out;
}

// A safetensors file: the header's length (u64, little-endian), the JSON header, the data section.
inline std::string file_bytes(const std::string& header, const std::string& data) {
  return le(header.size(), 8) + header + data;
}

}  // namespace safetensors_bytes

#endif  // EGELU_TESTS_SAFETENSORS_BYTES_HPP
