// popef-dump: shows what a PopEF holds — blobs, metadata, anchors, program flow and a summary
// of the executable — as a table or, with --json, as JSON.
#include <algorithm>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lib/exec/executable.h"
#include "lib/onnx/graph_walk.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "popef/popef.h"
#include "sim/verify_popef.h"
#include "tools/common/tool_common.h"

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
    anchors.push_back({{"name", a.name},
                       {"handle", a.handle},
                       {"kind", a.kind == popef::Anchor::Kind::Input ? "input" : "output"},
                       {"dtype", dtypeName(a.dtype)},
                       {"shape", a.shape},
                       {"per_replica", a.per_replica},
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
    // The verifier parsed each host program already.
    uint64_t host_weights = 0;
    for (const auto& hp : exe->host_programs) {
      onnx::ModelProto proto;
      if (proto.ParseFromString(hp.onnx)) host_weights += onnxio::weightBytes(proto.graph());
    }
    j["executable"] = {{"target", exe->target.name},
                       {"tiles", exe->target.numTiles()},
                       {"tiles_used", used},
                       {"tile_memory_bytes", total},
                       {"busiest_tile_bytes", worst},
                       {"compute_sets", exe->compute_sets.size()},
                       {"vertices", vertices},
                       {"exchanges", exe->exchanges.size()},
                       {"exchange_copies", copies},
                       {"exchange_gathers", gathers},
                       {"load_steps", exe->load.steps.size()},
                       {"main_steps", exe->main.steps.size()},
                       {"host_programs", exe->host_programs.size()},
                       {"host_program_weight_bytes", host_weights},
                       {"num_ipus", exe->target.num_ipus},
                       {"execution_strategy", exe->strategy == exec::Strategy::Pipelined ? "pipelined" : "sharded"}};
    // Per IPU: the tile memory its program needs, and its busiest tile.
    nlohmann::json ipus = nlohmann::json::array();
    for (uint32_t ipu = 0; ipu < exe->target.num_ipus; ++ipu) {
      uint64_t bytes = 0, busiest = 0;
      for (uint32_t t = ipu * exe->target.tiles_per_ipu; t < (ipu + 1) * exe->target.tiles_per_ipu; ++t) {
        bytes += exe->tile_bytes[t];
        busiest = std::max(busiest, exe->tile_bytes[t]);
      }
      ipus.push_back({{"ipu", ipu}, {"bytes", bytes}, {"busiest_tile_bytes", busiest}});
    }
    j["executable"]["ipus"] = std::move(ipus);
    nlohmann::json segments = nlohmann::json::array();
    for (const auto& g : exe->segments)
      segments.push_back({{"ipu", g.ipu}, {"steps", g.copies - g.begin}, {"link_copy_steps", g.end - g.copies}});
    j["executable"]["segments"] = std::move(segments);
  }
  return j;
}

