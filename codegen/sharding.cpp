#include "codegen/sharding.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "codegen/host_program.h"

namespace poprt::codegen {
namespace {

uint64_t bytesOf(const ir::Value* v) {
  if (!v || !v->type.hasStaticShape()) return 0;
  return static_cast<uint64_t>(v->type.numElements()) * dtypeSize(v->type.dtype);
}

// Roughly the multiply-accumulates (or elementwise operations) a node does: a stage's share of
// them is its share of the estimated cycles.
long double workOf(const ir::Node& node) {
  const ir::Value* y = node.outputs().empty() ? nullptr : node.output(0);
  if (!y || !y->type.hasStaticShape()) return 0;
  const auto out = static_cast<long double>(y->type.numElements());
  const ir::Value* x = node.inputs().empty() ? nullptr : node.input(0);
  const std::string& op = node.opType();
  if ((op == "MatMul" || op == "Gemm" || op == "GemmAct") && x && x->type.hasStaticShape() && !x->type.staticShape().empty()) {
    const Shape s = x->type.staticShape();
    const bool trans_a = op != "MatMul" && node.attrInt("transA", 0) != 0;
    return out * static_cast<long double>(trans_a && s.size() == 2 ? s[0] : s.back());
  }
  if ((op == "Conv" || op == "ConvAct") && node.inputs().size() > 1 && node.input(1)->type.hasStaticShape()) {
    const Shape w = node.input(1)->type.staticShape();
    return w.empty() || w[0] == 0 ? out : out * static_cast<long double>(node.input(1)->type.numElements() / w[0]);
  }
  if (op == "MultiHeadAttention" && node.inputs().size() > 1 && node.input(1)->type.hasStaticShape()) {
    const Shape k = node.input(1)->type.staticShape();  // [B, keys, H * D]: scores and values per output
    return k.size() == 3 ? 2 * out * static_cast<long double>(k[1]) : out;
  }
  return out;
}

// Stage s of num_ipus holds the nodes whose running share of the cost falls in [s, s+1) /
// num_ipus. A node's cost is its share of the bytes (weights at their first reader, activations
// at their producer) plus its share of the work: stages that fit and take about equal time.
std::vector<uint32_t> autoStages(const std::vector<const ir::Node*>& nodes,
                                 const std::vector<std::vector<const ir::Value*>>& reads, uint32_t num_ipus) {
  std::vector<long double> bytes(nodes.size(), 0), work(nodes.size(), 0);
  long double total_bytes = 0, total_work = 0;
  std::set<const ir::Value*> counted;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const ir::Value* v : reads[i])
      if (v->isInitializer() && counted.insert(v).second) bytes[i] += static_cast<long double>(bytesOf(v));
    for (const ir::Value* v : nodes[i]->outputs()) bytes[i] += static_cast<long double>(bytesOf(v));
    work[i] = workOf(*nodes[i]);
    total_bytes += bytes[i];
    total_work += work[i];
  }
  std::vector<long double> cost(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    cost[i] = (total_bytes > 0 ? bytes[i] / total_bytes : 0) + (total_work > 0 ? work[i] / total_work : 0);
  const long double total = (total_bytes > 0 ? 1 : 0) + (total_work > 0 ? 1 : 0);
  std::vector<uint32_t> stage(nodes.size(), 0);
  long double before = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    // The node's middle decides its stage, so a big node lands where most of it is.
    const long double middle = before + cost[i] / 2;
    const auto s = total == 0 ? 0 : static_cast<uint64_t>(middle * num_ipus / total);
    stage[i] = static_cast<uint32_t>(std::min<uint64_t>(s, num_ipus - 1));
    if (i > 0) stage[i] = std::max(stage[i], stage[i - 1]);
    before += cost[i];
  }
  return stage;
}

}  // namespace

std::string nodeName(const ir::Node& node, size_t index) {
  return node.name().empty() ? node.opType() + "_" + std::to_string(index) : node.name();
}

