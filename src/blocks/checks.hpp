// The blocks' argument checks: wrong shapes throw std::invalid_argument naming both.
#ifndef EGELU_SRC_BLOCKS_CHECKS_HPP
#define EGELU_SRC_BLOCKS_CHECKS_HPP

#include <cmath>
#include <egelu/egelu.hpp>
#include <egelu/gated_feed_forward.hpp>
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

// The norm before a gated MLP or a mixture of experts (GatedNorm `kind`, its weight's and bias's
// sizes) for d_model d (`from`: where d comes from, for messages).
inline void check_norm(const char* block, GatedNorm kind, Eigen::Index weight, Eigen::Index bias, Eigen::Index d,
                       const std::string& from) {
  constexpr const char* names[] = {"GatedNorm::rms", "GatedNorm::layer", "GatedNorm::none"};
  static_assert(int(GatedNorm::rms) == 0 && int(GatedNorm::layer) == 1 && int(GatedNorm::none) == 2,
                "names lists the norms in GatedNorm's order");
  if (kind != GatedNorm::rms && kind != GatedNorm::layer && kind != GatedNorm::none) {
    throw std::invalid_argument(std::string(block) + ": options.norm is not a GatedNorm (" + std::to_string(int(kind)) +
                                ")");
  }
  const std::string which = names[int(kind)];
  if (kind == GatedNorm::none) {
    require(weight == 0, block, "norm", weight, 1, 0, 1, "empty: " + which + " has no weight");
  } else {
    require(weight == d, block, "norm", weight, 1, d, 1, "d_model, " + from);
  }
  if (kind == GatedNorm::layer) {
    require(bias == d || bias == 0, block, "norm_bias", bias, 1, d, 1,
            "d_model, " + from + ", or empty for a LayerNorm without bias");
  } else {
    require(bias == 0, block, "norm_bias", bias, 1, 0, 1, "empty: " + which + " has no bias");
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
