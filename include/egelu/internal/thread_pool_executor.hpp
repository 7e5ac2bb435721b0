// `t.device(thread_pool_device) = egelu::gelu(x)` and the other egelu functors:
// one range per device thread, the calling thread working the first.
//
// Eigen's executor cuts the pass into about four blocks per thread and leaves
// the calling thread asleep on a barrier; on the development machine (2 cores,
// a VM) that costs about 40 us per call, so a 1M-float gelu ran 1.55-1.6x
// faster on two threads than on one. Here the caller works too, then takes any
// range no pool thread has started, and waits (yielding) only for ranges that
// are running: 1.8-1.9x (docs/DESIGN.md, "Threads"). A late pool task finds
// nothing left to claim and returns without touching the evaluator.
#ifndef EGELU_INTERNAL_THREAD_POOL_EXECUTOR_HPP
#define EGELU_INTERNAL_THREAD_POOL_EXECUTOR_HPP

#if defined(EIGEN_USE_THREADS)

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

#include "functors.hpp"

namespace egelu {
namespace internal {

template <typename Expression, bool Vectorizable>
struct thread_pool_executor {
  using Evaluator = Eigen::TensorEvaluator<Expression, Eigen::ThreadPoolDevice>;
  using StorageIndex = typename Expression::Index;
  using Range = Eigen::internal::EvalRange<Evaluator, StorageIndex, Vectorizable>;

  // Ranges 1 .. ranges-1 go to whoever claims them first; range 0 is the caller's.
  struct Claims {
    std::atomic<int> next{1}, finished{0};
  };

  static void run(const Expression& expr, const Eigen::ThreadPoolDevice& device) {
    Evaluator evaluator(expr, device);
    if (evaluator.evalSubExprsIfNeeded(nullptr)) {
      const StorageIndex size = Eigen::internal::array_prod(evaluator.dimensions());
      const int count = Eigen::TensorCostModel<Eigen::ThreadPoolDevice>::numThreads(
          double(size), evaluator.costPerCoeff(Vectorizable), device.numThreads());
      if (count <= 1) {
        Range::run(&evaluator, 0, size);
      } else {
        run_split(evaluator, device, size, count);
      }
    }
    evaluator.cleanup();
  }

 private:
  static void run_split(Evaluator& evaluator, const Eigen::ThreadPoolDevice& device, StorageIndex size, int count) {
    const StorageIndex step = std::min(size, Range::alignBlockSize((size + count - 1) / count));
    const auto run_range = [&evaluator, size, step](int k) {
      const StorageIndex first = std::min(size, StorageIndex(k) * step);
      Range::run(&evaluator, first, std::min(size, first + step));
    };
    const int ranges = int((size + step - 1) / step);
    const auto claims = std::make_shared<Claims>();
    // Run ranges until none is left to claim: the pool tasks, then the caller after range 0.
    const auto work_off = [claims, run_range, ranges] {
      for (int k; (k = claims->next.fetch_add(1)) < ranges;) {
        run_range(k);
        claims->finished.fetch_add(1, std::memory_order_release);
      }
    };
    // The pool itself: ThreadPoolDevice's enqueueNoNotification is deprecated in Eigen 5,
    // and its enqueue returns a Notification to delete in 3.4 but nothing in 5.
    for (int t = 1; t < ranges; ++t) device.getPool()->Schedule(work_off);
    run_range(0);
    work_off();
    while (claims->finished.load(std::memory_order_acquire) != ranges - 1) std::this_thread::yield();
  }
};

}  // namespace internal
}  // namespace egelu

// Plain assignments of an egelu functor's expression (not tiled: Tensors and
// TensorMaps) run through egelu's executor; anything else keeps Eigen's.
#define EGELU_THREAD_POOL_EXECUTOR(FUNCTOR)                                                                         \
  template <typename Lhs, typename Arg, typename Scalar, bool Vectorizable>                                         \
  class TensorExecutor<const TensorAssignOp<Lhs, const TensorCwiseUnaryOp<FUNCTOR<Scalar>, Arg>>, ThreadPoolDevice, \
                       Vectorizable, TiledEvaluation::Off>                                                          \
      : public egelu::internal::thread_pool_executor<                                                               \
            const TensorAssignOp<Lhs, const TensorCwiseUnaryOp<FUNCTOR<Scalar>, Arg>>, Vectorizable> {};

namespace Eigen {
namespace internal {
EGELU_THREAD_POOL_EXECUTOR(egelu::gelu_tanh_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::gelu_erf_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::gelu_tanh_grad_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::gelu_erf_grad_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::fast::gelu_tanh_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::fast::gelu_erf_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::silu_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::silu_grad_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::quick_gelu_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::quick_gelu_grad_op)
EGELU_THREAD_POOL_EXECUTOR(egelu::swish_op)
}  // namespace internal
}  // namespace Eigen

#undef EGELU_THREAD_POOL_EXECUTOR

#endif  // EIGEN_USE_THREADS

#endif  // EGELU_INTERNAL_THREAD_POOL_EXECUTOR_HPP
