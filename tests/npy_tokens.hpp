// Token matrices from the PyTorch fixtures, for the block tests.
#ifndef EGELU_TESTS_NPY_TOKENS_HPP
#define EGELU_TESTS_NPY_TOKENS_HPP

#include <Eigen/Core>
#include <egelu/npy.hpp>
#include <string>
#include <vector>

// A (T, d) row-major array in the file, as PyTorch writes a batch of tokens: d x T
// column-major here, a token a column.
template <typename Scalar>
Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> tokens(const std::string& path) {
  const egelu::npy::Array a = egelu::npy::load(path);
  const std::vector<Scalar> v = a.values<Scalar>();
  return Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>>(v.data(), Eigen::Index(a.shape[1]),
                                                                                 Eigen::Index(a.shape[0]));
}

#endif  // EGELU_TESTS_NPY_TOKENS_HPP
