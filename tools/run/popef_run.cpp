// popef-run: runs a PopEF on the IPU simulator through the runtime API (ModelRunner) with inputs
// from .npy/.pb files (or generated), writes and checks the outputs, and prints a benchmark
// summary: host throughput and latency, the host split, and the estimated time on a real IPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "converter/profile_report.h"
#include "lib/onnx/value_io.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "lib/support/npy.h"
#include "poprt/runtime/errors.h"
#include "poprt/runtime/model_runner.h"
#include "runtime/host_value.h"
#include "tools/common/tool_common.h"
#include "tools/run/run_bench.h"
#include "tools/run/run_inputs.h"
#include "tools/run/run_report.h"

namespace poprt::tools {
namespace {

using converter::buildProfile;
using converter::checkReportDir;
using converter::compareValues;
using converter::diffTable;
using converter::formatError;
using converter::profileTable;
using converter::ReportDir;
using converter::reportDir;
using converter::Tolerance;
using converter::ValueDiff;
using converter::writeProfileReport;

namespace fs = std::filesystem;

struct RunOptions {
  std::string popef;
  InputOptions in;
  std::string output_dir, expected_dir, json, logging_level;
  std::string report;  // --report DIR (or POPRT_REPORT_DIR)
  Tolerance tolerance;
  BenchOptions bench;
  bool benchmark = false;                     // --benchmark, or any of --iterations, --warmup, --duration given
  std::string export_times;                   // --export_times FILE
  bool profile = false;                       // --profile: the per-step table of one traced run
  std::vector<std::string> custom_libraries;  // --custom_library_so_paths
  bool tolerance_given = false;               // --rtol or --atol: else an fp16 PopEF's defaults
};

// float16 keeps about three significant digits and its sums round at every step: an fp16 PopEF is
// judged by these unless --rtol/--atol are given (as --check is advised to be, README).
constexpr double kFp16Tolerance = 1e-2;

// "first values ... | min max mean" for a quick look at an output.
std::string summarize(const Tensor& t) {
  std::string s;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t n = t.numElements();
  Status st = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto data = t.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      double v = static_cast<double>(toCompute(data[static_cast<size_t>(i)]));
      if (i < 4) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.6g", i ? " " : "", v);
        s += buf;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
  });
  if (!st.ok()) return "(" + std::string(dtypeName(t.dtype())) + ")";
  if (n > 4) s += " ...";
  if (n == 0) return "(empty)";
  char buf[96];
  std::snprintf(buf, sizeof buf, "  | min %.6g max %.6g mean %.6g", lo, hi, sum / static_cast<double>(n));
  return "[" + s + "]" + buf;
}

// The reference of output i in --expected_dir: output_<i>_<name>.npy/.pb (../shared/models) or
// output_<i>.pb/.npy (the ONNX test data).
Expected<ops::RtValue> readExpected(const std::string& dir, size_t i, const runtime::DataDesc& d) {
  const std::string n = std::to_string(i);
  for (const std::string& file :
       {outputFileName(i, d.name, ".npy"), outputFileName(i, d.name, ".pb"), "output_" + n + ".pb", "output_" + n + ".npy"}) {
    fs::path p = fs::path(dir) / file;
    std::error_code ec;
    if (fs::exists(p, ec)) return onnxio::readValueFile(p, static_cast<ValueKind>(d.kind));
  }
  return Error("--expected_dir " + dir + ": no " + outputFileName(i, d.name, ".npy") + " (or output_" + n + ".pb) for output '" +
               d.name + "'");
}

Status writeOutputs(const std::string& dir, const std::vector<runtime::DataDesc>& descs,
                    const std::vector<ops::RtValue>& values) {
  // Tensors as .npy; sequences and optionals as ONNX .pb, the format of the ONNX test data.
  // All staged, then renamed into place together: an output that cannot be written (a bfloat16
  // tensor has no .npy form) leaves no other output behind, and no fresh directory.
  OutputFiles files;
  for (size_t i = 0; i < values.size(); ++i) {
    const runtime::DataDesc& d = descs[i];
    const bool tensor = d.kind == runtime::AnchorKind::Tensor;
    const fs::path path = fs::path(dir) / outputFileName(i, d.name, tensor ? ".npy" : ".pb");
    Status st = okStatus();
    if (tensor) {
      auto bytes = serializeNpy(values[i].tensor);
      if (!bytes.ok()) return bytes.error().withContext(path.string());
      st = files.add(path, *bytes);
    } else {
      POPRT_ASSIGN_OR_RETURN(std::string bytes, onnxio::serializeValueProto(values[i], static_cast<ValueKind>(d.kind), d.name));
      st = files.add(path, bytes);
    }
    if (!st.ok()) return st.error().withContext("--output_dir " + dir);
  }
  return files.commit();
}

