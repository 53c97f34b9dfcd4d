#include "lib/support/parallel.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace poprt {

unsigned parallelWidth() {
  // The cores this process may run on (a container's cpuset, taskset), not the machine's.
  static const unsigned width = []() -> unsigned {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
    return std::max(1u, std::thread::hardware_concurrency());
  }();
  return width;
}

int64_t parallelParts(int64_t work, int64_t max_parts) {
  constexpr int64_t kWorthAThread = int64_t{1} << 20;
  if (work < kWorthAThread) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(max_parts, parallelWidth()));
}

void parallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = n;  // the others stop taking work
      }
    }
  };
  std::vector<std::thread> helpers;
  const int64_t extra = std::min<int64_t>(n, parallelWidth()) - 1;
  for (int64_t t = 0; t < extra; ++t) helpers.emplace_back(work);
  work();
  for (auto& h : helpers) h.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace poprt
