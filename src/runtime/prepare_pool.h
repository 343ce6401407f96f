#pragma once
// Threads for the request work that must not run on the HTTP I/O threads: parsing large bodies,
// rendering prompts, tokenising. Bounded twice: a fixed number of threads and of waiting tasks,
// beyond which a task is refused (the caller answers 503) rather than queued without limit.
// Small tasks go first, and with two threads or more one thread never takes a large task: a flood
// of 4 MiB bodies (a few hundred milliseconds each) does not hold up the small requests beside it.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace s1::runtime {

class PreparePool {
 public:
  PreparePool(size_t threads, size_t max_waiting);
  // Runs no task that has not started; joins the threads after the ones running.
  ~PreparePool();
  PreparePool(const PreparePool&) = delete;
  PreparePool& operator=(const PreparePool&) = delete;

  enum class Size { small, large };
  // False when `max_waiting` tasks already wait: the task is dropped, never run.
  bool submit(std::function<void()> task, Size size);

 private:
  void work(bool takes_large);

  const size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> small_;
  std::deque<std::function<void()>> large_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace s1::runtime
