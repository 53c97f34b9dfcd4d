// fold_casts: leaves no chain of Casts that can be one, only ever where the result is the same:
//  - Cast(Cast(x, a->b), b->c) -> Cast(x, a->c) when b holds every value of a exactly (f16->f32,
//    int8->f32, f32->f64, ...), and -> x when c is a again (f16->f32->f16 is an identity).
//    Also int->f32->f16 -> int->f16: an integer f32 would round is beyond the float16 range, so it
//    becomes infinity either way. f32->f16->f32 is NOT folded (it rounds).
//  - a widening Cast read only by a layout op (Reshape, Transpose, Slice, Gather... ops that only
//    move elements) moves below it, and a narrowing Cast of a layout op's only result moves above
//    it: casting commutes with moving elements, the layout op then moves the narrower dtype, and a
//    narrowing Cast climbing up meets the widening one coming down and folds with it.
//  - Casts of one value to the same dtype merge; a Cast to the dtype its input has goes.
// A Cast whose output is a model output keeps that Value (and so its name). Subgraph bodies are
// folded too. The pass counts the Casts left ("casts_remaining") and the chains it could not fold
// ("cast_chains_remaining").
#include <map>
#include <set>

#include "lib/onnx/type_roles.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

using fusion::isOp;

// Does dtype `to` represent every value of dtype `from` exactly?
bool lossless(DType from, DType to) {
  if (from == to) return true;
  auto bits = [](DType t) -> int {
    switch (t) {
      case DType::Int8:
      case DType::UInt8: return 8;
      case DType::Int16:
      case DType::UInt16: return 16;
      case DType::Int32:
      case DType::UInt32: return 32;
      case DType::Int64:
      case DType::UInt64: return 64;
      default: return 0;
    }
  };
  const bool from_signed = from == DType::Int8 || from == DType::Int16 || from == DType::Int32 || from == DType::Int64;
  const bool to_signed = to == DType::Int8 || to == DType::Int16 || to == DType::Int32 || to == DType::Int64;
  if (from == DType::Bool) return to != DType::String && to != DType::Undefined && dtypeSize(to) > 0;
  if (from == DType::Float16 || from == DType::BFloat16) return to == DType::Float || to == DType::Double;
  if (from == DType::Float) return to == DType::Double;
  if (isInteger(from)) {
    const int fb = bits(from);
    if (isInteger(to)) {
      const int tb = bits(to);
      if (from_signed && !to_signed) return false;
      return tb > fb;  // a wider type of the same signedness, or unsigned into a wider signed one
    }
    // Significand bits: float16 11, float32 24, float64 53 (bfloat16 8).
    const int mantissa = to == DType::Float16    ? 11
                         : to == DType::Float    ? 24
                         : to == DType::Double   ? 53
                         : to == DType::BFloat16 ? 8
                                                 : 0;
    return fb - (from_signed ? 1 : 0) <= mantissa;
  }
  return false;
}

// Cast(Cast(x, a->b), b->c) == Cast(x, a->c)?
bool composes(DType a, DType b, DType c) {
  if (lossless(a, b)) return true;
  // An integer that float32 rounds (|v| > 2^24) is far beyond float16's 65504: infinity both ways.
  return isInteger(a) && b == DType::Float && c == DType::Float16;
}

DType castTo(const ir::Node& n) { return static_cast<DType>(n.attrInt("to", 0)); }

bool isCast(const ir::Node* n) { return isOp(n, "Cast") && n->input(0) && n->output(0); }

