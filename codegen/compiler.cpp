#include "codegen/compiler.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "codegen/host_program.h"
#include "codegen/lowering.h"
#include "codegen/merge_supersteps.h"
#include "codegen/rearrange.h"
#include "lib/onnx/onnx_io.h"
#include "lib/ops/registry.h"
#include "lib/support/bytes.h"
#include "lib/support/log.h"
#include "passes/serialize_matmul.h"

namespace poprt::codegen {
namespace {

ops::LoweringFamily familyOf(const ir::Node& node) {
  const ops::OpDef* def = ops::findOp(node.domain(), node.opType());
  return def ? def->lowering : ops::LoweringFamily::None;
}

// The inputs whose data the device needs (the rest are constant parameters).
std::vector<const ir::Value*> dataInputs(const ir::Node& node) {
  auto family = familyOf(node);
  if (family == ops::LoweringFamily::View || family == ops::LoweringFamily::Pool || family == ops::LoweringFamily::Reduce ||
      family == ops::LoweringFamily::Softmax || family == ops::LoweringFamily::CumSum ||
      (family == ops::LoweringFamily::Rearrange && node.opType() != "Concat"))
    return {node.input(0)};
  if (family == ops::LoweringFamily::Activation) {  // Clip's constant bounds are vertex parameters
    bool constant_bounds = true;
    for (size_t i = 1; i < node.inputs().size(); ++i) constant_bounds &= !node.input(i) || node.input(i)->isInitializer();
    if (constant_bounds) return {node.input(0)};
  }
  return {node.inputs().begin(), node.inputs().end()};
}

// Why a node cannot run on the device, or "" if it can.
std::string deviceBlocker(const ir::Node& node, const Lowering& l) {
  const CompileOptions& options = l.options();
  const auto family = familyOf(node);
  if (family == ops::LoweringFamily::None) {
    const ops::OpDef* def = ops::findOp(node.domain(), node.opType());
    return def && !def->plugin.empty() ? "a custom op of plugin " + def->plugin : "no device lowering for " + node.opType();
  }
  // Moving data works for any fixed-size dtype; arithmetic runs on float32 or float16, one dtype
  // per node (its vertices hold every field in it, but for float32 partial sums) except Cast,
  // which converts between the two.
  const bool moves_only = family == ops::LoweringFamily::View || family == ops::LoweringFamily::Rearrange;
  const ir::Value* first = node.inputs().empty() ? nullptr : node.input(0);
  const DType node_dtype = first && first->type.isTensor() ? first->type.dtype : DType::Float;
  auto check = [&](const ir::Value* v, const char* what) -> std::string {
    if (!v) return "";
    if (!v->type.isTensor()) return std::string(what) + " '" + v->name() + "' is not a tensor";
    const DType dt = v->type.dtype;
    bool dtype_ok = moves_only ? dtypeSize(dt) > 0 : (dt == DType::Float || dt == DType::Float16) && dt == node_dtype;
    if (!dtype_ok)
      return std::string(what) + " '" + v->name() + "' is " + std::string(dtypeName(dt)) +
             (moves_only ? "; the device moves fixed-size elements only"
                         : "; the device runs float32 or float16 here, one dtype per node");
    if (!v->type.hasStaticShape()) return std::string(what) + " '" + v->name() + "' has the run-time shape " + v->type.toString();
    return "";
  };
  for (const ir::Value* v : dataInputs(node))
    if (auto why = check(v, "input"); !why.empty()) return why;
  if (family == ops::LoweringFamily::View || family == ops::LoweringFamily::Pool) {
    if (auto why = check(node.output(0), "output"); !why.empty()) return why;
    for (size_t i = 1; i < node.outputs().size(); ++i)
      if (node.output(i) && (!node.output(i)->uses().empty() || node.output(i)->isGraphOutput()))
        return "its output '" + node.output(i)->name() + "' is used";
    if (family == ops::LoweringFamily::Pool) return windowBlocker(node, options);
    if (node.output(0)->type.dtype != node.input(0)->type.dtype ||
        node.output(0)->type.numElements() != node.input(0)->type.numElements())
      return "the output is not a view of the input";
    return "";
  }
  if (family == ops::LoweringFamily::Cast) {  // the one node of two dtypes: float32 <-> float16
    const ir::Value* y = node.output(0);
    if (!y->type.isTensor() || (y->type.dtype != DType::Float && y->type.dtype != DType::Float16) || y->type.dtype == node_dtype)
      return "it casts " + std::string(dtypeName(node_dtype)) + " to " + std::string(dtypeName(y->type.dtype)) +
             "; the device casts between float32 and float16 only";
    if (!y->type.hasStaticShape()) return "output '" + y->name() + "' has the run-time shape " + y->type.toString();
    return "";
  }
  for (const ir::Value* v : node.outputs())
    if (auto why = check(v, "output"); !why.empty()) return why;
  switch (family) {
    case ops::LoweringFamily::Conv: return windowBlocker(node, options);
    case ops::LoweringFamily::Binary: return node.inputs().size() < 2 ? "it has a single input" : "";
    case ops::LoweringFamily::Activation: return activationBlocker(node, l);
    case ops::LoweringFamily::Reduce:
    case ops::LoweringFamily::Softmax:
    case ops::LoweringFamily::CumSum:
    case ops::LoweringFamily::Norm: return rowsBlocker(node, l);
    case ops::LoweringFamily::Attention: return attentionBlocker(node, l);
    case ops::LoweringFamily::ElementwiseChain: return elementwiseChainBlocker(node);
    default: return "";
  }
}

constexpr std::string_view kOutOfTileMemory = "out of tile memory on ";

// A one-line error naming the worst tiles, their bytes and what lived on each when it peaked.
// `nodes`: the compiled nodes by name, for the hint to serialise the one the worst tile peaks at.
Status checkMemory(const Lowering& l, const std::vector<uint64_t>& used, const std::map<std::string, const ir::Node*>& nodes) {
  const exec::Target& target = l.target();
  const uint64_t cap = target.bytes_per_tile;
  std::vector<uint32_t> over;
  uint64_t total = 0;
  for (uint32_t t = 0; t < used.size(); ++t) {
    total += used[t];
    if (used[t] > cap) over.push_back(t);
  }
  if (over.empty()) return okStatus();
  std::sort(over.begin(), over.end(), [&](uint32_t a, uint32_t b) { return used[a] > used[b] || (used[a] == used[b] && a < b); });
  std::vector<uint64_t> ipu_total(target.num_ipus, 0);
  for (uint32_t t = 0; t < used.size(); ++t) ipu_total[target.ipuOf(t)] += used[t];
  std::string msg = std::string(kOutOfTileMemory) + target.name + ": " + std::to_string(over.size()) + " of " +
                    std::to_string(used.size()) + " tiles need more than " + humanBytes(cap) + " (";
  if (target.num_ipus == 1) {
    msg += humanBytes(total) + " in all, one IPU has " + humanBytes(cap * used.size()) + "); worst:";
  } else {
    for (uint32_t i = 0; i < target.num_ipus; ++i)
      msg += (i ? ", " : "") + std::string("IPU ") + std::to_string(i) + " " + humanBytes(ipu_total[i]);
    msg += "; an IPU has " + humanBytes(cap * target.tiles_per_ipu) + "); worst:";
  }
  std::vector<std::string> shown;  // tiles often peak alike: say so rather than repeat
  for (size_t i = 0; i < over.size() && i < 3; ++i) {
    std::string peak = l.describePeak(over[i], 4);
    auto same = std::find(shown.begin(), shown.end(), peak);
    msg += " tile " + std::to_string(over[i]) + " needs " + humanBytes(used[over[i]]) + " (" +
           (same == shown.end() ? peak : "like tile " + std::to_string(over[same - shown.begin()])) + ");";
    shown.push_back(std::move(peak));
  }
  // A float32 model takes half the memory in float16, weights and activations alike.
  const auto& streams = l.executable().streams;
  const bool float32 = std::any_of(streams.begin(), streams.end(), [](const exec::HostStream& s) {
    return s.role == exec::HostStream::Role::Weight && s.dtype == DType::Float;
  });
  std::string fp16 = halfPrecisionHint(float32 ? DType::Float : DType::Float16);
  if (auto it = nodes.find(l.peakStep(over[0])); it != nodes.end()) fp16 += serializeHint(*it->second);
  return Error(msg + (target.num_ipus == 1
                          ? " hint: " + fp16 + "a smaller batch or input shape, or shard the model over more IPUs (--num_ipus)"
                          : " hint: " + fp16 +
                                "a smaller batch or input shape, more IPUs, or a --manual_sharding_config that balances them"));
}

using ops::opsetsOf;

Shape streamShape(const ir::Value* v) {
  Shape s;
  if (v->type.kind == ValueKind::Tensor && v->type.dims)
    for (const ir::Dim& d : *v->type.dims) s.push_back(d.isStatic() ? d.value : -1);
  return s;
}

// Builds the executable: streams for the graph's inputs and outputs first (their order is the
// user's), then each node in order, on the device or in a host program.
class Compiler {
 public:
  Compiler(const ir::Model& model, const CompileOptions& options)
      : model_(model), graph_(*model.graph), l_(options, opsetsOf(model)) {
    // Weights a lowering needs whole (not as resident slices) get their spread mapping on demand.
    l_.setPlacer([this](const ir::Value* v) { ensureOnDevice(v); });
  }

