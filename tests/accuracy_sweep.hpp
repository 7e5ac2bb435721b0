// Shared by the accuracy test and the full-sweep tool: runs a functor over a
// set of inputs through Eigen's vectorized path (the scalar tail included) and
// measures the worst error against the quad-precision reference.
#ifndef EGELU_TESTS_ACCURACY_SWEEP_HPP
#define EGELU_TESTS_ACCURACY_SWEEP_HPP

#include <algorithm>
#include <egelu/egelu.hpp>
#include <limits>
#include <thread>
#include <vector>

#include "reference.hpp"

namespace accuracy {

struct Worst {
  double ulp = 0;           // over inputs whose exact result is a normal number
  double relative_one = 0;  // |got - exact| / (1 + |exact|), over all inputs
  double at = 0;            // the input with the worst ulp error
  long count = 0;

  void merge(const Worst& o) {
    if (o.ulp > ulp) {
      ulp = o.ulp;
      at = o.at;
    }
    relative_one = std::max(relative_one, o.relative_one);
    count += o.count;
  }
};

using Reference = reference::quad (*)(reference::quad);

template <typename T, typename Op>
Worst measure(const std::vector<T>& inputs, Op op, Reference exact) {
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> x(inputs.data(), Eigen::Index(inputs.size()));
  Eigen::Array<T, Eigen::Dynamic, 1> y =
      Eigen::Array<T, Eigen::Dynamic, 1>::Constant(x.size(), std::numeric_limits<T>::quiet_NaN());
  y = x.unaryExpr(op);
  // The quad-precision reference dominates the time: split it over the cores.
  const unsigned parts = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Worst> worst(parts);
  std::vector<std::thread> threads;
  for (unsigned p = 0; p < parts; ++p) {
    threads.emplace_back([&, p] {
      Worst& w = worst[p];
      for (Eigen::Index i = p; i < x.size(); i += parts) {
        const reference::quad e = exact(reference::quad(x(i)));
        const double rel = double(fabsq(reference::quad(y(i)) - e) / (1 + fabsq(e)));
        w.relative_one = std::max(w.relative_one, std::isnan(double(y(i))) ? 1e300 : rel);
        if (reference::is_normal_result<T>(e)) {
          const double u = reference::ulp_error(y(i), e);
          if (u > w.ulp) {
            w.ulp = u;
            w.at = double(x(i));
          }
        }
        ++w.count;
      }
    });
  }
  for (auto& t : threads) t.join();
  Worst total;
  for (const auto& w : worst) total.merge(w);
  return total;
}

// Every float in [lo, hi).
inline std::vector<float> every_float(float lo, float hi) {
  std::vector<float> v;
  for (float x = lo; x < hi; x = std::nextafter(x, hi)) v.push_back(x);
  return v;
}

}  // namespace accuracy

#endif  // EGELU_TESTS_ACCURACY_SWEEP_HPP
