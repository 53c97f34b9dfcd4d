// fuse_matmul_add_into_gemm: MatMul(A, B) + C -> Gemm(A, B, C) when A is 2-D [M, K], B is a
// constant [K, N] and C (either operand of the Add; constant or not) broadcasts to [M, N] the way
// Gemm's C may: [], [1], [N], [1, N], [M, 1] or [M, N]. Only for 2-D A: Gemm has no batch dims, and
// a 3-D A would need a Reshape to 2-D and back (reported as a near miss). The MatMul's output must
// feed only the Add.
#include <set>

#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

class FuseMatMulAddIntoGemm : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    bool changed = false;
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph.nodes()) nodes.push_back(n.get());
    std::set<ir::Node*> removed;
    for (ir::Node* n : nodes) {
      if (removed.count(n) || n->opType() != "Add" || !n->domain().empty()) continue;
      if (n->inputs().size() != 2 || !n->output(0)) continue;
      std::string first_why;
      bool folded = false;
      for (size_t data = 0; data < 2 && !folded; ++data) {
        ir::Node* mm = n->input(data) ? n->input(data)->producer() : nullptr;
        if (!mm || mm->graph() != &graph || mm->opType() != "MatMul" || !mm->domain().empty()) continue;
        std::string why = check(*n, *mm, data);
        if (!why.empty()) {
          if (first_why.empty()) first_why = why;
          continue;
        }
        ir::Value* y = n->output(0);
        ir::Value *a = mm->input(0), *b = mm->input(1), *bias = n->input(1 - data);
        const std::string name = mm->name(), domain = mm->domain();
        removed.insert(n);
        removed.insert(mm);
        ir::Value* tmp = fusion::detach(graph, y, {n, mm});
        graph.addNode("Gemm", {a, b, bias}, {y}, name, domain);
        fusion::reattach(graph, tmp, y);
        ctx.count("gemm");
        folded = changed = true;
      }
      if (!folded && !first_why.empty()) ctx.nearMiss(*n, first_why);
    }
    if (changed) POPRT_TRY(fusion::finishRewrites(graph));
    return changed;
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
    if (rank != 2)
      return "A of " + mm.describe() + " has rank " + std::to_string(rank) +
             (rank < 2 ? ": Gemm needs a 2-D A" : ": Gemm has no batch dims (it would need a Reshape of A to 2-D and back)");
    if (!bias || !bias->type.isTensor() || !bias->type.hasStaticShape()) return "the bias has no static shape";
    if (bias->type.dtype != b->dtype()) return "the bias's dtype differs from B's";
    // C must broadcast to [M, N] without growing it.
    const Shape cs = bias->type.staticShape();
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
