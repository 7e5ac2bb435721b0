// The workspaces of a block's concurrent callers: a call leases one for its duration, so
// any number of threads may call forward() on one block at once, sharing its weights,
// each computing in memory of its own. The pool keeps the workspaces it has made; a
// caller finding none idle makes one (that call allocates: its warm-up). The lock is held
// only to take or return a workspace, never while computing.
#ifndef EGELU_SRC_BLOCKS_WORKSPACE_POOL_HPP
#define EGELU_SRC_BLOCKS_WORKSPACE_POOL_HPP

#include <memory>
#include <mutex>
#include <vector>

namespace egelu {
namespace blocks {

template <typename Workspace>
class workspace_pool {
 public:
  // A workspace for one call, returned to the pool when the lease ends.
  class lease {
   public:
    lease(workspace_pool& pool, std::unique_ptr<Workspace> w) : pool_(pool), w_(std::move(w)) {}
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { pool_.give_back(std::move(w_)); }
    Workspace& operator*() const { return *w_; }
    Workspace* operator->() const { return w_.get(); }

   private:
    workspace_pool& pool_;
    std::unique_ptr<Workspace> w_;
  };

  lease acquire() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_.empty()) {
        std::unique_ptr<Workspace> w = std::move(idle_.back());
        idle_.pop_back();
        return lease(*this, std::move(w));
      }
      ++made_;
      idle_.reserve(made_);  // so that returning it never allocates
    }
    return lease(*this, std::unique_ptr<Workspace>(new Workspace()));
  }

  // f(workspace) on every idle workspace, at least `count` of them, made if the pool has
  // fewer (reserve() for `count` concurrent callers). Workspaces on lease are not touched.
  template <typename F>
  void prepare(int count, const F& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (int(idle_.size()) < count) {
      idle_.reserve(std::size_t(++made_));
      idle_.emplace_back(new Workspace());
    }
    for (const std::unique_ptr<Workspace>& w : idle_) f(*w);
  }

 private:
  void give_back(std::unique_ptr<Workspace> w) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(w));
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Workspace>> idle_;
  std::size_t made_ = 0;
};

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_WORKSPACE_POOL_HPP
