#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backend/cpu/parallel.h"

namespace s1::backend::cpu {

// A whole multi-step computation in ONE parallel region: each thread of the team takes its share of
// the rows through every step, and the threads meet only where a step needs another thread's rows
// (Team::barrier), instead of opening a region per op. With OMP_WAIT_POLICY=passive (s1serve's
// default) every region costs a futex wake-up of the other thread (tens of µs); a barrier between two
// running threads costs well under one. Used by the small-batch encoder forwards (BERT, ModernBERT).
//
// Inside a team, ops run on the calling thread: parallel_for and PackedLinear see omp_in_parallel()
// and use one thread (a 1-thread matmul primitive), so each thread calls them on its own rows.
class Team {
 public:
  struct Range {
    std::size_t begin = 0;
    std::size_t end = 0;
    [[nodiscard]] std::size_t size() const { return end - begin; }
  };

  [[nodiscard]] int index() const { return index_; }
  [[nodiscard]] int size() const { return size_; }

  // This thread's contiguous share of [0, count): the same split on every thread for the same
  // arguments, boundaries at multiples of `granule` (e.g. 16 rows, so matmul row counts stay few).
  [[nodiscard]] Range share(std::size_t count, std::size_t granule = 1) const;

  // Returns once every thread of the team has called barrier() as many times as this one; writes
  // before it are visible to every thread after it. Spins briefly (S1_BARRIER_SPIN_US, default below),
  // then sleeps on a futex, so a descheduled partner (a busy machine) costs a sleep, not a spinning core.
  void barrier();

 private:
  friend void run_team(FunctionRef<void(Team&)> body, int threads);
  struct Shared;
  Team(int index, int size, Shared* shared) : index_(index), size_(size), shared_(shared) {}

  int index_;
  int size_;
  Shared* shared_;  // null for a team of one
};

// Runs body(team) on min(threads, thread_count()) threads of the shared OpenMP pool, every thread
// with its own Team (index() 0…size()−1). A team of one (one thread configured, or called from inside
// a parallel region) runs body on the calling thread and opens no region.
void run_team(FunctionRef<void(Team&)> body, int threads = thread_count());

}  // namespace s1::backend::cpu
