#include "converter/profile_report.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "converter/report_html.h"
#include "converter/value_check.h"
#include "lib/exec/memory_profile.h"
#include "lib/support/file_io.h"
#include "sim/codelets.h"

namespace poprt::converter {
namespace {

using nlohmann::ordered_json;
using Role = exec::HostStream::Role;

constexpr int kProfileVersion = 1;

// Vertex state is not in the simulator's tile memory: this is what an IPU would keep for it, a
// 32-bit pointer and size per field, a 32-bit word per parameter and one for the codelet.
uint64_t vertexStateBytes(const exec::Vertex& v) { return 4 + 8 * v.fields.size() + 4 * (v.params.size() + v.fparams.size()); }

const char* stepKindName(exec::StepKind kind) {
  switch (kind) {
    case exec::StepKind::StreamIn: return "stream_in";
    case exec::StepKind::StreamOut: return "stream_out";
    case exec::StepKind::Exchange: return "exchange";
    case exec::StepKind::Compute: return "compute";
    case exec::StepKind::HostCall: return "host";
  }
  return "";
}

// One row of the compute-set table: a compute set with the exchange that feeds it (the superstep
// of one node), or a device step with no compute set (a layout op's exchange, a stream copy), or
// a host call. The rows cut the main program into pieces, so their cycles add up to the estimate.
struct Row {
  std::string kind, name, op_type;
  size_t first_step = 0, last_step = 0;
  size_t vertices = 0, tiles = 0;
  uint64_t compute = 0, exchange = 0, sync = 0, flops = 0, bytes = 0;
  double wall_s = 0;
};

std::string stepName(const exec::Executable& exe, const exec::Step& step) {
  switch (step.kind) {
    case exec::StepKind::StreamIn:
    case exec::StepKind::StreamOut: return exe.streams[step.index].name;
    case exec::StepKind::Exchange: return exe.exchanges[step.index].name;
    case exec::StepKind::Compute: return exe.compute_sets[step.index].name;
    case exec::StepKind::HostCall: return exe.host_programs[step.index].name;
  }
  return "";
}

// The op type of a step's node; a superstep codegen merged is named "A + B" (its nodes, see
// codegen/merge_supersteps.h), and gets "Cast + Pow" when every part is a node.
std::string opTypeOf(const std::string& name, const std::map<std::string, std::string>& op_types) {
  if (auto it = op_types.find(name); it != op_types.end()) return it->second;
  std::string types;
  const std::string sep = " + ";
  for (size_t pos = 0;;) {
    const size_t end = name.find(sep, pos);
    auto it = op_types.find(name.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (it == op_types.end()) return "";
    types += (types.empty() ? "" : sep) + it->second;
    if (end == std::string::npos) return types;
    pos = end + sep.size();
  }
}

std::vector<Row> cutRows(const exec::Executable& exe, const std::vector<sim::StepCycles>& cycles, const std::vector<double>& wall,
                         const std::map<std::string, std::string>& op_types, std::vector<size_t>& row_of_step) {
  std::vector<Row> rows;
  bool open_exchange = false;  // the last row is an exchange its node's compute set may join
  for (size_t i = 0; i < exe.main.steps.size(); ++i) {
    const exec::Step& step = exe.main.steps[i];
    const std::string name = stepName(exe, step);
    const bool joins = step.kind == exec::StepKind::Compute && open_exchange && rows.back().name == name;
    if (!joins) {
      Row r;
      r.kind = stepKindName(step.kind);
      r.name = name;
      r.first_step = i;
      if (step.kind == exec::StepKind::Compute || step.kind == exec::StepKind::Exchange) {
        r.op_type = opTypeOf(name, op_types);
      } else if (step.kind == exec::StepKind::HostCall) {
        r.op_type = "host program";
      } else {
        r.op_type = step.kind == exec::StepKind::StreamIn ? "stream in" : "stream out";
      }
      rows.push_back(std::move(r));
    }
    Row& r = rows.back();
    r.last_step = i;
    if (step.kind == exec::StepKind::Compute) {
      r.kind = "compute";
      const auto& vertices = exe.compute_sets[step.index].vertices;
      std::set<uint32_t> tiles;
      for (const auto& v : vertices) {
        r.flops += sim::vertexFlops(v);
        tiles.insert(v.tile);
      }
      r.vertices += vertices.size();
      r.tiles = tiles.size();
    }
    r.compute += cycles[i].compute;
    r.exchange += cycles[i].exchange;
    r.sync += cycles[i].sync;
    r.bytes += cycles[i].bytes;
    if (i < wall.size()) r.wall_s += wall[i];
    row_of_step.push_back(rows.size() - 1);
    open_exchange = step.kind == exec::StepKind::Exchange;
  }
  return rows;
}

ordered_json rowJson(const Row& r, size_t index, bool traced) {
  ordered_json j = {{"index", index},
                    {"kind", r.kind},
                    {"name", r.name},
                    {"op_type", r.op_type},
                    {"steps", {r.first_step, r.last_step}},
                    {"vertices", r.vertices},
                    {"tiles", r.tiles},
                    {"cycles", r.compute + r.exchange + r.sync},
                    {"compute_cycles", r.compute},
                    {"exchange_cycles", r.exchange},
                    {"sync_cycles", r.sync},
                    {"flops", r.flops},
                    {"exchange_bytes", r.bytes}};
  j["wall_us"] = traced ? ordered_json(r.wall_s * 1e6) : ordered_json(nullptr);
  return j;
}

// Per op: the rows of one node (its supersteps), one stream or one host program, summed; the
// most cycles first (then by name, so the order is stable).
ordered_json opsJson(const std::vector<Row>& rows) {
  std::map<std::pair<std::string, std::string>, Row> ops;  // (op_type, name)
  std::map<std::pair<std::string, std::string>, size_t> sets;
  for (const Row& r : rows) {
    Row& o = ops[{r.op_type, r.name}];
    o.name = r.name;
    o.op_type = r.op_type;
    o.vertices += r.vertices;
    o.compute += r.compute;
    o.exchange += r.exchange;
    o.sync += r.sync;
    o.flops += r.flops;
    o.bytes += r.bytes;
    sets[{r.op_type, r.name}] += r.kind == "compute";
  }
  std::vector<std::pair<std::pair<std::string, std::string>, Row>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.compute + a.second.exchange + a.second.sync > b.second.compute + b.second.exchange + b.second.sync;
  });
  ordered_json out = ordered_json::array();
  for (const auto& [key, o] : sorted)
    out.push_back({{"name", o.name},
                   {"op_type", o.op_type},
                   {"compute_sets", sets[key]},
                   {"vertices", o.vertices},
                   {"cycles", o.compute + o.exchange + o.sync},
                   {"compute_cycles", o.compute},
                   {"exchange_cycles", o.exchange},
                   {"sync_cycles", o.sync},
                   {"flops", o.flops},
                   {"exchange_bytes", o.bytes}});
  return out;
}

// Tile memory by kind. With the compiler's profile: what filled each tile at its peak; without
// (a PopEF from elsewhere): the weights the load program writes and the vertex state, the rest unknown.
ordered_json memoryJson(const exec::Executable& exe, const exec::MemoryProfile* mp) {
  const size_t tiles = exe.tile_bytes.size();
  std::vector<uint64_t> vertex_state(tiles, 0), weights(tiles, 0);
  for (const auto& cs : exe.compute_sets)
    for (const auto& v : cs.vertices) vertex_state[v.tile] += vertexStateBytes(v);
  if (mp) {
    weights = mp->weights;
  } else {
    for (const exec::Step& step : exe.load.steps)
      for (const auto& c : exe.streams[step.index].copies) weights[c.tile] += c.tileBytes();
  }
  ordered_json t = {{"required", exe.tile_bytes}, {"weights", weights}};
  std::vector<uint64_t> activations(tiles), exchange(tiles), gaps(tiles);
  std::vector<uint32_t> peak_point(tiles);
  if (mp) {
    for (size_t i = 0; i < tiles; ++i) {
      activations[i] = mp->peaks[i].activations;
      exchange[i] = mp->peaks[i].exchange_buffers;
      peak_point[i] = mp->peaks[i].point;
      gaps[i] = exe.tile_bytes[i] - weights[i] - activations[i] - exchange[i];  // checked on reading
    }
    t["activations"] = activations;
    t["exchange_buffers"] = exchange;
    t["unused_gaps"] = gaps;
    t["peak_point"] = peak_point;
  }
  t["vertex_state"] = vertex_state;
  auto sum = [](const std::vector<uint64_t>& v) {
    uint64_t s = 0;
    for (uint64_t x : v) s += x;
    return s;
  };
  ordered_json totals = {{"required", sum(exe.tile_bytes)}, {"weights", sum(weights)}};
  if (mp) {
    totals["activations"] = sum(activations);
    totals["exchange_buffers"] = sum(exchange);
    totals["unused_gaps"] = sum(gaps);
  }
  totals["vertex_state"] = sum(vertex_state);
  const auto busiest = std::max_element(exe.tile_bytes.begin(), exe.tile_bytes.end()) - exe.tile_bytes.begin();
  return {{"source", mp ? "compiler" : "executable"},
          {"bytes_per_tile", exe.target.bytes_per_tile},
          {"categories", mp ? ordered_json{"weights", "activations", "exchange_buffers", "vertex_state"}
                            : ordered_json{"weights", "vertex_state"}},
          {"always_live", {"weights", "vertex_state"}},
          {"busiest_tile", busiest},
          {"tiles", t},
          {"totals", totals}};
}

ordered_json livenessJson(const exec::MemoryProfile* mp, const ordered_json& memory) {
  ordered_json points = ordered_json::array();
  if (mp)
    for (const auto& l : mp->liveness)
      points.push_back({{"step", l.program_steps == 0 ? 0 : l.program_steps - 1},
                        {"node", l.node},
                        {"activations", l.activations},
                        {"exchange_buffers", l.exchange_buffers},
                        {"busiest_tile", l.busiest_tile},
                        {"busiest_bytes", l.busiest_bytes}});
  const auto& totals = memory["totals"];
  return {{"always_live_bytes", totals["weights"].get<uint64_t>() + totals["vertex_state"].get<uint64_t>()}, {"points", points}};
}

// Generated inputs for the traced run, as --check's; "" or why there can be no run.
std::string generateInputs(const exec::Executable& exe, std::vector<ops::RtValue>& out) {
  size_t index = 0;
  for (const auto& s : exe.streams) {
    if (s.role != Role::Input) continue;
    if (s.kind != ValueKind::Tensor) return "input '" + s.name + "' is not a tensor: give popef-run its value";
    auto t = generateInput(s.dtype, s.shape, 0, index++);
    if (!t.ok()) return "input '" + s.name + "': " + t.error().message();
    out.push_back(ops::RtValue::of(std::move(t).value()));
  }
  return "";
}

}  // namespace

