// The safetensors reader (include/egelu/safetensors.hpp). The format, as the reference
// implementation huggingface/safetensors defines and validates it (README "Format",
// safetensors/src/tensor.rs, read_metadata and Metadata::validate):
//   8 bytes   N, the header's length, u64 little-endian (at most 100 MB);
//   N bytes   UTF-8 JSON: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//             ..., "__metadata__": {"key": "value"}}, starting with '{', perhaps padded with spaces;
//   the rest  the data section, which the tensors' [begin, end) ranges must cover exactly: sorted by
//             offset they start at 0, follow one another with no gap or overlap and end at its end.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <egelu/safetensors.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>

#include "gemm/narrow_floats.hpp"

// The data is used in place, as little-endian bytes.
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "egelu's safetensors reader supports little-endian hosts only"
#endif

namespace egelu {
namespace safetensors {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& what) { throw format_error(file + ": " + what); }

[[noreturn]] void fail(const std::string& file, const std::string& tensor, const std::string& what) {
  fail(file, "tensor '" + tensor + "': " + what);
}

// The system's reason for errno `error` (strerror's text, thread-safe).
std::string reason(int error) { return std::generic_category().message(error); }

constexpr std::uint64_t kMaxHeaderLength = 100'000'000;  // the reference's MAX_HEADER_SIZE

// Every dtype the reference knows, with its width in bits: a file may hold any of them, and
// only asking for a tensor of one egelu does not read is an error.
struct DtypeInfo {
  const char* name;
  std::size_t bits;
};
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 8},    {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6},     {"U8", 8},          {"I8", 8},
    {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},
    {"U16", 16},    {"F16", 16},    {"BF16", 16},   {"I32", 32},        {"U32", 32},        {"F32", 32},
    {"C64", 64},    {"F64", 64},    {"I64", 64},    {"U64", 64},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const DtypeInfo& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

// Whether egelu reads the dtype of this name, and as which DType.
bool egelu_dtype(const std::string& name, DType& out) {
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::U8}) {
    if (name == dtype_name(d)) {
      out = d;
      return true;
    }
  }
  return false;
}

std::string shape_string(const std::vector<std::size_t>& shape) {
  std::ostringstream s;
  s << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << (shape.size() == 1 ? ",)" : ")");
  return s.str();
}

std::string range_string(std::size_t begin, std::size_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// The offset of the first byte of s[0, n) that does not begin a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, surrogates or code points above U+10FFFF), or n.
std::size_t invalid_utf8_at(const unsigned char* s, std::size_t n) {
  for (std::size_t i = 0; i < n;) {
    const unsigned c = s[i];
    std::size_t length = 1;
    unsigned low = 0x80, high = 0xbf;  // the range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3;
      if (c == 0xe0) low = 0xa0;   // overlong
      if (c == 0xed) high = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4;
      if (c == 0xf0) low = 0x90;   // overlong
      if (c == 0xf4) high = 0x8f;  // above U+10FFFF
    } else if (c >= 0x80) {
      return i;
    }
    if (length > 1) {
      if (n - i < length || s[i + 1] < low || s[i + 1] > high) return i;
      for (std::size_t k = 2; k < length; ++k) {
        if ((s[i + k] & 0xc0) != 0x80) return i;
      }
    }
    i += length;
  }
  return n;
}

// Parses JSON text, refusing repeated keys in any object: the format forbids them, and nlohmann::json
// would silently keep the last one.
json parse_json(const char* begin, const char* end, const std::string& file, const std::string& what) {
  std::vector<std::set<std::string>> keys;  // those of each object being parsed, innermost last
  const json::parser_callback_t check_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == json::parse_event_t::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(key).second) fail(file, what + " has the key '" + key + "' twice");
    }
    return true;
  };
  try {
    return json::parse(begin, end, check_keys);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    fail(file, what + " is not valid JSON: " + e.what());
  }
}

// A JSON number that is a non-negative integer, as a size (serde's usize accepts exactly these).
bool to_size(const json& v, std::size_t& out) {
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    if (u > std::numeric_limits<std::size_t>::max()) return false;
    out = std::size_t(u);
    return true;
  }
  if (v.is_number_integer() && v.get<std::int64_t>() == 0) {  // "-0"
    out = 0;
    return true;
  }
  return false;
}

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The conversions below work on IEEE formats' bits.
static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559);

