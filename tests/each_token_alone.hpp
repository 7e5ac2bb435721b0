// A block's outputs computed one token a call: what a call of many tokens must equal bit
// for bit, whatever its token blocks, chunks and threads (each token's sums in a fixed order).
#ifndef EGELU_TESTS_EACH_TOKEN_ALONE_HPP
#define EGELU_TESTS_EACH_TOKEN_ALONE_HPP

#include <Eigen/Core>
#include <cmath>

template <typename Block, typename Matrix>
Matrix each_token_alone(const Block& block, const Matrix& x) {
  Matrix alone = Matrix::Constant(x.rows(), x.cols(), NAN);  // poisoned: an unwritten token shows
  for (Eigen::Index t = 0; t < x.cols(); ++t) {
    Matrix column(x.rows(), 1);
    block.forward(x.col(t), column);
    alone.col(t) = column;
  }
  return alone;
}

#endif  // EGELU_TESTS_EACH_TOKEN_ALONE_HPP
