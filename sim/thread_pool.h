// A fixed set of worker threads that run one function on every worker and wait for all of them:
// the simulator splits a superstep's tiles between workers this way. Between calls a worker spins
// briefly (the next superstep usually follows at once), then sleeps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace poprt::sim {

class ThreadPool {
 public:
  // `workers` in all, the calling thread included (1: no threads, run() calls fn(0) inline).
  explicit ThreadPool(unsigned workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned workers() const { return static_cast<unsigned>(threads_.size()) + 1; }
  // Calls fn(w) for every worker w in [0, workers()) — w = 0 on the calling thread — and returns
  // when all have returned. Not reentrant.
  void run(const std::function<void(unsigned)>& fn);

  // The default worker count: POPRT_SIM_THREADS if set (1..256), else the hardware's threads.
  static unsigned defaultWorkers();

 private:
  void loop(unsigned worker);

  std::vector<std::thread> threads_;
  std::mutex mutex_;  // guards the sleeping sides only: a hand-over between spinning ones takes no lock
  std::condition_variable start_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;  // set before the generation is published
  std::atomic<uint64_t> generation_{0};                 // one more per job (and at the end)
  std::atomic<unsigned> pending_{0};                    // workers still on the job
  std::atomic<bool> stop_{false};
};

}  // namespace poprt::sim
