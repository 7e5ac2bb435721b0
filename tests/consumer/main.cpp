// Uses both installed targets: egelu::egelu (header-only) and egelu::nn (FeedForward).
#include <cmath>
#include <cstdio>
#include <egelu/egelu.hpp>
#include <egelu/feed_forward.hpp>

int main() {
  Eigen::ArrayXf x(3);
  x << -1, 0, 1;
  const Eigen::ArrayXf y = egelu::gelu(x);
  bool ok = std::abs(y(0) + 0.158808f) < 1e-5f && y(1) == 0 && std::abs(y(2) - 0.841192f) < 1e-5f;

  using FF = egelu::FeedForward<float>;
  FF block(FF::Weights::Zero(8, 4), FF::Vector::Zero(8), FF::Weights::Zero(4, 8), FF::Vector::Zero(4),
           FF::Vector::Ones(4), FF::Vector::Zero(4));
  FF::Matrix tokens(4, 1), out(4, 1);
  tokens << 1, 2, 3, 4;
  block.forward(tokens, out);  // LayerNorm of [1 2 3 4]: mean 2.5, variance 1.25
  ok = ok && std::abs(out(0) + 1.5f / std::sqrt(1.25f)) < 1e-5f;
  std::printf("consumer: gelu([-1, 0, 1]) = [%.6f, %.6f, %.6f], block ok: %d -> %s\n", y(0), y(1), y(2),
              int(std::abs(out(0) + 1.5f / std::sqrt(1.25f)) < 1e-5f), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