void printOutput(size_t i, const runtime::DataDesc& d, const ops::RtValue& v) {
  if (v.isTensor())
    std::printf("  output %zu  %s  %s%s  %s\n", i, d.name.c_str(), std::string(dtypeName(v.tensor.dtype())).c_str(),
                shapeToString(v.tensor.shape()).c_str(), summarize(v.tensor).c_str());
  else if (v.kind == ops::RtValue::Kind::Sequence)
    std::printf("  output %zu  %s  sequence of %zu tensor(s)\n", i, d.name.c_str(), v.sequence.size());
  else
    std::printf("  output %zu  %s  empty optional\n", i, d.name.c_str());
}

RunFacts runFacts(const RunOptions& o, runtime::ModelRunner& runner, const std::vector<runtime::DataDesc>& in_descs,
                  const BenchResult& bench, double load_s, const std::vector<ValueDiff>& diffs, const Tolerance& tolerance) {
  RunFacts facts;
  facts.popef = o.popef;
  facts.target = runner.session().targetName();
  facts.ipu_version = runner.session().ipuVersion();
  facts.replication_factor = runner.replicationFactor();
  facts.batches_per_step = runner.batchesPerStep();
  facts.batch = !in_descs.empty() && !in_descs[0].shape.empty() ? std::max<int64_t>(in_descs[0].shape[0], 1) : 1;
  facts.benchmark = o.benchmark;
  facts.iterations = o.bench.iterations;
  facts.warmup = o.bench.warmup;
  facts.warmup_s = o.bench.warmup_seconds;
  facts.duration = o.bench.duration;
  facts.threads = o.bench.threads;
  facts.async = o.bench.async;
  facts.load_s = load_s;
  facts.latencies = bench.latencies;
  facts.wall_s = bench.wall;
  facts.timings = bench.timings;
  facts.estimate = runner.estimate();
  facts.diffs = o.expected_dir.empty() ? nullptr : &diffs;
  facts.tolerance = tolerance;
  return facts;
}

// The outputs and, with --expected_dir, how they compare.
void printRun(const RunOptions& o, const RunFacts& facts, const std::vector<runtime::DataDesc>& out_descs,
              const std::vector<ops::RtValue>& outputs, const std::vector<ValueDiff>& diffs, bool fp16) {
  const Tolerance& tolerance = facts.tolerance;
  std::printf("popef-run: %s (target %s, %u replica(s), %u batch(es) per step)\n", o.popef.c_str(), facts.target.c_str(),
              facts.replication_factor, facts.batches_per_step);
  for (size_t i = 0; i < outputs.size(); ++i) printOutput(i, out_descs[i], outputs[i]);
  if (!o.output_dir.empty()) std::printf("  outputs written to %s\n", o.output_dir.c_str());
  if (o.expected_dir.empty()) return;
  const std::string judged = tolerance.compare == "cosine" ? "cosine >= " + formatError(tolerance.min_cosine)
                             : tolerance.compare == "top1"
                                 ? std::string("top1: the same largest element in every row")
                                 : "rtol " + formatError(tolerance.rtol) + ", atol " + formatError(tolerance.atol) +
                                       (fp16 && !o.tolerance_given ? ": fp16 defaults" : "");
  std::printf("expected outputs (%s, %s)\n", o.expected_dir.c_str(), judged.c_str());
  for (const auto& line : diffTable(diffs, "  ")) std::printf("%s\n", line.c_str());
}

