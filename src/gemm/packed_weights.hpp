// A weight matrix packed once, when a block is made, into the panels its micro-kernel
// reads (micro_kernel.hpp), in the type the block stores it in: row blocks of mc rows,
// each cut into depth blocks of kc, each a run of panels of mv rows, each panel the
// depth block's k steps of mv values (rows past the last are zero). A product at one
// token reads the whole matrix once, front to back.
//
// The source is any strided matrix of float, double, bfloat16 or half -- a row-major
// nn.Linear weight, GPT-2's transposed Conv1D weight, a checkpoint's 16-bit tensor in
// place -- or of a checkpoint's FP8 or MXFP4 codes with their blocks' scales, converted
// element by element: widening is exact, narrowing rounds to nearest even, and a finite
// value beyond the stored type's range is an error (naming a value that is) rather than an
// infinity in the block. The block formats (Q8_0, Q4_0, MXFP4) are quantized from the
// source's values read as float, 32 at a time (block_formats.hpp), but for an MXFP4
// checkpoint's blocks, copied as they are; their panels are laid out in groups of 32 depth
// steps, and their depth must be a whole number of blocks.
#ifndef EGELU_SRC_GEMM_PACKED_WEIGHTS_HPP
#define EGELU_SRC_GEMM_PACKED_WEIGHTS_HPP

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "block_formats.hpp"
#include "kernel_memory.hpp"
#include "micro_kernel.hpp"
#include "narrow_floats.hpp"

