#include "passes/pass_manager.h"

#include <algorithm>
#include <chrono>

#include "lib/support/log.h"

namespace poprt::passes {

ops::Opsets PassContext::opsets() const { return ops::opsetsOf(model); }

const PassInfo* findPass(const std::string& name) {
  for (const auto& p : allPasses())
    if (p.name == name) return &p;
  return nullptr;
}

Expected<std::vector<std::string>> resolvePipeline(const PipelineOptions& options) {
  auto known = [](const std::string& name) -> Status {
    if (findPass(name)) return okStatus();
    std::string names;
    for (const auto& p : allPasses()) names += (names.empty() ? "" : ", ") + p.name;
    return Error("unknown pass '" + name + "' (passes: " + names + ")");
  };
  std::vector<std::string> pipeline;
  if (options.passes.empty()) {
    for (const auto& p : allPasses())
      if (!p.fp16_only || options.fp16.enabled) pipeline.push_back(p.name);
  } else {
    for (const auto& name : options.passes) {
      POPRT_TRY(known(name));
      if (findPass(name)->fp16_only && !options.fp16.enabled)
        return Error("pass " + name + " converts the model to float16: it runs only with --precision fp16");
      pipeline.push_back(name);
    }
  }
  for (const auto& name : options.skip_passes) {
    POPRT_TRY(known(name));
    std::erase(pipeline, name);
  }
  if (!options.print_ir_after.empty()) {
    if (Status st = known(options.print_ir_after); !st.ok()) return st.error().withContext("--print_ir_after");
    if (std::find(pipeline.begin(), pipeline.end(), options.print_ir_after) == pipeline.end())
      return Error("--print_ir_after " + options.print_ir_after + ": that pass is not in the pipeline");
  }
  return pipeline;
}

Expected<std::vector<PassReport>> runPipeline(ir::Model& model, const PipelineOptions& options) {
  POPRT_ASSIGN_OR_RETURN(std::vector<std::string> pipeline, resolvePipeline(options));
  std::vector<PassReport> reports;
  for (const auto& name : pipeline) {
    PassContext ctx{model, options.max_tensor_size, options.fp16, options.serialize_matmul, {}};
    auto pass = findPass(name)->make();
    auto t0 = std::chrono::steady_clock::now();
    auto changed = pass->run(*model.graph, ctx);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!changed.ok()) return changed.error().withContext("pass " + name);
    // Every pass leaves a valid graph; a broken one is our bug, reported as such.
    if (auto st = ir::verify(*model.graph); !st.ok())
      throw InternalError("pass " + name + " left an invalid graph: " + st.error().message());
    PassReport report{name, seconds, *changed, std::move(ctx.stats)};
    std::string counters;
    for (const auto& [k, v] : report.stats.counters) counters += " " + k + "=" + std::to_string(v);
    POPRT_LOG(Info, "pass " << name << ": " << (report.changed ? "changed" : "no change") << ", "
                            << static_cast<int64_t>(seconds * 1e6) << " us" << counters);
    for (const auto& miss : report.stats.near_misses) POPRT_LOG(Info, "  pass " << name << " did not fire on " << miss);
    for (const auto& w : report.stats.warnings)
      POPRT_LOG(Info, "  pass " << name << " warns: " << w);  // poprt-convert prints them
    if (name == options.print_ir_after) report.ir_after = ir::print(*model.graph);
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace poprt::passes
