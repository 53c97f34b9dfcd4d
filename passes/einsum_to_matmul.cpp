// einsum_to_matmul: a two-input Einsum that is a batched matrix product becomes Transposes around
// a MatMul, which the device runs and shape inference types (torchvision's MaxViT writes its
// attention as "B G H I D, B G H J D -> B G H I J" and "B G H I J, B G H J D -> B G H I D").
// The labels must sort into batch labels (in both inputs and the output, the same order in
// each), at most one row label (A and the output), at most one column label (B and the output;
// both when there are batch labels) and exactly one contracted label (both inputs, not the output); no label repeats within a
// term and there is no ellipsis. A is transposed to [batch, row, k], B to [batch, k, col], and the product [batch, row, col] to
// the output's order; identity Transposes are left out.
#include <algorithm>
#include <cctype>
#include <numeric>

#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

struct EinsumMatch {
  ir::Node* node = nullptr;
  std::vector<int64_t> perm_a, perm_b, perm_out;  // perm_out: from [batch, row, col] to the output's order
};

// The equation's terms without blanks: {A, B, output}; empty when it is not "A,B->Y" of letters.
std::vector<std::string> terms(const std::string& equation) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  const size_t arrow = eq.find("->"), comma = eq.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return {};
  std::vector<std::string> t = {eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1), eq.substr(arrow + 2)};
  for (const std::string& s : t) {
    if (!std::all_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) return {};
    std::string sorted = s;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return {};  // a diagonal
  }
  return t;
}

// Positions of `labels` in `term`.
std::vector<int64_t> positions(const std::string& term, const std::string& labels) {
  std::vector<int64_t> p;
  for (char c : labels) p.push_back(static_cast<int64_t>(term.find(c)));
  return p;
}

bool isIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

class EinsumToMatMul : public RewriteRule<EinsumMatch> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"Einsum"}; }

  Found<EinsumMatch> match(ir::Graph&, ir::Node& n, PassContext&) override {
    if (n.inputs().size() != 2 || !n.input(0) || !n.input(1) || !n.output(0)) return Found<EinsumMatch>::none();
    const std::vector<std::string> t = terms(n.attrString("equation", ""));
    if (t.empty()) return Found<EinsumMatch>::nearMiss("the equation is not two terms of distinct letters -> one");
    const std::string &a = t[0], &b = t[1], &y = t[2];
    std::string batch, row, col, k;
    for (char c : a) {
      const bool in_b = b.find(c) != std::string::npos, in_y = y.find(c) != std::string::npos;
      if (in_b && in_y)
        batch += c;
      else if (in_b)
        k += c;
      else if (in_y)
        row += c;
      else
        return Found<EinsumMatch>::nearMiss(std::string("label ") + c + " of A is summed alone");
    }
    for (char c : b)
      if (a.find(c) == std::string::npos) {
        if (y.find(c) == std::string::npos)
          return Found<EinsumMatch>::nearMiss(std::string("label ") + c + " of B is summed alone");
        col += c;
      }
    if (k.size() != 1 || row.size() > 1 || col.size() > 1)
      return Found<EinsumMatch>::nearMiss("not one contracted label, at most one row and one column label");
    if (y.size() != batch.size() + row.size() + col.size())
      return Found<EinsumMatch>::nearMiss("the output has labels of no input");
    // MatMul reads a 1-D operand as a vector only without batch dims.
    if (!batch.empty() && (row.empty() || col.empty()))
      return Found<EinsumMatch>::nearMiss("a matrix-vector product with batch labels");
    // Batch labels in the same order in A, B and the output, so that the MatMul broadcasts them.
    const auto ordered = [&](const std::string& term) {
      std::vector<int64_t> p = positions(term, batch);
      return std::is_sorted(p.begin(), p.end());
    };
    if (!ordered(a) || !ordered(b) || !ordered(y)) return Found<EinsumMatch>::nearMiss("the batch labels change order");
    EinsumMatch m;
    m.node = &n;
    m.perm_a = positions(a, batch + row + k);
    m.perm_b = positions(b, batch + k + col);
    // The product is [batch, row, col]; the output's dim i is the product's dim of its label.
    const std::string product = batch + row + col;
    m.perm_out = positions(product, y);
    return m;
  }

  Status rewrite(ir::Graph& graph, EinsumMatch& m, PassContext& ctx) override {
    ir::Node* n = m.node;
    ir::Value* y = n->output(0);
    ir::Value *a = n->input(0), *b = n->input(1);
    const std::string name = n->name().empty() ? graph.uniqueName("einsum") : n->name();
    ir::Value* tmp = fusion::detach(graph, y, {n});
    auto transpose = [&](ir::Value* x, const std::vector<int64_t>& perm, const std::string& suffix, ir::Value* out) {
      if (!out)
        out = graph.addValue(graph.uniqueName(name + suffix), ir::TensorType{x->type.dtype, std::nullopt, {}, ValueKind::Tensor});
      ir::Node* t = graph.addNode("Transpose", {x}, {out}, graph.uniqueName(name + suffix));
      t->attributes["perm"].value = perm;
      return out;
    };
    if (!isIdentity(m.perm_a)) a = transpose(a, m.perm_a, "/transpose_a", nullptr);
    if (!isIdentity(m.perm_b)) b = transpose(b, m.perm_b, "/transpose_b", nullptr);
    if (isIdentity(m.perm_out)) {
      graph.addNode("MatMul", {a, b}, {y}, name);
    } else {
      ir::Value* product =
          graph.addValue(graph.uniqueName(name + "/product"), ir::TensorType{y->type.dtype, std::nullopt, {}, ValueKind::Tensor});
      graph.addNode("MatMul", {a, b}, {product}, name);
      transpose(product, m.perm_out, "/transpose_y", y);
    }
    fusion::reattach(graph, tmp, y);
    ctx.count("einsum");
    return okStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> makeEinsumToMatMul() { return std::make_unique<EinsumToMatMul>(); }

}  // namespace poprt::passes