namespace egelu {
namespace gemm {

// A matrix to pack: element (i, j) at data + (i * row_stride + j * col_stride) elements.
// F8_E4M3 codes are each multiplied by the scale of their block of block_rows x block_cols
// elements, of type scale_type at scales + (i / block_rows) * scale_row_stride + (j / block_cols)
// * scale_col_stride elements (DeepSeek-V3's weight_scale_inv).
struct matrix_view {
  const void* data;
  stored type;
  index rows, cols, row_stride, col_stride;
  const void* scales = nullptr;
  stored scale_type = stored::f32;
  index block_rows = 1, block_cols = 1, scale_row_stride = 0, scale_col_stride = 0;
};

// Bytes of 32 weights of one row.
inline std::size_t bytes_per_block(stored s) {
  switch (s) {
    case stored::f64:
      return 8 * block_length;
    case stored::f32:
      return 4 * block_length;
    case stored::bf16:
    case stored::f16:
      return 2 * block_length;
    case stored::f8_e4m3:
    case stored::e8m0:
      return block_length;
    case stored::e2m1:
      return block_length / 2;  // (two codes a byte: element() and value_at() address them)
    case stored::q8_0:
    case stored::q4_0:
    case stored::mxfp4:
      return block_bytes(s);
  }
  return 0;
}
inline std::size_t size_of(stored s) { return bytes_per_block(s) / block_length; }  // (the plain types')
inline bool is_block_format(stored s) { return s == stored::q8_0 || s == stored::q4_0 || s == stored::mxfp4; }
inline const char* name_of(stored s) {
  switch (s) {
    case stored::f64:
      return "float64";
    case stored::f32:
      return "float32";
    case stored::bf16:
      return "bfloat16";
    case stored::f16:
      return "float16";
    case stored::q8_0:
      return "q8_0";
    case stored::q4_0:
      return "q4_0";
    case stored::mxfp4:
      return "mxfp4";
    case stored::f8_e4m3:
      return "float8_e4m3";
    case stored::e2m1:
      return "mxfp4 (e2m1)";
    case stored::e8m0:
      return "e8m0";
  }
  return "?";
}

// What a value too large for the stored type throws; what() says where and why.
struct out_of_range : std::range_error {
  using std::range_error::range_error;
};

namespace detail {

template <typename From>
double as_double(const void* p) {
  From v;
  std::memcpy(&v, p, sizeof v);
  return double(v);
}
inline double read_as_double(stored type, const void* p) {
  switch (type) {
    case stored::f64:
      return as_double<double>(p);
    case stored::f32:
      return as_double<float>(p);
    case stored::bf16: {
      bf16 h;
      std::memcpy(&h, p, 2);
      return double(widen(h));
    }
    case stored::f16: {
      f16 h;
      std::memcpy(&h, p, 2);
      return double(widen(h));
    }
    case stored::f8_e4m3:
      return double(widen(e4m3{*static_cast<const unsigned char*>(p)}));
    case stored::e8m0:
      return widen(e8m0{*static_cast<const unsigned char*>(p)});
    case stored::e2m1:
      throw std::invalid_argument("e2m1 codes are two a byte: read them with value_at");
    case stored::q8_0:
    case stored::q4_0:
    case stored::mxfp4:
      break;  // (never a source)
  }
  return 0;
}

// Element (i, j) of a view: its bytes, and its value as a double (an F8 code times its
// block's scale: exact, 4 significant bits times 24 at most; an MXFP4 code, 2 bits, times a
// power of two). An e2m1 view's strides count codes, two a byte, the low nibble first.
inline const unsigned char* element(const matrix_view& s, index i, index j) {
  return static_cast<const unsigned char*>(s.data) + std::size_t(i * s.row_stride + j * s.col_stride) * size_of(s.type);
}
inline bool is_scaled(stored s) { return s == stored::f8_e4m3 || s == stored::e2m1; }
// a / b for a scale's block, b > 0 (the checkpoint reader refuses others): a shift for the
// powers of two every format has (an integer division an element made packing a
// checkpoint's FP8 or MXFP4 weights four times slower).
inline index block_of(index a, index b) {
  return b > 0 && (b & (b - 1)) == 0 ? a >> __builtin_ctzll(std::uint64_t(b)) : a / b;
}
// Which of the view's scales element (i, j) is multiplied by (an index of scales).
inline std::size_t scale_index(const matrix_view& s, index i, index j) {
  return std::size_t(block_of(i, s.block_rows) * s.scale_row_stride + block_of(j, s.block_cols) * s.scale_col_stride);
}
inline double value_at(const matrix_view& s, index i, index j) {
  double v;
  if (s.type == stored::e2m1) {
    const std::size_t code = std::size_t(i * s.row_stride + j * s.col_stride);
    const unsigned byte = static_cast<const unsigned char*>(s.data)[code / 2];
    v = double(widen(e2m1{std::uint8_t(code % 2 ? byte >> 4 : byte & 15u)}));
  } else {
    v = read_as_double(s.type, element(s, i, j));
  }
  if (!is_scaled(s.type)) return v;
  return v * read_as_double(s.scale_type,
                            static_cast<const unsigned char*>(s.scales) + scale_index(s, i, j) * size_of(s.scale_type));
}

// A plain value as a double (exact).
template <typename From>
double exact_double(From v) {
  if constexpr (std::is_same_v<From, bf16> || std::is_same_v<From, f16>) {
    return double(widen(v));
  } else {
    return double(v);
  }
}

// A value converted to the stored type To; `ok` turns false when a finite value does not
// fit. Widening is exact; narrowing goes through double, rounded once to nearest even.
template <typename To, typename From>
To convert(From v, bool& ok) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else {
    const double wide = exact_double(v);
    To narrow{};
    float narrowed = 0.f;  // (the stored value, as a float)
    if constexpr (std::is_same_v<To, double>) {
      return wide;
    } else if constexpr (std::is_same_v<To, float>) {
      narrow = narrowed = float(wide);  // to nearest even
    } else if constexpr (std::is_same_v<To, bf16>) {
      narrow = round_to_bf16(wide);
      narrowed = widen(narrow);
    } else {
      narrow = round_to_f16(wide);
      narrowed = widen(narrow);
    }
    ok = ok && (std::isfinite(narrowed) || !std::isfinite(wide));
    return narrow;
  }
}

// Calls f with a function (i, j) -> element (i, j) of the view: a plain type read as
// itself (no test of the type per element: packing a checkpoint's bf16 weights runs at
// copying speed), a scaled code (F8, E2M1) as its value times its block's scale, a double.
// FP8 codes with f32, bf16 or f16 scales (every release's) are read without a test of
// either type per element too (value_at's two tests made packing them into f32 four times
// as slow); E2M1 read as values (not copied: pack_blocks) and other scales go through
// value_at.
template <typename F>
void with_reader(const matrix_view& s, F&& f) {
  const auto typed = [&s](auto type_tag) {
    using From = decltype(type_tag);
    return [base = static_cast<const unsigned char*>(s.data), rs = s.row_stride, cs = s.col_stride](index i, index j) {
      From v;
      std::memcpy(&v, base + std::size_t(i * rs + j * cs) * sizeof(From), sizeof v);
      return v;
    };
  };
  // (the code's value, 4 significant bits, times a scale's, 24 at most: exact in double)
  const auto fp8_scaled_by = [&s](auto scale_tag) {
    using Scale = decltype(scale_tag);
    return [&s](index i, index j) {
      Scale scale;
      std::memcpy(&scale, static_cast<const unsigned char*>(s.scales) + scale_index(s, i, j) * sizeof(Scale),
                  sizeof scale);
      const auto code = static_cast<const unsigned char*>(s.data)[std::size_t(i * s.row_stride + j * s.col_stride)];
      return double(widen(e4m3{code})) * exact_double(scale);
    };
  };
  switch (s.type) {
    case stored::f32:
      return f(typed(float{}));
    case stored::f64:
      return f(typed(double{}));
    case stored::bf16:
      return f(typed(bf16{}));
    case stored::f16:
      return f(typed(f16{}));
    case stored::f8_e4m3:
      if (s.scale_type == stored::f32) return f(fp8_scaled_by(float{}));
      if (s.scale_type == stored::bf16) return f(fp8_scaled_by(bf16{}));
      if (s.scale_type == stored::f16) return f(fp8_scaled_by(f16{}));
      break;
    default:
      break;
  }
  return f([&s](index i, index j) { return value_at(s, i, j); });
}

}  // namespace detail

// How a matrix is cut: depth blocks of kc, row blocks of mc (a multiple of the kernel's mv).
// A block format's kc is made a whole number of its blocks.
struct blocking {
  index kc = 256, mc = 192;
};

class packed_weights {
 public:
  packed_weights() = default;

