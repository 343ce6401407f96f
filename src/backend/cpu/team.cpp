#include "backend/cpu/team.h"

#include <linux/futex.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <climits>
#include <cstdlib>

namespace s1::backend::cpu {
namespace {

// How long a thread that reaches a barrier first spins before it sleeps. Between two running threads
// the partner usually arrives within a few µs (the steps are split evenly), so a short spin saves the
// futex round trip (a wake-up of tens of µs on this VM); a partner descheduled by another process
// arrives much later, and then the spin is all waste, hence the bound. Measured in
// docs/benchmarks/minilm.md ("One region per forward").
constexpr long default_spin_us = 20;

std::chrono::nanoseconds spin_limit() {
  static const std::chrono::nanoseconds limit = [] {
    const char* setting = std::getenv("S1_BARRIER_SPIN_US");
    const long us = setting != nullptr ? std::strtol(setting, nullptr, 10) : default_spin_us;
    return std::chrono::nanoseconds(std::max(us, 0L) * 1000);
  }();
  return limit;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
              std::atomic<std::uint32_t>::is_always_lock_free);

std::uint32_t* futex_word(std::atomic<std::uint32_t>& word) { return reinterpret_cast<std::uint32_t*>(&word); }

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) {
  // Returns at once when the word no longer holds `expected`; spurious returns are re-checked by the caller.
  syscall(SYS_futex, futex_word(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, futex_word(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct Team::Shared {
  std::atomic<std::uint32_t> arrived{0};
  std::atomic<std::uint32_t> generation{0};  // the futex word: bumped when the last thread arrives
  std::atomic<std::uint32_t> sleepers{0};
};

Team::Range Team::share(std::size_t count, std::size_t granule) const {
  granule = std::max<std::size_t>(granule, 1);
  const std::size_t granules = (count + granule - 1) / granule;
  const auto index = static_cast<std::size_t>(index_);
  const auto total = static_cast<std::size_t>(size_);
  return {std::min(count, granules * index / total * granule), std::min(count, granules * (index + 1) / total * granule)};
}

void Team::barrier() {
  if (shared_ == nullptr) return;
  Shared& shared = *shared_;
  const std::uint32_t generation = shared.generation.load(std::memory_order_acquire);
  if (shared.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<std::uint32_t>(size_)) {
    // No thread can arrive at the next barrier before it sees the new generation, so resetting the
    // count first is safe. seq_cst pairs with the sleepers' increment below: either the sleeper sees
    // the new generation before it sleeps, or this thread sees the sleeper and wakes it.
    shared.arrived.store(0, std::memory_order_relaxed);
    shared.generation.fetch_add(1, std::memory_order_seq_cst);
    if (shared.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(shared.generation);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + spin_limit();
  while (shared.generation.load(std::memory_order_acquire) == generation) {
    if (std::chrono::steady_clock::now() < deadline) {
      cpu_relax();
      continue;
    }
    shared.sleepers.fetch_add(1, std::memory_order_seq_cst);
    while (shared.generation.load(std::memory_order_seq_cst) == generation) futex_wait(shared.generation, generation);
    shared.sleepers.fetch_sub(1, std::memory_order_relaxed);
    break;
  }
}

void run_team(FunctionRef<void(Team&)> body, int threads) {
  apply_thread_count();
  const int wanted = std::min(threads, thread_count());
  if (wanted <= 1 || omp_in_parallel()) {
    Team solo(0, 1, nullptr);
    body(solo);
    return;
  }
  Team::Shared shared;
#pragma omp parallel num_threads(wanted)
  {
    // Every barrier counts the threads OpenMP actually started (fewer than asked only under
    // OMP_THREAD_LIMIT or nested limits), the same value on every thread of the region.
    Team team(omp_get_thread_num(), omp_get_num_threads(), &shared);
    body(team);
  }
}

}  // namespace s1::backend::cpu