// binary16 to binary32, exactly: by the bits, so that a NaN keeps its sign and payload.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return float_from_bits(sign | 0x7f800000u | (mantissa << 13));  // infinity, NaN
  if (exponent != 0) return float_from_bits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, a normal float (or zero), exactly.
  const float magnitude = float(mantissa) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

// A file mapped read-only, the whole of it. The descriptor is closed once mapped (the mapping
// keeps the file); an empty file is not mapped (mmap refuses 0 bytes).
class Mapping {
 public:
  explicit Mapping(const std::string& path) {
    struct Descriptor {
      int fd;
      ~Descriptor() {
        if (fd >= 0) ::close(fd);
      }
    } file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) throw format_error("cannot open " + path + ": " + reason(errno));
    struct stat status;
    if (::fstat(file.fd, &status) != 0) throw format_error("cannot read " + path + ": " + reason(errno));
    if (!S_ISREG(status.st_mode)) fail(path, "not a regular file");
    size_ = std::size_t(status.st_size);
    if (size_ > 0) {
      void* base = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
      if (base == MAP_FAILED) throw format_error("cannot map " + path + ": " + reason(errno));
      base_ = base;
    }
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (base_) ::munmap(base_, size_);
  }

  const unsigned char* data() const { return static_cast<const unsigned char*>(base_); }
  std::size_t size() const { return size_; }

 private:
  void* base_ = nullptr;
  std::size_t size_ = 0;
};

// The keys of a std::map<std::string, ...> that start with `prefix`, in order.
template <typename Map>
std::vector<std::string> keys_with_prefix(const Map& map, const std::string& prefix) {
  std::vector<std::string> keys;
  for (auto it = map.lower_bound(prefix); it != map.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    keys.push_back(it->first);
  }
  return keys;
}

std::string list_names(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 20;
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > kShown) s += " (and " + std::to_string(names.size() - kShown) + " more)";
  return s;
}

// "<where>: no tensor 'model.layers.3.mlp.up.weight'; tensors under 'model.layers.3.': ...": the names
// that share the longest prefix ending in '.' with the one asked for, i.e. what that layer does have.
template <typename Map>
format_error no_tensor(const std::string& where, const std::string& name, const Map& tensors) {
  const std::string message = where + ": no tensor '" + name + "'";
  std::size_t dot = name.size();
  while (dot > 0 && (dot = name.rfind('.', dot - 1)) != std::string::npos) {
    const std::string prefix = name.substr(0, dot + 1);
    const std::vector<std::string> near = keys_with_prefix(tensors, prefix);
    if (!near.empty()) return format_error(message + "; tensors under '" + prefix + "': " + list_names(near));
  }
  if (tensors.empty()) return format_error(message + "; it holds no tensors");
  return format_error(message + "; it holds " + list_names(keys_with_prefix(tensors, "")));
}

// "dir/name" ("dir" as the user gave it).
std::string join(const std::string& directory, const std::string& name) {
  return directory.empty() || directory.back() == '/' ? directory + name : directory + "/" + name;
}

// Whether there is something at `path` (a failure other than "no such file" counts as there, so that
// opening it reports the reason).
bool present(const std::string& path) {
  struct stat status;
  return ::stat(path.c_str(), &status) == 0 || errno != ENOENT;
}

// A tensor as the header describes it, and the header's contents. The parsing lives here, in the
// anonymous namespace, rather than in File::Impl: a nested class of an exported class is exported too.
struct Entry {
  Tensor tensor;                     // its dtype set only when readable
  const DtypeInfo* dtype = nullptr;  // the file's dtype
  bool readable = false;             // whether egelu reads that dtype
  std::size_t begin = 0, end = 0;    // data_offsets
};

struct Contents {
  std::map<std::string, Entry> tensors;
  std::map<std::string, std::string> metadata;
};

