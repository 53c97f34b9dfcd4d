// fuse_gelu: the decomposed GELU chains exporters write become one ai.graphcore Gelu (the
// standard Gelu of opset 20 is beyond the opsets poprt imports).
//   erf form:  x · 0.5 · (1 + erf(x / √2))          — Div by √2 or Mul by 1/√2
//   tanh form: 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))  — x³ as Pow(x, 3), x·x·x or x·(x·x)
// with Add/Mul operands in either order and the 0.5 (Mul by 0.5 or Div by 2) applied to x first,
// to (1 + ·) first, or to the product last. Every interior value must have no other use.
#include <cmath>
#include <numbers>

#include "lib/ops/graphcore_ops.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

using namespace fusion;

struct Match {
  ir::Value* x = nullptr;
  ir::Node* last = nullptr;
  std::vector<ir::Node*> nodes;
  bool erf = false;  // the erf form, else the tanh one
};

// Is `n` "v · 0.5" (Mul by 0.5 either side, or Div by 2)?
bool isHalfOf(const ir::Node* n, const ir::Value* v) {
  if (isOp(n, "Mul")) {
    auto c = scalarOperand(*n, v);
    return c && *c == 0.5;
  }
  if (isOp(n, "Div") && n->input(0) == v) {
    auto c = scalarOperand(*n, v);
    return c && *c == 2.0;
  }
  return false;
}

// Given x and A = 1 + f(x), finds the node computing 0.5 · x · A. Returns an error text on a miss.
std::string matchTail(ir::Value* x, ir::Value* a, Match& m) {
  ir::Node* m1 = singleUser(a);
  if (!isOp(m1, "Mul")) return "(1 + ·) is not used by exactly one Mul";
  m.nodes.push_back(m1);
  ir::Value* o = otherOperand(*m1, a);
  if (o == x) {  // (x · A) · 0.5
    ir::Node* m2 = singleUser(m1->output(0));
    if (!isHalfOf(m2, m1->output(0))) return "x·(1 + ·) is not halved by its only use";
    m.nodes.push_back(m2);
    m.last = m2;
    return "";
  }
  if (ir::Node* h = o ? o->producer() : nullptr; h && isHalfOf(h, x) && (h->input(0) == x || h->input(1) == x)) {
    if (!singleUser(o)) return "x·0.5 has other uses";  // (x · 0.5) · A
    m.nodes.push_back(h);
    m.last = m1;
    return "";
  }
  if (auto c = scalarOperand(*m1, a); c && *c == 0.5) {  // x · (A · 0.5)
    ir::Node* m2 = singleUser(m1->output(0));
    if (!isOp(m2, "Mul") || otherOperand(*m2, m1->output(0)) != x) return "0.5·(1 + ·) is not multiplied by x";
    m.nodes.push_back(m2);
    m.last = m2;
    return "";
  }
  return "(1 + ·) is not multiplied by x and 0.5";
}

// A = f + 1 with f the only use: returns A, or nullptr.
ir::Value* plusOne(ir::Value* f, Match& m) {
  ir::Node* add = singleUser(f);
  if (!isOp(add, "Add")) return nullptr;
  auto c = scalarOperand(*add, f);
  if (!c || *c != 1.0) return nullptr;
  m.nodes.push_back(add);
  return add->output(0);
}

std::string matchErf(ir::Node& erf, Match& m) {
  ir::Value* scaled = erf.input(0);
  ir::Node* p = scaled ? scaled->producer() : nullptr;
  if (!singleUser(scaled)) return "erf's input has other uses";
  if (isOp(p, "Div")) {
    auto c = scalarOperand(*p, p->input(0));
    if (!c || !near(*c, std::numbers::sqrt2)) return "erf's input is not x / √2";
    m.x = p->input(0);
  } else if (isOp(p, "Mul")) {
    for (size_t i = 0; i < 2 && !m.x; ++i) {
      auto c = scalarOperand(*p, p->input(i));
      if (c && near(*c, 1.0 / std::numbers::sqrt2)) m.x = p->input(i);
    }
    if (!m.x) return "erf's input is not x · (1/√2)";
  } else {
    return "erf's input is not x / √2";
  }
  m.nodes = {p, &erf};
  ir::Value* a = plusOne(erf.output(0), m);
  if (!a) return "erf(·) is not followed by + 1";
  return matchTail(m.x, a, m);
}

