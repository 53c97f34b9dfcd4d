#include "tools/run/run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace poprt::tools {
namespace {

using nlohmann::json;

double round(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

// Nearest-rank percentile of sorted values (p in (0, 100]).
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// An error figure as the table prints it, as a JSON number (a string for inf).
json errorNumber(double v) {
  std::string text = converter::formatError(v);
  if (std::isinf(v)) return text;
  return std::stod(text);
}

std::string fixed(const json& v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v.get<double>());
  return buf;
}

}  // namespace

json reportJson(const RunFacts& f) {
  std::vector<double> ms(f.latencies.size());
  std::transform(f.latencies.begin(), f.latencies.end(), ms.begin(), [](double s) { return s * 1e3; });
  std::sort(ms.begin(), ms.end());
  const double mean = ms.empty() ? 0 : std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  const double requests_per_s = f.wall_s > 0 ? static_cast<double>(ms.size()) / f.wall_s : 0;
  const double batches = static_cast<double>(std::max<uint64_t>(f.timings.batches, 1));
  const double ipu_s = f.estimate.seconds(), step_s = f.estimate.stepSeconds();
  json j = {
      {"popef", f.popef},
      {"target", f.target},
      {"ipu_version", f.ipu_version},
      {"replication_factor", f.replication_factor},
      {"batches_per_step", f.batches_per_step},
      {"batch_size", f.batch},
      {"settings",
       {{"benchmark", f.benchmark},
        {"iterations", f.iterations},
        {"warmup", f.warmup},
        {"warmup_s", f.warmup_s},
        {"duration_s", f.duration},
        {"threads", f.threads},
        {"async", f.async}}},
      {"requests", ms.size()},
      {"wall_s", round(f.wall_s, 3)},
      {"throughput",
       {{"requests_per_s", round(requests_per_s, 1)},
        {"samples_per_s", round(requests_per_s * static_cast<double>(f.batch), 1)}}},
      {"latency_ms",
       {{"min", round(ms.empty() ? 0 : ms.front(), 3)},
        {"mean", round(mean, 3)},
        {"median", round(percentile(ms, 50), 3)},
        {"p90", round(percentile(ms, 90), 3)},
        {"p95", round(percentile(ms, 95), 3)},
        {"p99", round(percentile(ms, 99), 3)},
        {"max", round(ms.empty() ? 0 : ms.back(), 3)}}},
      {"host_ms_per_batch",
       {{"host_to_device", round(f.timings.stream_in_s * 1e3 / batches, 3)},
        {"compute", round(f.timings.compute_s * 1e3 / batches, 3)},
        {"device_to_host", round(f.timings.stream_out_s * 1e3 / batches, 3)}}},
      {"load_ms", round(f.load_s * 1e3, 3)},
      {"ipu_estimate",
       {{"cycles", f.estimate.cycles},
        {"compute_cycles", f.estimate.compute_cycles},
        {"exchange_cycles", f.estimate.exchange_cycles},
        {"sync_cycles", f.estimate.sync_cycles},
        {"clock_ghz", round(f.estimate.clock_hz / 1e9, 2)},
        {"latency_us", round(ipu_s * 1e6, 2)},
        {"num_ipus", f.estimate.num_ipus},
        {"stages", f.estimate.stages},
        {"execution_strategy", f.estimate.pipelined ? "pipelined" : "sharded"},
        {"step_cycles", f.estimate.step_cycles},
        {"step_us", round(step_s * 1e6, 2)},
        // Replicas run in parallel, each a step of batches at a time.
        {"throughput_samples_per_s",
         round(step_s > 0 ? static_cast<double>(f.batch) * f.estimate.batches_per_step * f.replication_factor / step_s : 0, 1)}}},
  };
  if (f.diffs) {
    json outs = json::array();
    bool ok = true;
    for (const converter::ValueDiff& d : *f.diffs) {
      outs.push_back({{"name", d.name},
                      {"type", d.type},
                      {"max_abs_err", errorNumber(d.max_abs)},
                      {"max_rel_err", errorNumber(d.max_rel)},
                      {"ok", !d.failed()}});
      ok = ok && !d.failed();
    }
    j["expected"] = {{"rtol", f.tolerance.rtol}, {"atol", f.tolerance.atol}, {"ok", ok}, {"outputs", outs}};
  }
  return j;
}