  Expected<CompileResult> run() {
    exec::Executable& exe = l_.executable();
    POPRT_TRY(addGraphStreams());
    POPRT_ASSIGN_OR_RETURN(const NodePlacement placement, orderNodes());
    POPRT_TRY(checkSupported());
    std::vector<size_t> pending_host;  // consecutive host nodes form one host program
    const bool sharded = l_.target().num_ipus > 1;
    const bool pipelined = sharded && l_.options().sharding.strategy == exec::Strategy::Pipelined;
    if (sharded) {
      l_.setIpu(placement.stage_ipu.at(stage_of_.empty() ? 0 : stage_of_[0]));
      exe.segments.push_back({l_.ipu(), 0, 0, 0});
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      reached_ = i;
      if (sharded && i > 0 && stage_of_[i] != stage_of_[i - 1]) {
        if (!pending_host.empty()) POPRT_TRY(flushHost(pending_host, nodes_));
        nextSegment(placement.stage_ipu.at(stage_of_[i]));
      }
      std::optional<RearrangeMap> map;
      const std::string why = hostReason(i, map);
      if (why.empty()) {
        if (!pending_host.empty()) POPRT_TRY(flushHost(pending_host, nodes_));
        POPRT_TRY(lowerOnDevice(*nodes_[i], i, map ? &*map : nullptr));
        releaseDeadAfter(*nodes_[i], i);
        if (l_.options().stop_when_over && overCapacity()) return stoppedOver(i);
      } else {
        if (pipelined)
          return Error("pipelined execution runs every node on the IPUs, but node '" + node_names_[i] +
                       "' would run on the host: " + why);
        pending_host.push_back(i);
        result_.host_nodes.push_back(node_names_[i]);
        result_.host_reasons.push_back(why);
      }
    }
    if (!pending_host.empty()) POPRT_TRY(flushHost(pending_host, nodes_));
    // Device-produced outputs stream out at the end; host-produced ones are already in place.
    for (const ir::Value* out : graph_.outputs()) {
      if (on_host_.count(out)) continue;
      ensureOnDevice(out);
      copyOut(out);
    }
    if (sharded) exe.segments.back().copies = exe.segments.back().end = static_cast<uint32_t>(exe.main.steps.size());
    if (pipelined) exe.strategy = exec::Strategy::Pipelined;
    reached_ = nodes_.size();
    return finish();
  }