void read_entry(const std::string& path, const std::string& name, const json& entry, const unsigned char* data,
                std::size_t data_size, std::map<std::string, Entry>& tensors) {
  // Keys other than these three are ignored, as the reference ignores them.
  if (!entry.is_object()) fail(path, name, std::string("the entry is ") + entry.type_name() + ", not an object");
  const auto member = [&](const char* key) -> const json& {
    const auto it = entry.find(key);
    if (it == entry.end()) fail(path, name, std::string("no '") + key + "' in its entry");
    return *it;
  };

  const json& dtype_json = member("dtype");
  if (!dtype_json.is_string()) fail(path, name, std::string("'dtype' is ") + dtype_json.type_name() + ", not a string");
  const std::string& dtype_string = dtype_json.get_ref<const std::string&>();
  const DtypeInfo* dtype = find_dtype(dtype_string);
  if (!dtype) fail(path, name, "unknown dtype '" + dtype_string + "'");

  Entry e;
  e.dtype = dtype;
  e.readable = egelu_dtype(dtype_string, e.tensor.dtype);
  const json& shape = member("shape");
  if (!shape.is_array()) fail(path, name, std::string("'shape' is ") + shape.type_name() + ", not an array");
  for (const json& d : shape) {
    std::size_t v;
    if (!to_size(d, v)) {  // (no dump() of a nested value: it recurses)
      fail(path, name,
           "'shape' holds " + (d.is_number() ? d.dump() : std::string(d.type_name())) + ", not a non-negative integer");
    }
    e.tensor.shape.push_back(v);
  }

  const json& offsets = member("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !to_size(offsets[0], e.begin) || !to_size(offsets[1], e.end)) {
    fail(path, name, "'data_offsets' is not [begin, end] with two non-negative integers");
  }
  const std::string offsets_string = "data_offsets " + range_string(e.begin, e.end);
  if (e.begin > e.end) fail(path, name, offsets_string + " begin after they end");
  if (e.end > data_size) {
    fail(path, name,
         offsets_string + " run past the end of the data section (" + std::to_string(data_size) + " bytes)");
  }

  // The size the dtype and shape need, overflow checked as the reference does: the number of
  // values, left to right (so (2^40, 2^40, 0) overflows), then the bits.
  const std::string what = dtype_string + " " + shape_string(e.tensor.shape);
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  std::size_t count = 1;
  for (std::size_t d : e.tensor.shape) {
    if (d != 0 && count > kMax / d) fail(path, name, "shape " + shape_string(e.tensor.shape) + " overflows a size_t");
    count *= d;
  }
  if (count > kMax / dtype->bits) fail(path, name, what + " has more bits than a size_t can count");
  const std::size_t bits = count * dtype->bits;
  if (bits % 8 != 0) fail(path, name, what + " does not fill a whole number of bytes");
  if (bits / 8 != e.end - e.begin) {
    fail(path, name,
         offsets_string + " hold " + std::to_string(e.end - e.begin) + " bytes but " + what + " needs " +
             std::to_string(bits / 8));
  }

  e.tensor.name = name;
  e.tensor.file = path;
  e.tensor.data = data + e.begin;
  e.tensor.bytes = e.end - e.begin;
  tensors.emplace(name, std::move(e));
}

// Validates the whole file: the header's length, UTF-8 and JSON, each entry, then how the tensors tile
// the data section. The files accepted are the reference's (with '{' first and no repeated keys).
Contents read_file(const std::string& path, const unsigned char* p, std::size_t size) {
  Contents out;
  if (size < 8) fail(path, "truncated: " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  const std::uint64_t n = load<std::uint64_t>(p);
  if (n > kMaxHeaderLength) {
    fail(path, "header length " + std::to_string(n) + " exceeds the limit of 100 MB (" +
                   std::to_string(kMaxHeaderLength) + " bytes)");
  }
  if (n > size - 8) {
    fail(path,
         "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) + " bytes)");
  }
  const unsigned char* header = p + 8;
  // The format's "MUST begin with '{'" (the reference's parser itself also takes leading whitespace).
  if (n == 0 || header[0] != '{') fail(path, "header does not start with '{'");
  const std::size_t bad = invalid_utf8_at(header, n);
  if (bad != n) fail(path, "header is not valid UTF-8 (byte " + std::to_string(bad) + " of the header)");
  const json j =
      parse_json(reinterpret_cast<const char*>(header), reinterpret_cast<const char*>(header + n), path, "header");
  // j is an object: valid JSON that starts with '{'.

  const unsigned char* data = header + n;
  const std::size_t data_size = size - 8 - std::size_t(n);
  for (const auto& item : j.items()) {
    if (item.key() != "__metadata__") {
      read_entry(path, item.key(), item.value(), data, data_size, out.tensors);
      continue;
    }
    if (!item.value().is_object()) fail(path, "'__metadata__' is not an object of strings");
    for (const auto& m : item.value().items()) {
      if (!m.value().is_string()) fail(path, "'__metadata__' entry '" + m.key() + "' is not a string");
      out.metadata.emplace(m.key(), m.value().get<std::string>());
    }
  }

  // Sorted by offset, the tensors must tile the data section: no gap, no overlap, nothing after.
  std::vector<const Entry*> order;
  for (const auto& t : out.tensors) order.push_back(&t.second);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return std::tie(a->begin, a->end, a->tensor.name) < std::tie(b->begin, b->end, b->tensor.name);
  });
  std::size_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : order) {
    const std::string offsets = "data_offsets " + range_string(e->begin, e->end);
    if (e->begin > covered) {
      fail(path, e->tensor.name,
           offsets + " leave bytes " + range_string(covered, e->begin) + " of the data section unused");
    }
    if (e->begin < covered) {  // then previous ends at `covered`, after e begins
      fail(path, e->tensor.name,
           offsets + " overlap tensor '" + previous->tensor.name + "' at " + range_string(previous->begin, covered));
    }
    covered = e->end;
    previous = e;
  }
  if (covered != data_size) {
    fail(path, std::to_string(data_size - covered) + " bytes after the last tensor's data (the data section holds " +
                   std::to_string(data_size) + " bytes, the tensors " + std::to_string(covered) + ")");
  }
  return out;
}

