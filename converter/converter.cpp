#include "converter/converter.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "codegen/compiler.h"
#include "codegen/target.h"
#include "converter/cache_tiers.h"
#include "converter/check.h"
#include "converter/make_popef.h"
#include "converter/mixed_precision.h"
#include "converter/precision.h"
#include "converter/profile_report.h"
#include "converter/sharding_config.h"
#include "converter/show.h"
#include "converter/summary.h"
#include "lib/onnx/onnx_io.h"
#include "lib/plugin/plugin.h"
#include "lib/support/bytes.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "passes/input_shapes.h"
#include "passes/pass_manager.h"
#include "popef/popef.h"

namespace poprt::converter {
namespace {

constexpr size_t kStages = 4;  // import, passes, compile, write

std::string fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// The model a conversion reads: the file, or the caller's bytes.
Expected<ir::Model> importInput(const ConvertOptions& o) {
  if (o.model_bytes.empty()) return onnxio::importModel(o.input_model);
  if (o.model_bytes.size() >= (size_t{2} << 30)) return Error(o.input_model + ": over 2 GiB (use external data)");
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(o.model_bytes.data(), static_cast<int>(o.model_bytes.size())))
    return Error(o.input_model + ": not a valid ONNX model (protobuf parse failed)");
  return onnxio::importModelProto(proto, ".", o.input_model);
}

std::string percent(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

// The fp16 flags need --precision fp16; an op type no op has is a usage error (a typo would keep
// nothing in fp32).
void checkFp16Flags(const ConvertOptions& o) {
  const passes::Fp16Options& f = o.pipeline.fp16;
  if (o.precision != "fp16") {
    const char* flag = !f.skip_op_types.empty()             ? "--fp16_skip_op_types"
                       : !f.skip_node_names.empty()         ? "--fp16_skip_node_names"
                       : f.io                               ? "--fp16_io"
                       : !o.fp16_calibration_inputs.empty() ? "--fp16_calibration_input"
                       : o.precision_compare                ? "--precision_compare"
                       : o.fp16_min_cosine > 0              ? "--fp16_min_cosine"
                                                            : nullptr;
    if (flag) throw UsageError(std::string(flag) + " needs --precision fp16");
  }
  if (!o.fp16_calibration_inputs.empty() && !f.avoid_overflow_patterns)
    throw UsageError("--fp16_calibration_input: the range check is off with --enable_avoid_overflow_patterns=false");
  if ((o.precision_compare_per_layer || !o.precision_compare_inputs.empty()) && !o.precision_compare)
    throw UsageError(std::string(o.precision_compare_per_layer ? "--precision_compare_per_layer" : "--precision_compare_input") +
                     " needs --precision_compare");
  if (Status st = passes::checkSkipOpTypes(f.skip_op_types); !st.ok()) throw UsageError(st.error().message());
}

// The passes before float_to_half (part 0) or from it on (part 1) of the pipeline `names`.
passes::PipelineOptions pipelinePart(const passes::PipelineOptions& options, const std::vector<std::string>& names, int part) {
  auto split = std::find(names.begin(), names.end(), "float_to_half");
  passes::PipelineOptions p = options;
  p.passes = part == 0 ? std::vector<std::string>(names.begin(), split) : std::vector<std::string>(split, names.end());
  p.skip_passes.clear();
  if (std::find(p.passes.begin(), p.passes.end(), p.print_ir_after) == p.passes.end()) p.print_ir_after.clear();
  return p;
}

// Runs the pipeline; with `fp32_snapshot`, in two parts, keeping the model as it is just before
// float_to_half (so --precision_compare compares graphs whose value names match).
Expected<std::vector<passes::PassReport>> runPasses(ir::Model& model, const passes::PipelineOptions& options,
                                                    const std::vector<std::string>& names, std::string* fp32_snapshot) {
  if (!fp32_snapshot) return passes::runPipeline(model, options);
  std::vector<passes::PassReport> reports;
  for (int part = 0; part < 2; ++part) {
    const passes::PipelineOptions p = pipelinePart(options, names, part);
    if (!p.passes.empty()) {  // (an empty list would mean the default pipeline)
      POPRT_ASSIGN_OR_RETURN(auto r, passes::runPipeline(model, p));
      reports.insert(reports.end(), r.begin(), r.end());
    }
    if (part == 0) { POPRT_ASSIGN_OR_RETURN(*fp32_snapshot, onnxio::serializeModel(model)); }
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

// A cache hit: the files are in place; print what the compile that made the entry reported.
Status reportCacheHit(const ConvertOptions& o, const CacheTiers& cache, const ConvertFiles& files,
                      const std::string& stored_summary, double seconds, ConvertResult& result, std::ostream& out) {
  nlohmann::ordered_json cache_json = cache.describe();
  cache_json["seconds"] = seconds;
  std::string summary =
      summaryForCacheHit(stored_summary, o.input_model, files.onnx.string(), files.popef.string(), o.summary_json, cache_json);
  if (!o.summary_json.empty() && o.write_files) POPRT_TRY(writeOutputFile("--summary_json", o.summary_json, summary));
  result.summary = summary;
  if (o.write_files) result.files = files;
  // The stored summary came from the cache: nothing in it is assumed to have the shape poprt writes.
  auto j = nlohmann::ordered_json::parse(stored_summary, nullptr, false);
  const std::string where = cache_json["tier"] == "remote" ? std::string("remote cache hit")
                                                           : "cache hit: " + cache_json["dir"].get<std::string>() + "/" +
                                                                 cache_json["key"].get<std::string>();
  out << "poprt-convert: " << o.input_model << " (" << where << ")\n"
      << "  converted ONNX  " << files.onnx.string() << "\n";
  if (!files.popef.empty()) out << "  PopEF           " << files.popef.string() << "\n";
  if (j.is_object()) {
    if (j["check"].is_object())
      out << "  check           passed when the entry was made (rtol " << j["check"]["rtol"].dump() << ", atol "
          << j["check"]["atol"].dump() << ")\n";
    if (j["warnings"].is_array())
      for (const auto& w : j["warnings"]) {
        if (!w.is_string()) continue;
        result.warnings.push_back(w.get<std::string>());
        out << "  warning: " << w.get<std::string>() << "\n";
      }
  }
  if (!o.summary_json.empty()) out << "  summary         " << o.summary_json << "\n";
  out << "  compile time    " << fixed3(seconds) << " s (cache hit";
  if (j.is_object() && j["compile_seconds"].is_number())
    out << "; the compile took " << fixed3(j["compile_seconds"].get<double>()) << " s";
  out << ")\n";
  return okStatus();
}

// The conversion's report: the model's inputs and outputs, the files, the target, where the nodes
// run and the tile memory, and why nodes run on the host (most common reasons first).
void printConversion(const ConvertOptions& o, const ir::Model& model, size_t nodes_before, const ConvertFiles& files,
                     const codegen::CompileResult* compiled, const exec::Target& target, std::ostream& out) {
  const std::filesystem::path& model_path = files.onnx;
  const std::filesystem::path& popef_path = files.popef;
  out << "poprt-convert: " << o.input_model << " (opset " << model.opsetVersion() << ", " << nodes_before << " nodes, "
      << model.graph->numNodes() << " after optimisation)\n";
  for (const ir::Value* in : model.graph->inputs())
    if (!in->isInitializer()) out << "  input   " << in->name() << "  " << in->type.toString() << "\n";
  for (const ir::Value* v : model.graph->outputs()) out << "  output  " << v->name() << "  " << v->type.toString() << "\n";
  out << "  converted ONNX  " << model_path.string() << "\n";
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
    out << "  PopEF           " << popef_path.string() << "\n"
        << "  target          " << target.name << ": " << exe.target.num_ipus << " IPU(s) x " << target.tiles_per_ipu
        << " tiles x " << humanBytes(target.bytes_per_tile) << ", " << target.clock_hz / 1e9 << " GHz";
    if (!exe.segments.empty())
      out << "; " << exe.segments.size() << " " << (exe.strategy == exec::Strategy::Pipelined ? "pipelined" : "sharded")
          << " stage(s)";
    out << "\n"
        << "  placement       " << compiled->device_nodes.size() << " node(s) on the device, " << compiled->host_nodes.size()
        << " on the host (" << compiled->executable.host_programs.size() << " host program(s))\n"
        << "  tile memory     " << used << " tiles used, " << humanBytes(total) << " in all, busiest tile " << humanBytes(worst)
        << " (" << percent(worst, target.bytes_per_tile) << " of a tile)\n";
  }
  if (compiled && !compiled->host_nodes.empty()) {
    // The reasons nodes run on the host, most common first.
    std::map<std::string, int> reasons;
    for (const auto& r : compiled->host_reasons) ++reasons[r];
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [r, n] : reasons) sorted.emplace_back(n, r);
    std::sort(sorted.rbegin(), sorted.rend());
    for (size_t i = 0; i < sorted.size() && i < 5; ++i)
      out << "    on the host: " << sorted[i].first << " x " << sorted[i].second << "\n";
    POPRT_LOG(
        Info,
        "host nodes: " << nlohmann::json(compiled->host_nodes).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

// Nodes poprt-convert serialises on its own when a compile runs out of tile memory at them.
constexpr size_t kMaxAutoSerialized = 4;

// What the flags ask for, checked before any work: a value no model could take is a usage error
// (exit 2), like an unknown flag; an unwritable output file is an error.
struct Plan {
  passes::PipelineOptions pipeline;
  std::vector<passes::InputShape> shapes;
  exec::Target target;
  codegen::ShardingOptions sharding;
  std::vector<std::string> pass_names;
  ReportDir report_dir;
};

Expected<Plan> planConversion(const ConvertOptions& o) {
  // A flag's value that no model could take is a usage error (exit 2), like an unknown flag.
  if (o.precision != "fp32" && o.precision != "fp16")
    throw UsageError("--precision: expected fp32 or fp16, got '" + o.precision + "'");
  if (o.batch_size < 0) throw UsageError("--batch_size must be at least 1, got " + std::to_string(o.batch_size));
  if (o.batch_axis < 0) throw UsageError("--batch_axis must be non-negative, got " + std::to_string(o.batch_axis));
  if (o.execution_strategy != "sharded" && o.execution_strategy != "pipelined")
    throw UsageError("--execution_strategy: expected sharded or pipelined, got '" + o.execution_strategy + "'");
  Plan plan;
  plan.pipeline = o.pipeline;
  plan.pipeline.fp16.enabled = o.precision == "fp16";
  checkFp16Flags(o);
  for (const std::string& text : o.serialize_matmul) {
    auto [node, factor] = splitAssignment(text, "--serialize_matmul");
    char* end = nullptr;
    const long long f = std::strtoll(factor.c_str(), &end, 10);
    if (factor.empty() || *end != '\0' || f < 2 || f > 1024)
      throw UsageError("--serialize_matmul " + text + ": the factor must be a whole number from 2 to 1024");
    plan.pipeline.serialize_matmul.emplace_back(node, f);
  }
  if (!(o.available_memory_proportion > 0 && o.available_memory_proportion <= 1))  // NaN too
    throw UsageError("--available_memory_proportion must be in (0, 1]");
  for (const auto& text : o.input_shapes) {
    auto s = passes::parseInputShape(text);
    if (!s.ok()) throw UsageError(s.error().message());
    plan.shapes.push_back(std::move(s).value());
  }
  // The target is checked before any work so a bad flag fails fast.
  auto made_target = codegen::makeTarget(o.ipu_version, o.num_ipus, o.tiles_per_ipu);
  if (!made_target.ok()) throw UsageError(made_target.error().message());
  plan.target = std::move(made_target).value();
  POPRT_ASSIGN_OR_RETURN(plan.sharding, shardingOptions(o.execution_strategy, o.manual_sharding_config));
  if (o.num_ipus == 1 && (plan.sharding.strategy == exec::Strategy::Pipelined || !plan.sharding.manual.empty()))
    throw UsageError("--execution_strategy pipelined and --manual_sharding_config need --num_ipus > 1");

  auto resolved = passes::resolvePipeline(plan.pipeline);  // an unknown pass name is the flag's error, before any work
  if (!resolved.ok()) throw UsageError(resolved.error().message());
  plan.pass_names = std::move(resolved).value();
  // fp16 is float_to_half's work: a pipeline without it would write float32 weights and record fp16.
  if (plan.pipeline.fp16.enabled &&
      std::find(plan.pass_names.begin(), plan.pass_names.end(), "float_to_half") == plan.pass_names.end())
    throw UsageError("--precision fp16: the pipeline does not run float_to_half (see --passes/--skip_passes)");
  POPRT_TRY(checkOutputFile("--summary_json", o.summary_json));
  // POPRT_REPORT_DIR asks every tool for a report; only an explicit --report needs a PopEF.
  if (!o.report.empty() && !o.export_popef) throw UsageError("--report needs --export_popef (it profiles the compiled program)");
  plan.report_dir = o.export_popef ? reportDir(o.report) : ReportDir{};
  POPRT_TRY(checkReportDir(plan.report_dir));
  return plan;
}

// One conversion, stage by stage: the cache, the import and its shapes, the passes and the checks
// around them, the compile, and the files written all or none.
class Conversion {
 public:
  Conversion(const ConvertOptions& o, const ConvertHooks& hooks, ConvertResult& result, std::ostream& out)
      : o_(o), hooks_(hooks), result_(result), out_(out) {}

  Status run() {
    applyLogging(o_.logging_level);
    POPRT_ASSIGN_OR_RETURN(plan_, planConversion(o_));
    // Before anything reads the model: the plugins' ops are then known to the importer.
    if (auto st = plugin::loadPlugins(o_.custom_library_so_paths); !st.ok())
      return st.error().withContext("--custom_library_so_paths");
    t0_ = std::chrono::steady_clock::now();
    if (plan_.sharding.strategy == exec::Strategy::Pipelined && o_.batches_per_step < 2 * o_.num_ipus)
      warnings_.push_back("pipelined with --batches_per_step " + std::to_string(o_.batches_per_step) +
                          ": the stages overlap only on the batches of one step (hint: --batches_per_step >= 2 x stages)");
    bool bypassed = false;
    POPRT_ASSIGN_OR_RETURN(CacheTiers cache, CacheTiers::open(o_, bypassed, warnings_));
    if (bypassed) result_.cache = "bypassed";
    files_ = outputFiles(o_);
    if (auto stored = cache.lookup(files_, warnings_)) return servedFromCache(cache, *stored);
    if (cache.active()) result_.cache = cache.outcome();
    progress("import", 0);
    POPRT_TRY(importModel());
    if (o_.show) {  // the inputs and outputs, nothing written
      printModelIo(model_, o_.input_model, out_);
      return okStatus();
    }
    progress("passes", 1);
    POPRT_TRY(optimise());
    if (o_.export_popef) {
      progress("compile", 2);
      POPRT_TRY(compile());
    }
    collectWarnings();
    progress("write", 3);
    POPRT_TRY(write(cache));
    progress("done", kStages);
    return okStatus();
  }

 private:
  void progress(const char* stage, size_t done) {
    if (hooks_.progress) hooks_.progress(stage, done, kStages);
  }
  double secondsSince(std::chrono::steady_clock::time_point t) const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  Status servedFromCache(CacheTiers& cache, CacheEntry& stored) {
    result_.cache = cache.outcome();
    for (const auto& w : warnings_) out_ << "  warning: " << w << "\n";
    result_.warnings = warnings_;
    POPRT_TRY(reportCacheHit(o_, cache, files_, stored.summary, secondsSince(t0_), result_, out_));
    result_.onnx = std::move(stored.onnx);
    result_.popef = std::move(stored.popef);
    return okStatus();
  }

  // The model imported, at the asked opset, with its batch size and input shapes fixed.
  Status importModel() {
    POPRT_ASSIGN_OR_RETURN(model_, importInput(o_));
    if (model_.graph->outputs().empty()) return Error(o_.input_model + ": the graph has no outputs: there is nothing to compute");
    opset_before_ = model_.opsetVersion();
    if (o_.convert_version != 0 && o_.convert_version != opset_before_) {
      auto converted = onnxio::convertOpset(model_, o_.convert_version, o_.input_model);
      if (!converted.ok()) return converted.error().withContext("--convert_version " + std::to_string(o_.convert_version));
      model_ = std::move(converted).value();
    }
    if (o_.batch_size != 0) POPRT_TRY(passes::applyBatchSize(model_, o_.batch_size, o_.batch_axis));
    if (!plan_.shapes.empty() || o_.batch_size != 0) {
      if (auto st = passes::applyInputShapes(model_, plan_.shapes); !st.ok()) return st.error().withContext(o_.input_model);
    }
    return okStatus();
  }

  // The passes, with --check and --precision_compare around them.
  Status optimise() {
    passes::PipelineOptions& pipeline = plan_.pipeline;
    POPRT_TRY(ir::verify(*model_.graph));
    nodes_before_ = model_.graph->numNodes();
    ops_before_ = countOps(*model_.graph);
    std::string check_snapshot;
    if (o_.check) { POPRT_ASSIGN_OR_RETURN(check_snapshot, snapshotForCheck(model_)); }
    if (pipeline.fp16.enabled && pipeline.fp16.avoid_overflow_patterns) {
      std::string skipped;
      POPRT_ASSIGN_OR_RETURN(pipeline.fp16.calibration_inputs,
                             calibrationInputs(*model_.graph, o_.fp16_calibration_inputs, skipped));
      if (!skipped.empty()) warnings_.push_back(skipped);
    }
    // The model just before float_to_half, for --precision_compare and --fp16_min_cosine.
    std::string fp32_snapshot;
    const bool min_cosine = pipeline.fp16.enabled && o_.fp16_min_cosine > 0;
    auto reports = runPasses(model_, pipeline, plan_.pass_names, o_.precision_compare || min_cosine ? &fp32_snapshot : nullptr);
    if (!reports.ok()) return reports.error().withContext(o_.input_model);
    reports_ = std::move(reports).value();
    if (min_cosine) {
      if (Status st = meetMinCosine(fp32_snapshot); !st.ok()) return st.error().withContext(o_.input_model);
    }
    for (const auto& r : reports_)
      if (!r.ir_after.empty()) out_ << "IR after " << r.name << ":\n" << r.ir_after;
    if (o_.check) POPRT_TRY(runCheck(check_snapshot, model_, {o_.check_rtol, o_.check_atol, 0}, out_));
    if (o_.precision_compare) {
      auto report = comparePrecision(fp32_snapshot, model_, {o_.precision_compare_per_layer, o_.precision_compare_inputs, 0});
      if (!report.ok()) return report.error().withContext(o_.input_model);
      printPrecisionReport(*report, out_);
      precision_json_ = precisionReportJson(*report);
    }
    return okStatus();
  }

  // --fp16_min_cosine: nodes kept float32 until the float16 model's outputs reach it.
  Status meetMinCosine(const std::string& fp32_snapshot) {
    POPRT_ASSIGN_OR_RETURN(MixedPrecisionOutcome m,
                           meetFp16Cosine(fp32_snapshot, model_, pipelinePart(plan_.pipeline, plan_.pass_names, 1),
                                          o_.fp16_min_cosine, o_.fp16_calibration_inputs, "--fp16_calibration_input"));
    const std::string before = formatCosine(m.cosine_before), after = formatCosine(m.cosine_after);
    char value[32];
    std::snprintf(value, sizeof value, "%g", o_.fp16_min_cosine);
    const std::string target = "--fp16_min_cosine " + std::string(value);
    if (!m.met) {
      warnings_.push_back("float16 outputs reach cosine " + before + " on the calibration inputs, below " + target +
                          (m.candidates ? ", and " + after + " with all " + std::to_string(m.candidates) +
                                              " converted nodes in float32: the model is left as float_to_half made it"
                                        : ", and float_to_half converted no node to keep in float32"));
    } else if (!m.kept_fp32.empty()) {
      kept_fp32_ = m.kept_fp32;
      std::string names;
      for (const std::string& n : m.kept_fp32) names += (names.empty() ? "" : ", ") + n;
      warnings_.push_back("kept " + std::to_string(m.kept_fp32.size()) + " of " + std::to_string(m.candidates) +
                          " converted nodes in float32 for " + target + " (cosine " + before + " -> " + after +
                          " on the calibration inputs, " + std::to_string(m.evaluations) + " evaluations): " + names);
    }
    return okStatus();
  }

  Status compile() {
    const auto c0 = std::chrono::steady_clock::now();
    const codegen::CompileOptions options{plan_.target, o_.available_memory_proportion, plan_.sharding};
    codegen::PlacementMemo memo;
    auto compiled = codegen::compile(model_, options, &memo);
    // Out of tile memory at a node --serialize_matmul can split: split it as the error's hint
    // says and compile again (at most kMaxAutoSerialized nodes, never a slice again), from the
    // placement that got furthest, with a warning naming them. When that does not fit either,
    // the error is the model's own report, or, when the first compile only stopped at the node
    // it named (no report compiled), the report of the model as serialised.
    const auto first = compiled.ok() ? std::nullopt : std::optional<Error>(compiled.error());
    const bool first_is_report = !memo.stopped;
    std::vector<std::string> serialized;
    for (size_t i = 0; i < kMaxAutoSerialized && !compiled.ok(); ++i) {
      const std::optional<std::string> node = codegen::nodeToSerialize(compiled.error().message());
      if (!node || std::any_of(serialized.begin(), serialized.end(),
                               [&](const std::string& s) { return node->rfind(s + "/serial", 0) == 0; }))
        break;
      passes::PipelineOptions serialize;
      serialize.passes = {"serialize_matmul"};
      serialize.serialize_matmul = {{*node, codegen::kSerializeFactor}};
      if (!passes::runPipeline(model_, serialize).ok()) break;
      serialized.push_back(*node);
      compiled = codegen::compile(model_, options, &memo);
    }
    if (!compiled.ok()) {
      if (first_is_report) return first->withContext(o_.input_model);
      auto report = codegen::compileInFull(model_, options);
      return (report.ok() ? compiled.error() : report.error()).withContext(o_.input_model);
    }
    serializeHostFallbacks(options, compiled, serialized);
    if (!serialized.empty()) {
      std::string names;
      for (const std::string& n : serialized) names += (names.empty() ? "'" : ", '") + n + "'";
      warnings_.push_back("out of tile memory otherwise: " + names + " serialized into " +
                          std::to_string(codegen::kSerializeFactor) + " passes over output-channel slices (--serialize_matmul)");
    }
    compiled_ = std::move(compiled).value();
    codegen_seconds_ = secondsSince(c0);
    return okStatus();
  }

  // Nodes that went to the host for want of tile memory, their reasons giving the
  // --serialize_matmul hint (a 3-D conv over whole 56x56 planes): serialised and compiled again
  // on a copy of the model, kept when fewer nodes then run on the host. The first compile's
  // weights point into the model it compiled, so that model is kept whole when the try fails.
  void serializeHostFallbacks(const codegen::CompileOptions& options, Expected<codegen::CompileResult>& compiled,
                              std::vector<std::string>& serialized) {
    std::vector<std::pair<std::string, int64_t>> requests;
    for (const std::string& why : compiled->host_reasons)
      if (auto node = codegen::nodeToSerialize(why); node && serialized.size() + requests.size() < kMaxAutoSerialized)
        requests.emplace_back(*node, codegen::kSerializeFactor);
    if (requests.empty()) return;
    auto bytes = onnxio::serializeModel(model_);
    if (!bytes.ok()) return;  // over protobuf's 2 GiB: no copy to try it on
    auto copy = reimportModel(*bytes, "model");
    if (!copy.ok()) return;
    ir::Model before = std::move(model_);
    model_ = std::move(copy).value();
    passes::PipelineOptions serialize;
    serialize.passes = {"serialize_matmul"};
    serialize.serialize_matmul = requests;
    if (passes::runPipeline(model_, serialize).ok()) {
      auto again = codegen::compile(model_, options);
      if (again.ok() && again->host_nodes.size() < compiled->host_nodes.size()) {
        compiled = std::move(again);
        for (const auto& [node, factor] : requests) serialized.push_back(node);
        return;
      }
    }
    model_ = std::move(before);
  }

  void collectWarnings() {
    if (!o_.export_popef)
      for (const ir::Value* in : model_.graph->inputs())
        if (!in->isInitializer() && in->type.kind == ValueKind::Tensor && !in->type.hasStaticShape())
          warnings_.push_back("input '" + in->name() + "' has shape " + in->type.toString() +
                              "; --export_popef needs it static (hint: --input_shape " + in->name() + "=D0,D1,...)");
    for (const auto& r : reports_)
      for (const auto& w : r.stats.warnings) warnings_.push_back(r.name + ": " + w);
    if (!compiled_) return;
    warnings_.insert(warnings_.end(), compiled_->warnings.begin(), compiled_->warnings.end());
    if (!compiled_->host_nodes.empty())
      warnings_.push_back(std::to_string(compiled_->host_nodes.size()) + " of " + std::to_string(model_.graph->numNodes()) +
                          " node(s) run on the host (host fallback), not on the IPU");
  }

  std::string summary(double seconds, const std::optional<nlohmann::ordered_json>& cache_json) const {
    ConvertSummary s;
    s.input_model = o_.input_model;
    s.opset_before = opset_before_;
    s.opset_after = model_.opsetVersion();
    s.model = &model_;
    s.nodes_before = ops_before_;
    s.nodes_after = countOps(*model_.graph);
    s.passes = &reports_;
    s.warnings = warnings_;
    s.compiled = compiled_ ? &*compiled_ : nullptr;
    if (compiled_) s.target = plan_.target.name;
    if (o_.check) s.check = std::make_pair(o_.check_rtol, o_.check_atol);
    s.precision = o_.precision;
    s.precision_compare = precision_json_ ? &*precision_json_ : nullptr;
    s.seconds = seconds;
    s.codegen_seconds = codegen_seconds_;
    s.onnx_path = files_.onnx.string();
    s.popef_path = files_.popef.string();
    s.summary_path = o_.summary_json;
    s.cache = cache_json ? &*cache_json : nullptr;
    return summaryJson(s);
  }

  // Everything is computed: now write. All the files are staged and renamed into place together,
  // so a failure anywhere (a PopEF that does not validate, a full disk) leaves the output
  // directory as it was, a fresh one not even created.
  Status write(CacheTiers& cache) {
    OutputFiles staged;
    // The ONNX file is serialized and written while the PopEF is made (both only read the model):
    // both hold the weights, and making and writing a big model's twice was a third of its
    // compile (ViT-B/16: 733 MB). Joined before `staged` goes.
    std::optional<Error> onnx_error;  // serializing it, not writing it
    std::future<Status> onnx_written = std::async(std::launch::async, [&]() -> Status {
      auto bytes = onnxio::serializeModel(model_, onnxio::WeightData::IntegersNarrowed);
      if (!bytes.ok()) {
        onnx_error = bytes.error();
        return okStatus();
      }
      result_.onnx = std::move(bytes).value();
      return o_.write_files ? staged.add(files_.onnx, result_.onnx) : okStatus();
    });
    auto onnxWritten = [&]() -> Status {
      if (Status st = onnx_written.get(); !st.ok()) return st.error().withContext("--output_dir " + o_.output_dir);
      if (onnx_error) return *onnx_error;
      return okStatus();
    };
    if (compiled_) {
      popef::PopefFile popef = makePopef(*compiled_, model_, o_, kept_fp32_);
      if (auto valid = popef::validatePopef(popef); !valid.ok())
        return valid.error().withContext(files_.popef.string() + ": cannot write PopEF");
      popef::serializePopef(popef, result_.popef);
      popef = {};  // a big model's copies are freed before the next one is made
      if (o_.write_files) POPRT_TRY(staged.add(files_.popef, result_.popef));
    }
    POPRT_TRY(onnxWritten());
    const double seconds = secondsSince(t0_);
    std::optional<nlohmann::ordered_json> cache_json;
    if (cache.active()) cache_json = cache.describe();
    std::string text = summary(seconds, cache_json);  // also the cache entry's
    if (cache.active()) {                             // uploaded before the files are written; the summary says how it went
      cache.upload(result_.onnx, result_.popef, text, warnings_);
      cache_json = cache.describe();
      text = summary(seconds, cache_json);
    }
    if (!o_.summary_json.empty() && o_.write_files)
      if (auto st = staged.add(o_.summary_json, text); !st.ok()) return st.error().withContext("--summary_json");
    result_.summary = text;
    if (o_.write_files) {
      POPRT_TRY(staged.commit());
      result_.files = files_;
    }
    std::vector<std::string> report_files;  // after the compile time: the report runs the program once
    if (!plan_.report_dir.path.empty() && o_.write_files) {
      POPRT_ASSIGN_OR_RETURN(report_files, writeProfileReport(plan_.report_dir, {"poprt-convert", files_.popef.string()}));
    }
    cache.storeLocal(result_.onnx, result_.popef, text, warnings_);
    printConversion(o_, model_, nodes_before_, files_, compiled_ ? &*compiled_ : nullptr, plan_.target, out_);
    for (const auto& w : warnings_) out_ << "  warning: " << w << "\n";
    result_.warnings = warnings_;
    if (!o_.summary_json.empty()) out_ << "  summary         " << o_.summary_json << "\n";
    if (!report_files.empty()) out_ << "  report          " << report_files.back() << "\n";
    out_ << "  compile time    " << fixed3(seconds) << " s\n";
    return okStatus();
  }

  const ConvertOptions& o_;
  const ConvertHooks& hooks_;
  ConvertResult& result_;
  std::ostream& out_;
  Plan plan_;
  std::vector<std::string> warnings_;
  std::chrono::steady_clock::time_point t0_;
  ConvertFiles files_;
  ir::Model model_;
  int64_t opset_before_ = 0;
  size_t nodes_before_ = 0;
  std::map<std::string, int64_t> ops_before_;
  std::vector<passes::PassReport> reports_;
  std::optional<nlohmann::ordered_json> precision_json_;
  std::vector<std::string> kept_fp32_;  // nodes --fp16_min_cosine kept in float32
  std::optional<codegen::CompileResult> compiled_;
  double codegen_seconds_ = 0;
};

Status convertModel(const ConvertOptions& o, const ConvertHooks& hooks, ConvertResult& outcome, std::ostream& out) {
  return Conversion(o, hooks, outcome, out).run();
}

}  // namespace

Converter::Converter(ConvertOptions options, ConvertHooks hooks) : options_(std::move(options)), hooks_(std::move(hooks)) {}

Expected<ConvertResult> Converter::convert() const {
  std::ostream null_stream(nullptr);  // a stream with no buffer: everything written is dropped
  ConvertResult result;
  POPRT_TRY(convertModel(options_, hooks_, result, hooks_.report ? *hooks_.report : null_stream));
  return result;
}

}  // namespace poprt::converter