  // How far run() got: the index of the node it stopped at, or every node's count.
  size_t reached() const { return reached_; }

 private:
  // Streams for the graph's inputs and outputs, in the user's order.
  Status addGraphStreams() {
    for (const ir::Value* in : graph_.inputs()) {
      if (in->isInitializer()) continue;
      if (in->type.kind == ValueKind::Tensor && (!in->type.isTensor() || !in->type.hasStaticShape()))
        return Error("input '" + in->name() + "' has shape " + in->type.toString() +
                     "; compiling needs static input shapes (hint: --input_shape NAME=D0,D1,...)");
      host_buffer_[in] = addStream(exec::HostStream::Role::Input, in);
      on_host_.insert(in);  // the user's input arrives in its host buffer
    }
    for (const ir::Value* out : graph_.outputs()) {
      if (out->type.kind == ValueKind::Tensor && (!out->type.isTensor() || !out->type.hasRank()))
        return Error("output '" + out->name() + "' is neither a tensor of known rank nor a sequence or optional of tensors");
      if (host_buffer_.count(out)) return Error("output '" + out->name() + "' is also a graph input (not supported yet)");
      host_buffer_[out] = addStream(exec::HostStream::Role::Output, out);
    }
    return okStatus();
  }

  // The nodes in the order they are compiled (by stage when sharded), and which of them read
  // each value (through subgraphs too).
  Expected<NodePlacement> orderNodes() {
    std::vector<const ir::Node*> graph_nodes;
    for (const auto& n : graph_.nodes()) graph_nodes.push_back(n.get());
    NodePlacement placement;
    if (l_.target().num_ipus > 1) {
      POPRT_ASSIGN_OR_RETURN(placement, placeNodes(graph_, l_.target().num_ipus, l_.options().sharding));
    } else {
      placement.stage.assign(graph_nodes.size(), 0);
      placement.stage_ipu = {0};
      for (size_t i = 0; i < graph_nodes.size(); ++i) placement.order.push_back(i);
    }
    for (size_t i : placement.order) {
      nodes_.push_back(graph_nodes[i]);
      stage_of_.push_back(placement.stage[i]);
      graph_index_.push_back(i);
      node_names_.push_back(nodeName(*graph_nodes[i], i));  // named by graph position, as sharding configs see them
    }
    for (size_t i = 0; i < nodes_.size(); ++i)
      for (const ir::Value* v : valuesRead(*nodes_[i], graph_)) readers_[v].push_back(i);
    return placement;
  }

