// A strict, memory-mapped reader for safetensors files (Hugging Face's weight format)
// and for checkpoint folders: model.safetensors, or model.safetensors.index.json and
// the shards it lists.
//
// Opening a file validates its whole header against the file, as the reference
// implementation (huggingface/safetensors) does: the header length, UTF-8 JSON, every
// entry's dtype, shape and data_offsets, and tensors that tile the data section exactly.
// Anything wrong throws egelu::safetensors::format_error naming the file, the tensor and
// the problem. The data is mapped, not read: a tensor nobody asks for is never touched.
//
// Part of the compiled library egelu::nn; plain types only, no Eigen object crosses its
// boundary (docs/DESIGN.md, "The compiled library"). Little-endian hosts only.
/// @file
/// The strict, memory-mapped safetensors reader egelu::safetensors, of the compiled library egelu::nn.
#ifndef EGELU_SAFETENSORS_HPP
#define EGELU_SAFETENSORS_HPP

#include <cstddef>
#include <egelu/internal/nn_api.hpp>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace egelu {
/// A strict, memory-mapped reader for safetensors files and checkpoint folders (File, Checkpoint), for
/// loading weights: F64, F32, F16 and BF16 tensors, as views into the mapped file.
///
/// Opening validates the whole header against the file, as the reference implementation does (header
/// length, UTF-8 JSON, each entry's dtype, shape and data_offsets, tensors covering the data section with
/// no gap, overlap or trailing byte); anything wrong throws format_error naming the file, the tensor and
/// the problem. Part of the compiled library egelu::nn (`#include <egelu/safetensors.hpp>`); POSIX
/// (mmap), little-endian hosts.
namespace safetensors {

/// What the reader throws for a file or folder it cannot open or read, a file that is not a valid
/// safetensors file, a tensor that is missing or of a dtype egelu does not read; what() names the file
/// (or folder), the tensor where there is one, and the problem.
class EGELU_NN_API format_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The dtypes egelu reads. A file may hold tensors of any other valid safetensors dtype (I8, F8_E5M2,
/// ...): it opens, but asking for such a tensor throws format_error naming its dtype.
enum class DType {
  F64,      ///< IEEE binary64.
  F32,      ///< IEEE binary32.
  F16,      ///< IEEE binary16.
  BF16,     ///< bfloat16: the upper half of a binary32.
  F8_E4M3,  ///< OCP E4M3FN: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, 0x7F and 0xFF NaN
            ///< (FP8 checkpoints' weights, each block times a scale kept in another tensor).
  U8,       ///< Unsigned bytes (MXFP4 checkpoints' packed weights, two FP4 E2M1 codes a byte, and their E8M0
            ///< scales, 2^(byte - 127) for each 32 weights).
};

/// The size of one value of `dtype` in bytes: 8, 4, 2, 2, 1, 1.
EGELU_NN_API std::size_t dtype_size(DType dtype);

/// The name of `dtype` as safetensors headers spell it: "F64", "F32", "F16", "BF16", "F8_E4M3", "U8".
EGELU_NN_API const char* dtype_name(DType dtype);

/// A tensor of a File or Checkpoint: its description and a view of its bytes in the mapped file, valid
/// while the File or Checkpoint that returned it lives.
struct EGELU_NN_API Tensor {
  std::string name;                     ///< The tensor's name in the checkpoint.
  std::string file;                     ///< The path (or name) of the file that holds it, for messages.
  DType dtype = DType::F32;             ///< The type of its values.
  std::vector<std::size_t> shape;       ///< The shape, in C order (empty for a scalar).
  const unsigned char* data = nullptr;  ///< size() little-endian values in C order; not necessarily aligned.
  std::size_t bytes = 0;                ///< The number of bytes at data: size() * dtype_size(dtype).

  /// The number of values: the product of the shape (1 for a scalar).
  std::size_t size() const;
  /// The shape as NumPy prints it: "(3, 4)", "(3,)", "()".
  std::string shape_string() const;
  /// Writes the size() values, converted to Scalar (float or double), to out[0], ..., out[size() - 1]:
  /// F16, BF16 and F8_E4M3 are widened exactly (subnormals, infinities, NaN and -0 included; F8_E4M3 has
  /// no infinities, and its codes come without the scales an FP8 checkpoint keeps beside them), F64 to
  /// float rounds to nearest; U8 gives the bytes' values, 0 to 255 (MXFP4's codes are not decoded).
  template <typename Scalar>
  void copy_to(Scalar* out) const;
};

/// One safetensors file, memory-mapped read-only; move-only. Its tensors are views into the mapping,
/// valid while the File lives. The const functions may be called from several threads at once.
///
/// The mapping is of the file as it was: a file truncated while mapped makes reads of the lost part
/// crash (SIGBUS), as with every mmap-based reader; replace weight files by renaming, not in place.
class EGELU_NN_API File {
 public:
  /// Maps the file at `path` and validates its whole header against it.
  /// @throws format_error naming the file and the problem: a file that cannot be opened ("cannot open
  /// <path>: <the system's reason>"), a malformed header, a tensor whose entry is wrong, tensors that do
  /// not cover the data section exactly.
  static File open(const std::string& path);
  /// Validates the bytes of a safetensors file as open() does, keeping a copy of them (the tensors view
  /// the copy); `name` stands for the file in messages.
  /// @throws format_error naming `name` and the problem.
  static File parse(const void* bytes, std::size_t size, const std::string& name);

  File(File&& other) noexcept;             ///< Takes over the mapping; `other` is left empty.
  File& operator=(File&& other) noexcept;  ///< Takes over the mapping; `other` is left empty.
  ~File();                                 ///< Unmaps the file.

  /// The path the file was opened with (the name given to parse()).
  const std::string& path() const;
  /// Whether the file holds a tensor of this name (of any dtype).
  bool contains(const std::string& name) const;
  /// The tensor of this name.
  /// @throws format_error naming the file and the tensor when the file has no such tensor (listing the
  /// names that share its longest dotted prefix, "model.layers.3.") or when its dtype is not one egelu
  /// reads.
  const Tensor& tensor(const std::string& name) const;
  /// The names of all the file's tensors (of any dtype), sorted.
  std::vector<std::string> names() const;
  /// The header's "__metadata__" (empty if it has none).
  const std::map<std::string, std::string>& metadata() const;

 private:
  struct Impl;
  explicit File(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A checkpoint folder as Hugging Face writes it: model.safetensors, or model.safetensors.index.json and
/// the shards its "weight_map" names (when both are there, model.safetensors is read, as Hugging Face
/// Transformers does). Move-only; its tensors are valid while it lives.
class EGELU_NN_API Checkpoint {
 public:
  /// Opens the checkpoint in `directory`: maps and validates model.safetensors, or every shard the index
  /// lists, and checks that each shard holds the tensors the index maps to it. Mapping reads nothing but
  /// the headers: a tensor nobody asks for is never read.
  /// @throws format_error naming the folder, the index or the shard and the problem: neither file there,
  /// an invalid index, a shard name with '/' or "..", a missing or invalid shard, a shard without a
  /// tensor the index maps to it.
  static Checkpoint open(const std::string& directory);

  Checkpoint(Checkpoint&& other) noexcept;             ///< Takes over the files; `other` is left empty.
  Checkpoint& operator=(Checkpoint&& other) noexcept;  ///< Takes over the files; `other` is left empty.
  ~Checkpoint();                                       ///< Unmaps the files.

  /// The folder the checkpoint was opened from, as given.
  const std::string& directory() const;
  /// Whether the checkpoint holds a tensor of this name (of any dtype).
  bool contains(const std::string& name) const;
  /// The tensor of this name, from whichever file holds it.
  /// @throws format_error naming the folder and the tensor when there is no such tensor (listing the
  /// names that share its longest dotted prefix), or naming the file and the tensor when its dtype is
  /// not one egelu reads.
  const Tensor& tensor(const std::string& name) const;
  /// The names of all the checkpoint's tensors (of any dtype), sorted.
  std::vector<std::string> names() const;
  /// The sorted names that start with `prefix` ("model.layers.3." gives what that layer holds).
  std::vector<std::string> names_with_prefix(const std::string& prefix) const;

 private:
  struct Impl;
  explicit Checkpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace safetensors
}  // namespace egelu

#endif  // EGELU_SAFETENSORS_HPP