ReportDir reportDir(const std::string& flag) {
  if (!flag.empty()) return {flag, "--report"};
  const char* env = std::getenv("POPRT_REPORT_DIR");
  return {env ? env : "", "POPRT_REPORT_DIR"};
}

Status checkReportDir(const ReportDir& dir) {
  if (dir.path.empty()) return okStatus();
  std::error_code ec;
  if (std::filesystem::exists(dir.path, ec) && !std::filesystem::is_directory(dir.path, ec))
    return Error(dir.origin + " " + dir.path + ": not a directory");
  return checkOutputFile(dir.origin, (std::filesystem::path(dir.path) / "profile.json").string());
}

// Each IPU's tile memory, the stages and the cost model's schedule of a step of batches (the
// pipeline timeline): one IPU has one stage.
ordered_json ipusJson(const sim::Engine& e, uint32_t batches_per_step) {
  const exec::Executable& exe = e.executable();
  const exec::Target& t = exe.target;
  ordered_json per_ipu = ordered_json::array();
  for (uint32_t ipu = 0; ipu < t.num_ipus; ++ipu) {
    uint64_t bytes = 0, busiest = 0, used = 0;
    for (uint32_t tile = ipu * t.tiles_per_ipu; tile < (ipu + 1) * t.tiles_per_ipu; ++tile) {
      bytes += exe.tile_bytes[tile];
      busiest = std::max(busiest, exe.tile_bytes[tile]);
      used += exe.tile_bytes[tile] > 0;
    }
    per_ipu.push_back({{"ipu", ipu}, {"tile_memory_bytes", bytes}, {"busiest_tile_bytes", busiest}, {"tiles_used", used}});
  }
  ordered_json stages = ordered_json::array();
  const auto& seg = e.segmentCycles();
  if (seg.empty()) {
    stages.push_back({{"stage", 0}, {"ipu", 0}, {"cycles", e.estimate().total()}, {"copy_cycles", 0}});
  } else {
    for (size_t s = 0; s < seg.size(); ++s)
      stages.push_back({{"stage", s}, {"ipu", seg[s].ipu}, {"cycles", seg[s].compute}, {"copy_cycles", seg[s].copies}});
  }
  ordered_json timeline = ordered_json::array();
  for (const sim::StageSpan& s : e.schedule(batches_per_step))
    timeline.push_back({{"stage", s.stage},
                        {"batch", s.batch},
                        {"kind", s.copies ? "copy" : "compute"},
                        {"start_cycle", s.start},
                        {"cycles", s.cycles}});
  return {{"num_ipus", t.num_ipus},
          {"execution_strategy", exe.strategy == exec::Strategy::Pipelined ? "pipelined" : "sharded"},
          {"batches_per_step", batches_per_step},
          {"step_cycles", e.cyclesForBatches(batches_per_step)},
          {"per_ipu", std::move(per_ipu)},
          {"stages", std::move(stages)},
          {"timeline", std::move(timeline)}};
}