  // Nodes neither the device nor the host evaluator can run, reported together.
  Status checkSupported() const {
    std::vector<std::string> unsupported;
    for (const ir::Node* node : nodes_) {
      const ops::OpDef* def = ops::findOp(node->domain(), node->opType());
      if (!deviceBlocker(*node, l_).empty() && (!def || (!def->eval && !def->value_eval)))
        unsupported.push_back(node->describe());
    }
    if (unsupported.empty()) return okStatus();
    std::string msg = std::to_string(unsupported.size()) + " node(s) use ops that neither the device nor the host can run yet: ";
    for (size_t i = 0; i < unsupported.size() && i < 10; ++i) msg += (i ? ", " : "") + unsupported[i];
    if (unsupported.size() > 10) msg += ", ... (" + std::to_string(unsupported.size() - 10) + " more)";
    return Error(msg);
  }

  // Why node i runs on the host ("" when it runs on the device; a Rearrange's map is then planned).
  std::string hostReason(size_t i, std::optional<RearrangeMap>& map) {
    const ir::Node& node = *nodes_[i];
    std::string why = deviceBlocker(node, l_);
    const auto family = familyOf(node);
    const bool moves_only = family == ops::LoweringFamily::View || family == ops::LoweringFamily::Rearrange;
    // Moving non-float data (shapes, indices) that lives on the host to the device only to move it
    // back is waste; float16 data (a converted constant, say) is the model's, as float32 is.
    if (why.empty() && moves_only)
      for (const ir::Value* v : dataInputs(node))
        if (v && !l_.hasMapping(v) && !isFloatingPoint(v->type.dtype)) why = "its input '" + v->name() + "' lives on the host";
    if (why.empty() && family == ops::LoweringFamily::Rearrange) {
      auto planned = rearrangeMap(node, l_.opsets());
      if (planned.ok())
        map = std::move(planned).value();
      else
        why = planned.error().message();
    }
    return why;
  }

  // Out of tile memory after node i; the hint names it when --serialize_matmul can split it.
  Error stoppedOver(size_t i) const {
    std::string msg = std::string(kOutOfTileMemory) + l_.target().name + " (stopped after node '" + node_names_[i] + "')";
    if (std::string hint = serializeHint(*nodes_[i]); !hint.empty()) msg += "; hint: " + hint.substr(0, hint.rfind(", "));
    return Error(msg);
  }