  // source packed as `type` for a kernel of mv rows, cut as b says; paired_steps (Q8_0 and
  // bfloat16 only, the kernels saying so: kernel::paired_steps): the steps in pairs, row
  // i's steps 2s and 2s + 1 adjacent, as Q8_0's integer kernels read each group
  // (block_formats.hpp) and the AVX-512 bfloat16 kernel each depth block (the last step of
  // a block of odd length as it is).
  // Throws out_of_range when a finite value does not fit the stored type (or a block
  // format's scale, or is not finite there), std::invalid_argument when a block format's
  // depth is not a whole number of blocks.
  packed_weights(const matrix_view& source, stored type, int mv, blocking b, bool paired_steps = false)
      : type_(type),
        paired_(paired_steps && (type == stored::q8_0 || type == stored::bf16)),
        rows_(source.rows),
        depth_(source.cols),
        mv_(mv),
        kc_(is_block_format(type) ? std::max<index>(1, b.kc / block_length) * block_length : std::max<index>(1, b.kc)),
        mc_(std::max<index>(1, b.mc / mv) * mv) {
    if (is_block_format(type) && depth_ % block_length != 0) {
      throw std::invalid_argument("its input dimension, " + std::to_string(depth_) + " (the matrix is " +
                                  std::to_string(rows_) + " x " + std::to_string(depth_) +
                                  "), is not a whole number of " + name_of(type) + "'s blocks of " +
                                  std::to_string(block_length));
    }
    bytes_ = allocate(bytes());
    if (type == stored::f8_e4m3 || type == stored::e2m1 || type == stored::e8m0)
      throw std::invalid_argument(std::string(name_of(type)) + " is a source, not a packed format");
    detail::with_reader(source, [&](auto read) {
      switch (type) {
        case stored::f32:
          return pack<float>(source, read);
        case stored::f64:
          return pack<double>(source, read);
        case stored::bf16:
          return pack<bf16>(source, read);
        case stored::f16:
          return pack<f16>(source, read);
        default:
          return pack_blocks(source, read);
      }
    });
  }

  stored type() const { return type_; }
  bool paired_steps() const { return paired_; }
  index rows() const { return rows_; }
  index depth() const { return depth_; }
  int mv() const { return mv_; }
  // Bytes held: the block's resident weight memory.
  std::size_t bytes() const { return offset_of(std::size_t((rows_ + mv_ - 1) / mv_ * mv_ * depth_)); }

