#include "sim/thread_pool.h"

#include <chrono>
#include <cstdlib>
#include <string>

namespace poprt::sim {

namespace {

// A run's hand-over costs a condition variable's wake-up, 40-50 us on the 2-core test machines,
// unless the other side is still spinning: supersteps come back to back, so each side spins this
// long before it sleeps (a worker between jobs, the caller waiting for the workers).
constexpr auto kSpin = std::chrono::microseconds(50);

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed; true if done.
template <class Done>
bool spinUntil(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 0;; ++i) {
    if (done()) return true;
    relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(unsigned workers) {
  for (unsigned w = 1; w < workers; ++w) threads_.emplace_back([this, w] { loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run(const std::function<void(unsigned)>& fn) {
  if (threads_.empty()) {
    fn(0);
    return;
  }
  job_ = &fn;
  pending_.store(static_cast<unsigned>(threads_.size()), std::memory_order_relaxed);
  {
    // Under the lock, so a worker that checked the generation and is about to sleep sees it.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_.notify_all();
  fn(0);
  auto finished = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spinUntil(finished)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, finished);
  }
  job_ = nullptr;
}

void ThreadPool::loop(unsigned worker) {
  uint64_t seen = 0;
  for (;;) {
    auto started = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spinUntil(started)) {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, started);
    }
    if (stop_) return;
    seen = generation_.load(std::memory_order_acquire);
    (*job_)(worker);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);  // the caller is spinning, or waiting on done_
      done_.notify_one();
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