// x³ as Pow(x, 3), (x·x)·x or x·(x·x); returns x (the square's inner value must be single-use).
ir::Value* cubeBase(ir::Node* n, Match& m) {
  if (isOp(n, "Pow")) {
    auto c = scalarOf(n->input(1));
    if (!c || *c != 3.0) return nullptr;
    m.nodes.push_back(n);
    return n->input(0);
  }
  if (!isOp(n, "Mul")) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    ir::Value* x = n->input(i);
    ir::Value* sq = n->input(1 - i);
    ir::Node* s = sq ? sq->producer() : nullptr;
    if (isOp(s, "Mul") && s->input(0) == x && s->input(1) == x && singleUser(sq)) {
      m.nodes.push_back(n);
      m.nodes.push_back(s);
      return x;
    }
  }
  return nullptr;
}

std::string matchTanh(ir::Node& tanh, Match& m) {
  ir::Value* t = tanh.input(0);
  ir::Node* scale = t ? t->producer() : nullptr;
  if (!isOp(scale, "Mul") || !singleUser(t)) return "tanh's input is not √(2/π)·(·)";
  ir::Value* inner = nullptr;
  for (size_t i = 0; i < 2 && !inner; ++i) {
    auto c = scalarOperand(*scale, scale->input(i));
    if (c && near(*c, std::sqrt(2.0 / std::numbers::pi))) inner = scale->input(i);
  }
  if (!inner) return "tanh's input is not √(2/π)·(·)";
  ir::Node* add = inner->producer();
  if (!isOp(add, "Add") || !singleUser(inner)) return "√(2/π) does not multiply x + 0.044715·x³";
  for (size_t i = 0; i < 2 && !m.x; ++i) {
    ir::Value* x = add->input(i);
    ir::Value* k = add->input(1 - i);
    ir::Node* km = k ? k->producer() : nullptr;
    if (!isOp(km, "Mul") || !singleUser(k)) continue;
    for (size_t j = 0; j < 2; ++j) {
      ir::Value* cube = km->input(j);
      auto c = scalarOperand(*km, cube);
      if (!c || !near(*c, 0.044715) || !cube || !singleUser(cube)) continue;
      Match inner_match;
      if (cubeBase(cube->producer(), inner_match) == x) {
        m.x = x;
        m.nodes = inner_match.nodes;
        m.nodes.push_back(km);
        break;
      }
    }
  }
  if (!m.x) return "√(2/π) does not multiply x + 0.044715·x³";
  m.nodes.push_back(add);
  m.nodes.push_back(scale);
  m.nodes.push_back(&tanh);
  ir::Value* a = plusOne(tanh.output(0), m);
  if (!a) return "tanh(·) is not followed by + 1";
  return matchTail(m.x, a, m);
}

class FuseGelu : public RewriteRule<Match> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"Erf", "Tanh"}; }

  Found<Match> match(ir::Graph&, ir::Node& root, PassContext&) override {
    const bool erf = root.opType() == "Erf";
    Match m;
    m.erf = erf;
    std::string why = erf ? matchErf(root, m) : matchTanh(root, m);
    if (why.empty()) {
      const ir::Value* y = m.last->output(0);
      if (!m.x->type.isTensor() || !isFloatingPoint(m.x->type.dtype) || y->type.dtype != m.x->type.dtype)
        why = "x is not a floating-point tensor";
      else if (!m.x->type.dims || !y->type.dims || m.x->type.dims->size() != y->type.dims->size())
        why = "the result's shape is not x's";
    }
    if (why.empty()) return m;
    // A Tanh alone is an activation in its own right: only report chains that began like GELU.
    if (erf || m.x || why.find("0.044715") != std::string::npos) return Found<Match>::nearMiss(why);
    return Found<Match>::none();
  }

  Status rewrite(ir::Graph& graph, Match& m, PassContext& ctx) override {
    const bool erf = m.erf;
    ir::Node* gelu = replaceWithNode(graph, m.last, "Gelu", ops::graphcore::kDomain, {m.x});
    gelu->attributes["approximate"].value = std::string(erf ? "none" : "tanh");
    refineType(gelu->output(0), m.x->type);
    importGraphcoreDomain(ctx.model);
    ctx.count(erf ? "gelu_erf" : "gelu_tanh");
    return okStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseGelu() { return std::make_unique<FuseGelu>(); }

}  // namespace poprt::passes