  bool overCapacity() const {
    const TileAllocator& a = l_.allocator();
    for (uint32_t t = 0; t < a.tiles(); ++t)
      if (a.peak(t) > l_.target().bytes_per_tile) return true;
    return false;
  }

  // Memory laid out and checked, supersteps merged, the profile's steps and op types.
  Expected<CompileResult> finish() {
    exec::Executable& exe = l_.executable();
    result_.weights = l_.weights();
    exe.tile_bytes = l_.finalizeMemory();
    std::map<std::string, const ir::Node*> by_name;
    for (const ir::Node* n : nodes_) by_name.emplace(n->name(), n);
    POPRT_TRY(checkMemory(l_, exe.tile_bytes, by_name));
    const std::vector<uint32_t> steps_after = mergeSupersteps(exe);
    result_.memory_profile = l_.memoryProfile();
    for (auto& point : result_.memory_profile.liveness) point.program_steps = steps_after.at(point.program_steps);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const std::string& domain = nodes_[i]->domain();
      result_.memory_profile.op_types.emplace(node_names_[i],
                                              domain.empty() ? nodes_[i]->opType() : domain + "." + nodes_[i]->opType());
    }
    result_.executable = std::move(exe);
    return std::move(result_);
  }

  uint32_t addStream(exec::HostStream::Role role, const ir::Value* v) {
    auto& streams = l_.executable().streams;
    streams.push_back({v->name(), role, v->type.dtype, streamShape(v), {}, v->type.kind});
    return static_cast<uint32_t>(streams.size() - 1);
  }

  // Ends the current segment: the values later stages read (every live activation) move over the
  // IPU-Links to `ipu`, where the next segment runs.
  void nextSegment(uint32_t ipu) {
    auto& exe = l_.executable();
    exe.segments.back().copies = static_cast<uint32_t>(exe.main.steps.size());
    const std::vector<const ir::Value*> live = l_.liveActivations();
    const uint32_t from = l_.ipu();
    l_.setIpu(ipu);
    l_.moveHere(live, "IPU-Link copy IPU " + std::to_string(from) + " -> " + std::to_string(ipu));
    exe.segments.back().end = static_cast<uint32_t>(exe.main.steps.size());
    exe.segments.push_back({ipu, exe.segments.back().end, 0, 0});
  }

  uint32_t hostBuffer(const ir::Value* v) {
    auto it = host_buffer_.find(v);
    if (it != host_buffer_.end()) return it->second;
    return host_buffer_[v] = addStream(exec::HostStream::Role::Host, v);
  }

  void setCopies(uint32_t stream, const ir::Value* v, const TileMapping& m) {
    const size_t esize = dtypeSize(v->type.dtype);
    auto& copies = l_.executable().streams[stream].copies;
    for (const Region& r : m.regions)
      copies.push_back({static_cast<uint64_t>(r.begin) * esize, r.tile, r.offset, static_cast<uint64_t>(r.count) * esize});
  }

  // Frees the device memory of values no later node reads once node `i` is lowered or its host
  // program has streamed them out. Weights stay (the load program wrote them once) and so do
  // graph outputs (they stream out at the end).
  void releaseDeadAfter(const ir::Node& node, size_t i) {
    auto dead = [&](const ir::Value* v) {
      if (!v || v->isInitializer() || v->isGraphOutput()) return false;
      auto it = readers_.find(v);
      return it == readers_.end() || it->second.empty() || it->second.back() == i;
    };
    for (const ir::Value* v : valuesRead(node, graph_))
      if (dead(v)) l_.release(v);
    for (const ir::Value* v : node.outputs())
      if (dead(v)) l_.release(v);
  }

