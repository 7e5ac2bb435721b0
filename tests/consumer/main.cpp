#include <cmath>
#include <cstdio>

#include <egelu/egelu.hpp>

int main() {
  Eigen::ArrayXf x(3);
  x << -1, 0, 1;
  const Eigen::ArrayXf y = egelu::gelu(x);
  const bool ok = std::abs(y(0) + 0.158808f) < 1e-5f && y(1) == 0 && std::abs(y(2) - 0.841192f) < 1e-5f;
  std::printf("consumer: gelu([-1, 0, 1]) = [%.6f, %.6f, %.6f] %s\n", y(0), y(1), y(2), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