// --export_times, --json, --profile and --report: what the run leaves besides the outputs.
Status writeExtras(const RunOptions& o, const nlohmann::json& report, const BenchResult& bench,
                   const std::vector<ops::RtValue>& inputs) {
  if (!o.export_times.empty()) {  // trtexec's --exportTimes: every measured request
    nlohmann::json times = nlohmann::json::array();
    for (size_t i = 0; i < bench.latencies.size(); ++i)
      times.push_back({{"start_ms", bench.starts[i] * 1e3}, {"latency_ms", bench.latencies[i] * 1e3}});
    POPRT_TRY(writeOutputFile("--export_times", o.export_times, times.dump(1) + "\n"));
    std::printf("  request times written to %s\n", o.export_times.c_str());
  }
  if (!o.json.empty()) {
    POPRT_TRY(writeOutputFile("--json", o.json, report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
    std::printf("  summary written to %s\n", o.json.c_str());
  }
  if (o.profile) {  // one more run, traced, with the same inputs
    POPRT_ASSIGN_OR_RETURN(sim::VerifiedPopef model, sim::readVerifiedPopef(o.popef));
    POPRT_ASSIGN_OR_RETURN(auto profile, buildProfile(std::move(model), {"popef-run", o.popef, &inputs}));
    for (const auto& line : profileTable(profile, 15)) std::printf("%s\n", line.c_str());
  }
  const ReportDir report_dir = reportDir(o.report);
  if (!report_dir.path.empty()) {
    // The trace is of one more run, with the same inputs, on an engine of the report's own.
    POPRT_ASSIGN_OR_RETURN(auto files, writeProfileReport(report_dir, {"popef-run", o.popef, &inputs}));
    std::printf("  report written to %s\n", files.back().c_str());
  }
  return okStatus();
}

Status run(const RunOptions& o) {
  applyLogging(o.logging_level);
  POPRT_TRY(checkOutputFile("--json", o.json));
  const ReportDir report_dir = reportDir(o.report);
  POPRT_TRY(checkReportDir(report_dir));
  std::error_code ec;
  if (!o.expected_dir.empty() && !fs::is_directory(o.expected_dir, ec))
    return Error("--expected_dir " + o.expected_dir + ": not a directory");
  POPRT_TRY(loadCustomLibraries(o.custom_libraries));

  runtime::ModelRunnerConfig config;
  config.thread_safe = o.bench.threads > 1;
  // Room for every request in flight, so --async K really keeps K queued.
  config.ring_buffer_size = static_cast<size_t>(std::clamp(o.bench.threads * o.bench.async, 4, 4096));
  const auto t_load = std::chrono::steady_clock::now();
  std::unique_ptr<runtime::ModelRunner> runner;
  try {
    runner = std::make_unique<runtime::ModelRunner>(o.popef, config);
  } catch (const runtime::Error& e) { return Error(e.what()); }
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
  Tolerance tolerance = o.tolerance;
  const auto& compiled = runner->session().compileOptions();
  const bool fp16 = compiled.count("precision") && compiled.at("precision") == "fp16";
  if (fp16 && !o.tolerance_given) tolerance.rtol = tolerance.atol = kFp16Tolerance;

  const auto in_descs = runner->getExecuteInputs();
  const auto out_descs = runner->getExecuteOutputs();
  POPRT_ASSIGN_OR_RETURN(std::vector<ops::RtValue> inputs, gatherInputs(in_descs, o.in, o.popef));
  std::vector<std::vector<uint8_t>> encoded;
  POPRT_ASSIGN_OR_RETURN(runtime::InputMemoryView views, inputViews(in_descs, inputs, encoded));
  std::vector<ops::RtValue> expected;
  if (!o.expected_dir.empty())
    for (size_t i = 0; i < out_descs.size(); ++i) {
      POPRT_ASSIGN_OR_RETURN(ops::RtValue v, readExpected(o.expected_dir, i, out_descs[i]));
      expected.push_back(std::move(v));
    }

  auto bench = runBench(*runner, views, o.bench);
  if (!bench.ok()) return bench.error().withContext(o.popef);
  std::vector<ops::RtValue> outputs;
  for (const auto& d : out_descs) {
    const runtime::TensorMemory& m = bench->first_outputs.at(d.name);
    POPRT_ASSIGN_OR_RETURN(ops::RtValue v, runtime::decodeValue(m.desc, m.data, o.popef + ": output '" + d.name + "'"));
    outputs.push_back(std::move(v));
  }
  // The outputs are written even when they differ from --expected_dir, to look at the difference.
  if (!o.output_dir.empty()) POPRT_TRY(writeOutputs(o.output_dir, out_descs, outputs));
  std::vector<ValueDiff> diffs;
  for (size_t i = 0; i < expected.size(); ++i) {
    ValueDiff d;
    d.name = out_descs[i].name;
    POPRT_TRY(compareValues(expected[i], outputs[i], tolerance, {"in --expected_dir", "in the run"}, d));
    diffs.push_back(std::move(d));
  }

  const RunFacts facts = runFacts(o, *runner, in_descs, *bench, load_s, diffs, tolerance);
  const nlohmann::json report = reportJson(facts);
  printRun(o, facts, out_descs, outputs, diffs, fp16);
  for (const auto& line : reportText(report)) std::printf("%s\n", line.c_str());
  POPRT_TRY(writeExtras(o, report, *bench, inputs));
  std::fflush(stdout);
  return worstDiff(diffs, "--expected_dir " + o.expected_dir, tolerance);
}

}  // namespace
}  // namespace poprt::tools

