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
                                                     0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,     10};
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

struct ModelMetrics {
  std::string model;
  unsigned replicas = 1;
  int64_t batch = 1;                 // rows of a compiled batch
  double ipu_seconds_per_batch = 0;  // the cost model's estimate of one batch on a real IPU
  std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();

  std::atomic<uint64_t> success{0}, failure{0};  // inference requests answered 200 / not
  std::atomic<uint64_t> rows{0}, batches{0};     // rows of the requests run, batches run
  std::atomic<int64_t> pending{0};               // requests waiting for their batch to start
  Histogram queue_s, compute_s, request_s;       // waiting for a batch; the batch's run; receipt to reply
};

class ServerMetrics {
 public:
  // The metrics of a model; the pointer stays valid for the server's life.
  ModelMetrics* addModel(const std::string& name);
  void countResponse(int status);
  std::string render() const;

 private:
  std::vector<std::unique_ptr<ModelMetrics>> models_;
  mutable std::mutex mutex_;
  std::map<int, uint64_t> responses_;  // HTTP status -> count
};

}  // namespace poprt::serve
