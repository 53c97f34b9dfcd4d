// popef-serve's metrics, rendered for GET /metrics in the Prometheus text format (0.0.4):
// per model the requests that succeeded and failed, rows and batches run, queue / compute /
// request time histograms, the requests waiting, how full the batches ran and the estimated
// utilisation of a real IPU; per server the HTTP responses by status code.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace poprt::serve {

// A Prometheus histogram of durations in seconds, with fixed buckets from 100 us to 10 s.
class Histogram {
 public:
  static constexpr std::array<double, 16> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  void observe(double seconds);
  // The _bucket (cumulative, le="+Inf" last), _sum and _count lines of `name` with `labels`
  // ("model=\"x\"", without braces).
  void render(const std::string& name, const std::string& labels, std::string& out) const;

 private:
  mutable std::mutex mutex_;
  std::array<uint64_t, kBounds.size() + 1> counts_{};  // the last one: above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

// The statistics extension's view of a model (Triton's /stats and ModelStatistics): cumulative
// counts and nanoseconds.
struct DurationStat {
  uint64_t count = 0, ns = 0;
};
struct Statistics {
  uint64_t last_inference_ms = 0;  // since the epoch; 0: none yet
  uint64_t inference_count = 0;    // rows inferred
  uint64_t execution_count = 0;    // batches run
  // Requests: answered with success or not (receipt to reply), waiting for their batch.
  DurationStat success, fail, queue;
  // Batches: copying the requests' rows in, running, copying rows out.
  DurationStat compute_input, compute_infer, compute_output;
  struct Batch {
    DurationStat compute_input, compute_infer, compute_output;
  };
  std::map<int64_t, Batch> by_batch_size;  // by the rows of requests in the batch
};

struct ModelMetrics {
  std::string model;
  // Set by each load of the model (a repository reloads it while /metrics is read): atomic.
  std::atomic<unsigned> replicas{1};
  std::atomic<int64_t> batch{1};                 // rows of a compiled batch
  std::atomic<double> ipu_seconds_per_batch{0};  // the cost model's estimate of one batch on a real IPU
  std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();

  std::atomic<uint64_t> success{0}, failure{0};  // inference requests answered 200 / not
  std::atomic<uint64_t> rows{0}, batches{0};     // rows of the requests run, batches run
  std::atomic<int64_t> pending{0};               // requests waiting for their batch to start
  Histogram queue_s, compute_s, request_s;       // waiting for a batch; the batch's run; receipt to reply

  // Records for the statistics extension (and the histograms above, where they overlap).
  void requestDone(bool ok, std::chrono::nanoseconds since_receipt);
  void requestRefused(std::chrono::nanoseconds since_receipt);  // did not fit the model: never queued
  void queued(std::chrono::nanoseconds waited);
  void batchRun(int64_t rows, std::chrono::nanoseconds input, std::chrono::nanoseconds infer, std::chrono::nanoseconds output);
  Statistics statistics() const;

 private:
  mutable std::mutex stats_mutex_;
  Statistics stats_;
};

class ServerMetrics {
 public:
  // The metrics of a model (the same ones when a model of that name is loaded again); the pointer
  // stays valid for the server's life.
  ModelMetrics* addModel(const std::string& name);
  void countResponse(int status);
  std::string render() const;

 private:
  std::vector<std::unique_ptr<ModelMetrics>> models_;
  mutable std::mutex mutex_;
  std::map<int, uint64_t> responses_;  // HTTP status -> count
};

}  // namespace poprt::serve