  // Gives `v` a tile mapping: weights through the load program, inputs and host values by
  // streaming their host buffer in.
  // Gives `v` a mapping if it has none. Nothing here depends on the input beyond what the
  // placement checks before lowering: a failure is an internal error.
  void ensureOnDevice(const ir::Value* v) {
    if (l_.hasMapping(v)) return;
    POPRT_CHECK(v->type.hasStaticShape(), "value '" + v->name() + "' needs a static shape on the device");
    POPRT_CHECK(v->isInitializer() || on_host_.count(v),
                "value '" + v->name() + "' is read on the device after its memory was freed");
    auto& exe = l_.executable();
    // The load program writes weights before the main program runs: no step may use their memory.
    TileMapping m = l_.spreadLinear(v->type.numElements(), dtypeSize(v->type.dtype),
                                    v->isInitializer() ? Lowering::Placement::Persistent : Lowering::Placement::Reuse);
    if (v->isInitializer()) {
      setCopies(l_.weightStream(v), v, m);
    } else {
      uint32_t s = hostBuffer(v);
      setCopies(s, v, m);
      exe.main.steps.push_back({exec::StepKind::StreamIn, s});
    }
    l_.setMapping(v, std::move(m));
  }

  void copyOut(const ir::Value* v) {
    uint32_t s = hostBuffer(v);
    setCopies(s, v, l_.mapping(v));
    l_.executable().main.steps.push_back({exec::StepKind::StreamOut, s});
    on_host_.insert(v);
  }

  Status lowerOnDevice(const ir::Node& node, size_t index, const RearrangeMap* map) {
    // Weights are placed when a lowering asks (as slices resident where vertices read them, or
    // whole); views and layout ops work on mappings, so theirs are placed now.
    const auto family = ops::findOp(node.domain(), node.opType())->lowering;
    const bool on_mappings = family == ops::LoweringFamily::View || family == ops::LoweringFamily::Rearrange;
    for (const ir::Value* v : dataInputs(node))
      if (v && (on_mappings || !v->isInitializer())) ensureOnDevice(v);
    const std::string& name = node_names_[index];
    l_.beginNode(name);
    switch (ops::findOp(node.domain(), node.opType())->lowering) {
      case ops::LoweringFamily::Unary: POPRT_TRY(lowerUnary(l_, node)); break;
      case ops::LoweringFamily::Cast: POPRT_TRY(lowerCast(l_, node)); break;
      case ops::LoweringFamily::Binary: POPRT_TRY(lowerBinary(l_, node)); break;
      case ops::LoweringFamily::ElementwiseChain: POPRT_TRY(lowerElementwiseChain(l_, node)); break;
      case ops::LoweringFamily::MatMul: POPRT_TRY(lowerMatMul(l_, node)); break;
      case ops::LoweringFamily::View: POPRT_TRY(lowerView(l_, node)); break;
      case ops::LoweringFamily::Rearrange: POPRT_TRY(lowerRearrange(l_, node, *map)); break;
      case ops::LoweringFamily::Conv: POPRT_TRY(lowerConv(l_, node)); break;
      case ops::LoweringFamily::Pool: POPRT_TRY(lowerPool(l_, node)); break;
      case ops::LoweringFamily::Activation: POPRT_TRY(lowerActivation(l_, node)); break;
      case ops::LoweringFamily::Reduce:
      case ops::LoweringFamily::Softmax:
      case ops::LoweringFamily::CumSum:
      case ops::LoweringFamily::Norm: POPRT_TRY(lowerRows(l_, node)); break;
      case ops::LoweringFamily::Attention: POPRT_TRY(lowerAttention(l_, node)); break;
      case ops::LoweringFamily::None: break;
    }
    l_.endNode();
    result_.device_nodes.push_back(name);
    return okStatus();
  }