int main(int argc, char** argv) {
  using namespace poprt::tools;
  RunOptions o;
  CLI::App app{"popef-run: run a PopEF on the IPU simulator and benchmark it"};
  app.add_option("popef", o.popef, "the PopEF file to run")->required();
  app.add_option("--input", o.in.inputs, "NAME=FILE.npy or NAME=FILE.pb (repeatable; wins over --input_dir)");
  app.add_option("--input_dir", o.in.input_dir, "inputs from DIR/input_<i>*.npy or DIR/input_<i>.pb, i in input order");
  app.add_option("--fill", o.in.fill, "generate the inputs not given: random (floats in [-1,1), integers 0..3), zeros or ones")
      ->check(CLI::IsMember({"random", "zeros", "ones"}));
  app.add_option("--seed", o.in.seed, "seed of --fill random (default 0)")->check(CLI::NonNegativeNumber);
  app.add_option("--output_dir", o.output_dir, "write each output as DIR/output_<i>_<name>.npy (.pb for sequences, optionals)");
  app.add_option("--expected_dir", o.expected_dir,
                 "compare the outputs with DIR/output_<i>_<name>.npy (or output_<i>.pb); exit 1 on a mismatch");
  auto* rtol =
      app.add_option("--rtol", o.tolerance.rtol, "relative tolerance of --expected_dir (default 1e-3; 1e-2 for an fp16 PopEF)")
          ->check(CLI::NonNegativeNumber);
  auto* atol =
      app.add_option("--atol", o.tolerance.atol, "absolute tolerance of --expected_dir (default 1e-4; 1e-2 for an fp16 PopEF)")
          ->check(CLI::NonNegativeNumber);
  app.add_option("--compare", o.tolerance.compare,
                 "how --expected_dir judges: allclose (every element within --atol + --rtol |ref|; default), cosine "
                 "(cosine similarity of each output at least --min_cosine: for fp16 PopEFs) or top1 (the largest "
                 "element of every row along the last axis at the same index: classifiers)")
      ->check(CLI::IsMember({"allclose", "cosine", "top1"}));
  app.add_option("--min_cosine", o.tolerance.min_cosine, "the least cosine similarity --compare cosine takes (default 0.999)")
      ->check(CLI::Range(-1.0, 1.0));
  auto* benchmark = app.add_flag("--benchmark", o.benchmark,
                                 "measure throughput and latency as trtexec does: a warm-up of 0.2 s, then at least 10 "
                                 "requests and 3 s (each overridden by its flag); without it one cold request runs");
  auto* iterations = app.add_option("--iterations", o.bench.iterations, "measured requests, at least (benchmark default 10)")
                         ->check(CLI::Range(int64_t{1}, int64_t{1000000000}));
  auto* warmup = app.add_option("--warmup", o.bench.warmup, "warm-up requests before the measured ones (instead of 0.2 s)")
                     ->check(CLI::Range(int64_t{0}, int64_t{1000000000}));
  auto* duration =
      app.add_option("--duration", o.bench.duration, "seconds the measured requests last, at least (benchmark default 3)")
          ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--export_times", o.export_times, "write every measured request's start and latency (ms) to FILE as JSON");
  app.add_flag("--profile", o.profile,
               "print the steps (compute sets, exchanges, host programs) one traced run spent longest on, with the "
               "IPU estimate of each");
  app.add_option("--threads", o.bench.threads, "client threads submitting requests (default 1)")->check(CLI::Range(1, 256));
  app.add_option("--async", o.bench.async, "requests each thread keeps in flight (default 1)")->check(CLI::Range(1, 1024));
  app.add_option("--json", o.json, "write the summary as JSON to FILE");
  app.add_option("--report", o.report, "write a profile report, DIR/profile.json and DIR/report.html (also POPRT_REPORT_DIR)");
  addCustomLibraryFlag(app, o.custom_libraries);
  addLoggingFlag(app, o.logging_level);
  return runTool("popef-run", app, argc, argv, [&] {
    // Any benchmark flag makes a benchmark; trtexec's defaults fill what it does not give.
    o.tolerance_given = rtol->count() || atol->count();
    o.benchmark = benchmark->count() || iterations->count() || warmup->count() || duration->count();
    if (o.benchmark) {
      if (!iterations->count()) o.bench.iterations = 10;
      if (!duration->count()) o.bench.duration = 3.0;
      if (!warmup->count()) o.bench.warmup_seconds = 0.2;
    }
    return run(o);
  });
}
