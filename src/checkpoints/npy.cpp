#include <cerrno>
#include <cstdint>
#include <cstring>
#include <egelu/npy.hpp>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

namespace egelu {
namespace npy {
namespace {

[[noreturn]] void fail(const std::string& name, const std::string& what) { throw format_error(name + ": " + what); }

std::uint32_t little_endian(const unsigned char* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  void parse(Array& out) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr" && !have_descr) {
        const std::string descr = string_literal();
        if (descr == "<f4") {
          out.is_double = false;
        } else if (descr == "<f8") {
          out.is_double = true;
        } else {
          fail(name_, "unsupported dtype '" + descr + "' (need little-endian float32 '<f4' or float64 '<f8')");
        }
        have_descr = true;
      } else if (key == "fortran_order" && !have_order) {
        if (word("True")) fail(name_, "Fortran-ordered data is not supported (need C order)");
        if (!word("False")) fail(name_, "malformed header: fortran_order is neither True nor False");
        have_order = true;
      } else if (key == "shape" && !have_shape) {
        out.shape = shape();
        have_shape = true;
      } else {
        fail(name_, "malformed header: unexpected or repeated key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) fail(name_, "malformed header: text after the dictionary");
    if (!have_descr || !have_order || !have_shape)
      fail(name_, "malformed header: missing descr, fortran_order or shape");
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n')) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(name_, std::string("malformed header: expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  bool word(const char* w) {
    skip_space();
    const std::size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail(name_, "malformed header: expected a string");
    const char quote = s_[pos_++];
    const std::size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) fail(name_, "malformed header: unterminated string");
    std::string v = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return v;
  }
  std::vector<std::size_t> shape() {
    std::vector<std::size_t> dims;
    expect('(');
    while (!peek(')')) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail(name_, "malformed header: bad shape");
      std::size_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        const std::size_t digit = std::size_t(s_[pos_++] - '0');
        if (v > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail(name_, "shape dimension too large");
        v = v * 10 + digit;
      }
      dims.push_back(v);
      if (!peek(')')) expect(',');
    }
    expect(')');
    return dims;
  }

  const std::string& s_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

}  // namespace

std::size_t Array::size() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

std::string Array::shape_string() const {
  std::ostringstream s;
  s << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << (shape.size() == 1 ? ",)" : ")");
  return s.str();
}

template <typename Scalar>
std::vector<Scalar> Array::values() const {
  std::vector<Scalar> v(size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (is_double) {
      double d;
      std::memcpy(&d, data.data() + 8 * i, 8);
      v[i] = Scalar(d);
    } else {
      float f;
      std::memcpy(&f, data.data() + 4 * i, 4);
      v[i] = Scalar(f);
    }
  }
  return v;
}

template std::vector<float> Array::values<float>() const;
template std::vector<double> Array::values<double>() const;

Array parse(const void* bytes, std::size_t size, const std::string& name) {
  static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559);
  const auto* p = static_cast<const unsigned char*>(bytes);
  if (size < 10) fail(name, "truncated: " + std::to_string(size) + " bytes is too short for a .npy header");
  if (std::memcmp(p, "\x93NUMPY", 6) != 0) fail(name, "not a .npy file (bad magic)");
  const int major = p[6], minor = p[7];
  std::size_t header_start, header_length;
  if (major == 1) {
    header_start = 10;
    header_length = little_endian(p + 8, 2);
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(name, "truncated header");
    header_start = 12;
    header_length = little_endian(p + 8, 4);
  } else {
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  }
  if (header_length > size - header_start) fail(name, "truncated header");
  Array out;
  out.name = name;
  const std::string header(reinterpret_cast<const char*>(p + header_start), header_length);
  HeaderParser(header, name).parse(out);

  std::size_t count = 1;
  for (std::size_t d : out.shape) {
    if (d != 0 && count > std::numeric_limits<std::size_t>::max() / 8 / d) fail(name, "shape too large");
    count *= d;
  }
  const std::size_t item = out.is_double ? 8 : 4, expected = count * item;
  const std::size_t available = size - header_start - header_length;
  if (available < expected) {
    fail(name, "truncated: shape " + out.shape_string() + " needs " + std::to_string(expected) +
                   " data bytes, the file has " + std::to_string(available));
  }
  if (available > expected) {
    fail(name,
         std::to_string(available - expected) + " unexpected bytes after the data of shape " + out.shape_string());
  }
  const unsigned char* data = p + header_start + header_length;
  out.data.assign(data, data + expected);
  return out;
}

Array load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw format_error(path + ": cannot open the file: " + std::strerror(errno));
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw format_error(path + ": read error");
  return parse(bytes.data(), bytes.size(), path);
}

Array load(const std::string& path, const std::vector<std::size_t>& shape) {
  Array a = load(path);
  if (a.shape != shape) {
    Array want;
    want.shape = shape;
    throw std::invalid_argument(a.name + ": expected shape " + want.shape_string() + " but the file holds " +
                                a.shape_string());
  }
  return a;
}

}  // namespace npy
}  // namespace egelu