std::vector<std::string> reportText(const json& j) {
  const json& s = j["settings"];
  const json& lat = j["latency_ms"];
  const json& host = j["host_ms_per_batch"];
  const json& ipu = j["ipu_estimate"];
  const int64_t replicas = j["replication_factor"].get<int64_t>();
  std::vector<std::string> lines;
  if (!s["benchmark"].get<bool>()) {  // one cold request is a latency, not a throughput or percentiles
    lines.push_back("single run (one cold request on the simulator; --benchmark measures throughput and latency)");
    lines.push_back("  latency      " + fixed(lat["max"], 3) + " ms");
  } else {
    lines.push_back("performance (host wall time of the simulator: " + std::to_string(j["requests"].get<int64_t>()) +
                    " request(s) in " + fixed(j["wall_s"], 3) + " s after " + std::to_string(s["warmup"].get<int64_t>()) +
                    " warm-up request(s) and " + fixed(s["warmup_s"], 1) + " s, " + std::to_string(s["threads"].get<int>()) +
                    " thread(s) x " + std::to_string(s["async"].get<int>()) + " in flight)");
    lines.push_back("  throughput   " + fixed(j["throughput"]["requests_per_s"], 1) + " requests/s, " +
                    fixed(j["throughput"]["samples_per_s"], 1) + " samples/s");
    lines.push_back("  latency      min " + fixed(lat["min"], 3) + " ms, mean " + fixed(lat["mean"], 3) + " ms, median " +
                    fixed(lat["median"], 3) + " ms, p90 " + fixed(lat["p90"], 3) + " ms, p95 " + fixed(lat["p95"], 3) +
                    " ms, p99 " + fixed(lat["p99"], 3) + " ms, max " + fixed(lat["max"], 3) + " ms");
  }
  lines.push_back("  host split   host-to-device " + fixed(host["host_to_device"], 3) + " ms, compute " +
                  fixed(host["compute"], 3) + " ms, device-to-host " + fixed(host["device_to_host"], 3) + " ms (mean per batch)");
  lines.push_back("  load         " + fixed(j["load_ms"], 3) + " ms (read the PopEF, load the weights)");
  if (ipu["cycles"].get<uint64_t>() == 0) {
    lines.push_back("IPU estimate: none (every node runs on the host)");
    return lines;
  }
  lines.push_back("IPU estimate (static cost model, " + j["target"].get<std::string>() + " at " + fixed(ipu["clock_ghz"], 2) +
                  " GHz)");
  lines.push_back("  latency      " + fixed(ipu["latency_us"], 2) + " us per batch (" +
                  std::to_string(ipu["cycles"].get<uint64_t>()) + " cycles: compute " +
                  std::to_string(ipu["compute_cycles"].get<uint64_t>()) + ", exchange " +
                  std::to_string(ipu["exchange_cycles"].get<uint64_t>()) + ", sync " +
                  std::to_string(ipu["sync_cycles"].get<uint64_t>()) + ")");
  if (ipu["stages"].get<int64_t>() > 1)
    lines.push_back(
        "  IPUs         " + std::to_string(ipu["stages"].get<int64_t>()) + " " + ipu["execution_strategy"].get<std::string>() +
        " stage(s) on " + std::to_string(ipu["num_ipus"].get<int64_t>()) + " IPU(s): a step of " +
        std::to_string(j["batches_per_step"].get<int64_t>()) + " batch(es) takes " + fixed(ipu["step_us"], 2) + " us");
  lines.push_back("  throughput   " + fixed(ipu["throughput_samples_per_s"], 1) + " samples/s (batch " +
                  std::to_string(j["batch_size"].get<int64_t>()) + " x " + std::to_string(j["batches_per_step"].get<int64_t>()) +
                  " per step x " + std::to_string(replicas) + " replica(s))");
  return lines;
}

}  // namespace poprt::tools
