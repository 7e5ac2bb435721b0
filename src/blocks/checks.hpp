// The blocks' argument checks: wrong shapes throw std::invalid_argument naming both.
#ifndef EGELU_SRC_BLOCKS_CHECKS_HPP
#define EGELU_SRC_BLOCKS_CHECKS_HPP

#include <cmath>
#include <egelu/egelu.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

namespace egelu {
namespace blocks {

inline std::string shape(Eigen::Index rows, Eigen::Index cols) {
  std::ostringstream s;
  s << rows << "x" << cols;
  return s.str();
}

// Throws "<block>: <what> is RxC but must be R'xC' (<why>)" unless ok.
inline void require(bool ok, const char* block, const std::string& what, Eigen::Index rows, Eigen::Index cols,
                    Eigen::Index want_rows, Eigen::Index want_cols, const std::string& why) {
  if (!ok) {
    throw std::invalid_argument(std::string(block) + ": " + what + " is " + shape(rows, cols) + " but must be " +
                                shape(want_rows, want_cols) + " (" + why + ")");
  }
}

// The factor on a block's MLP output (Options::output_scale): any finite number.
template <typename Scalar>
void check_output_scale(const char* block, Scalar scale) {
  if (!std::isfinite(scale)) {
    throw std::invalid_argument(std::string(block) + ": output_scale must be finite, not " +
                                std::to_string(double(scale)));
  }
}

// x and y of forward(): d x T both, and y either x itself or apart from it. Returns
// whether y is x.
template <typename X, typename Y>
bool check_tokens(const char* block, const X& x, const Y& y, Eigen::Index d) {
  const Eigen::Index tokens = x.cols();
  require(x.rows() == d, block, "x", x.rows(), x.cols(), d, tokens, "d_model x tokens");
  require(y.rows() == d && y.cols() == tokens, block, "y", y.rows(), y.cols(), d, tokens, "the shape of x");
  const bool in_place = y.data() == x.data() && y.outerStride() == x.outerStride();
  if (!in_place && tokens > 0 && internal::overlap(internal::bytes_of(x), internal::bytes_of(y))) {
    throw std::invalid_argument(std::string(block) + ": y overlaps x without being x");
  }
  return in_place;
}

// f(), with `reason` added to the message of the std::invalid_argument it throws (which
// file a shape comes from).
template <typename F>
auto with_reason(const std::string& reason, const F& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(e.what() + reason);
  }
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_CHECKS_HPP
