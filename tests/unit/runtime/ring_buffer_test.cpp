// RingBuffer: every state of the single-producer single-consumer ring (empty, full, wrap-around,
// timeouts on both sides, close), and FIFO order under two threads.
#include <gtest/gtest.h>

#include <thread>

#include "poprt/runtime/ring_buffer.h"

namespace poprt::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(RingBuffer, EmptyPopFailsAndTimesOut) {
  RingBuffer<int> ring(2);
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.size(), 0u);
  EXPECT_FALSE(ring.tryPop().has_value());
  const auto t0 = Clock::now();
  EXPECT_FALSE(ring.pop(20ms).has_value());
  EXPECT_GE(Clock::now() - t0, 20ms);  // it did wait for the timeout
}

TEST(RingBuffer, FullPushFailsAndTimesOutLeavingTheItem) {
  RingBuffer<std::string> ring(2);
  std::string a = "a", b = "b", c = "c";
  EXPECT_TRUE(ring.tryPush(a));
  EXPECT_TRUE(ring.tryPush(b));
  EXPECT_TRUE(ring.full());
  EXPECT_FALSE(ring.tryPush(c));
  EXPECT_EQ(c, "c");  // not moved from
  const auto t0 = Clock::now();
  EXPECT_FALSE(ring.push(c, 20ms));
  EXPECT_GE(Clock::now() - t0, 20ms);
  EXPECT_EQ(c, "c");
  EXPECT_FALSE(ring.waitForRoom(0ns));
  EXPECT_EQ(*ring.tryPop(), "a");
  EXPECT_TRUE(ring.waitForRoom(0ns));
  EXPECT_TRUE(ring.tryPush(c));
  EXPECT_EQ(*ring.tryPop(), "b");
  EXPECT_EQ(*ring.tryPop(), "c");
}

TEST(RingBuffer, WrapsAroundInFifoOrder) {
  RingBuffer<int> ring(3);
  int next_in = 0, next_out = 0;
  // Fill levels 1..3 at every starting offset, so head and tail cross the end of the slots.
  for (int round = 0; round < 10; ++round) {
    const int n = round % 3 + 1;
    for (int i = 0; i < n; ++i) {
      int v = next_in++;
      ASSERT_TRUE(ring.tryPush(v));
    }
    EXPECT_EQ(ring.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      auto v = ring.tryPop();
      ASSERT_TRUE(v.has_value());
      EXPECT_EQ(*v, next_out++);
    }
    EXPECT_TRUE(ring.empty());
  }
  EXPECT_EQ(next_out, next_in);
}

TEST(RingBuffer, BlockedSidesWakeUp) {
  RingBuffer<int> ring(1);
  std::thread producer([&] {
    std::this_thread::sleep_for(30ms);
    int v = 7;
    EXPECT_TRUE(ring.push(v, kWaitForever));
    v = 8;
    EXPECT_TRUE(ring.push(v, kWaitForever));  // waits until the consumer takes 7
  });
  auto first = ring.pop(kWaitForever);  // waits for the producer
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, 7);
  auto second = ring.pop(5s);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, 8);
  producer.join();
}

TEST(RingBuffer, CloseWakesWaitersRefusesPushesAndDrains) {
  RingBuffer<int> ring(2);
  std::thread waiter([&] { EXPECT_FALSE(ring.pop(kWaitForever).has_value()); });
  std::this_thread::sleep_for(20ms);
  ring.close();
  waiter.join();
  RingBuffer<int> full(1);
  int v = 1;
  ASSERT_TRUE(full.tryPush(v));
  std::thread pusher([&] {
    int w = 2;
    EXPECT_FALSE(full.push(w, kWaitForever));
  });
  std::this_thread::sleep_for(20ms);
  full.close();
  pusher.join();
  EXPECT_TRUE(full.closed());
  auto left = full.pop(kWaitForever);  // what was queued before the close still comes out
  ASSERT_TRUE(left.has_value());
  EXPECT_EQ(*left, 1);
  EXPECT_FALSE(full.pop(kWaitForever).has_value());
}

TEST(RingBuffer, TwoThreadsKeepOrder) {
  RingBuffer<int> ring(4);
  constexpr int kItems = 50000;
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      int v = i;
      ASSERT_TRUE(ring.push(v, kWaitForever));
    }
  });
  for (int i = 0; i < kItems; ++i) {
    auto v = ring.pop(kWaitForever);
    ASSERT_TRUE(v.has_value());
    ASSERT_EQ(*v, i);
  }
  producer.join();
  EXPECT_TRUE(ring.empty());
}

TEST(RingBuffer, RefusesZeroCapacity) { EXPECT_THROW(RingBuffer<int>(0), std::invalid_argument); }

}  // namespace
}  // namespace poprt::runtime