class FoldCasts : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    ctx_ = &ctx;
    opset_ = ctx.model.opsetVersion();
    POPRT_ASSIGN_OR_RETURN(bool changed, foldGraph(graph));
    ctx.count("casts_remaining", casts_);
    ctx.count("cast_chains_remaining", chains_);
    return changed;
  }

 private:
  // Folds the Casts of `graph`, then of its nodes' subgraphs (If/Loop/Scan bodies), and counts
  // what is left.
  Expected<bool> foldGraph(ir::Graph& graph) {
    g_ = &graph;
    bool changed = false;
    for (bool again = true; again;) {
      again = false;
      std::vector<ir::Node*> nodes;
      for (const auto& n : graph.nodes()) nodes.push_back(n.get());
      std::set<ir::Node*> gone;
      for (ir::Node* n : nodes) {
        if (gone.count(n) || !isCast(n)) continue;
        if (removeSameType(*n, gone) || foldChain(*n, gone) || mergeTwin(*n, gone) || sinkWidening(*n, gone) ||
            hoistNarrowing(*n, gone))
          again = true;
      }
      if (again) {
        changed = true;
        fusion::removeDeadNodes(graph);
        POPRT_TRY(graph.topoSort());
      }
    }
    if (changed) graph.removeUnusedValues(/*initializers_too=*/false);
    for (const auto& n : graph.nodes()) {
      if (!isCast(n.get())) continue;
      ++casts_;
      if (isCast(n->input(0)->producer())) {
        ++chains_;
        ctx_->nearMiss(*n, "reads another Cast and the two do not compose exactly");
      }
    }
    for (const auto& n : graph.nodes())
      for (ir::Graph* body : n->subgraphs()) {
        POPRT_ASSIGN_OR_RETURN(bool c, foldGraph(*body));
        changed |= c;
      }
    g_ = &graph;
    return changed;
  }

  // A Cast to the dtype its input has (float_to_half makes them from a model's own Cast to
  // float16 of a value it converted): its readers read the input.
  bool removeSameType(ir::Node& n, std::set<ir::Node*>& gone) {
    ir::Value* x = n.input(0);
    ir::Value* y = n.output(0);
    if (x->type.dtype == DType::Undefined || x->type.dtype != castTo(n) || y->isGraphOutput()) return false;
    g_->replaceAllUses(y, x);
    gone.insert(&n);
    ctx_->count("same_type_removed");
    return true;
  }

  // Cast(Cast(x)) -> Cast(x) or x.
  bool foldChain(ir::Node& outer, std::set<ir::Node*>&) {
    ir::Node* inner = outer.input(0)->producer();
    if (!isCast(inner)) return false;
    ir::Value* x = inner->input(0);
    const DType a = x->type.dtype, b = castTo(*inner), c = castTo(outer);
    if (a == DType::Undefined || !composes(a, b, c)) return false;
    ir::Value* y = outer.output(0);
    if (a == c && !y->isGraphOutput()) {
      g_->replaceAllUses(y, x);
      ctx_->count("round_trips_removed");
    } else {
      outer.setInput(0, x);  // a same-type Cast left for a model output is a copy, not a chain
      ctx_->count("chains_folded");
    }
    return true;
  }

  // Two Casts of the same value to the same dtype: the later one's readers read the first.
  bool mergeTwin(ir::Node& n, std::set<ir::Node*>& gone) {
    ir::Value* y = n.output(0);
    if (y->isGraphOutput()) return false;
    for (const ir::Use& u : n.input(0)->uses()) {
      ir::Node* other = u.node;
      if (other == &n || other->graph() != g_ || !isCast(other) || gone.count(other) || castTo(*other) != castTo(n)) continue;
      g_->replaceAllUses(y, other->output(0));
      gone.insert(&n);
      ctx_->count("duplicates_merged");
      return true;
    }
    return false;
  }

  // A layout op: only moves the elements of its data input 0 into its one output (the other
  // inputs are shapes, indices, axes...), whatever the dtype.
  bool isLayoutOp(const ir::Node* n) {
    if (!n || n->outputs().size() != 1 || !n->output(0) || !n->domain().empty()) return false;
    const ops::OpDef* def = ops::findOp("", n->opType());
    if (!def || def->fp16 != ops::Fp16Policy::TypeAgnostic ||
        (def->lowering != ops::LoweringFamily::View && def->lowering != ops::LoweringFamily::Rearrange))
      return false;
    auto roles = onnxio::typeRoles(*n, opset_);
    if (!roles || roles->outputs[0] != onnxio::TypeRole::Data || roles->inputs.empty() ||
        roles->inputs[0] != onnxio::TypeRole::Data)
      return false;
    for (size_t i = 1; i < roles->inputs.size(); ++i)
      if (n->input(i) && roles->inputs[i] == onnxio::TypeRole::Data) return false;  // Concat, Pad's value
    return true;
  }

  // Cast(x, a->b widening) -> L  becomes  L(x) -> Cast(b).
  bool sinkWidening(ir::Node& cast, std::set<ir::Node*>& gone) {
    ir::Value* x = cast.input(0);
    ir::Value* w = cast.output(0);
    if (!lossless(x->type.dtype, castTo(cast)) || x->type.dtype == castTo(cast)) return false;
    ir::Node* layout = fusion::singleUser(w);
    if (!isLayoutOp(layout) || layout->input(0) != w || layout->graph() != g_) return false;
    for (size_t i = 1; i < layout->inputs().size(); ++i)
      if (layout->input(i) == w) return false;
    ir::Value* y = layout->output(0);
    ir::TensorType t = y->type;
    t.dtype = x->type.dtype;
    ir::Value* moved = g_->addValue(g_->uniqueName(y->name() + "_" + std::string(dtypeName(t.dtype))), t);
    g_->setNodeOutput(layout, 0, moved);
    layout->setInput(0, x);
    ir::Node* c = g_->addNode("Cast", {moved}, {y}, g_->uniqueName(y->name() + "_cast"));
    c->attributes["to"].value = static_cast<int64_t>(castTo(cast));
    gone.insert(&cast);
    ctx_->count("pushed_through_layout");
    return true;
  }

  // L(z) -> Cast(narrowing)  becomes  Cast(z) -> L.
  bool hoistNarrowing(ir::Node& cast, std::set<ir::Node*>& gone) {
    ir::Value* y = cast.input(0);
    const DType to = castTo(cast);
    if (!lossless(to, y->type.dtype) || y->type.dtype == to) return false;
    ir::Node* layout = y->producer();
    if (!isLayoutOp(layout) || layout->graph() != g_ || fusion::singleUser(y) != &cast) return false;
    ir::Value* z = layout->input(0);
    if (!z || z->type.dtype != y->type.dtype) return false;
    ir::Value* out = cast.output(0);
    ir::TensorType t = z->type;
    t.dtype = to;
    ir::Value* narrowed = g_->addValue(g_->uniqueName(z->name() + "_" + std::string(dtypeName(to))), t);
    ir::Node* c = g_->addNode("Cast", {z}, {narrowed}, g_->uniqueName(narrowed->name() + "_cast"));
    c->attributes["to"].value = static_cast<int64_t>(to);
    // The layout op now makes the Cast's output (its Value and name stay); the old Cast, left
    // reading nothing and making an unused value, is removed as dead.
    ir::Value* dead = g_->addValue(g_->uniqueName(out->name() + "_dead"), out->type);
    g_->setNodeOutput(&cast, 0, dead);
    g_->setNodeOutput(layout, 0, out);
    layout->setInput(0, narrowed);
    cast.setInput(0, nullptr);
    gone.insert(&cast);
    ctx_->count("pushed_through_layout");
    return true;
  }

  ir::Graph* g_ = nullptr;  // the graph being folded
  PassContext* ctx_ = nullptr;
  int64_t opset_ = 0;
  int64_t casts_ = 0, chains_ = 0;
};

}  // namespace

std::unique_ptr<Pass> makeFoldCasts() { return std::make_unique<FoldCasts>(); }

}  // namespace poprt::passes
