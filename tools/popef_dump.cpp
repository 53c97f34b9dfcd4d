// popef-dump: shows what a PopEF holds — blobs, metadata, anchors, program flow and a summary
// of the executable — as a table or, with --json, as JSON.
#include <iostream>

#include <nlohmann/json.hpp>

#include "lib/exec/executable.h"
#include "popef/popef.h"
#include "tools/tool_common.h"

namespace poprt::tools {
namespace {

nlohmann::json describe(const popef::PopefFile& file, const exec::Executable* exe) {
  using nlohmann::json;
  const auto& md = file.metadata;
  json blobs = json::array();
  for (const auto& b : file.blobs)
    blobs.push_back({{"type", popef::blobTypeName(b.type)}, {"name", b.name}, {"bytes", b.payload.size()}});
  json anchors = json::array();
  for (const auto& a : md.anchors)
    anchors.push_back({{"name", a.name}, {"handle", a.handle}, {"kind", a.kind == popef::Anchor::Kind::Input ? "input" : "output"},
                       {"dtype", dtypeName(a.dtype)}, {"shape", a.shape}, {"per_replica", a.per_replica},
                       {"programs", a.programs}});
  json j = {{"blobs", blobs},
            {"metadata",
             {{"ipu_version", md.ipu_version},
              {"num_ipus", md.num_ipus},
              {"replication_factor", md.replication_factor},
              {"batches_per_step", md.batches_per_step},
              {"executable", md.executable_name},
              {"program_flow", {{"load", md.program_flow.load}, {"main", md.program_flow.main}, {"save", md.program_flow.save}}},
              {"compile_options", md.compile_options},
              {"anchors", anchors},
              {"placement", md.extra.is_null() ? json::object() : md.extra}}}};
  if (exe) {
    uint64_t total = 0, worst = 0, vertices = 0, copies = 0, gathers = 0;
    uint32_t used = 0;
    for (uint64_t b : exe->tile_bytes) {
      total += b;
      worst = std::max(worst, b);
      used += b > 0;
    }
    for (const auto& cs : exe->compute_sets) vertices += cs.vertices.size();
    for (const auto& e : exe->exchanges) {
      copies += e.copies.size();
      gathers += e.gathers.size();
    }
    j["executable"] = {{"target", exe->target.name},        {"tiles", exe->target.numTiles()},
                       {"tiles_used", used},                {"tile_memory_bytes", total},
                       {"busiest_tile_bytes", worst},       {"compute_sets", exe->compute_sets.size()},
                       {"vertices", vertices},              {"exchanges", exe->exchanges.size()},
                       {"exchange_copies", copies},         {"exchange_gathers", gathers},
                       {"load_steps", exe->load.steps.size()},
                       {"main_steps", exe->main.steps.size()},  {"host_programs", exe->host_programs.size()}};
  }
  return j;
}

void printTable(const nlohmann::json& j, const std::string& path) {
  std::cout << "PopEF " << path << "\n\nblobs\n";
  for (const auto& b : j["blobs"])
    std::printf("  %-12s %-40s %12llu bytes\n", b["type"].get<std::string>().c_str(), b["name"].get<std::string>().c_str(),
                static_cast<unsigned long long>(b["bytes"].get<uint64_t>()));
  const auto& md = j["metadata"];
  std::cout << "\nmetadata\n"
            << "  ipu_version " << md["ipu_version"].get<std::string>() << ", num_ipus " << md["num_ipus"]
            << ", replication_factor " << md["replication_factor"] << ", batches_per_step " << md["batches_per_step"] << "\n"
            << "  program flow: load " << md["program_flow"]["load"].dump() << ", main " << md["program_flow"]["main"].dump()
            << ", save " << md["program_flow"]["save"].dump() << "\n";
  for (const auto& [k, v] : md["compile_options"].items()) std::cout << "  option " << k << " = " << v.get<std::string>() << "\n";
  std::cout << "\nanchors\n";
  for (const auto& a : md["anchors"]) {
    std::string shape = a["shape"].dump();
    std::printf("  %-6s %-30s %-8s %s\n", a["kind"].get<std::string>().c_str(), a["name"].get<std::string>().c_str(),
                a["dtype"].get<std::string>().c_str(), shape.c_str());
  }
  if (md["placement"].contains("device_nodes")) {
    const auto& host = md["placement"]["host_nodes"];
    std::cout << "\nplacement: " << md["placement"]["device_nodes"].size() << " node(s) on the device, " << host.size()
              << " on the host\n";
    for (size_t i = 0; i < host.size() && i < 20; ++i) std::cout << "  host  " << host[i].get<std::string>() << "\n";
    if (host.size() > 20) std::cout << "  ... and " << host.size() - 20 << " more (--json lists all)\n";
  }
  if (j.contains("executable")) {
    const auto& e = j["executable"];
    std::cout << "\nexecutable (" << e["target"].get<std::string>() << ", " << e["tiles"] << " tiles)\n"
              << "  tiles used " << e["tiles_used"] << ", tile memory " << e["tile_memory_bytes"] << " bytes, busiest tile "
              << e["busiest_tile_bytes"] << " bytes\n"
              << "  " << e["compute_sets"] << " compute sets, " << e["vertices"] << " vertices, " << e["exchanges"]
              << " exchanges (" << e["exchange_copies"] << " copies, " << e["exchange_gathers"] << " gathers), " << e["host_programs"]
              << " host program(s); load " << e["load_steps"] << " steps, main " << e["main_steps"] << " steps\n";
  }
}

}  // namespace
}  // namespace poprt::tools

int main(int argc, char** argv) {
  using namespace poprt;
  using namespace poprt::tools;
  std::string path, level;
  bool json_out = false;
  CLI::App app{"popef-dump: show what a PopEF file holds"};
  app.add_option("popef", path, "the PopEF file")->required();
  app.add_flag("--json", json_out, "print JSON instead of tables");
  addLoggingFlag(app, level);
  return runTool("popef-dump", app, argc, argv, [&]() -> Status {
    POPRT_TRY(applyLogging(level));
    POPRT_ASSIGN_OR_RETURN(popef::PopefFile file, popef::readPopef(path));
    std::optional<exec::Executable> exe;
    if (const popef::Blob* b = file.find(popef::BlobType::Executable, file.metadata.executable_name)) {
      POPRT_ASSIGN_OR_RETURN(exec::Executable e, exec::deserialize(b->payload, path + ": executable"));
      exe = std::move(e);
    }
    nlohmann::json j = describe(file, exe ? &*exe : nullptr);
    if (json_out)
      std::cout << j.dump(2) << "\n";
    else
      printTable(j, path);
    return okStatus();
  });
}
