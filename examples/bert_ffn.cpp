// Placeholder until the fused feed-forward block lands: a small dense and Tensor demo.
#include <cstdio>

#include <egelu/egelu.hpp>

int main() {
  Eigen::ArrayXf x(5);
  x << -3, -1, 0, 1, 3;
  const Eigen::ArrayXf y = egelu::gelu(x), z = egelu::gelu_exact(x);
  Eigen::Tensor<float, 2> t(2, 3);
  t.setValues({{-2, -0.5, 0}, {0.5, 1, 2}});
  const Eigen::Tensor<float, 2> u = egelu::gelu(t);
  for (Eigen::Index i = 0; i < x.size(); ++i) std::printf("gelu(%g) = %.6f   gelu_exact = %.6f\n", x(i), y(i), z(i));
  std::printf("tensor: gelu(t)(1, 2) = %.6f\n", u(1, 2));
  return 0;
}
