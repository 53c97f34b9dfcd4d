#include "sim/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace poprt::sim {
namespace {

TEST(ThreadPool, EveryWorkerRunsOncePerCall) {
  for (unsigned workers : {1u, 2u, 5u}) {
    ThreadPool pool(workers);
    ASSERT_EQ(pool.workers(), workers);
    for (int call = 0; call < 50; ++call) {
      std::vector<std::atomic<int>> hits(workers);
      pool.run([&](unsigned w) { hits[w]++; });
      for (unsigned w = 0; w < workers; ++w) ASSERT_EQ(hits[w].load(), 1) << "worker " << w << " call " << call;
    }
  }
}

TEST(ThreadPool, RunReturnsOnlyWhenAllWorkersAreDone) {
  ThreadPool pool(3);
  std::vector<int> out(3 * 1000, 0);
  pool.run([&](unsigned w) {
    for (int i = 0; i < 1000; ++i) out[w * 1000 + i] = static_cast<int>(w) + 1;
  });
  for (unsigned w = 0; w < 3; ++w)
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(out[w * 1000 + i], static_cast<int>(w) + 1);
}

}  // namespace
}  // namespace poprt::sim
