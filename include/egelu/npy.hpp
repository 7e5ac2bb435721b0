// A strict reader for NumPy .npy files (float32/float64, C order, format
// versions 1.0, 2.0 and 3.0), for loading weights and test fixtures.
//
// Anything else -- bad magic, a truncated or malformed header, another dtype or
// byte order, Fortran order, a data section of the wrong length -- throws
// egelu::npy::format_error naming the file and the problem; a shape other than
// the one asked for throws std::invalid_argument naming both shapes.
//
// Part of the compiled library egelu::nn. The matrices and vectors it returns are
// made here, in the program's own code, from the library's plain arrays, so that
// no Eigen object changes hands (docs/DESIGN.md, "The compiled library").
/// @file
/// The strict .npy reader egelu::npy, of the compiled library egelu::nn.
#ifndef EGELU_NPY_HPP
#define EGELU_NPY_HPP

#include <cstddef>
#include <egelu/internal/nn_api.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace egelu {
/// A strict reader for NumPy .npy files: float32 or float64, little-endian, C order, format versions
/// 1.0, 2.0 and 3.0, for loading weights and test fixtures.
///
/// Anything else (bad magic, a truncated or malformed header, another dtype or byte order, Fortran
/// order, a data section of the wrong length) throws format_error naming the file and the problem; a
/// shape other than the one asked for throws std::invalid_argument naming both shapes. Part of the
/// compiled library egelu::nn (`#include <egelu/npy.hpp>`).
namespace npy {

/// What the reader throws for a file it cannot open or read, or that is not a .npy file it accepts;
/// what() names the file and the problem.
class EGELU_NN_API format_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The parsed contents of a .npy file.
struct EGELU_NN_API Array {
  std::string name;                 ///< The file's name (for messages).
  bool is_double = false;           ///< '<f8' (else '<f4').
  std::vector<std::size_t> shape;   ///< The shape, in C order.
  std::vector<unsigned char> data;  ///< Little-endian values, shape's product of them.

  /// The number of values: the product of the shape (1 for a 0-d array).
  std::size_t size() const;
  /// The shape as NumPy prints it: "(3, 4)", "(3,)".
  std::string shape_string() const;
  /// The values converted to Scalar (float or double).
  template <typename Scalar>
  std::vector<Scalar> values() const;
};

/// Parses the bytes of a .npy file; `name` is used in error messages.
/// @throws format_error naming the file and the problem.
EGELU_NN_API Array parse(const void* bytes, std::size_t size, const std::string& name);

/// Reads and parses a .npy file.
/// @throws format_error naming the file and the problem, for a file that cannot be opened or read too.
EGELU_NN_API Array load(const std::string& path);

/// Reads and parses a .npy file whose shape must be `shape`.
/// @throws format_error naming the file and the problem.
/// @throws std::invalid_argument naming the file and both shapes when the file holds another shape.
EGELU_NN_API Array load(const std::string& path, const std::vector<std::size_t>& shape);

/// A row-major dynamic matrix: a 2-D .npy array's C order, the layout of the blocks' weights.
template <typename Scalar>
using RowMajorMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Loads a 2-D array of shape (rows, cols), converted to Scalar; built in the calling program from the
/// library's plain array.
/// @throws format_error naming the file and the problem.
/// @throws std::invalid_argument naming the file and both shapes when the file holds another shape.
template <typename Scalar>
RowMajorMatrix<Scalar> load_matrix(const std::string& path, Eigen::Index rows, Eigen::Index cols) {
  const std::vector<Scalar> v = load(path, {std::size_t(rows), std::size_t(cols)}).template values<Scalar>();
  return Eigen::Map<const RowMajorMatrix<Scalar>>(v.data(), rows, cols);
}

/// Loads a 1-D array of shape (size,), converted to Scalar; built in the calling program from the
/// library's plain array.
/// @throws format_error naming the file and the problem.
/// @throws std::invalid_argument naming the file and both shapes when the file holds another shape.
template <typename Scalar>
Eigen::Matrix<Scalar, Eigen::Dynamic, 1> load_vector(const std::string& path, Eigen::Index size) {
  const std::vector<Scalar> v = load(path, {std::size_t(size)}).template values<Scalar>();
  return Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, 1>>(v.data(), size);
}

}  // namespace npy
}  // namespace egelu

#endif  // EGELU_NPY_HPP
