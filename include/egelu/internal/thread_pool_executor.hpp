// `t.device(thread_pool_device) = egelu::gelu(x)` and the other egelu functors:
// one range per device thread, run by a task_team (task_team.hpp).
//
// Eigen's executor cuts the pass into about four blocks per thread and leaves
// the calling thread asleep on a barrier; on the development machine (2 cores,
// a VM) that costs about 40 us per call, so a 1M-float gelu ran 1.55-1.6x
// faster on two threads than on one. Here the caller works too, then takes any
// range no pool thread has started, and waits (yielding) only for ranges that
// are running: 1.8-1.9x (docs/DESIGN.md, "Threads").
#ifndef EGELU_INTERNAL_THREAD_POOL_EXECUTOR_HPP
#define EGELU_INTERNAL_THREAD_POOL_EXECUTOR_HPP

#if defined(EIGEN_USE_THREADS)

#include <algorithm>

#include "functors.hpp"
#include "task_team.hpp"

namespace egelu {
namespace internal {

template <typename Expression, bool Vectorizable>
struct thread_pool_executor {
  using Evaluator = Eigen::TensorEvaluator<Expression, Eigen::ThreadPoolDevice>;
  using StorageIndex = typename Expression::Index;
  using Range = Eigen::internal::EvalRange<Evaluator, StorageIndex, Vectorizable>;

  static void run(const Expression& expr, const Eigen::ThreadPoolDevice& device) {
    Evaluator evaluator(expr, device);
    if (evaluator.evalSubExprsIfNeeded(nullptr)) {
      const StorageIndex size = Eigen::internal::array_prod(evaluator.dimensions());
      const int count = Eigen::TensorCostModel<Eigen::ThreadPoolDevice>::numThreads(
          double(size), evaluator.costPerCoeff(Vectorizable), device.numThreads());
      if (count <= 1) {
        Range::run(&evaluator, 0, size);
      } else {
        // One range per thread, aligned to the packet loop's blocks.
        const StorageIndex step = std::min(size, Range::alignBlockSize((size + count - 1) / count));
        const owned_task_team team;
        (*team).run(device, int((size + step - 1) / step), [&evaluator, size, step](int k, int) {
          const StorageIndex first = std::min(size, StorageIndex(k) * step);
          Range::run(&evaluator, first, std::min(size, first + step));
        });
      }
    }
    evaluator.cleanup();
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
EGELU_THREAD_POOL_EXECUTOR(egelu::fast::silu_op)
}  // namespace internal
}  // namespace Eigen

#undef EGELU_THREAD_POOL_EXECUTOR

#endif  // EIGEN_USE_THREADS

#endif  // EGELU_INTERNAL_THREAD_POOL_EXECUTOR_HPP
