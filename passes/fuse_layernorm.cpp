// fuse_layernorm: layer normalisation over the last axis as exporters decompose it —
//   mean = ReduceMean(x) ; d = x - mean ; var = ReduceMean(d² as Pow(d, 2) or d·d)
//   y = d / Sqrt(var + eps)   (or d · Reciprocal(Sqrt(·)), or Pow(·, 0.5) / Pow(·, -0.5))
//   optionally y · gamma, then + beta (constants varying along the last axis only)
// — becomes LayerNormalization (default-domain opset >= 17) or ai.graphcore LayerNorm (below 17),
// axis -1. Both ReduceMeans reduce only the last axis (axes [-1] or [rank-1], as an attribute or,
// from opset 18, an input) with keepdims 1.

#include "lib/ops/graphcore_ops.h"
#include "lib/ops/op_util.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

using namespace fusion;

// Why ReduceMean `r` is not a keepdims mean over the last axis of its input, or "".
std::string lastAxisMean(const ir::Node& r) {
  auto dims = dimsOf(r.input(0));
  if (!dims) return "the input's rank is unknown";
  const int64_t rank = static_cast<int64_t>(dims->size());
  if (r.attrInt("keepdims", 1) != 1) return "keepdims is 0";
  if (r.input(1) && !constantOf(r.input(1))) return "its axes are not a constant";
  auto axes = intsFromInputOrAttr(r, 1, "axes");
  if (!axes || axes->empty()) {
    if (r.attrInt("noop_with_empty_axes", 0) != 0) return "it reduces nothing";
    if (rank == 1) return "";
    return "it reduces every axis, not just the last";
  }
  if (axes->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != rank - 1)) return "it does not reduce only the last axis";
  return "";
}

struct Match {
  ir::Value* x = nullptr;
  ir::Value* gamma = nullptr;
  ir::Value* beta = nullptr;
  std::optional<Tensor> scale, bias;  // gamma and beta as [C]
  int64_t c = 0;                      // the normalised (last) dim
  double eps = 0;
  ir::Node* last = nullptr;
  std::vector<ir::Node*> nodes;
};

// A constant that only varies along the last axis of x (shape [..., 1, C] or one element, rank at
// most x's, x's dtype). Returns it as a [C] tensor.
std::optional<Tensor> affineParam(const ir::Value* p, const ir::Value* x, int64_t c) {
  const Tensor* t = constantOf(p);
  if (!t || t->dtype() != x->type.dtype || t->shape().size() > x->type.dims->size()) return std::nullopt;
  const Shape& s = t->shape();
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] != 1) return std::nullopt;
  const int64_t n = t->numElements();
  if (n != c && n != 1) return std::nullopt;
  auto values = ops::toDoubles(*t);
  if (!values.ok()) return std::nullopt;
  std::vector<double> full(static_cast<size_t>(c), (*values)[0]);
  if (n == c) full = *values;
  auto out = ops::fromDoubles(t->dtype(), {c}, full);
  if (!out.ok()) return std::nullopt;
  return std::move(out).value();
}

