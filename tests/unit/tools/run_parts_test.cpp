// popef-run's report: nearest-rank percentiles, per-batch host split, the IPU estimate's
// throughput over replicas, and the text showing exactly the JSON's numbers.
#include <gtest/gtest.h>

#include "tools/run/run_report.h"

namespace poprt::tools {
namespace {

RunFacts facts() {
  RunFacts f;
  f.target = "ipu2";
  f.batch = 4;
  f.replication_factor = 2;
  for (int i = 100; i >= 1; --i) f.latencies.push_back(i * 1e-3);  // 1..100 ms, unsorted
  f.wall_s = 2.0;
  f.timings.batches = 4;
  f.timings.stream_in_s = 0.004;
  f.timings.compute_s = 0.4;
  f.timings.stream_out_s = 0.0004;
  f.estimate = {1330000, 1000000, 300000, 30000, 1.33e9};
  f.estimate.step_cycles = 1330000;  // a step of one batch
  return f;
}

TEST(RunReport, PercentilesAreNearestRank) {
  const auto j = reportJson(facts());
  const auto& lat = j["latency_ms"];
  EXPECT_EQ(lat["min"].get<double>(), 1.0);
  EXPECT_EQ(lat["median"].get<double>(), 50.0);
  EXPECT_EQ(lat["p90"].get<double>(), 90.0);
  EXPECT_EQ(lat["p95"].get<double>(), 95.0);
  EXPECT_EQ(lat["p99"].get<double>(), 99.0);
  EXPECT_EQ(lat["max"].get<double>(), 100.0);
  EXPECT_EQ(lat["mean"].get<double>(), 50.5);
  EXPECT_EQ(j["requests"].get<int>(), 100);
  EXPECT_EQ(j["throughput"]["requests_per_s"].get<double>(), 50.0);
  EXPECT_EQ(j["throughput"]["samples_per_s"].get<double>(), 200.0);
}

TEST(RunReport, HostSplitIsPerBatchAndTheEstimateCountsReplicas) {
  const auto j = reportJson(facts());
  EXPECT_EQ(j["host_ms_per_batch"]["host_to_device"].get<double>(), 1.0);
  EXPECT_EQ(j["host_ms_per_batch"]["compute"].get<double>(), 100.0);
  EXPECT_EQ(j["host_ms_per_batch"]["device_to_host"].get<double>(), 0.1);
  EXPECT_EQ(j["ipu_estimate"]["latency_us"].get<double>(), 1000.0);                // 1.33M cycles at 1.33 GHz
  EXPECT_EQ(j["ipu_estimate"]["throughput_samples_per_s"].get<double>(), 8000.0);  // 4 x 2 per ms
}

// A pipelined step of 4 batches over 2 stages in twice one batch's time: 4 batches x 4 samples x
// 2 replicas every 2 ms.
TEST(RunReport, APipelinedStepCountsItsBatches) {
  RunFacts f = facts();
  f.batches_per_step = 4;
  f.estimate.batches_per_step = 4;
  f.estimate.step_cycles = 2 * 1330000;
  f.estimate.num_ipus = f.estimate.stages = 2;
  f.estimate.pipelined = true;
  const auto j = reportJson(f);
  EXPECT_EQ(j["ipu_estimate"]["throughput_samples_per_s"].get<double>(), 16000.0);
  EXPECT_EQ(j["ipu_estimate"]["step_us"].get<double>(), 2000.0);
  std::string text;
  for (const auto& line : reportText(j)) text += line + "\n";
  EXPECT_NE(text.find("2 pipelined stage(s) on 2 IPU(s): a step of 4 batch(es) takes 2000.00 us"), std::string::npos) << text;
}

TEST(RunReport, TheTextShowsTheJsonNumbers) {
  RunFacts f = facts();
  f.benchmark = true;  // (a plain run prints its one latency only)
  f.latencies = {0.0012346, 0.0023456};
  const auto j = reportJson(f);
  EXPECT_EQ(j["latency_ms"]["min"].get<double>(), 1.235);  // rounded once, to what the text shows
  std::string text;
  for (const auto& line : reportText(j)) text += line + "\n";
  EXPECT_NE(text.find("min 1.235 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("max 2.346 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("1000.00 us per batch (1330000 cycles: compute 1000000, exchange 300000, sync 30000)"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace poprt::tools
