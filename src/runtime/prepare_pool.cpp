#include "runtime/prepare_pool.h"

#include <algorithm>

namespace s1::runtime {

PreparePool::PreparePool(size_t threads, size_t max_waiting) : max_waiting_(max_waiting) {
  const size_t count = std::max<size_t>(threads, 1);
  for (size_t i = 0; i < count; ++i) {
    const bool takes_large = count == 1 || i + 1 < count;
    threads_.emplace_back([this, takes_large] { work(takes_large); });
  }
}

PreparePool::~PreparePool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    small_.clear();
    large_.clear();
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

bool PreparePool::submit(std::function<void()> task, Size size) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || small_.size() + large_.size() >= max_waiting_) return false;
    (size == Size::large ? large_ : small_).push_back(std::move(task));
  }
  // Every thread: the one woken by notify_one might be one that does not take this task.
  wake_.notify_all();
  return true;
}

void PreparePool::work(bool takes_large) {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !small_.empty() || (takes_large && !large_.empty()); });
      if (stopping_) return;
      std::deque<std::function<void()>>& lane = small_.empty() ? large_ : small_;
      task = std::move(lane.front());
      lane.pop_front();
    }
    task();
  }
}

}  // namespace s1::runtime