Expected<ordered_json> buildProfile(sim::VerifiedPopef model, const ProfileSource& source) {
  const auto batches_per_step = static_cast<uint32_t>(model.metadata.batches_per_step);
  std::optional<exec::MemoryProfile> mp;
  if (!model.memory_profile.empty()) {
    auto parsed = exec::deserializeMemoryProfile(model.memory_profile, model.executable, source.popef);
    if (!parsed.ok()) return parsed.error();
    mp = std::move(parsed).value();
  }
  auto engine = sim::Engine::create(std::make_shared<const exec::Executable>(std::move(model.executable)), model.weights);
  if (!engine.ok()) return engine.error().withContext(source.popef);
  sim::Engine& e = **engine;
  const exec::Executable& exe = e.executable();

  // One run with every step timed.
  std::vector<ops::RtValue> generated;
  std::string no_run = source.inputs ? "" : generateInputs(exe, generated);
  const std::vector<ops::RtValue>& inputs = source.inputs ? *source.inputs : generated;
  std::vector<double> wall;
  if (no_run.empty()) {
    std::vector<sim::InputBinding> in(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) in[i].value = &inputs[i];
    std::vector<ops::RtValue> outputs(e.streams(Role::Output).size());
    std::vector<sim::OutputBinding> out(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) out[i].value = &outputs[i];
    // Two untimed runs first: a superstep's first run is cold (the tiles' pages first touched,
    // nothing in cache) and its second decides whether it splits between the workers
    // (sim::Engine), so the traced run is what a request takes once the engine is warm, on as
    // many threads (a first run traced every step as one thread's, cold).
    for (int warm_up = 0; warm_up < 2; ++warm_up)
      if (auto st = e.run(in, out); !st.ok()) return st.error().withContext(source.popef + ": a warm-up run");
    sim::RunTimes times;
    times.step_seconds = &wall;
    if (auto st = e.run(in, out, &times); !st.ok()) return st.error().withContext(source.popef + ": the traced run");
  }
  const bool traced = no_run.empty();

  const exec::Target& target = exe.target;
  const sim::CycleEstimate& est = e.estimate();
  const std::vector<sim::StepCycles>& cycles = e.stepCycles();
  static const std::map<std::string, std::string> no_types;
  std::vector<size_t> row_of_step;
  const std::vector<Row> rows = cutRows(exe, cycles, wall, mp ? mp->op_types : no_types, row_of_step);

  ordered_json j;
  j["format"] = "poprt-profile";
  j["version"] = kProfileVersion;
  j["tool"] = source.tool;
  j["popef"] = source.popef;
  j["target"] = {{"name", target.name},
                 {"ipu_version", target.ipu_version},
                 {"tiles", target.numTiles()},
                 {"bytes_per_tile", target.bytes_per_tile},
                 {"clock_hz", target.clock_hz},
                 {"sync_cycles", target.sync_cycles},
                 {"exchange_bytes_per_cycle", target.exchange_bytes_per_cycle}};
  j["estimate"] = {{"cycles", est.total()},
                   {"compute_cycles", est.compute},
                   {"exchange_cycles", est.exchange},
                   {"sync_cycles", est.sync},
                   {"latency_us", static_cast<double>(est.total()) / target.clock_hz * 1e6}};
  j["memory"] = memoryJson(exe, mp ? &*mp : nullptr);
  j["ipus"] = ipusJson(e, batches_per_step);
  j["liveness"] = livenessJson(mp ? &*mp : nullptr, j["memory"]);
  ordered_json sets = ordered_json::array();
  for (size_t i = 0; i < rows.size(); ++i) sets.push_back(rowJson(rows[i], i, traced));
  j["compute_sets"] = std::move(sets);
  j["ops"] = opsJson(rows);

  // The trace: device steps take their estimated time, host calls their measured time, one
  // after the other (the program is one sequence of steps).
  ordered_json steps = ordered_json::array();
  uint64_t cycle = 0;
  double at_us = 0, device_us = 0, host_us = 0, wall_us = 0;
  for (size_t i = 0; i < exe.main.steps.size(); ++i) {
    const exec::Step& step = exe.main.steps[i];
    const sim::StepCycles& c = cycles[i];
    const double step_wall_us = traced ? wall[i] * 1e6 : 0;
    const bool host = step.kind == exec::StepKind::HostCall;
    const double duration_us = host ? step_wall_us : static_cast<double>(c.total()) / target.clock_hz * 1e6;
    steps.push_back({{"kind", stepKindName(step.kind)},
                     {"name", stepName(exe, step)},
                     {"row", row_of_step[i]},
                     {"start_cycle", cycle},
                     {"compute_cycles", c.compute},
                     {"exchange_cycles", c.exchange},
                     {"sync_cycles", c.sync},
                     {"bytes", c.bytes},
                     {"start_us", at_us},
                     {"duration_us", duration_us},
                     {"wall_us", traced ? ordered_json(step_wall_us) : ordered_json(nullptr)}});
    cycle += c.total();
    at_us += duration_us;
    (host ? host_us : device_us) += duration_us;
    wall_us += step_wall_us;
  }
  j["trace"] = {{"run", traced},
                {"no_run_reason", no_run},
                {"device_us", device_us},
                {"host_us", host_us},
                {"simulator_wall_us", traced ? ordered_json(wall_us) : ordered_json(nullptr)},
                {"steps", std::move(steps)}};
  return j;
}

