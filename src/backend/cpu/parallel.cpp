#include "backend/cpu/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cassert>

namespace s1::backend::cpu {
namespace {

std::atomic<int>& configured_thread_count() {
  static std::atomic<int> count{omp_get_max_threads()};
  return count;
}

}  // namespace

void set_thread_count(int count) {
  assert(count >= 1);
  configured_thread_count().store(count, std::memory_order_relaxed);
  omp_set_num_threads(count);
}

int thread_count() { return configured_thread_count().load(std::memory_order_relaxed); }

void apply_thread_count() {
  const int wanted = thread_count();
  if (omp_get_max_threads() != wanted) omp_set_num_threads(wanted);
}

void parallel_for(std::size_t count, std::size_t min_chunk,
                  FunctionRef<void(std::size_t begin, std::size_t end)> body) {
  if (count == 0) return;
  apply_thread_count();
  const std::size_t by_size =
      (count + std::max<std::size_t>(min_chunk, 1) - 1) / std::max<std::size_t>(min_chunk, 1);
  const auto chunks =
      static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(thread_count()), by_size));
  if (chunks <= 1 || omp_in_parallel()) {
    body(0, count);
    return;
  }
#pragma omp parallel num_threads(chunks)
  {
    const auto index = static_cast<std::size_t>(omp_get_thread_num());
    const auto total = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t begin = count * index / total;
    const std::size_t end = count * (index + 1) / total;
    if (begin < end) body(begin, end);
  }
}

}  // namespace s1::backend::cpu