  // One host program for nodes[indices]: its inputs are the values it reads from elsewhere
  // (device values stream out first), its outputs the values read after it or returned.
  Status flushHost(std::vector<size_t>& indices, const std::vector<const ir::Node*>& nodes) {
    std::set<const ir::Value*> produced;
    for (size_t i : indices)
      for (const ir::Value* v : nodes[i]->outputs())
        if (v) produced.insert(v);
    std::vector<const ir::Value*> inputs, outputs;
    std::set<const ir::Value*> seen;
    for (size_t i : indices)
      for (const ir::Value* v : valuesRead(*nodes[i], graph_))
        if (!produced.count(v) && !v->isInitializer() && seen.insert(v).second) inputs.push_back(v);
    const size_t last = indices.back();
    for (size_t i : indices)
      for (const ir::Value* v : nodes[i]->outputs()) {
        if (!v) continue;
        bool later = v->isGraphOutput();
        for (size_t r : readers_[v]) later |= r > last;
        if (later) outputs.push_back(v);
      }
    exec::HostProgram hp;
    hp.name = "host_" + std::to_string(l_.executable().host_programs.size());
    for (const ir::Value* v : inputs) {
      if (!on_host_.count(v)) {  // a device value: stream it out first
        if (!l_.hasMapping(v)) return Error("internal: value '" + v->name() + "' is neither on the host nor the device");
        copyOut(v);
      }
      hp.inputs.push_back(hostBuffer(v));
    }
    for (const ir::Value* v : outputs) {
      hp.outputs.push_back(hostBuffer(v));
      on_host_.insert(v);
    }
    for (size_t i : indices) hp.nodes.push_back(node_names_[i]);
    // The whole model as ONNX, exported once, when the first host program needs it (a copy of
    // every weight: a big model without host programs never pays for it).
    if (!whole_) whole_ = onnxio::exportModelProto(model_);
    std::vector<size_t> in_graph;  // hostProgramModel picks nodes by their place in the graph
    for (size_t i : indices) in_graph.push_back(graph_index_[i]);
    hp.onnx = hostProgramModel(model_, *whole_, in_graph, inputs, outputs, hp.name);
    auto& exe = l_.executable();
    exe.main.steps.push_back({exec::StepKind::HostCall, static_cast<uint32_t>(exe.host_programs.size())});
    exe.host_programs.push_back(std::move(hp));
    for (size_t i : indices) releaseDeadAfter(*nodes[i], i);
    indices.clear();
    return okStatus();
  }

  const ir::Model& model_;
  const ir::Graph& graph_;
  Lowering l_;
  CompileResult result_;
  std::optional<onnx::ModelProto> whole_;
  std::map<const ir::Value*, uint32_t> host_buffer_;  // the stream holding a value on the host
  std::set<const ir::Value*> on_host_;                // values whose host buffer is filled
  std::map<const ir::Value*, std::vector<size_t>> readers_;
  std::vector<std::string> node_names_;  // in compile order
  std::vector<size_t> graph_index_;      // each compiled node's place in the graph
  std::vector<const ir::Node*> nodes_;   // in compile order
  std::vector<uint32_t> stage_of_;       // each compiled node's stage (0 on one IPU)
  size_t reached_ = 0;
};

}  // namespace

namespace {
constexpr std::string_view kSerializeFlag = "--serialize_matmul '";
}  // namespace

std::string serializeHint(const ir::Node& node) {
  if (!passes::serializeBlocker(node).empty()) return "";
  return std::string(kSerializeFlag) + node.name() + "=" + std::to_string(kSerializeFactor) +
         "' (its temporaries in four passes), ";
}

std::optional<std::string> nodeToSerialize(const std::string& error_message) {
  const size_t at = error_message.find(kSerializeFlag);
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = at + kSerializeFlag.size();
  const std::string tail = "=" + std::to_string(kSerializeFactor) + "'";
  const size_t end = error_message.find(tail, begin);
  if (end == std::string::npos) return std::nullopt;
  return error_message.substr(begin, end - begin);
}

std::map<std::string, Tensor> CompileResult::weightData() const {
  std::map<std::string, Tensor> data;
  for (const ir::Value* w : weights) data.emplace(w->name(), *w->initializer());
  return data;
}

namespace {
bool samePlacement(const CompileOptions& a, const CompileOptions& b) {
  return a.resident_weight_share == b.resident_weight_share && a.only_copy_resident_share == b.only_copy_resident_share &&
         a.temporaries_scale == b.temporaries_scale;
}
}  // namespace

double weightShare(const ir::Model& model, const exec::Target& target) {
  uint64_t bytes = 0;
  for (const ir::Value* v : model.graph->initializers())
    if (const Tensor* t = constantOf(v)) bytes += t->byteSize();
  const double memory = static_cast<double>(target.numTiles()) * static_cast<double>(target.bytes_per_tile);
  return memory > 0 ? static_cast<double>(bytes) / memory : 0.0;
}