std::vector<std::string> profileTable(const ordered_json& profile, size_t top) {
  const ordered_json& trace = profile["trace"];
  if (!trace["run"].get<bool>()) return {"profile: no traced run (" + trace["no_run_reason"].get<std::string>() + ")"};
  std::vector<const ordered_json*> steps;
  for (const auto& s : trace["steps"]) steps.push_back(&s);
  std::stable_sort(steps.begin(), steps.end(), [](const ordered_json* a, const ordered_json* b) {
    return (*a)["wall_us"].get<double>() > (*b)["wall_us"].get<double>();
  });
  const double wall = trace["simulator_wall_us"].get<double>();
  auto num = [](double v, int decimals) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return std::string(buf);
  };
  std::vector<std::vector<std::string>> rows = {{"step", "kind", "name", "simulator us", "share", "IPU estimate us"}};
  for (size_t i = 0; i < steps.size() && i < top; ++i) {
    const ordered_json& s = *steps[i];
    const double us = s["wall_us"].get<double>();
    rows.push_back({std::to_string(&s - &trace["steps"][0]), s["kind"].get<std::string>(), s["name"].get<std::string>(),
                    num(us, 1), num(wall > 0 ? 100 * us / wall : 0, 1) + "%",
                    s["kind"] == "host_call" ? "(host)" : num(s["duration_us"].get<double>(), 2)});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::vector<std::string> lines = {"profile (one traced run, the " + std::to_string(std::min(top, steps.size())) + " of " +
                                    std::to_string(steps.size()) + " steps the simulator took longest on)"};
  for (const auto& r : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < r.size(); ++c) line += r[c] + (c + 1 < r.size() ? std::string(width[c] - r[c].size() + 2, ' ') : "");
    lines.push_back(line);
  }
  lines.push_back("  total: simulator " + num(wall, 1) + " us; IPU estimate " + num(trace["device_us"].get<double>(), 2) +
                  " us on the device + " + num(trace["host_us"].get<double>(), 1) + " us of host programs");
  return lines;
}

Expected<std::vector<std::string>> writeProfileReport(const ReportDir& dir, const ProfileSource& source) {
  POPRT_ASSIGN_OR_RETURN(sim::VerifiedPopef model, sim::readVerifiedPopef(source.popef));
  POPRT_ASSIGN_OR_RETURN(ordered_json profile, buildProfile(std::move(model), source));
  const std::string json_path = (std::filesystem::path(dir.path) / "profile.json").string();
  const std::string html_path = (std::filesystem::path(dir.path) / "report.html").string();
  const std::string html = renderReportHtml(profile);
  POPRT_TRY(writeOutputFile(dir.origin, json_path, profile.dump(1, ' ', false, ordered_json::error_handler_t::replace) + "\n"));
  POPRT_TRY(writeOutputFile(dir.origin, html_path, html));
  return std::vector<std::string>{json_path, html_path};
}

}  // namespace poprt::converter
