#include "runtime/prepare_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <latch>
#include <memory>

namespace s1::runtime {
namespace {

using namespace std::chrono_literals;
using Size = PreparePool::Size;

// A task that holds its thread until the test opens the gate.
struct Gate {
  std::promise<void> opened;
  std::shared_future<void> open = opened.get_future().share();
  std::function<void()> task(std::promise<void>& started) {
    return [this, &started] {
      started.set_value();
      open.wait();
    };
  }
};

TEST(PreparePool, OneThreadStaysFreeForSmallTasksWhileLargeOnesRun) {
  PreparePool pool(2, 16);
  Gate gate;
  std::promise<void> large_started;
  ASSERT_TRUE(pool.submit(gate.task(large_started), Size::large));
  large_started.get_future().wait();
  // A second large task waits for the first: the other thread takes only small ones.
  std::promise<void> second_large_ran;
  ASSERT_TRUE(pool.submit([&] { second_large_ran.set_value(); }, Size::large));
  std::promise<void> small_ran;
  ASSERT_TRUE(pool.submit([&] { small_ran.set_value(); }, Size::small));
  EXPECT_EQ(small_ran.get_future().wait_for(5s), std::future_status::ready);
  auto second = second_large_ran.get_future();
  EXPECT_EQ(second.wait_for(50ms), std::future_status::timeout);
  gate.opened.set_value();
  EXPECT_EQ(second.wait_for(5s), std::future_status::ready);
}

TEST(PreparePool, SmallTasksGoBeforeWaitingLargeOnes) {
  PreparePool pool(1, 16);  // one thread takes both sizes
  Gate gate;
  std::promise<void> started;
  ASSERT_TRUE(pool.submit(gate.task(started), Size::small));
  started.get_future().wait();
  std::vector<Size> order;
  std::latch done(2);
  ASSERT_TRUE(pool.submit([&] {
    order.push_back(Size::large);
    done.count_down();
  }, Size::large));
  ASSERT_TRUE(pool.submit([&] {
    order.push_back(Size::small);
    done.count_down();
  }, Size::small));
  gate.opened.set_value();
  done.wait();
  EXPECT_EQ(order, (std::vector<Size>{Size::small, Size::large}));
}

TEST(PreparePool, RefusesBeyondItsWaitingBoundAndNeverRunsTheRefused) {
  auto pool = std::make_unique<PreparePool>(1, 2);
  Gate gate;
  std::promise<void> started;
  ASSERT_TRUE(pool->submit(gate.task(started), Size::small));
  started.get_future().wait();
  int ran = 0;
  EXPECT_TRUE(pool->submit([&] { ++ran; }, Size::small));
  EXPECT_TRUE(pool->submit([&] { ++ran; }, Size::large));
  EXPECT_FALSE(pool->submit([&] { ran += 100; }, Size::small));
  gate.opened.set_value();
  pool.reset();  // joins; tasks not started by then are dropped, none is refused and run
  EXPECT_LT(ran, 100);
}

}  // namespace
}  // namespace s1::runtime
