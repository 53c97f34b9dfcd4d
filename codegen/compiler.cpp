#include "codegen/compiler.h"

#include <algorithm>

#include "codegen/lowering.h"
#include "lib/ops/registry.h"

namespace poprt::codegen {
namespace {

// Why a node cannot run on the device, or "" if it can.
std::string deviceBlocker(const ir::Node& node, const ops::OpDef* def) {
  if (!def || def->lowering == ops::LoweringFamily::None) return "no device lowering for this op yet";
  for (const ir::Value* v : node.inputs())
    if (v && v->type.dtype != DType::Float)
      return "input '" + v->name() + "' is " + std::string(dtypeName(v->type.dtype)) + "; the device supports float32 here";
  for (const ir::Value* v : node.outputs())
    if (v && v->type.dtype != DType::Float)
      return "output '" + v->name() + "' is " + std::string(dtypeName(v->type.dtype)) + "; the device supports float32 here";
  return "";
}

void addStream(exec::Executable& exe, exec::Program& program, exec::StepKind kind, exec::HostStream::Role role,
               const ir::Value* v, const TileMapping& m) {
  exec::HostStream s{v->name(), role, v->type.dtype, v->type.staticShape(), {}};
  const size_t esize = dtypeSize(v->type.dtype);
  for (const Region& r : m.regions)
    s.copies.push_back({static_cast<uint64_t>(r.begin) * esize, r.tile, r.offset, static_cast<uint64_t>(r.count) * esize});
  program.steps.push_back({kind, static_cast<uint32_t>(exe.streams.size())});
  exe.streams.push_back(std::move(s));
}

Status checkMemory(const exec::Executable& exe, const std::vector<uint64_t>& used) {
  const uint64_t cap = exe.target.bytes_per_tile;
  std::vector<uint32_t> over;
  for (uint32_t t = 0; t < used.size(); ++t)
    if (used[t] > cap) over.push_back(t);
  if (over.empty()) return okStatus();
  std::sort(over.begin(), over.end(), [&](uint32_t a, uint32_t b) { return used[a] > used[b]; });
  std::string msg = "out of tile memory on " + exe.target.name + ": " + std::to_string(over.size()) +
                    " tile(s) need more than " + std::to_string(cap) + " bytes; worst:";
  for (size_t i = 0; i < over.size() && i < 5; ++i)
    msg += " tile " + std::to_string(over[i]) + " " + std::to_string(used[over[i]]) + " B;";
  return Error(msg + " (hint: a smaller batch, or more IPUs)");
}

}  // namespace

Expected<CompileResult> compile(const ir::Graph& graph, const CompileOptions& options) {
  // Everything the device cannot run, reported together.
  std::vector<std::string> blocked;
  for (const auto& node : graph.nodes()) {
    std::string why = deviceBlocker(*node, ops::findOp(node->domain(), node->opType()));
    if (!why.empty()) blocked.push_back(node->describe() + ": " + why);
  }
  if (!blocked.empty()) {
    std::string msg = std::to_string(blocked.size()) + " node(s) cannot run on the device: ";
    for (size_t i = 0; i < blocked.size() && i < 10; ++i) msg += (i ? "; " : "") + blocked[i];
    if (blocked.size() > 10) msg += "; ... (" + std::to_string(blocked.size() - 10) + " more)";
    return Error(msg);
  }
  auto check_static = [](const ir::Value* v) -> Status {
    if (!v->type.isTensor() || !v->type.hasStaticShape())
      return Error("tensor '" + v->name() + "' has shape " + v->type.toString() +
                   "; the device needs static shapes (hint: --input_shape NAME=D0,D1,...)");
    return okStatus();
  };

  Lowering l(options);
  CompileResult result;
  exec::Executable& exe = l.executable();
  for (const ir::Value* in : graph.inputs()) {
    if (in->isInitializer()) continue;
    POPRT_TRY(check_static(in));
    l.setMapping(in, l.spreadLinear(in->type.numElements(), dtypeSize(in->type.dtype)));
    addStream(exe, exe.main, exec::StepKind::StreamIn, exec::HostStream::Role::Input, in, l.mapping(in));
  }
  for (const ir::Value* w : graph.initializers()) {
    if (l.hasMapping(w)) continue;
    l.setMapping(w, l.spreadLinear(w->type.numElements(), dtypeSize(w->type.dtype)));
    addStream(exe, exe.load, exec::StepKind::StreamIn, exec::HostStream::Role::Weight, w, l.mapping(w));
    result.weights.emplace_back(w->name(), *w->initializer());
  }
  size_t index = 0;
  for (const auto& node : graph.nodes()) {
    for (const ir::Value* v : node->outputs())
      if (v) POPRT_TRY(check_static(v));
    std::string name = node->name().empty() ? node->opType() + "_" + std::to_string(index) : node->name();
    ++index;
    l.beginNode(name);
    switch (ops::findOp(node->domain(), node->opType())->lowering) {
      case ops::LoweringFamily::Unary: POPRT_TRY(lowerUnary(l, *node)); break;
      case ops::LoweringFamily::Binary: POPRT_TRY(lowerBinary(l, *node)); break;
      case ops::LoweringFamily::MatMul: POPRT_TRY(lowerMatMul(l, *node)); break;
      case ops::LoweringFamily::None: break;
    }
    l.endNode();
    result.device_nodes.push_back(name);
  }
  for (const ir::Value* out : graph.outputs()) {
    POPRT_TRY(check_static(out));
    addStream(exe, exe.main, exec::StepKind::StreamOut, exec::HostStream::Role::Output, out, l.mapping(out));
  }
  exe.tile_bytes = l.allocator().used();
  POPRT_TRY(checkMemory(exe, exe.tile_bytes));
  result.executable = std::move(exe);
  return result;
}

}  // namespace poprt::codegen