std::vector<CompileOptions> placements(const CompileOptions& options, double weight_share) {
  std::vector<CompileOptions> out{options};
  for (const double amp_scale : kRetryMemoryScales) {
    CompileOptions retry = options;
    retry.resident_weight_share = std::min(options.resident_weight_share, kRetryResidentShare);
    retry.only_copy_resident_share = retry.resident_weight_share;
    retry.temporaries_scale = amp_scale;
    if (!samePlacement(retry, options)) out.push_back(retry);
  }
  // out[1] is the fewer-resident-weights placement unless the options' own already has that share.
  const bool fewer_resident_weights = out.size() > 1 && out[1].temporaries_scale == 1.0;
  if (fewer_resident_weights && weight_share > kRetryResidentShare && weight_share < kOnlyCopiesWeightShare)
    std::swap(out[0], out[1]);
  for (CompileOptions& o : out) o.stop_when_over = true;
  return out;
}

namespace {

// A placement other than the options' own says so: it costs exchange or smaller plans.
std::string placementWarning(const CompileOptions& options, const CompileOptions& placement, bool first, double weight_share) {
  const std::string resident = "weights kept resident on at most " +
                               std::to_string(static_cast<int>(placement.resident_weight_share * 100)) + "% of each tile (not " +
                               std::to_string(static_cast<int>(options.resident_weight_share * 100)) +
                               "%); the rest are gathered when used, which costs exchange";
  std::string how = first ? "the weights take " + std::to_string(static_cast<int>(weight_share * 100)) +
                                "% of the IPUs' memory, so the program was compiled with " + resident
                          : "the program fit only with " + resident;
  if (placement.temporaries_scale != 1.0) {
    char share[96];
    std::snprintf(share, sizeof share, "%.2g of each tile (not %.2g, --available_memory_proportion)",
                  options.available_memory_proportion * placement.temporaries_scale, options.available_memory_proportion);
    how += "; conv/matmul temporaries are planned within " + std::string(share) + " where a plan fits";
  }
  return "tile memory: " + how;
}

}  // namespace

Expected<CompileResult> compileInFull(const ir::Model& model, const CompileOptions& options) {
  return Compiler(model, options).run();
}

Expected<CompileResult> compile(const ir::Model& model, const CompileOptions& options, PlacementMemo* memo) {
  auto full_report = [&] { return compileInFull(model, options); };
  const double weight_share = weightShare(model, options.target);
  const std::vector<CompileOptions> ladder = placements(options, weight_share);
  const size_t start = memo ? std::min(memo->first, ladder.size() - 1) : 0;
  if (memo) memo->stopped = false;
  size_t furthest = start, furthest_reached = 0, previous_reached = 0;
  std::optional<Error> furthest_error;
  for (size_t i = start; i < ladder.size(); ++i) {
    const auto started = std::chrono::steady_clock::now();
    Compiler compiler(model, ladder[i]);
    auto result = compiler.run();
    if (result.ok()) {
      if (!samePlacement(ladder[i], options))
        result->warnings.push_back(placementWarning(options, ladder[i], i == 0, weight_share));
      return result;
    }
    if (result.error().message().rfind(kOutOfTileMemory, 0) != 0)
      return i == 0 ? std::move(result) : full_report();  // a plan this placement cannot make
    const size_t reached = compiler.reached();
    POPRT_LOG(Info, "codegen: placement " << i + 1 << " of " << ladder.size() << " stopped at node " << reached << " of "
                                          << model.graph->nodes().size() << " after "
                                          << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
                                          << " s: " << result.error().message());
    if (reached > furthest_reached) furthest = i, furthest_reached = reached, furthest_error = result.error();
    // Smaller temporaries that stop at the same node as larger ones did: what that node needs is
    // not its temporaries (FCN-ResNet50's 38 MB classifier conv), and smaller ones will not fit it.
    if (i > start && ladder[i].temporaries_scale < ladder[i - 1].temporaries_scale && reached == previous_reached) break;
    previous_reached = reached;
  }
  if (!memo) return full_report();
  // The caller serialises the node a stop names (nodeToSerialize) and compiles again from the
  // placement that got furthest; the full report only when it has none to name.
  memo->first = furthest;
  memo->stopped = furthest_error && nodeToSerialize(furthest_error->message());
  return memo->stopped ? *furthest_error : full_report();
}

}  // namespace poprt::codegen
