// poprt-convert: ONNX model -> optimised ONNX (+ executable.popef for the IPU simulator).
#include <chrono>
#include <algorithm>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "codegen/compiler.h"
#include "codegen/target.h"
#include "lib/onnx/onnx_io.h"
#include "lib/support/bytes.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "passes/input_shapes.h"
#include "passes/pass_manager.h"
#include "popef/popef.h"
#include "tools/convert_batch.h"
#include "tools/convert_cache.h"
#include "tools/convert_check.h"
#include "tools/convert_options.h"
#include "tools/convert_precision.h"
#include "tools/convert_popef.h"
#include "tools/convert_sharding.h"
#include "tools/convert_show.h"
#include "tools/convert_summary.h"
#include "tools/profile_report.h"
#include "tools/tool_common.h"

namespace poprt::tools {
namespace {

std::string percent(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

// The fp16 flags need --precision fp16; an op type no op has is an error (a typo would keep
// nothing in fp32).
Status checkFp16Flags(const ConvertOptions& o) {
  const passes::Fp16Options& f = o.pipeline.fp16;
  if (o.precision != "fp16") {
    const char* flag = !f.skip_op_types.empty()     ? "--fp16_skip_op_types"
                       : !f.skip_node_names.empty() ? "--fp16_skip_node_names"
                       : f.io                       ? "--fp16_io"
                       : !o.fp16_calibration_inputs.empty() ? "--fp16_calibration_input"
                       : o.precision_compare        ? "--precision_compare"
                                                    : nullptr;
    if (flag) return Error(std::string(flag) + " needs --precision fp16");
  }
  if (!o.fp16_calibration_inputs.empty() && !f.avoid_overflow_patterns)
    return Error("--fp16_calibration_input: the range check is off with --enable_avoid_overflow_patterns=false");
  if ((o.precision_compare_per_layer || !o.precision_compare_inputs.empty()) && !o.precision_compare)
    return Error(std::string(o.precision_compare_per_layer ? "--precision_compare_per_layer" : "--precision_compare_input") +
                 " needs --precision_compare");
  return passes::checkSkipOpTypes(f.skip_op_types);
}

// Runs the pipeline; with `fp32_snapshot`, in two parts, keeping the model as it is just before
// float_to_half (so --precision_compare compares graphs whose value names match).
Expected<std::vector<passes::PassReport>> runPasses(ir::Model& model, const passes::PipelineOptions& options,
                                                    const std::vector<std::string>& names, std::string* fp32_snapshot) {
  if (!fp32_snapshot) return passes::runPipeline(model, options);
  auto split = std::find(names.begin(), names.end(), "float_to_half");
  std::vector<passes::PassReport> reports;
  for (int part = 0; part < 2; ++part) {
    passes::PipelineOptions p = options;
    p.passes = part == 0 ? std::vector<std::string>(names.begin(), split) : std::vector<std::string>(split, names.end());
    p.skip_passes.clear();
    if (std::find(p.passes.begin(), p.passes.end(), p.print_ir_after) == p.passes.end()) p.print_ir_after.clear();
    if (!p.passes.empty()) {  // (an empty list would mean the default pipeline)
      POPRT_ASSIGN_OR_RETURN(auto r, passes::runPipeline(model, p));
      reports.insert(reports.end(), r.begin(), r.end());
    }
    if (part == 0) {
      POPRT_ASSIGN_OR_RETURN(*fp32_snapshot, onnxio::serializeModel(model));
    }
  }
  return reports;
}

// Where a conversion writes: the converted ONNX and, with --export_popef, the PopEF.
ConvertFiles outputFiles(const ConvertOptions& o) {
  std::filesystem::path dir(o.output_dir);
  std::string model_name =
      o.output_model.empty() ? std::filesystem::path(o.input_model).stem().string() + ".poprt.onnx" : o.output_model;
  return {dir / model_name, o.export_popef ? dir / "executable.popef" : std::filesystem::path()};
}

// The compile cache of this conversion, if any: with its key, or nothing when the cache is off,
// the conversion prints reports only a compile makes, or the key's files cannot be read (the
// import then reports why).
struct CacheUse {
  std::optional<CompileCache> cache;
  std::optional<CacheKey> key;
};

CacheUse openCache(const ConvertOptions& o, ConvertOutcome& outcome, std::vector<std::string>& warnings) {
  CacheUse use;
  const std::string dir = effectiveCacheDir(o.cache_dir);
  if (dir.empty() || o.show) return use;
  if (o.precision_compare || !o.pipeline.print_ir_after.empty() || (o.export_popef && !reportDir(o.report).path.empty())) {
    POPRT_LOG(Info, "cache: not used with --precision_compare, --print_ir_after or a report (they show what only a compile sees)");
    outcome.cache = "bypassed";
    return use;
  }
  auto key = cacheKey(o);
  if (!key.ok()) {
    POPRT_LOG(Info, "cache: no key (" << key.error().message() << ")");
    return use;
  }
  auto cache = CompileCache::open(dir, static_cast<uint64_t>(o.cache_max_bytes));
  if (!cache.ok()) {
    warnings.push_back(cache.error().message() + "; compiling without the cache");
    return use;
  }
  use.cache = std::move(cache).value();
  use.key = std::move(key).value();
  outcome.cache = "miss";
  return use;
}

// A cache hit: the files are in place; print what the compile that made the entry reported.
Status reportCacheHit(const ConvertOptions& o, const CacheUse& use, const ConvertFiles& files,
                      const std::string& stored_summary, double seconds) {
  const nlohmann::ordered_json cache_json = {
      {"dir", use.cache->dir().string()}, {"key", use.key->hex}, {"hit", true}, {"seconds", seconds}};
  std::string summary = summaryForCacheHit(stored_summary, o.input_model, files.onnx.string(), files.popef.string(),
                                           o.summary_json, cache_json);
  if (!o.summary_json.empty()) POPRT_TRY(writeOutputFile("--summary_json", o.summary_json, summary));
  auto j = nlohmann::ordered_json::parse(stored_summary, nullptr, false);
  std::cout << "poprt-convert: " << o.input_model << " (cache hit: " << use.cache->entryDir(*use.key).string() << ")\n"
            << "  converted ONNX  " << files.onnx.string() << "\n";
  if (!files.popef.empty()) std::cout << "  PopEF           " << files.popef.string() << "\n";
  if (j.is_object()) {
    if (j["check"].is_object())
      std::cout << "  check           passed when the entry was made (rtol " << j["check"]["rtol"].dump() << ", atol "
                << j["check"]["atol"].dump() << ")\n";
    if (j["warnings"].is_array())
      for (const auto& w : j["warnings"]) std::cout << "  warning: " << w.get<std::string>() << "\n";
  }
  if (!o.summary_json.empty()) std::cout << "  summary         " << o.summary_json << "\n";
  std::printf("  compile time    %.3f s (cache hit", seconds);
  if (j.is_object() && j["compile_seconds"].is_number())
    std::printf("; the compile took %.3f s", j["compile_seconds"].get<double>());
  std::printf(")\n");
  return okStatus();
}

Status convert(const ConvertOptions& o, ConvertOutcome& outcome) {
  POPRT_TRY(applyLogging(o.logging_level));
  if (o.precision != "fp32" && o.precision != "fp16")
    return Error("--precision: expected fp32 or fp16, got '" + o.precision + "'");
  passes::PipelineOptions pipeline = o.pipeline;
  pipeline.fp16.enabled = o.precision == "fp16";
  POPRT_TRY(checkFp16Flags(o));
  if (!(o.available_memory_proportion > 0 && o.available_memory_proportion <= 1))  // NaN too
    return Error("--available_memory_proportion must be in (0, 1]");
  std::vector<passes::InputShape> shapes;
  for (const auto& text : o.input_shapes) {
    POPRT_ASSIGN_OR_RETURN(auto s, passes::parseInputShape(text));
    shapes.push_back(std::move(s));
  }
  // The target is checked before any work so a bad flag fails fast.
  POPRT_ASSIGN_OR_RETURN(exec::Target target, codegen::makeTarget(o.ipu_version, o.num_ipus, o.tiles_per_ipu));
  POPRT_ASSIGN_OR_RETURN(codegen::ShardingOptions sharding, shardingOptions(o.execution_strategy, o.manual_sharding_config));
  if (o.num_ipus == 1 && (sharding.strategy == exec::Strategy::Pipelined || !sharding.manual.empty()))
    throw UsageError("--execution_strategy pipelined and --manual_sharding_config need --num_ipus > 1");

  POPRT_ASSIGN_OR_RETURN(std::vector<std::string> pass_names, passes::resolvePipeline(pipeline));  // fails before any work
  if (o.precision_compare && std::find(pass_names.begin(), pass_names.end(), "float_to_half") == pass_names.end())
    return Error("--precision_compare: the pipeline does not run float_to_half (see --passes/--skip_passes)");
  POPRT_TRY(checkOutputFile("--summary_json", o.summary_json));
  // POPRT_REPORT_DIR asks every tool for a report; only an explicit --report needs a PopEF.
  if (!o.report.empty() && !o.export_popef) throw UsageError("--report needs --export_popef (it profiles the compiled program)");
  const ReportDir report_dir = o.export_popef ? reportDir(o.report) : ReportDir{};
  POPRT_TRY(checkReportDir(report_dir));

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> warnings;
  if (sharding.strategy == exec::Strategy::Pipelined && o.batches_per_step < 2 * o.num_ipus)
    warnings.push_back("pipelined with --batches_per_step " + std::to_string(o.batches_per_step) +
                       ": the stages overlap only on the batches of one step (hint: --batches_per_step >= 2 x stages)");
  CacheUse cache = openCache(o, outcome, warnings);
  const ConvertFiles files = outputFiles(o);
  if (cache.cache) {
    if (auto stored = cache.cache->restore(*cache.key, files)) {
      outcome.cache = "hit";
      return reportCacheHit(o, cache, files, *stored,
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::filesystem::path input(o.input_model);
  POPRT_ASSIGN_OR_RETURN(ir::Model model, onnxio::importModel(input));
  const int64_t opset_before = model.opsetVersion();
  if (o.convert_version != 0 && o.convert_version != opset_before) {
    auto converted = onnxio::convertOpset(model, o.convert_version, o.input_model);
    if (!converted.ok()) return converted.error().withContext("--convert_version " + std::to_string(o.convert_version));
    model = std::move(converted).value();
  }
  if (o.batch_size != 0) POPRT_TRY(passes::applyBatchSize(model, o.batch_size, o.batch_axis));
  if (!shapes.empty() || o.batch_size != 0) {
    if (auto st = passes::applyInputShapes(model, shapes); !st.ok()) return st.error().withContext(o.input_model);
  }
  if (o.show) {  // the inputs and outputs, nothing written
    printModelIo(model, o.input_model, std::cout);
    return okStatus();
  }
  POPRT_TRY(ir::verify(*model.graph));
  const size_t nodes_before = model.graph->numNodes();
  const auto ops_before = countOps(*model.graph);
  std::string check_snapshot;
  if (o.check) {
    POPRT_ASSIGN_OR_RETURN(check_snapshot, snapshotForCheck(model));
  }
  if (pipeline.fp16.enabled && pipeline.fp16.avoid_overflow_patterns) {
    std::string skipped;
    auto inputs = calibrationInputs(*model.graph, o.fp16_calibration_inputs, skipped);
    if (!inputs.ok()) return inputs.error();
    pipeline.fp16.calibration_inputs = std::move(inputs).value();
    if (!skipped.empty()) warnings.push_back(skipped);
  }
  std::string fp32_snapshot;  // the model just before float_to_half, for --precision_compare
  auto reports = runPasses(model, pipeline, pass_names, o.precision_compare ? &fp32_snapshot : nullptr);
  if (!reports.ok()) return reports.error().withContext(o.input_model);
  if (o.check) POPRT_TRY(runCheck(check_snapshot, model, {o.check_rtol, o.check_atol, 0}, std::cout));
  std::optional<nlohmann::ordered_json> precision_json;
  if (o.precision_compare) {
    auto report = comparePrecision(fp32_snapshot, model, {o.precision_compare_per_layer, o.precision_compare_inputs, 0});
    if (!report.ok()) return report.error().withContext(o.input_model);
    printPrecisionReport(*report, std::cout);
    precision_json = precisionReportJson(*report);
  }

  std::optional<codegen::CompileResult> compiled;
  double codegen_seconds = 0;
  if (o.export_popef) {
    auto c0 = std::chrono::steady_clock::now();
    auto result = codegen::compile(model, {target, o.available_memory_proportion, sharding});
    if (!result.ok()) return result.error().withContext(o.input_model);
    compiled = std::move(result).value();
    codegen_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  }
  if (!o.export_popef)
    for (const ir::Value* in : model.graph->inputs())
      if (!in->isInitializer() && in->type.kind == ValueKind::Tensor && !in->type.hasStaticShape())
        warnings.push_back("input '" + in->name() + "' has shape " + in->type.toString() +
                           "; --export_popef needs it static (hint: --input_shape " + in->name() + "=D0,D1,...)");
  for (const auto& r : *reports)
    for (const auto& w : r.stats.warnings) warnings.push_back(r.name + ": " + w);
  if (compiled) warnings.insert(warnings.end(), compiled->warnings.begin(), compiled->warnings.end());
  if (compiled && !compiled->host_nodes.empty())
    warnings.push_back(std::to_string(compiled->host_nodes.size()) + " of " + std::to_string(model.graph->numNodes()) +
                       " node(s) run on the host (host fallback), not on the IPU");

  // Everything is computed: now write. All the files are staged and renamed into place together,
  // so a failure anywhere (a PopEF that does not validate, a full disk) leaves the output
  // directory as it was, a fresh one not even created.
  OutputFiles staged;
  const std::filesystem::path& model_path = files.onnx;
  POPRT_ASSIGN_OR_RETURN(std::string onnx_bytes, onnxio::serializeModel(model));
  if (auto st = staged.add(model_path, onnx_bytes); !st.ok()) return st.error().withContext("--output_dir " + o.output_dir);
  const std::filesystem::path& popef_path = files.popef;
  if (compiled) {
    popef::PopefFile popef = makePopef(*compiled, o, onnx_bytes);
    std::string().swap(onnx_bytes);  // staged and copied into the PopEF: a big model's copy is freed
    if (auto valid = popef::validatePopef(popef); !valid.ok())
      return valid.error().withContext(popef_path.string() + ": cannot write PopEF");
    POPRT_TRY(staged.add(popef_path, popef::serializePopef(popef)));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::optional<nlohmann::ordered_json> cache_json;
  if (cache.cache)
    cache_json = nlohmann::ordered_json{{"dir", cache.cache->dir().string()}, {"key", cache.key->hex}, {"hit", false}};
  std::string summary;  // also the cache entry's
  if (!o.summary_json.empty() || cache.cache) {
    ConvertSummary s;
    s.input_model = o.input_model;
    s.opset_before = opset_before;
    s.opset_after = model.opsetVersion();
    s.model = &model;
    s.nodes_before = ops_before;
    s.nodes_after = countOps(*model.graph);
    s.passes = &*reports;
    s.warnings = warnings;
    s.compiled = compiled ? &*compiled : nullptr;
    if (compiled) s.target = target.name;
    if (o.check) s.check = std::make_pair(o.check_rtol, o.check_atol);
    s.precision = o.precision;
    s.precision_compare = precision_json ? &*precision_json : nullptr;
    s.seconds = seconds;
    s.codegen_seconds = codegen_seconds;
    s.onnx_path = model_path.string();
    s.popef_path = popef_path.string();
    s.summary_path = o.summary_json;
    s.cache = cache_json ? &*cache_json : nullptr;
    summary = summaryJson(s);
    if (!o.summary_json.empty())
      if (auto st = staged.add(o.summary_json, summary); !st.ok()) return st.error().withContext("--summary_json");
  }
  POPRT_TRY(staged.commit());
  std::vector<std::string> report_files;  // after the compile time: the report runs the program once
  if (!report_dir.path.empty()) {
    POPRT_ASSIGN_OR_RETURN(report_files, writeProfileReport(report_dir, {"poprt-convert", popef_path.string()}));
  }
  if (cache.cache)
    if (auto st = cache.cache->store(*cache.key, files, summary); !st.ok()) warnings.push_back(st.error().message());

  std::cout << "poprt-convert: " << o.input_model << " (opset " << model.opsetVersion() << ", " << nodes_before
            << " nodes, " << model.graph->numNodes() << " after optimisation)\n";
  for (const ir::Value* in : model.graph->inputs())
    if (!in->isInitializer()) std::cout << "  input   " << in->name() << "  " << in->type.toString() << "\n";
  for (const ir::Value* out : model.graph->outputs())
    std::cout << "  output  " << out->name() << "  " << out->type.toString() << "\n";
  std::cout << "  converted ONNX  " << model_path.string() << "\n";
  if (compiled) {
    const auto& tb = compiled->executable.tile_bytes;
    uint64_t total = 0, worst = 0;
    uint32_t used = 0;
    for (uint64_t b : tb) {
      total += b;
      worst = std::max(worst, b);
      used += b > 0;
    }
    const exec::Executable& exe = compiled->executable;
    std::cout << "  PopEF           " << popef_path.string() << "\n"
              << "  target          " << target.name << ": " << exe.target.num_ipus << " IPU(s) x " << target.tiles_per_ipu
              << " tiles x " << humanBytes(target.bytes_per_tile) << ", " << target.clock_hz / 1e9 << " GHz";
    if (!exe.segments.empty())
      std::cout << "; " << exe.segments.size() << " " << (exe.strategy == exec::Strategy::Pipelined ? "pipelined" : "sharded")
                << " stage(s)";
    std::cout << "\n"
              << "  placement       " << compiled->device_nodes.size() << " node(s) on the device, "
              << compiled->host_nodes.size() << " on the host (" << compiled->executable.host_programs.size()
              << " host program(s))\n"
              << "  tile memory     " << used << " tiles used, " << humanBytes(total) << " in all, busiest tile "
              << humanBytes(worst) << " (" << percent(worst, target.bytes_per_tile) << " of a tile)\n";
  }
  if (compiled && !compiled->host_nodes.empty()) {
    // The reasons nodes run on the host, most common first.
    std::map<std::string, int> reasons;
    for (const auto& r : compiled->host_reasons) ++reasons[r];
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [r, n] : reasons) sorted.emplace_back(n, r);
    std::sort(sorted.rbegin(), sorted.rend());
    for (size_t i = 0; i < sorted.size() && i < 5; ++i)
      std::cout << "    on the host: " << sorted[i].first << " x " << sorted[i].second << "\n";
    POPRT_LOG(Info, "host nodes: " << nlohmann::json(compiled->host_nodes).dump());
  }
  for (const auto& w : warnings) std::cout << "  warning: " << w << "\n";
  if (!o.summary_json.empty()) std::cout << "  summary         " << o.summary_json << "\n";
  if (!report_files.empty()) std::cout << "  report          " << report_files.back() << "\n";
  std::printf("  compile time    %.3f s\n", seconds);
  return okStatus();
}

Status run(const CLI::App& app, ConvertOptions& o) {
  POPRT_TRY(applyConfigYaml(app, o));
  if (o.list_all_passes) {  // needs no model
    for (const auto& p : passes::allPasses()) std::printf("%-24s %s\n", p.name.c_str(), p.description.c_str());
    return okStatus();
  }
  bool batch = false;
  std::vector<ConvertOptions> plan = planConversions(o, batch);
  ConvertOutcome outcome;
  if (!batch) return convert(plan.front(), outcome);
  return runBatch(o, plan, convert, std::cout);
}

}  // namespace
}  // namespace poprt::tools

int main(int argc, char** argv) {
  using namespace poprt::tools;
  ConvertOptions o;
  CLI::App app{"poprt-convert: compile an ONNX model ahead of time for the IPU simulator"};
  addConvertFlags(app, o);
  return runTool("poprt-convert", app, argc, argv, [&] { return run(app, o); });
}
