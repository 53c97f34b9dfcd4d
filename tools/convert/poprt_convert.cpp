// poprt-convert: ONNX model -> optimised ONNX (+ executable.popef for the IPU simulator). A shell
// over the conversion library (converter/converter.h): flags in, the report out.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "converter/converter.h"
#include "passes/pass_manager.h"
#include "tools/common/tool_common.h"
#include "tools/convert/convert_batch.h"
#include "tools/convert/convert_flags.h"

namespace poprt::tools {
namespace {

// On a terminal, the stage the conversion is in, on one stderr line that the report replaces.
void showProgress(const std::string& stage, size_t done, size_t total) {
  static const bool tty = isatty(STDERR_FILENO) != 0;
  if (!tty) return;
  if (stage == "done")
    std::fprintf(stderr, "\r\033[K");
  else
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s...", done + 1, total, stage.c_str());
  std::fflush(stderr);
}

Status convertOne(const ConvertOptions& o, ConvertOutcome& outcome) {
  auto result = converter::Converter(o, {&std::cout, showProgress}).convert();
  showProgress("done", 0, 0);
  if (!result.ok()) return result.error();
  outcome.cache = result->cache;
  return okStatus();
}

Status run(const CLI::App& app, ConvertOptions& o) {
  POPRT_TRY(converter::applyConfigYaml(givenOptions(app), o));
  if (o.list_all_passes) {  // needs no model
    for (const auto& p : passes::allPasses()) std::printf("%-24s %s\n", p.name.c_str(), p.description.c_str());
    return okStatus();
  }
  bool batch = false;
  std::vector<ConvertOptions> plan = planConversions(o, batch);
  ConvertOutcome outcome;
  if (!batch) return convertOne(plan.front(), outcome);
  return runBatch(o, plan, convertOne, std::cout);
}

}  // namespace
}  // namespace poprt::tools

int main(int argc, char** argv) {
  using namespace poprt::tools;
  keepFreedMemoryForReuse();
  ConvertOptions o;
  CLI::App app{"poprt-convert: compile an ONNX model ahead of time for the IPU simulator"};
  addConvertFlags(app, o);
  return runTool("poprt-convert", app, argc, argv, [&] { return run(app, o); });
}