Expected<NodePlacement> placeNodes(const ir::Graph& graph, uint32_t num_ipus, const ShardingOptions& options) {
  std::vector<const ir::Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  std::unordered_map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = i;
  std::vector<std::vector<const ir::Value*>> reads(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) reads[i] = valuesRead(*nodes[i], graph);
  auto producerOf = [&](const ir::Value* v) -> std::optional<size_t> {
    if (!v->producer()) return std::nullopt;
    auto it = index.find(v->producer());
    return it == index.end() ? std::nullopt : std::optional<size_t>(it->second);
  };

  NodePlacement p;
  p.stage.assign(nodes.size(), 0);
  const std::string where = options.manual_source.empty() ? "manual sharding config" : options.manual_source;
  if (options.manual.empty()) {
    p.stage = autoStages(nodes, reads, num_ipus);
    for (uint32_t s = 0; s < num_ipus; ++s) p.stage_ipu.push_back(s);
  } else {
    std::map<std::string, size_t> by_name;
    for (size_t i = 0; i < nodes.size(); ++i) by_name.emplace(nodeName(*nodes[i], i), i);
    struct Claim {
      size_t node;
      uint32_t device, stage;
    };
    std::vector<Claim> claims;
    std::map<uint32_t, uint32_t> stage_device;
    for (const ShardEntry& e : options.manual) {
      auto it = by_name.find(e.node);
      if (it == by_name.end()) return Error(where + ": node '" + e.node + "' is not in the model");
      if (e.device >= num_ipus)
        return Error(where + ": node '" + e.node + "' is put on device " + std::to_string(e.device) + ", but --num_ipus is " +
                     std::to_string(num_ipus));
      if (e.stage < -1 || e.stage >= 1024) return Error(where + ": node '" + e.node + "' has stage " + std::to_string(e.stage));
      const uint32_t stage = e.stage < 0 ? e.device : static_cast<uint32_t>(e.stage);
      auto [sd, added] = stage_device.emplace(stage, e.device);
      if (!added && sd->second != e.device)
        return Error(where + ": stage " + std::to_string(stage) + " is put on devices " + std::to_string(sd->second) + " and " +
                     std::to_string(e.device) + "; a stage runs on one IPU");
      claims.push_back({it->second, e.device, stage});
    }
    // Each listed node, in graph order, takes itself and its ancestors no earlier entry took;
    // the nodes after the last one listed go with it.
    std::stable_sort(claims.begin(), claims.end(), [](const Claim& a, const Claim& b) { return a.node < b.node; });
    std::vector<bool> placed(nodes.size(), false);
    for (const Claim& c : claims) {
      std::vector<size_t> todo = {c.node};
      while (!todo.empty()) {
        const size_t i = todo.back();
        todo.pop_back();
        if (placed[i]) continue;
        placed[i] = true;
        p.stage[i] = c.stage;
        for (const ir::Value* v : reads[i])
          if (auto from = producerOf(v); from && !placed[*from]) todo.push_back(*from);
      }
    }
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!placed[i]) p.stage[i] = claims.back().stage;
    // Stages are numbered densely in the order given; each keeps its device.
    std::map<uint32_t, uint32_t> dense;
    for (const auto& [stage, device] : stage_device) {
      dense[stage] = static_cast<uint32_t>(p.stage_ipu.size());
      p.stage_ipu.push_back(device);
    }
    for (uint32_t& s : p.stage) s = dense.at(s);
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const ir::Value* v : reads[i])
      if (auto from = producerOf(v); from && p.stage[*from] > p.stage[i])
        return Error(where + ": node '" + nodeName(*nodes[i], i) + "' (stage " + std::to_string(p.stage[i]) + ") reads '" +
                     v->name() + "' from node '" + nodeName(*nodes[*from], *from) + "' of the later stage " +
                     std::to_string(p.stage[*from]));
  if (options.strategy == exec::Strategy::Pipelined) {
    std::set<uint32_t> ipus(p.stage_ipu.begin(), p.stage_ipu.end());
    if (ipus.size() != p.stage_ipu.size()) return Error(where + ": pipelined stages need an IPU each, and two stages share one");
  }
  p.order.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) p.order[i] = i;
  std::stable_sort(p.order.begin(), p.order.end(), [&](size_t a, size_t b) { return p.stage[a] < p.stage[b]; });
  return p;
}

}  // namespace poprt::codegen