  index row_blocks() const { return (rows_ + mc_ - 1) / mc_; }
  index depth_blocks() const { return (depth_ + kc_ - 1) / kc_; }
  index row_start(index r) const { return r * mc_; }
  index row_size(index r) const { return std::min(mc_, rows_ - r * mc_); }
  index depth_start(index k) const { return k * kc_; }
  index depth_block_of(index d) const { return d / kc_; }
  index depth_size(index k) const { return std::min(kc_, depth_ - k * kc_); }
  index panels(index r) const { return (row_size(r) + mv_ - 1) / mv_; }

  // Panel p of row block r at depth block k.
  const void* panel(index r, index k, index p) const {
    const index padded_rows = panels(r) * mv_;
    const index element = row_start(r) * depth_ + depth_start(k) * padded_rows + p * mv_ * depth_size(k);
    return bytes_.get() + offset_of(std::size_t(element));
  }
  index mc() const { return mc_; }
  index kc() const { return kc_; }

 private:
  // The bytes before weight `element` of the panels' order (a whole number of blocks for
  // a block format: depth and kc are).
  std::size_t offset_of(std::size_t element) const {
    return is_block_format(type_) ? element / block_length * bytes_per_block(type_) : element * size_of(type_);
  }

  // A block format's panels: each group of 32 depth steps of each row quantized from its
  // values read as float, then written in the group's layout (block_formats.hpp). Rows
  // past the last quantize 32 zeros. MXFP4 from a checkpoint's MXFP4 blocks (E2M1 codes
  // along a row, one E8M0 scale per 32 of them) copies the codes and the scale: the same
  // weights exactly, as quantizing their values would give (block_formats.hpp), in the
  // release's own bytes and some 80 times faster -- but for scales of 253 and up, where a
  // code's value can overflow float: those go through their values (to the error naming
  // a weight that overflows).
  template <typename Read>
  void pack_blocks(const matrix_view& s, Read read) {
    const bool copy_mxfp4 = type_ == stored::mxfp4 && s.type == stored::e2m1 && s.scale_type == stored::e8m0 &&
                            s.block_rows == 1 && s.block_cols == block_length && s.col_stride == 1 &&
                            s.row_stride % 2 == 0;
    for (index r = 0; r < row_blocks(); ++r) {
      for (index k = 0; k < depth_blocks(); ++k) {
        for (index p = 0; p < panels(r); ++p) {
          auto* group = static_cast<unsigned char*>(const_cast<void*>(panel(r, k, p)));
          const index first = row_start(r) + p * mv_;
          for (index g = 0; g < depth_size(k); g += block_length, group += group_bytes(type_, mv_)) {
            const index start = depth_start(k) + g;
            for (index i = 0; i < mv_; ++i) {
              const index row = first + i;
              if (copy_mxfp4 && row < rows_) {
                const std::uint8_t scale = static_cast<const std::uint8_t*>(
                    s.scales)[row * s.scale_row_stride + start / block_length * s.scale_col_stride];
                if (scale < 253) {
                  const auto* codes = static_cast<const std::uint8_t*>(s.data) + (row * s.row_stride + start) / 2;
                  group[i] = scale;
                  for (int pair = 0; pair < block_length / 2; ++pair) group[mv_ + pair * mv_ + i] = codes[pair];
                  continue;
                }
              }
              float x[block_length] = {};
              for (index d = 0; row < rows_ && d < block_length; ++d) {
                bool ok = true;
                x[d] = detail::convert<float>(read(row, start + d), ok);
                if (!ok || !std::isfinite(x[d])) fail(s, row, start + d);
              }
              if (type_ == stored::q8_0) {
                const q8_0_block b = quantize_q8_0(x);
                if (!scale_fits(b.d)) fail_scale(row, start);
                std::memcpy(group + 2 * i, &b.d, 2);
                for (int d = 0; d < block_length; ++d) {
                  const index at = paired_ ? d / 2 * 2 * mv_ + 2 * i + d % 2 : d * mv_ + i;
                  group[2 * mv_ + at] = std::uint8_t(b.q[d]);
                }
              } else if (type_ == stored::mxfp4) {
                const mxfp4_block b = quantize_mxfp4(x);
                group[i] = b.scale;
                for (int d = 0; d < block_length; d += 2)
                  group[mv_ + d / 2 * mv_ + i] = std::uint8_t(b.code[d] | b.code[d + 1] << 4);
              } else {
                const q4_0_block b = quantize_q4_0(x);
                if (!scale_fits(b.d)) fail_scale(row, start);
                std::memcpy(group + 2 * i, &b.d, 2);
                constexpr int half = block_length / 2;
                for (int d = 0; d < block_length; d += 2) {
                  const int low = d < half ? b.q[d] & 15 : b.q[d - half] >> 4;
                  const int high = d + 1 < half ? b.q[d + 1] & 15 : b.q[d + 1 - half] >> 4;
                  group[2 * mv_ + d / 2 * mv_ + i] = std::uint8_t(low | high << 4);
                }
              }
            }
          }
        }
      }
    }
  }

