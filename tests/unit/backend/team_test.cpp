// backend::cpu::run_team and Team: shares cover their range exactly, barriers order every thread's writes
// (including when one thread arrives late enough that the others go to sleep), and a team inside a
// parallel region is a team of one.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <chrono>
#include <thread>
#include <vector>

#include "backend/cpu/linear.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/team.h"

namespace s1::backend::cpu {
namespace {

class TeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_threads_ = thread_count();
    set_thread_count(2);
  }
  void TearDown() override { set_thread_count(saved_threads_); }

 private:
  int saved_threads_ = 1;
};

TEST_F(TeamTest, SharesCoverTheRangeContiguouslyAtGranuleBoundaries) {
  for (const std::size_t count : {0UL, 1UL, 15UL, 16UL, 17UL, 100UL, 128UL, 4096UL}) {
    for (const std::size_t granule : {1UL, 16UL}) {
      std::vector<Team::Range> ranges(2);
      run_team([&](Team& team) { ranges[static_cast<std::size_t>(team.index())] = team.share(count, granule); });
      EXPECT_EQ(ranges[0].begin, 0U);
      EXPECT_EQ(ranges[0].end, ranges[1].begin) << count << " " << granule;
      EXPECT_EQ(ranges[1].end, count);
      EXPECT_TRUE(ranges[0].end % granule == 0 || ranges[0].end == count);
      // Balanced to within one granule.
      EXPECT_LE(ranges[0].size(), ranges[1].size() + granule);
      EXPECT_LE(ranges[1].size(), ranges[0].size() + granule);
    }
  }
}

TEST_F(TeamTest, BarrierOrdersEveryThreadsWrites) {
  constexpr int rounds = 2000;
  std::vector<std::atomic<int>> written(2);
  std::atomic<int> mismatches{0};
  std::atomic<int> team_size{0};
  run_team([&](Team& team) {
    team_size = team.size();
    const auto self = static_cast<std::size_t>(team.index());
    for (int round = 1; round <= rounds; ++round) {
      // Now and then one thread arrives long after the spin limit, so the other sleeps on the futex.
      if (round % 500 == team.index()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      written[self].store(round, std::memory_order_relaxed);
      team.barrier();
      for (std::size_t other = 0; other < written.size(); ++other)
        if (written[other].load(std::memory_order_relaxed) != round) ++mismatches;
      team.barrier();  // nobody writes round + 1 before everyone has checked round
    }
  });
  EXPECT_EQ(team_size.load(), 2);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(TeamTest, NestedInsideARegionRunsAsATeamOfOne) {
  std::atomic<int> sizes_seen{0};
  std::atomic<int> calls{0};
  parallel_for(2, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t item = begin; item < end; ++item) {
      run_team([&](Team& team) {
        sizes_seen += team.size();
        ++calls;
        team.barrier();  // a team of one never waits
        EXPECT_EQ(team.share(10).size(), 10U);
      });
    }
  });
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(sizes_seen.load(), 2);
}

TEST_F(TeamTest, OneThreadConfiguredRunsOnTheCallingThread) {
  set_thread_count(1);
  int calls = 0;
  run_team([&](Team& team) {
    EXPECT_EQ(team.size(), 1);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

// Each thread of a team runs PackedLinear on its own rows (a 1-thread primitive, no nested region),
// both at once; together they give the rows one call over the whole matrix gives. Repeated, and with
// the residual sum, because concurrent matmuls once shared oneDNN's scratchpad and corrupted each other.
TEST_F(TeamTest, PackedLinearOnEachThreadsRowsMatchesOneCall) {
  constexpr std::size_t rows = 128, in = 384, out = 1152;
  std::mt19937 generator(7);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  const auto random = [&](std::size_t count) {
    std::vector<float> values(count);
    for (float& value : values) value = normal(generator);
    return values;
  };
  const std::vector<float> weight = random(in * out), bias = random(out), x = random(rows * in), y0 = random(rows * out);
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    if (!linear_supported(precision)) continue;
    const PackedLinear linear(weight, bias, in, out, precision);
    std::vector<float> whole = y0;
    linear.forward_accumulate(x, whole);
    for (int repeat = 0; repeat < 20; ++repeat) {
      std::vector<float> by_rows = y0;
      run_team([&](Team& team) {
        const Team::Range mine = team.share(rows, 16);
        // Several calls in one region, so that the two threads' matmuls overlap in time.
        for (int call = 0; call < 4; ++call) {
          std::copy_n(y0.begin() + static_cast<std::ptrdiff_t>(mine.begin * out), mine.size() * out,
                      by_rows.begin() + static_cast<std::ptrdiff_t>(mine.begin * out));
          linear.forward_accumulate(std::span(x).subspan(mine.begin * in, mine.size() * in),
                                    std::span(by_rows).subspan(mine.begin * out, mine.size() * out));
        }
      });
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < whole.size(); ++i)
        mismatches += std::abs(by_rows[i] - whole[i]) > 1e-3F * (1.0F + std::abs(whole[i])) ? 1 : 0;
      ASSERT_EQ(mismatches, 0U) << (precision == Precision::bf16 ? "bf16" : "fp32") << " repeat " << repeat;
    }
  }
}

}  // namespace
}  // namespace s1::backend::cpu
