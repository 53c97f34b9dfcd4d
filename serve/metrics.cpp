#include "serve/metrics.h"

#include <algorithm>

#include <cstdio>
#include <functional>

namespace poprt::serve {
namespace {

// A sample value as Prometheus reads it (integers exactly, others with 9 significant digits).
std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string escapeLabel(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

namespace {

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

void add(DurationStat& s, std::chrono::nanoseconds d) {
  ++s.count;
  s.ns += static_cast<uint64_t>(std::max<int64_t>(d.count(), 0));
}

}  // namespace

void ModelMetrics::requestDone(bool ok, std::chrono::nanoseconds since_receipt) {
  ++(ok ? success : failure);
  request_s.observe(seconds(since_receipt));
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  std::lock_guard lock(stats_mutex_);
  add(ok ? stats_.success : stats_.fail, since_receipt);
  stats_.last_inference_ms = static_cast<uint64_t>(now.count());
}

void ModelMetrics::requestRefused(std::chrono::nanoseconds since_receipt) {
  ++failure;
  std::lock_guard lock(stats_mutex_);
  add(stats_.fail, since_receipt);
}

void ModelMetrics::queued(std::chrono::nanoseconds waited) {
  queue_s.observe(seconds(waited));
  std::lock_guard lock(stats_mutex_);
  add(stats_.queue, waited);
}

void ModelMetrics::batchRun(int64_t batch_rows, std::chrono::nanoseconds input, std::chrono::nanoseconds infer,
                            std::chrono::nanoseconds output) {
  compute_s.observe(seconds(input + infer));
  batches += 1;
  rows += static_cast<uint64_t>(batch_rows);
  std::lock_guard lock(stats_mutex_);
  add(stats_.compute_input, input);
  add(stats_.compute_infer, infer);
  add(stats_.compute_output, output);
  Statistics::Batch& b = stats_.by_batch_size[batch_rows];
  add(b.compute_input, input);
  add(b.compute_infer, infer);
  add(b.compute_output, output);
}

Statistics ModelMetrics::statistics() const {
  std::lock_guard lock(stats_mutex_);
  Statistics s = stats_;
  s.inference_count = rows;
  s.execution_count = batches;
  return s;
}

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  std::lock_guard lock(mutex_);
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
  std::lock_guard lock(mutex_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < kBounds.size() ? number(kBounds[i]) : "+Inf";
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum{" + labels + "} " + number(sum_) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

ModelMetrics* ServerMetrics::addModel(const std::string& name) {
  std::lock_guard lock(mutex_);
  for (const auto& m : models_)
    if (m->model == name) return m.get();  // a model loaded again counts on
  models_.push_back(std::make_unique<ModelMetrics>());
  models_.back()->model = name;
  return models_.back().get();
}

void ServerMetrics::countResponse(int status) {
  std::lock_guard lock(mutex_);
  ++responses_[status];
}

std::string ServerMetrics::render() const {
  std::lock_guard lock(mutex_);  // models are added while the server runs (a repository's loads)
  std::string out;
  auto perModel = [&](const std::string& name, const char* type, const char* help,
                      const std::function<std::string(const ModelMetrics&)>& value) {
    header(out, name, type, help);
    for (const auto& m : models_) out += name + "{model=\"" + escapeLabel(m->model) + "\"} " + value(*m) + "\n";
  };
  perModel("poprt_inference_request_success_total", "counter", "Inference requests answered with 200.",
           [](const ModelMetrics& m) { return std::to_string(m.success.load()); });
  perModel("poprt_inference_request_failure_total", "counter",
           "Inference requests to the model that failed (bad request or runtime error).",
           [](const ModelMetrics& m) { return std::to_string(m.failure.load()); });
  perModel("poprt_inference_count_total", "counter", "Rows inferred (the rows of the requests, padding not counted).",
           [](const ModelMetrics& m) { return std::to_string(m.rows.load()); });
  perModel("poprt_inference_exec_count_total", "counter", "Batches run on the device.",
           [](const ModelMetrics& m) { return std::to_string(m.batches.load()); });
  perModel("poprt_inference_pending_requests", "gauge", "Requests waiting for their batch to start.",
           [](const ModelMetrics& m) { return std::to_string(m.pending.load()); });
  perModel("poprt_batch_fill_ratio", "gauge", "Rows inferred over the rows of the batches run (1: no padding).",
           [](const ModelMetrics& m) {
             const double capacity = static_cast<double>(m.batches.load()) * static_cast<double>(m.batch.load());
             return number(capacity > 0 ? static_cast<double>(m.rows.load()) / capacity : 0);
           });
  perModel("poprt_ipu_utilization_estimate", "gauge",
           "Fraction of the time since the model was loaded that real IPUs would have spent running its batches "
           "(the cost model's estimate per batch; above 1 the load exceeds what they could serve).",
           [](const ModelMetrics& m) {
             const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - m.since).count();
             const double busy = static_cast<double>(m.batches.load()) * m.ipu_seconds_per_batch.load();
             return number(wall > 0 ? busy / (wall * m.replicas.load()) : 0);
           });
  struct HistogramDef {
    const char* name;
    const char* help;
    Histogram ModelMetrics::*member;
  };
  const HistogramDef histograms[] = {
      {"poprt_inference_queue_duration_seconds", "Time a request waited for its batch to start.", &ModelMetrics::queue_s},
      {"poprt_inference_compute_duration_seconds", "Time a batch ran on the device (host-to-device, compute, device-to-host).",
       &ModelMetrics::compute_s},
      {"poprt_inference_request_duration_seconds", "Time from receiving a request to its reply.", &ModelMetrics::request_s},
  };
  for (const HistogramDef& h : histograms) {
    header(out, h.name, "histogram", h.help);
    for (const auto& m : models_) ((*m).*h.member).render(h.name, "model=\"" + escapeLabel(m->model) + "\"", out);
  }
  // Triton's names, which dashboards built for Triton read (counters; durations in cumulative
  // microseconds), from the statistics extension's counters.
  struct TritonDef {
    const char* name;
    const char* help;
    uint64_t (*value)(const Statistics&);
  };
  const TritonDef triton[] = {
      {"nv_inference_request_success", "Number of successful inference requests.",
       [](const Statistics& s) { return s.success.count; }},
      {"nv_inference_request_failure", "Number of failed inference requests.", [](const Statistics& s) { return s.fail.count; }},
      {"nv_inference_count", "Number of inferences performed (rows).", [](const Statistics& s) { return s.inference_count; }},
      {"nv_inference_exec_count", "Number of model executions (batches).", [](const Statistics& s) { return s.execution_count; }},
      {"nv_inference_request_duration_us", "Cumulative inference request duration in microseconds.",
       [](const Statistics& s) { return (s.success.ns + s.fail.ns) / 1000; }},
      {"nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds.",
       [](const Statistics& s) { return s.queue.ns / 1000; }},
      {"nv_inference_compute_input_duration_us", "Cumulative compute input duration in microseconds.",
       [](const Statistics& s) { return s.compute_input.ns / 1000; }},
      {"nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds.",
       [](const Statistics& s) { return s.compute_infer.ns / 1000; }},
      {"nv_inference_compute_output_duration_us", "Cumulative inference compute output duration in microseconds.",
       [](const Statistics& s) { return s.compute_output.ns / 1000; }},
  };
  std::vector<Statistics> stats;
  for (const auto& m : models_) stats.push_back(m->statistics());
  for (const TritonDef& t : triton) {
    header(out, t.name, "counter", t.help);
    for (size_t i = 0; i < models_.size(); ++i)
      out += std::string(t.name) + "{model=\"" + escapeLabel(models_[i]->model) + "\",version=\"1\"} " +
             std::to_string(t.value(stats[i])) + "\n";
  }
  header(out, "poprt_http_responses_total", "counter", "HTTP responses by status code.");
  for (const auto& [status, count] : responses_)
    out += "poprt_http_responses_total{code=\"" + std::to_string(status) + "\"} " + std::to_string(count) + "\n";
  return out;
}

}  // namespace poprt::serve