// Opens the shards the index lists into `files` and records in `where` which holds each tensor.
void read_index(const std::string& directory, const std::string& index_path, std::vector<File>& files,
                std::map<std::string, std::size_t>& where) {
  const Mapping index(index_path);
  const char* text = index.size() ? reinterpret_cast<const char*>(index.data()) : "";
  const json j = parse_json(text, text + index.size(), index_path, "the index");
  if (!j.is_object()) fail(index_path, "the index is not a JSON object");
  const auto weight_map = j.find("weight_map");
  if (weight_map == j.end() || !weight_map->is_object()) fail(index_path, "no \"weight_map\" object");

  std::map<std::string, std::size_t> shards;  // shard name -> its file in `files`
  for (const auto& item : weight_map->items()) {
    const std::string& name = item.key();
    if (!item.value().is_string()) fail(index_path, name, "its shard is not a string");
    const std::string& shard = item.value().get_ref<const std::string&>();
    // A shard is a file in the folder: no path may lead elsewhere.
    if (shard.empty() || shard.find('/') != std::string::npos || shard.find("..") != std::string::npos ||
        shard.find('\0') != std::string::npos) {
      fail(index_path, name, "shard '" + shard + "' is not a file name in the folder (no '/' or '..')");
    }
    auto it = shards.find(shard);
    if (it == shards.end()) {
      try {
        files.push_back(File::open(join(directory, shard)));
      } catch (const format_error& e) {
        fail(index_path, "shard '" + shard + "': " + e.what());
      }
      it = shards.emplace(shard, files.size() - 1).first;
    }
    if (!files[it->second].contains(name)) {
      fail(index_path, name,
           "the index maps it to shard '" + shard + "', but " + files[it->second].path() + " does not hold it");
    }
    where.emplace(name, it->second);
  }
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return 8;
    case DType::F32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::F8_E4M3:
    case DType::U8:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return "F64";
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::F8_E4M3:
      return "F8_E4M3";
    case DType::U8:
      return "U8";
  }
  return "?";
}

std::size_t Tensor::size() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

std::string Tensor::shape_string() const { return safetensors::shape_string(shape); }

template <typename Scalar>
void Tensor::copy_to(Scalar* out) const {
  const std::size_t n = size();
  switch (dtype) {
    case DType::F64:
      for (std::size_t i = 0; i < n; ++i) out[i] = Scalar(load<double>(data + 8 * i));
      break;
    case DType::F32:
      for (std::size_t i = 0; i < n; ++i) out[i] = Scalar(load<float>(data + 4 * i));
      break;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) out[i] = Scalar(half_to_float(load<std::uint16_t>(data + 2 * i)));
      break;
    case DType::BF16:  // the upper half of a binary32
      for (std::size_t i = 0; i < n; ++i)
        out[i] = Scalar(float_from_bits(std::uint32_t(load<std::uint16_t>(data + 2 * i)) << 16));
      break;
    case DType::F8_E4M3:
      for (std::size_t i = 0; i < n; ++i) out[i] = Scalar(gemm::widen(gemm::e4m3{data[i]}));
      break;
    case DType::U8:  // (the bytes' values, 0 to 255)
      for (std::size_t i = 0; i < n; ++i) out[i] = Scalar(data[i]);
      break;
  }
}

