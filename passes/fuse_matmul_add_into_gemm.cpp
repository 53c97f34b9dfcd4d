// fuse_matmul_add_into_gemm: MatMul(A, B) + C -> Gemm(A, B, C) when A is 2-D [M, K], B is a
// constant [K, N] and C (either operand of the Add; constant or not) broadcasts to [M, N] the way
// Gemm's C may: [], [1], [N], [1, N], [M, 1] or [M, N]. The MatMul's output must feed only the Add.
//
// A of static shape [..., M, K] with a bias over the columns only ([], [1], [N] or [1, N]), a
// transformer's linear layer, becomes Reshape(A, [rows, K]) -> Gemm -> Reshape(back): the
// Reshapes are views on the device, and the Gemm adds the bias as it writes each output, where the
// Add was a superstep of its own with a vertex per piece of a row on each tile (MaxViT-T's bias
// Adds: 1.0 of its 1.8 million vertices).
#include <algorithm>

#include "lib/ops/op_util.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

struct GemmMatch {
  std::vector<ir::Node*> nodes;  // the Add, then the MatMul
  size_t data = 0;               // the Add's input the MatMul makes
};

class FuseMatMulAddIntoGemm : public RewriteRule<GemmMatch> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"Add"}; }

  // Either input of the Add may be the MatMul; the first reason not is the one reported.
  Found<GemmMatch> match(ir::Graph& graph, ir::Node& add, PassContext&) override {
    if (add.inputs().size() != 2 || !add.output(0)) return Found<GemmMatch>::none();
    std::string first_why;
    for (size_t data = 0; data < 2; ++data) {
      ir::Node* mm = add.input(data) ? add.input(data)->producer() : nullptr;
      if (!mm || mm->graph() != &graph || !fusion::isOp(mm, "MatMul")) continue;
      std::string why = check(add, *mm, data);
      if (why.empty()) return GemmMatch{{&add, mm}, data};
      if (first_why.empty()) first_why = why;
    }
    return first_why.empty() ? Found<GemmMatch>::none() : Found<GemmMatch>::nearMiss(first_why);
  }

  Status rewrite(ir::Graph& graph, GemmMatch& m, PassContext& ctx) override {
    ir::Node* add = m.nodes[0];
    ir::Node* mm = m.nodes[1];
    ir::Value* y = add->output(0);
    ir::Value *a = mm->input(0), *b = mm->input(1), *bias = add->input(1 - m.data);
    const std::string name = mm->name(), domain = mm->domain();
    ir::Value* tmp = fusion::detach(graph, y, {add, mm});
    if (a->type.dims->size() == 2) {
      graph.addNode("Gemm", {a, b, bias}, {y}, name, domain);
      ctx.count("gemm");
    } else {
      const Shape out_shape = y->type.staticShape();
      const int64_t n = out_shape.back(), rows = y->type.numElements() / n;  // match() refused empty outputs
      const int64_t k = a->type.staticShape().back();
      auto matrix = [&](const std::string& suffix, int64_t cols) {
        ir::TensorType t = y->type;
        t.dims = std::vector<ir::Dim>{ir::Dim::fixed(rows), ir::Dim::fixed(cols)};
        return graph.addValue(graph.uniqueName(name + suffix), t);
      };
      auto reshape = [&](ir::Value* in, ir::Value* out, const Shape& to, const std::string& suffix) {
        const auto rank = static_cast<int64_t>(to.size());
        graph.addNode("Reshape", {in, fusion::addConstant(graph, name + suffix + "_shape", ops::int64Tensor(to, {rank}))}, {out},
                      graph.uniqueName(name + suffix));
      };
      ir::Value* a_rows = matrix("/rows", k);
      ir::Value* y_rows = matrix("/gemm", n);
      reshape(a, a_rows, {rows, k}, "/rows");
      graph.addNode("Gemm", {a_rows, b, bias}, {y_rows}, name, domain);
      reshape(y_rows, y, out_shape, "/unrows");
      ctx.count("gemm_of_rows");
    }
    fusion::reattach(graph, tmp, y);
    return okStatus();
  }

 private:
  // Why Add `add` = MatMul `mm` (its input `data`) + the other input cannot become a Gemm; "" if it can.
  static std::string check(const ir::Node& add, const ir::Node& mm, size_t data) {
    const ir::Value* out = mm.output(0);
    const ir::Value* a = mm.input(0);
    const ir::Value* bias = add.input(1 - data);
    if (out->isGraphOutput()) return "the output of " + mm.describe() + " is a graph output";
    if (out->uses().size() != 1) return "the output of " + mm.describe() + " has " + std::to_string(out->uses().size()) + " uses";
    const Tensor* b = constantOf(mm.input(1));
    if (!b) return fusion::notConstant(mm.input(1), "B of " + mm.describe());
    if (b->shape().size() != 2) return "B of " + mm.describe() + " is not 2-D";
    if (!isFloatingPoint(b->dtype())) return "B of " + mm.describe() + " is not floating-point";
    if (!a || !a->type.isTensor() || !a->type.hasRank()) return "the rank of A of " + mm.describe() + " is unknown";
    const size_t rank = a->type.dims->size();
    if (rank < 2) return "A of " + mm.describe() + " has rank " + std::to_string(rank) + ": Gemm needs a 2-D A";
    if (!bias || !bias->type.isTensor() || !bias->type.hasStaticShape()) return "the bias has no static shape";
    if (bias->type.dtype != b->dtype()) return "the bias's dtype differs from B's";
    const Shape cs = bias->type.staticShape();
    if (rank > 2) {  // as a Gemm of A's rows, between Reshapes
      const std::string what = "A of " + mm.describe() + " has rank " + std::to_string(rank);
      if (!a->type.hasStaticShape()) return what + " and a dynamic shape: its rows are not known";
      if (!add.output(0)->type.hasStaticShape()) return "the output of " + add.describe() + " has no static shape";
      // A 0 in a Reshape's shape copies the input's dim (ONNX's default): an empty A or output
      // would not reshape back.
      if (a->type.numElements() == 0 || add.output(0)->type.numElements() == 0) return what + " and no elements";
      const bool columns_only = std::all_of(cs.begin(), cs.end() - (cs.empty() ? 0 : 1), [](int64_t d) { return d == 1; });
      if (cs.size() > 2 || !columns_only || (!cs.empty() && cs.back() != 1 && cs.back() != b->shape()[1]))
        return what + " and a bias of shape " + shapeToString(cs) + ", not one over its columns";
      return "";
    }
    // C must broadcast to [M, N] without growing it.
    const ir::Dim& m_dim = (*a->type.dims)[0];
    const int64_t n_dim = b->shape()[1];
    const std::string bad = "the bias of shape " + shapeToString(cs) + " does not broadcast to [M, N] = [" +
                            (m_dim.isStatic()       ? std::to_string(m_dim.value)
                             : m_dim.symbol.empty() ? "?"
                                                    : m_dim.symbol) +
                            ", " + std::to_string(n_dim) + "] as Gemm's C";
    if (cs.size() > 2) return bad;
    if (!cs.empty() && cs.back() != 1 && cs.back() != n_dim) return bad;
    if (cs.size() == 2 && cs[0] != 1 && !(m_dim.isStatic() && cs[0] == m_dim.value)) return bad;
    return "";
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseMatMulAddIntoGemm() { return std::make_unique<FuseMatMulAddIntoGemm>(); }

}  // namespace poprt::passes