  [[noreturn]] void fail_scale(index i, index j) const {
    throw out_of_range("the block of 32 weights at (" + std::to_string(i) + ", " + std::to_string(j) + ") to (" +
                       std::to_string(i) + ", " + std::to_string(j + block_length - 1) + ") has a scale beyond " +
                       name_of(type_) + "'s half-precision range");
  }

  // A plain type's panels, element by element, the source read in its own order: a row
  // at a time where its rows run along the depth (nn.Linear's weights), a step at a time
  // where its columns do (GPT-2's Conv1D).
  template <typename To, typename Read>
  void pack(const matrix_view& s, Read read) {
    for (index r = 0; r < row_blocks(); ++r) {
      for (index k = 0; k < depth_blocks(); ++k) {
        for (index p = 0; p < panels(r); ++p) {
          To* out = static_cast<To*>(const_cast<void*>(panel(r, k, p)));
          const index first = row_start(r) + p * mv_, rows = std::min<index>(mv_, rows_ - first);
          const index paired_depth = paired_ ? depth_size(k) / 2 * 2 : 0;
          const auto put = [&](index d, index i) {
            bool ok = true;
            const index at = d < paired_depth ? d / 2 * 2 * mv_ + 2 * i + d % 2 : d * mv_ + i;
            out[at] = detail::convert<To>(read(first + i, depth_start(k) + d), ok);
            if (!ok) fail(s, first + i, depth_start(k) + d);
          };
          if (s.col_stride == 1) {
            for (index run = 0; run < depth_size(k); run += 32)  // (a row's 32 steps: a line or two of it)
              for (index i = 0; i < rows; ++i)
                for (index d = run; d < std::min(run + 32, depth_size(k)); ++d) put(d, i);
          } else {
            for (index d = 0; d < depth_size(k); ++d)
              for (index i = 0; i < rows; ++i) put(d, i);
          }
        }
      }
    }
  }

  [[noreturn]] void fail(const matrix_view& s, index i, index j) const {
    std::ostringstream m;
    m.precision(9);
    // (A block format quantizes floats: a finite value beyond float's range is beyond float's.)
    const double v = detail::value_at(s, i, j);
    const bool beyond_float = std::isfinite(v) && std::fabs(v) > double(std::numeric_limits<float>::max());
    m << "the value " << v << " at (" << i << ", " << j << ")";
    if (is_block_format(type_) && !beyond_float) {
      m << " cannot be quantized to " << name_of(type_);
    } else {
      m << " is beyond " << (is_block_format(type_) ? name_of(stored::f32) : name_of(type_)) << "'s range";
    }
    throw out_of_range(m.str());
  }

  stored type_ = stored::f32;
  bool paired_ = false;
  index rows_ = 0, depth_ = 0;
  int mv_ = 1;
  index kc_ = 1, mc_ = 1;
  // The weights' memory (kernel_memory.hpp: huge pages from 2 MiB up, a cache line below),
  // zeroed, so that the panels' padding is zero.
  using release = free_kernel_memory;
  static std::unique_ptr<unsigned char, release> allocate(std::size_t n) {
    void* p = allocate_kernel_memory(n);
    std::memset(p, 0, std::max<std::size_t>(n, 1));
    return std::unique_ptr<unsigned char, release>(static_cast<unsigned char*>(p));
  }
  std::unique_ptr<unsigned char, release> bytes_;
};

}  // namespace gemm
}  // namespace egelu

#endif  // EGELU_SRC_GEMM_PACKED_WEIGHTS_HPP