template void Tensor::copy_to<float>(float*) const;
template void Tensor::copy_to<double>(double*) const;

// The mapping or the copy that a File's tensors view, and what its header says.
struct File::Impl {
  std::string path;
  std::unique_ptr<Mapping> mapping;  // open()'s
  std::vector<unsigned char> bytes;  // or parse()'s copy
  Contents contents;
};

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&& other) noexcept = default;
File& File::operator=(File&& other) noexcept = default;
File::~File() = default;

File File::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->mapping = std::make_unique<Mapping>(path);
  impl->contents = read_file(path, impl->mapping->data(), impl->mapping->size());
  return File(std::move(impl));
}

File File::parse(const void* bytes, std::size_t size, const std::string& name) {
  auto impl = std::make_unique<Impl>();
  impl->path = name;
  const auto* p = static_cast<const unsigned char*>(bytes);
  impl->bytes.assign(p, p + size);
  impl->contents = read_file(name, impl->bytes.data(), impl->bytes.size());
  return File(std::move(impl));
}

const std::string& File::path() const { return impl_->path; }

bool File::contains(const std::string& name) const { return impl_->contents.tensors.count(name) != 0; }

const Tensor& File::tensor(const std::string& name) const {
  const auto it = impl_->contents.tensors.find(name);
  if (it == impl_->contents.tensors.end()) throw no_tensor(impl_->path, name, impl_->contents.tensors);
  const Entry& e = it->second;
  if (!e.readable) {
    fail(impl_->path, name,
         std::string("dtype ") + e.dtype->name + " is not supported: egelu reads F32, F64, F16, BF16, F8_E4M3, U8");
  }
  return e.tensor;
}

std::vector<std::string> File::names() const { return keys_with_prefix(impl_->contents.tensors, ""); }

const std::map<std::string, std::string>& File::metadata() const { return impl_->contents.metadata; }

struct Checkpoint::Impl {
  std::string directory;
  std::vector<File> files;                   // model.safetensors, or the shards
  std::map<std::string, std::size_t> where;  // tensor name -> its file in `files`
};

Checkpoint::Checkpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Checkpoint::Checkpoint(Checkpoint&& other) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&& other) noexcept = default;
Checkpoint::~Checkpoint() = default;

Checkpoint Checkpoint::open(const std::string& directory) {
  struct stat status;
  if (::stat(directory.c_str(), &status) != 0) throw format_error("cannot open " + directory + ": " + reason(errno));
  if (!S_ISDIR(status.st_mode)) fail(directory, "not a directory");
  auto impl = std::make_unique<Impl>();
  impl->directory = directory;
  // Both there: the single file is read, as Hugging Face Transformers does (it looks for it first).
  const std::string single = join(directory, "model.safetensors"),
                    index = join(directory, "model.safetensors.index.json");
  if (present(single)) {
    impl->files.push_back(File::open(single));
    for (const std::string& name : impl->files[0].names()) impl->where.emplace(name, 0);
  } else if (present(index)) {
    read_index(directory, index, impl->files, impl->where);
  } else {
    fail(directory, "no model.safetensors or model.safetensors.index.json in the folder");
  }
  return Checkpoint(std::move(impl));
}

const std::string& Checkpoint::directory() const { return impl_->directory; }

bool Checkpoint::contains(const std::string& name) const { return impl_->where.count(name) != 0; }

const Tensor& Checkpoint::tensor(const std::string& name) const {
  const auto it = impl_->where.find(name);
  if (it == impl_->where.end()) throw no_tensor(impl_->directory, name, impl_->where);
  return impl_->files[it->second].tensor(name);
}

std::vector<std::string> Checkpoint::names() const { return keys_with_prefix(impl_->where, ""); }

std::vector<std::string> Checkpoint::names_with_prefix(const std::string& prefix) const {
  return keys_with_prefix(impl_->where, prefix);
}

}  // namespace safetensors
}  // namespace egelu
