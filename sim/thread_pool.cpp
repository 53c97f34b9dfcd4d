#include "sim/thread_pool.h"

#include <cstdlib>
#include <string>

namespace poprt::sim {

ThreadPool::ThreadPool(unsigned workers) {
  for (unsigned w = 1; w < workers; ++w) threads_.emplace_back([this, w] { loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run(const std::function<void(unsigned)>& fn) {
  if (threads_.empty()) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    pending_ = static_cast<unsigned>(threads_.size());
    ++generation_;
  }
  start_.notify_all();
  fn(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::loop(unsigned worker) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(unsigned)>* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(worker);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

unsigned ThreadPool::defaultWorkers() {
  if (const char* env = std::getenv("POPRT_SIM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= 256) return static_cast<unsigned>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : hw;
}

}  // namespace poprt::sim