class FuseLayerNorm : public RewriteRule<Match> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"ReduceMean"}; }

  Found<Match> match(ir::Graph&, ir::Node& r1, PassContext&) override {
    // Plausible candidates: the mean is subtracted from the value it was taken of.
    ir::Value* mean = r1.output(0);
    ir::Node* sub = nullptr;
    for (const ir::Use& u : mean->uses())
      if (isOp(u.node, "Sub") && u.node->input(0) == r1.input(0) && u.node->input(1) == mean) sub = u.node;
    if (!sub) return Found<Match>::none();
    Match m;
    std::string why = matchChain(r1, *sub, m);
    if (!why.empty()) return Found<Match>::nearMiss(why);
    return m;
  }

  Status rewrite(ir::Graph& graph, Match& m, PassContext& ctx) override {
    const int64_t c = m.c;
    // Reuse a parameter already of shape [C]; otherwise a reshaped (or ones) copy.
    auto param = [&](ir::Value* given, std::optional<Tensor> t, const std::string& what) -> ir::Value* {
      if (given && constantOf(given)->shape() == Shape{c}) return given;
      if (!t) {
        auto ones = ops::fromDoubles(m.x->type.dtype, {c}, std::vector<double>(static_cast<size_t>(c), 1.0));
        t = std::move(ones).value();
      }
      std::string base = (given ? given->name() : m.last->output(0)->name()) + "_" + what;
      ir::Value* v = graph.addInitializer(graph.uniqueName(base), std::move(*t));
      v->type = ir::TensorType::of(m.x->type.dtype, {c});
      return v;
    };
    std::vector<ir::Value*> inputs = {m.x, param(m.gamma, std::move(m.scale), "scale")};
    if (m.beta) inputs.push_back(param(m.beta, std::move(m.bias), "bias"));
    const bool standard = opset() >= 17;
    ir::Node* ln = replaceWithNode(graph, m.last, standard ? "LayerNormalization" : "LayerNorm",
                                   standard ? "" : ops::graphcore::kDomain, inputs);
    ln->attributes["axis"].value = int64_t{-1};
    ln->attributes["epsilon"].value = static_cast<float>(m.eps);
    refineType(ln->output(0), m.x->type);
    if (!standard) importGraphcoreDomain(ctx.model);
    ctx.count(m.gamma || m.beta ? "layernorm_affine" : "layernorm");
    return okStatus();
  }

 private:
  static std::string matchChain(ir::Node& r1, ir::Node& sub, Match& m) {
    if (std::string why = lastAxisMean(r1); !why.empty()) return "the mean: " + why;
    ir::Value* mean = r1.output(0);
    if (!singleUser(mean)) return "the mean has other uses";
    m.x = r1.input(0);
    const auto& dims = *m.x->type.dims;
    if (!isFloatingPoint(m.x->type.dtype)) return "x is not a floating-point tensor";
    if (dims.empty() || !dims.back().isStatic()) return "the last dim of x is not static";
    m.c = dims.back().value;
    ir::Value* d = sub.output(0);
    m.nodes = {&r1, &sub};
    // d's uses: the square (once as Pow, twice as d·d) and the normalising Div/Mul.
    ir::Node* square = nullptr;
    ir::Node* normalise = nullptr;
    for (const ir::Use& u : d->uses()) {
      ir::Node* n = u.node;
      if (isOp(n, "Pow") && n->input(0) == d) {
        auto e = scalarOf(n->input(1));
        if (e && *e == 2.0) square = n;
      } else if (isOp(n, "Mul") && n->input(0) == d && n->input(1) == d) {
        square = n;
      } else if ((isOp(n, "Div") && n->input(0) == d) || isOp(n, "Mul")) {
        normalise = n;
      }
    }
    if (!square) return "x - mean is not squared (Pow 2 or a self-Mul)";
    if (!normalise) return "x - mean is not divided by the deviation";
    if (!usedExactly(d, square->opType() == "Pow" ? 2 : 3)) return "x - mean has other uses";
    m.nodes.push_back(square);
    ir::Node* r2 = singleUser(square->output(0));
    if (!isOp(r2, "ReduceMean")) return "the square is not averaged";
    if (std::string why = lastAxisMean(*r2); !why.empty()) return "the variance: " + why;
    m.nodes.push_back(r2);
    ir::Node* add = singleUser(r2->output(0));
    if (!isOp(add, "Add")) return "no epsilon is added to the variance";
    auto eps = scalarOperand(*add, r2->output(0));
    if (!eps) return "the variance's epsilon is not a scalar constant";
    m.eps = *eps;
    m.nodes.push_back(add);
    // The deviation: Sqrt or Pow 0.5 (then Div, or Reciprocal then Mul), or Pow -0.5 (then Mul).
    ir::Node* root = singleUser(add->output(0));
    ir::Value* inv = nullptr;  // 1/σ, multiplied
    ir::Value* dev = nullptr;  // σ, divided by
    if (isOp(root, "Sqrt")) {
      dev = root->output(0);
    } else if (isOp(root, "Pow") && root->input(0) == add->output(0)) {
      auto e = scalarOf(root->input(1));
      if (e && *e == 0.5) dev = root->output(0);
      if (e && *e == -0.5) inv = root->output(0);
    }
    if (!dev && !inv) return "var + eps is not square-rooted";
    m.nodes.push_back(root);
    if (dev && isOp(singleUser(dev), "Reciprocal")) {
      ir::Node* rec = singleUser(dev);
      m.nodes.push_back(rec);
      inv = rec->output(0);
      dev = nullptr;
    }
    if (dev) {
      if (!isOp(normalise, "Div") || normalise->input(1) != dev || !singleUser(dev)) return "x - mean is not divided by σ";
    } else {
      if (!isOp(normalise, "Mul") || otherOperand(*normalise, d) != inv || !singleUser(inv))
        return "x - mean is not multiplied by 1/σ";
    }
    m.nodes.push_back(normalise);
    m.last = normalise;
    // Optional affine: · gamma, then + beta (constants varying along the last axis only; anything
    // else, such as a residual Add, ends the pattern and stays).
    ir::Value* y = normalise->output(0);
    ir::Node* next = singleUser(y);
    if (isOp(next, "Mul") && (m.scale = affineParam(otherOperand(*next, y), m.x, m.c))) {
      m.gamma = otherOperand(*next, y);
      m.nodes.push_back(next);
      m.last = next;
      y = next->output(0);
      next = singleUser(y);
    }
    if (isOp(next, "Add") && (m.bias = affineParam(otherOperand(*next, y), m.x, m.c))) {
      m.beta = otherOperand(*next, y);
      m.nodes.push_back(next);
      m.last = next;
    }
    return "";
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseLayerNorm() { return std::make_unique<FuseLayerNorm>(); }

}  // namespace poprt::passes
