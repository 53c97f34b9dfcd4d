// common_subexpression_elimination: initializers with the same dtype, shape and bytes become one,
// then nodes with the same op, attributes and inputs (in order) become one. Nodes with subgraphs
// and nondeterministic ops are left alone; a graph output keeps its own producer.
// Under --precision fp16, a float32 initializer whose float16 rounding is a float16 initializer
// (a weight float_to_half kept float32, equal to one it converted) is read through a Cast of it:
// the PopEF stores float32 weights rounded to float16 anyway (tools/convert_popef.cpp), so the
// device computes the same and the weight is stored once.
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "lib/support/half.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

const std::set<std::string> kNondeterministic = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                                                 "Multinomial",  "Bernoulli",     "Dropout"};

bool hasSubgraph(const ir::Node& n) {
  for (const auto& [name, attr] : n.attributes)
    if (std::holds_alternative<ir::GraphPtr>(attr.value) || std::holds_alternative<std::vector<ir::GraphPtr>>(attr.value))
      return true;
  return false;
}

bool sameAttributes(const ir::Node& a, const ir::Node& b) {
  if (a.attributes.size() != b.attributes.size()) return false;
  for (auto ia = a.attributes.begin(), ib = b.attributes.begin(); ia != a.attributes.end(); ++ia, ++ib)
    if (ia->first != ib->first || !(ia->second.value == ib->second.value)) return false;
  return true;
}

class CommonSubexpressions : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    bool changed = mergeInitializers(graph, ctx);
    if (ctx.fp16.enabled && shareFloat16Twins(graph, ctx)) {
      changed = true;
      POPRT_TRY(graph.topoSort());
    }
    // Candidates are bucketed by (op, domain, inputs); attributes are compared within a bucket.
    std::map<std::tuple<std::string, std::string, std::vector<const ir::Value*>>, std::vector<ir::Node*>> seen;
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph.nodes()) nodes.push_back(n.get());
    for (ir::Node* n : nodes) {
      if (kNondeterministic.count(n->opType()) || hasSubgraph(*n) || n->outputs().empty()) continue;
      auto key = std::make_tuple(n->opType(), n->domain(), std::vector<const ir::Value*>(n->inputs().begin(), n->inputs().end()));
      ir::Node* twin = nullptr;
      for (ir::Node* other : seen[key])
        if (other->outputs().size() == n->outputs().size() && sameAttributes(*other, *n)) twin = other;
      if (!twin) {
        seen[key].push_back(n);
        continue;
      }
      bool returned = false;
      for (const ir::Value* v : n->outputs()) returned |= v && v->isGraphOutput();
      if (returned) continue;  // its output keeps its name and producer
      for (size_t i = 0; i < n->outputs().size(); ++i)
        if (n->output(i) && twin->output(i)) graph.replaceAllUses(n->output(i), twin->output(i));
      ctx.count("nodes_merged");
      changed = true;
    }
    return changed;
  }

 private:
  static bool mergeInitializers(ir::Graph& graph, PassContext& ctx) {
    std::map<std::tuple<DType, Shape, size_t>, std::vector<ir::Value*>> buckets;
    bool changed = false;
    std::vector<ir::Value*> inits(graph.initializers().begin(), graph.initializers().end());
    for (ir::Value* v : inits) {
      if (v->isGraphInput() || v->isGraphOutput()) continue;  // overridable or returned: keep
      const Tensor& t = *v->initializer();
      auto& bucket = buckets[{t.dtype(), t.shape(), t.byteSize()}];
      ir::Value* twin = nullptr;
      for (ir::Value* other : bucket)
        if (*other->initializer() == t) twin = other;
      if (!twin) {
        bucket.push_back(v);
        continue;
      }
      graph.replaceAllUses(v, twin);
      ctx.count("initializers_merged");
      changed = true;
    }
    return changed;
  }

  static bool shareFloat16Twins(ir::Graph& graph, PassContext& ctx) {
    std::map<std::pair<Shape, std::vector<uint8_t>>, ir::Value*> halves;  // (shape, bytes) -> float16 initializer
    std::set<Shape> half_shapes;
    std::vector<ir::Value*> singles;
    for (ir::Value* v : graph.initializers()) {
      if (v->isGraphInput() || v->isGraphOutput()) continue;
      const Tensor& t = *v->initializer();
      if (t.dtype() == DType::Float16) {
        auto bytes = t.bytes();
        halves.try_emplace({t.shape(), std::vector<uint8_t>(bytes.begin(), bytes.end())}, v);
        half_shapes.insert(t.shape());
      } else if (t.dtype() == DType::Float && t.numElements() > 0) {
        singles.push_back(v);
      }
    }
    bool changed = false;
    for (ir::Value* v : singles) {
      const Tensor& t = *v->initializer();
      if (!half_shapes.count(t.shape())) continue;  // no twin possible: not rounded (a quantized ViT's 86M weights)
      auto src = t.data<float>();
      if (!fitsFloat16(src)) continue;  // as the PopEF's float16 storage requires
      std::vector<uint16_t> bits(src.size());
      floatsToHalfBits(src.data(), src.size(), bits.data());
      std::vector<uint8_t> rounded(bits.size() * 2);
      std::memcpy(rounded.data(), bits.data(), rounded.size());
      auto twin = halves.find({t.shape(), rounded});
      if (twin == halves.end()) continue;
      ir::Value* widened = graph.addValue(graph.uniqueName(v->name() + "_from_fp16"), v->type);
      ir::Node* cast = graph.addNode("Cast", {twin->second}, {widened}, graph.uniqueName(v->name() + "_from_fp16_cast"));
      cast->attributes["to"].value = static_cast<int64_t>(DType::Float);
      graph.replaceAllUses(v, widened);
      ctx.count("initializers_shared_as_fp16");
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> makeCommonSubexpressions() { return std::make_unique<CommonSubexpressions>(); }

}  // namespace poprt::passes
