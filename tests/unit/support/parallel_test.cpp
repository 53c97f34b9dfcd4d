// parallelFor: every index once, on several threads where the process has cores, and a call's
// exception reaching the caller after the others finished.
#include "lib/support/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace poprt {
namespace {

TEST(ParallelFor, RunsEveryIndexOnce) {
  const int64_t n = 1000;
  std::vector<std::atomic<int>> runs(n);
  std::mutex m;
  std::set<std::thread::id> threads;
  parallelFor(n, [&](int64_t i) {
    ++runs[static_cast<size_t>(i)];
    std::lock_guard lock(m);
    threads.insert(std::this_thread::get_id());
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << i;
  EXPECT_GE(parallelWidth(), 1u);
  EXPECT_LE(threads.size(), parallelWidth());
  parallelFor(0, [](int64_t) { FAIL() << "no index to run"; });
}

TEST(ParallelFor, AnExceptionReachesTheCaller) {
  std::atomic<int> ran{0};
  EXPECT_THROW(parallelFor(64,
                           [&](int64_t i) {
                             ++ran;
                             if (i == 3) throw std::runtime_error("three");
                           }),
               std::runtime_error);
  EXPECT_GE(ran.load(), 1);
}

TEST(ParallelParts, SmallWorkStaysOnOneThreadBigWorkSpreadsUpToTheParts) {
  // A small conv of a host-run model (silero's) paid a thread start per call and ran 35% slower.
  EXPECT_EQ(parallelParts(1000, 8), 1);
  EXPECT_EQ(parallelParts(int64_t{1} << 24, 1), 1);
  EXPECT_EQ(parallelParts(int64_t{1} << 24, 1000), static_cast<int64_t>(parallelWidth()));
}

}  // namespace
}  // namespace poprt
