// A fixed set of worker threads that run one function on every worker and wait for all of them:
// the simulator splits a superstep's tiles between workers this way. Workers sleep between calls.
#pragma once

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
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
};

}  // namespace poprt::sim
