// Bias + GELU inside Eigen's Tensor contraction: an OutputKernel (see
// NoOpOutputKernel in TensorContraction.h) that finishes each output block
// while it is still in cache, on the default device and on ThreadPoolDevice.
#ifndef EGELU_INTERNAL_BIAS_GELU_OUTPUT_KERNEL_HPP
#define EGELU_INTERNAL_BIAS_GELU_OUTPUT_KERNEL_HPP

#include <limits>
#include <stdexcept>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>

#include "dense_api.hpp"

namespace egelu {
namespace internal {

// out(r, c) = Op(out(r, c) + bias[r]) over the contraction's output viewed as a
// matrix: rows are the left operand's free indices, columns the right one's.
// The bias is not copied: it must outlive the evaluation.
template <typename Scalar, typename Op>
class bias_activation_output_kernel {
 public:
  bias_activation_output_kernel(const Scalar* bias, Eigen::Index size) : bias_(bias), size_(size) {}

  /// From any contiguous dense vector or rank-1 Tensor (kept by pointer). A
  /// strided vector (a row of a column-major matrix) or a matrix throws
  /// std::invalid_argument: the kernel reads bias[0 .. size) contiguously.
  template <typename Vector,
            typename = std::enable_if_t<!std::is_base_of<bias_activation_output_kernel, Vector>::value>>
  explicit bias_activation_output_kernel(const Vector& bias) : bias_(bias.data()), size_(bias.size()) {
    if constexpr (std::is_base_of<Eigen::TensorBase<Vector, Eigen::ReadOnlyAccessors>, Vector>::value) {
      static_assert(Vector::NumDimensions == 1, "egelu: the bias of an output kernel must be a rank-1 tensor");
    } else if constexpr (std::is_base_of<Eigen::DenseBase<Vector>, Vector>::value) {
      if ((bias.rows() != 1 && bias.cols() != 1) || (bias.size() > 1 && bias.innerStride() != 1)) {
        throw std::invalid_argument("egelu: the bias of an output kernel must be a contiguous vector, but it is " +
                                    shape_of(bias) + " with inner stride " + std::to_string(bias.innerStride()));
      }
    }
  }

  const Scalar* bias() const { return bias_; }
  Eigen::Index size() const { return size_; }

  // `out` is already positioned at the block, whose place in the whole output is (i, j).
  // A bias of the wrong length cannot be reported from here (blocks may run on
  // pool threads), so the block is set to NaN rather than read past the bias.
  template <typename Index>
  EIGEN_ALWAYS_INLINE void operator()(const Eigen::internal::blas_data_mapper<Scalar, Index, Eigen::ColMajor>& out,
                                      const Eigen::TensorContractionParams& params, Index i, Index j, Index num_rows,
                                      Index num_cols) const {
    using Column = Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>;
    if (is_whole_line(out, i, j, num_rows, num_cols) && size_ == 1) {
      // One output row whose columns Eigen master's direct GEMV hands over as a column.
      Column line(&out(0, 0), num_rows);
      line = (line + bias_[0]).unaryExpr(Op());
    } else if (!params.swapped_arguments || is_whole_line(out, i, j, num_rows, num_cols)) {
      // ColMajor: the output's rows are the mapper's rows, and its stride is their count
      // (or RowMajor's one output column, which Eigen master hands over that way).
      if (out.stride() != size_) return set_nan(out, num_rows, num_cols);
      const Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>> bias(bias_ + i, num_rows);
      for (Index c = 0; c < num_cols; ++c) {
        Column column(&out(0, c), num_rows);
        column = (column + bias).unaryExpr(Op());
      }
    } else {
      // RowMajor: Eigen contracted the transposed problem, so the output's rows are
      // the mapper's columns; their count is not visible here, only a bias too short.
      if (j + num_cols > size_) return set_nan(out, num_rows, num_cols);
      for (Index c = 0; c < num_cols; ++c) {
        Column column(&out(0, c), num_rows);
        column = (column + bias_[j + c]).unaryExpr(Op());
      }
    }
  }

 private:
  // The whole output as one line: a block of one column, the mapper's stride its length.
  // Either a column of output rows (the ColMajor GEMV) or a row of output columns: Eigen
  // master's direct GEMV (TensorContraction.h, evalGemvDirect) hands an output of one row
  // (ColMajor) or one column (RowMajor) over as it lies in memory, whatever the layout.
  // The bias tells which: one number per output row, or one number for the one row.
  // (So a one-number bias for a column of several rows cannot be caught as too short.)
  template <typename Mapper, typename Index>
  static bool is_whole_line(const Mapper& out, Index i, Index j, Index num_rows, Index num_cols) {
    return num_cols == 1 && i == 0 && j == 0 && num_rows > 1 && out.stride() == num_rows;
  }

  template <typename Mapper, typename Index>
  static void set_nan(const Mapper& out, Index num_rows, Index num_cols) {
    for (Index c = 0; c < num_cols; ++c)
      Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>(&out(0, c), num_rows)
          .setConstant(std::numeric_limits<Scalar>::quiet_NaN());
  }

  const Scalar* bias_;
  Eigen::Index size_;
};

}  // namespace internal

/// Output kernel for `TensorBase::contract(other, dims, kernel)`: out = gelu(out + bias[row]), tanh form
/// (gelu_tanh_op), applied to each block of the contraction's output while it is in cache.
///
/// Rows are the left operand's free index. Both layouts, any device. Made from a contiguous dense
/// vector or a rank-1 Tensor (or a pointer and a length), which it keeps by pointer: the bias must
/// outlive the evaluation and have one entry per output row. A strided vector or a matrix throws
/// std::invalid_argument when the kernel is made. The kernel runs inside the contraction, possibly
/// on pool threads, so it cannot throw: a bias of the wrong length sets the output to NaN (ColMajor),
/// or the rows it lacks (RowMajor, where a bias that is too long cannot be seen).
/// @tparam Scalar float or double.
template <typename Scalar>
using BiasGeluOutputKernel = internal::bias_activation_output_kernel<Scalar, gelu_tanh_op<Scalar>>;

/// Output kernel for `TensorBase::contract(other, dims, kernel)`: out = gelu_exact(out + bias[row])
/// (gelu_erf_op); otherwise as BiasGeluOutputKernel.
/// @tparam Scalar float or double.
template <typename Scalar>
using BiasGeluExactOutputKernel = internal::bias_activation_output_kernel<Scalar, gelu_erf_op<Scalar>>;

namespace fast {

/// Output kernel for `TensorBase::contract(other, dims, kernel)` with the opt-in fast tanh form:
/// out = fast::gelu(out + bias[row]) (fast::gelu_tanh_op); otherwise as egelu::BiasGeluOutputKernel.
/// @tparam Scalar float or double.
template <typename Scalar>
using BiasGeluOutputKernel = internal::bias_activation_output_kernel<Scalar, gelu_tanh_op<Scalar>>;

/// Output kernel for `TensorBase::contract(other, dims, kernel)` with the opt-in fast exact form:
/// out = fast::gelu_exact(out + bias[row]) (fast::gelu_erf_op); otherwise as egelu::BiasGeluOutputKernel.
/// @tparam Scalar float or double.
template <typename Scalar>
using BiasGeluExactOutputKernel = internal::bias_activation_output_kernel<Scalar, gelu_erf_op<Scalar>>;

}  // namespace fast
}  // namespace egelu

#endif  // EGELU_INTERNAL_BIAS_GELU_OUTPUT_KERNEL_HPP
