#include "tools/run/run_bench.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "poprt/runtime/errors.h"

namespace poprt::tools {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Error describe(const runtime::Error& e) {
  switch (e.category()) {
    case runtime::ErrorCategory::Application: return Error(e.what());
    case runtime::ErrorCategory::RecoverableRuntime: return Error(std::string("recoverable runtime error: ") + e.what());
    case runtime::ErrorCategory::UnrecoverableRuntime: return Error(std::string("unrecoverable runtime error: ") + e.what());
  }
  return Error(e.what());
}

// Redraws "[=====     ] 120/500 requests, 3.1 s" on stderr every 100 ms once the run is past 2 s,
// when stderr is a terminal; clears the line when it stops.
class ProgressBar {
 public:
  ProgressBar(const std::atomic<int64_t>& done, int64_t iterations, double duration)
      : done_(done), iterations_(iterations), duration_(duration), start_(Clock::now()) {
    if (isatty(STDERR_FILENO)) thread_ = std::thread([this] { loop(); });
  }
  ~ProgressBar() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (!thread_.joinable()) return;
    thread_.join();
    if (drawn_) std::fprintf(stderr, "\r%*s\r", 72, "");
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) {
      const double elapsed = since(start_);
      if (elapsed < 2.0) continue;
      const int64_t done = done_.load();
      double frac =
          std::max(static_cast<double>(done) / static_cast<double>(iterations_), duration_ > 0 ? elapsed / duration_ : 0.0);
      frac = std::min(frac, 1.0);
      const int width = 30, filled = static_cast<int>(frac * width);
      // Each bound with its own target: "114/10 requests" read as a bug when the duration ruled.
      const std::string time = duration_ > 0 ? std::to_string(static_cast<int>(elapsed * 10) / 10) + "." +
                                                   std::to_string(static_cast<int>(elapsed * 10) % 10) + "/" +
                                                   std::to_string(static_cast<int>(duration_)) + " s"
                                             : std::to_string(static_cast<int>(elapsed)) + " s";
      std::fprintf(stderr, "\r[%s%s] %lld requests (at least %lld), %s ", std::string(filled, '=').c_str(),
                   std::string(width - filled, ' ').c_str(), static_cast<long long>(done), static_cast<long long>(iterations_),
                   time.c_str());
      std::fflush(stderr);
      drawn_ = true;
    }
  }

  const std::atomic<int64_t>& done_;
  int64_t iterations_;
  double duration_;
  Clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

// The measured phase's shared state: which request is next, the latencies, the first error.
struct Shared {
  const runtime::InputMemoryView& inputs;
  const BenchOptions& options;
  Clock::time_point start;
  std::atomic<int64_t> claimed{0}, done{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::vector<double> latencies, starts;
  std::optional<Error> error;

  // A request is claimed while fewer than --iterations are, or --duration has not passed.
  bool claim() {
    if (failed.load()) return false;
    if (claimed.fetch_add(1) < options.iterations) return true;
    return since(start) < options.duration;
  }
  void fail(Error e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = std::move(e);
    failed = true;
  }
};

void clientThread(runtime::ModelRunner& runner, Shared& shared) {
  std::deque<std::pair<Clock::time_point, std::future<runtime::OutputMemory>>> in_flight;
  std::vector<double> mine, mine_starts;
  for (;;) {
    try {
      while (static_cast<int>(in_flight.size()) < shared.options.async && shared.claim())
        in_flight.emplace_back(Clock::now(), runner.executeAsync(shared.inputs));
      if (in_flight.empty()) break;
      auto [t0, future] = std::move(in_flight.front());
      in_flight.pop_front();
      future.get();
      mine.push_back(since(t0));
      mine_starts.push_back(std::chrono::duration<double>(t0 - shared.start).count());
      ++shared.done;
    } catch (const runtime::Error& e) {
      shared.fail(describe(e));
    } catch (const std::exception& e) {  // not the runtime's: a bug, reported as such
      shared.fail(Error(std::string("internal error: ") + e.what()));
    }
  }
  std::lock_guard<std::mutex> lock(shared.mutex);
  shared.latencies.insert(shared.latencies.end(), mine.begin(), mine.end());
  shared.starts.insert(shared.starts.end(), mine_starts.begin(), mine_starts.end());
}

}  // namespace

Expected<BenchResult> runBench(runtime::ModelRunner& runner, const runtime::InputMemoryView& inputs,
                               const BenchOptions& options) {
  BenchResult result;
  try {
    // The first request alone: its outputs are the ones popef-run writes and checks. Without
    // warm-up it is the first measured request, so a plain run runs the model once.
    const Clock::time_point first = Clock::now();
    result.first_outputs = runner.execute(inputs);
    const double first_latency = since(first);
    for (int64_t i = 1; i < options.warmup || since(first) < options.warmup_seconds; ++i) runner.execute(inputs);
    Shared shared{inputs, options, first};
    if (options.warmup > 0 || options.warmup_seconds > 0) {
      runner.resetTimings();
      shared.start = Clock::now();
    } else {
      shared.latencies.push_back(first_latency);
      shared.starts.push_back(0);
      shared.claimed = 1;
      shared.done = 1;
    }
    {
      ProgressBar bar(shared.done, options.iterations, options.duration);
      std::vector<std::thread> threads;
      for (int t = 0; t < options.threads; ++t) threads.emplace_back(clientThread, std::ref(runner), std::ref(shared));
      for (auto& t : threads) t.join();
    }
    if (shared.error) return *shared.error;
    result.wall = since(shared.start);
    result.latencies = std::move(shared.latencies);
    result.starts = std::move(shared.starts);
    result.timings = runner.timings();
  } catch (const runtime::Error& e) { return describe(e); }
  return result;
}

}  // namespace poprt::tools
