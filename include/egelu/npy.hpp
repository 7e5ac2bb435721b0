// A strict reader for NumPy .npy files (float32/float64, C order, format
// versions 1.0, 2.0 and 3.0), for loading weights and test fixtures.
//
// Anything else -- bad magic, a truncated or malformed header, another dtype or
// byte order, Fortran order, a data section of the wrong length -- throws
// egelu::npy::format_error naming the file and the problem; a shape other than
// the one asked for throws std::invalid_argument naming both shapes.
#ifndef EGELU_NPY_HPP
#define EGELU_NPY_HPP

#include <Eigen/Core>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace egelu {
namespace npy {

class format_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The parsed contents of a .npy file.
struct Array {
  std::string name;                 // file name (for messages)
  bool is_double = false;           // '<f8' (else '<f4')
  std::vector<std::size_t> shape;   // C order
  std::vector<unsigned char> data;  // little-endian values, shape's product of them

  std::size_t size() const;
  std::string shape_string() const;  // "(3, 4)"
  /// The values converted to Scalar (float or double).
  template <typename Scalar>
  std::vector<Scalar> values() const;
};

/// Parses the bytes of a .npy file; `name` is used in error messages.
Array parse(const void* bytes, std::size_t size, const std::string& name);

/// Reads and parses a .npy file.
Array load(const std::string& path);

template <typename Scalar>
using RowMajorMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A 2-D array of shape (rows, cols).
template <typename Scalar>
RowMajorMatrix<Scalar> load_matrix(const std::string& path, Eigen::Index rows, Eigen::Index cols);

/// A 1-D array of shape (size,).
template <typename Scalar>
Eigen::Matrix<Scalar, Eigen::Dynamic, 1> load_vector(const std::string& path, Eigen::Index size);

}  // namespace npy
}  // namespace egelu

#endif  // EGELU_NPY_HPP