// A text from the file, shown with control characters escaped: a name must not be able to drive
// the terminal or break a line of the table.
std::string shown(const nlohmann::json& text) {
  std::string s = text.get<std::string>(), out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

// printf-style formatting into a string (names are padded into columns).
template <class... Args>
std::string line(const char* format, Args... args) {
  int n = std::snprintf(nullptr, 0, format, args...);
  std::string s(static_cast<size_t>(n > 0 ? n : 0) + 1, '\0');
  std::snprintf(s.data(), s.size(), format, args...);
  s.pop_back();
  return s;
}

void printTable(const nlohmann::json& j, const std::string& path, std::ostream& out) {
  out << "PopEF " << path << "\n\nblobs\n";
  for (const auto& b : j["blobs"])
    out << line("  %-12s %-40s %12llu bytes\n", b["type"].get<std::string>().c_str(), shown(b["name"]).c_str(),
                static_cast<unsigned long long>(b["bytes"].get<uint64_t>()));
  const auto& md = j["metadata"];
  out << "\nmetadata\n"
      << "  ipu_version " << shown(md["ipu_version"]) << ", num_ipus " << md["num_ipus"] << ", replication_factor "
      << md["replication_factor"] << ", batches_per_step " << md["batches_per_step"] << "\n"
      << "  program flow: load " << md["program_flow"]["load"].dump() << ", main " << md["program_flow"]["main"].dump()
      << ", save " << md["program_flow"]["save"].dump() << "\n";
  for (const auto& [k, v] : md["compile_options"].items()) out << "  option " << shown(k) << " = " << shown(v) << "\n";
  out << "\nanchors\n";
  for (const auto& a : md["anchors"]) {
    std::string shape = a["shape"].dump();
    out << line("  %-6s %-30s %-8s %s\n", a["kind"].get<std::string>().c_str(), shown(a["name"]).c_str(),
                a["dtype"].get<std::string>().c_str(), shape.c_str());
  }
  // 'extra' is free-form: show the placement only when it has the shape poprt-convert writes.
  const auto& placement = md["placement"];
  auto stringList = [&](const char* key) {
    return placement.contains(key) && placement[key].is_array() &&
           std::all_of(placement[key].begin(), placement[key].end(), [](const nlohmann::json& x) { return x.is_string(); });
  };
  if (placement.is_object() && stringList("device_nodes") && stringList("host_nodes")) {
    const auto& host = placement["host_nodes"];
    out << "\nplacement: " << placement["device_nodes"].size() << " node(s) on the device, " << host.size() << " on the host\n";
    for (size_t i = 0; i < host.size() && i < 20; ++i) out << "  host  " << shown(host[i]) << "\n";
    if (host.size() > 20) out << "  ... and " << host.size() - 20 << " more (--json lists all)\n";
  }
  // The custom-op plugins it needs (verified: each entry has a name and a list of op names).
  if (placement.is_object() && placement.contains("plugins"))
    for (const auto& p : placement["plugins"]) {
      out << "plugin " << shown(p["name"]) << " " << shown(p["version"]) << ":";
      for (const auto& op : p["ops"]) out << " " << shown(op);
      out << "\n";
    }
  if (j.contains("executable")) {
    const auto& e = j["executable"];
    out << "\nexecutable (" << shown(e["target"]) << ", " << e["tiles"] << " tiles)\n"
        << "  tiles used " << e["tiles_used"] << ", tile memory " << e["tile_memory_bytes"] << " bytes, busiest tile "
        << e["busiest_tile_bytes"] << " bytes\n"
        << "  " << e["compute_sets"] << " compute sets, " << e["vertices"] << " vertices, " << e["exchanges"] << " exchanges ("
        << e["exchange_copies"] << " copies, " << e["exchange_gathers"] << " gathers), " << e["host_programs"]
        << " host program(s) with " << e["host_program_weight_bytes"] << " bytes of weights; load " << e["load_steps"]
        << " steps, main " << e["main_steps"] << " steps\n";
    if (e["num_ipus"].get<uint32_t>() > 1) {
      out << "  " << e["num_ipus"] << " IPUs, " << e["segments"].size() << " " << e["execution_strategy"].get<std::string>()
          << " stage(s):";
      for (const auto& g : e["segments"]) out << " IPU " << g["ipu"] << " (" << g["steps"] << " steps)";
      out << "\n";
      for (const auto& ipu : e["ipus"])
        out << "  IPU " << ipu["ipu"] << "  tile memory " << ipu["bytes"] << " bytes, busiest tile " << ipu["busiest_tile_bytes"]
            << " bytes\n";
    }
  }
}

}  // namespace
}  // namespace poprt::tools

int main(int argc, char** argv) {
  using namespace poprt;
  using namespace poprt::tools;
  std::string path, level;
  std::vector<std::string> custom_libraries;
  bool json_out = false;
  CLI::App app{"popef-dump: show what a PopEF file holds"};
  app.add_option("popef", path, "the PopEF file")->required();
  app.add_flag("--json", json_out, "print JSON instead of tables");
  addCustomLibraryFlag(app, custom_libraries);
  addLoggingFlag(app, level);
  return runTool("popef-dump", app, argc, argv, [&]() -> Status {
    applyLogging(level);
    POPRT_TRY(loadCustomLibraries(custom_libraries));
    POPRT_ASSIGN_OR_RETURN(popef::PopefFile file, popef::readPopef(path));
    // The checks popef-run makes before it runs anything: a file one refuses, the other does too.
    POPRT_ASSIGN_OR_RETURN(sim::VerifiedPopef verified, sim::verifyPopef(file, path));
    nlohmann::json j = describe(file, &verified.executable);
    // Rendered whole before anything is printed, so a failure leaves stdout empty.
    std::ostringstream out;
    if (json_out)
      out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else
      printTable(j, path, out);
    std::cout << out.str() << std::flush;
    return okStatus();
  });
}
