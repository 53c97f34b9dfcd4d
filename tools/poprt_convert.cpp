// poprt-convert: ONNX model -> optimised ONNX (+ executable.popef for the IPU simulator).
#include <chrono>
#include <algorithm>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "codegen/compiler.h"
#include "codegen/target.h"
#include "lib/onnx/onnx_io.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "passes/input_shapes.h"
#include "passes/pass_manager.h"
#include "popef/popef.h"
#include "tools/tool_common.h"

namespace poprt::tools {
namespace {

struct ConvertOptions {
  std::string input_model;
  std::string output_dir = ".";
  std::string output_model;
  bool export_popef = false;
  std::vector<std::string> input_shapes;
  std::string precision = "fp32";
  std::string ipu_version = "ipu2";
  uint32_t num_ipus = 1;
  uint32_t tiles_per_ipu = 0;
  double available_memory_proportion = 0.6;
  std::string logging_level;
  int64_t batch_size = 0;
  int64_t batch_axis = 0;
  passes::PipelineOptions pipeline;
  bool list_all_passes = false;
};

std::string humanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string percent(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

popef::PopefFile makePopef(const codegen::CompileResult& compiled, const ConvertOptions& o, const std::string& onnx_bytes) {
  const exec::Executable& exe = compiled.executable;
  popef::PopefFile file;
  auto& md = file.metadata;
  md.ipu_version = exe.target.ipu_version;
  md.num_ipus = static_cast<int>(exe.target.num_ipus);
  md.executable_name = "executable";
  md.program_flow = {{"load"}, {"main"}, {}};
  for (const auto& s : exe.streams) {
    if (s.role == exec::HostStream::Role::Weight) continue;
    popef::Anchor a;
    a.name = s.name;
    a.handle = (s.role == exec::HostStream::Role::Input ? "in:" : "out:") + s.name;
    a.dtype = s.dtype;
    a.shape = s.shape;
    a.value = s.kind;
    a.kind = s.role == exec::HostStream::Role::Input ? popef::Anchor::Kind::Input : popef::Anchor::Kind::Output;
    a.programs = {"main"};
    md.anchors.push_back(std::move(a));
  }
  md.compile_options = {{"precision", o.precision},
                        {"ipu_version", o.ipu_version},
                        {"num_ipus", std::to_string(o.num_ipus)},
                        {"tiles_per_ipu", std::to_string(exe.target.tiles_per_ipu)},
                        {"available_memory_proportion", std::to_string(o.available_memory_proportion)}};
  md.extra = {{"device_nodes", compiled.device_nodes}, {"host_nodes", compiled.host_nodes}};
  file.blobs.push_back({popef::BlobType::Executable, "executable", exec::serialize(exe)});
  for (const auto& [name, tensor] : compiled.weights) file.blobs.push_back(popef::makeTensorDataBlob(name, tensor));
  file.blobs.push_back({popef::BlobType::Opaque, "poprt.onnx", std::vector<uint8_t>(onnx_bytes.begin(), onnx_bytes.end())});
  return file;
}

Status convert(const ConvertOptions& o) {
  POPRT_TRY(applyLogging(o.logging_level));
  if (o.precision != "fp32" && o.precision != "fp16")
    return Error("--precision: expected fp32 or fp16, got '" + o.precision + "'");
  if (o.precision == "fp16")
    return Error("--precision fp16: half-precision conversion is not available in this build yet; use fp32");
  if (o.available_memory_proportion <= 0 || o.available_memory_proportion > 1)
    return Error("--available_memory_proportion must be in (0, 1]");
  std::vector<passes::InputShape> shapes;
  for (const auto& text : o.input_shapes) {
    POPRT_ASSIGN_OR_RETURN(auto s, passes::parseInputShape(text));
    shapes.push_back(std::move(s));
  }
  // The target is checked before any work so a bad flag fails fast.
  POPRT_ASSIGN_OR_RETURN(exec::Target target, codegen::makeTarget(o.ipu_version, o.num_ipus, o.tiles_per_ipu));

  POPRT_TRY(passes::resolvePipeline(o.pipeline));  // bad pass names fail before any work

  auto t0 = std::chrono::steady_clock::now();
  std::filesystem::path input(o.input_model);
  POPRT_ASSIGN_OR_RETURN(ir::Model model, onnxio::importModel(input));
  const size_t nodes_before = model.graph->numNodes();
  if (o.batch_size != 0) POPRT_TRY(passes::applyBatchSize(model, o.batch_size, o.batch_axis));
  if (!shapes.empty() || o.batch_size != 0) {
    if (auto st = passes::applyInputShapes(model, shapes); !st.ok()) return st.error().withContext(o.input_model);
  }
  POPRT_TRY(ir::verify(*model.graph));
  auto reports = passes::runPipeline(model, o.pipeline);
  if (!reports.ok()) return reports.error().withContext(o.input_model);

  std::optional<codegen::CompileResult> compiled;
  if (o.export_popef) {
    auto result = codegen::compile(model, {target, o.available_memory_proportion});
    if (!result.ok()) return result.error().withContext(o.input_model);
    compiled = std::move(result).value();
  }

  // Everything is computed: now write, each file atomically.
  std::filesystem::path dir(o.output_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error("--output_dir " + o.output_dir + ": cannot create: " + ec.message());
  std::string model_name = o.output_model.empty() ? input.stem().string() + ".poprt.onnx" : o.output_model;
  std::filesystem::path model_path = dir / model_name;
  POPRT_ASSIGN_OR_RETURN(std::string onnx_bytes, onnxio::serializeModel(model));
  POPRT_TRY(writeFileAtomic(model_path, onnx_bytes));
  std::cout << "poprt-convert: " << o.input_model << " (opset " << model.opsetVersion() << ", " << nodes_before
            << " nodes, " << model.graph->numNodes() << " after optimisation)\n";
  for (const ir::Value* in : model.graph->inputs())
    if (!in->isInitializer()) std::cout << "  input   " << in->name() << "  " << in->type.toString() << "\n";
  for (const ir::Value* out : model.graph->outputs())
    std::cout << "  output  " << out->name() << "  " << out->type.toString() << "\n";
  std::cout << "  converted ONNX  " << model_path.string() << "\n";
  if (compiled) {
    popef::PopefFile file = makePopef(*compiled, o, onnx_bytes);
    std::filesystem::path popef_path = dir / "executable.popef";
    POPRT_TRY(popef::writePopef(popef_path, file));
    const auto& tb = compiled->executable.tile_bytes;
    uint64_t total = 0, worst = 0;
    uint32_t used = 0;
    for (uint64_t b : tb) {
      total += b;
      worst = std::max(worst, b);
      used += b > 0;
    }
    std::cout << "  PopEF           " << popef_path.string() << "\n"
              << "  target          " << target.name << ": " << target.numTiles() << " tiles x "
              << humanBytes(target.bytes_per_tile) << ", " << target.clock_hz / 1e9 << " GHz\n"
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
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  compile time    %.3f s\n", seconds);
  return okStatus();
}

}  // namespace
}  // namespace poprt::tools

int main(int argc, char** argv) {
  using namespace poprt::tools;
  ConvertOptions o;
  CLI::App app{"poprt-convert: compile an ONNX model ahead of time for the IPU simulator"};
  app.add_option("--input_model", o.input_model, "ONNX model to convert")->required();
  app.add_option("--output_dir", o.output_dir, "where outputs go (default: .)");
  app.add_option("--output_model", o.output_model, "file name of the converted ONNX (default: <input stem>.poprt.onnx)");
  app.add_flag("--export_popef", o.export_popef, "also compile to DIR/executable.popef");
  app.add_option("--input_shape", o.input_shapes, "NAME=D0,D1,... fixes the dynamic dims of an input (repeatable)");
  app.add_option("--precision", o.precision, "fp32 or fp16 (default fp32)");
  app.add_option("--ipu_version", o.ipu_version, "ipu1, ipu2 or ipu21 (default ipu2)");
  app.add_option("--num_ipus", o.num_ipus, "IPUs to compile for (default 1)");
  app.add_option("--tiles_per_ipu", o.tiles_per_ipu, "use only this many tiles per IPU (small test targets)");
  app.add_option("--available_memory_proportion", o.available_memory_proportion,
                 "share of tile memory a matmul plan may use (default 0.6)");
  app.add_option("--batch_size", o.batch_size, "set the batch dim of every input whose batch dim is dynamic");
  app.add_option("--batch_axis", o.batch_axis, "which dim --batch_size sets (default 0)");
  app.add_option("--passes", o.pipeline.passes, "comma-separated passes to run instead of the default pipeline")
      ->delimiter(',');
  app.add_option("--skip_passes", o.pipeline.skip_passes, "comma-separated passes to leave out")->delimiter(',');
  app.add_flag("--list_all_passes", o.list_all_passes, "print every pass with a one-line description and exit");
  app.add_option("--print_ir_after", o.pipeline.print_ir_after, "print the IR after the named pass");
  app.add_option("--max_tensor_size", o.pipeline.max_tensor_size,
                 "bytes a constant-folded tensor may take (default 128 MiB)");
  addLoggingFlag(app, o.logging_level);
  // --list_all_passes needs no model.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--list_all_passes") {
      for (const auto& p : poprt::passes::allPasses()) std::printf("%-24s %s\n", p.name.c_str(), p.description.c_str());
      return kExitOk;
    }
  return runTool("poprt-convert", app, argc, argv, [&] { return convert(o); });
}
