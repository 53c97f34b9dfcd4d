#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;

struct Case {
  std::string equation;
  Shape a, b;
  int transposes;  // the rewrite's, identities left out
};

// Each equation is rewritten, and the evaluator's outputs before (its own Einsum) and after
// (Transposes and a MatMul) agree: runPipelineChecked compares them.
TEST(EinsumToMatMul, BatchedProductsBecomeAMatMul) {
  const std::vector<Case> cases = {
      {"B G H I D, B G H J D -> B G H I J", {1, 2, 3, 4, 5}, {1, 2, 3, 6, 5}, 1},  // MaxViT, scores
      {"B G H I J, B G H J D -> B G H I D", {1, 2, 3, 4, 6}, {1, 2, 3, 6, 5}, 0},  // MaxViT, values
      {"bhqd,bhkd->bhqk", {2, 3, 4, 8}, {2, 3, 5, 8}, 1},
      {"ij,jk->ik", {3, 4}, {4, 5}, 0},
      {"bij,bjk->bki", {2, 3, 4}, {2, 4, 5}, 1},
      {"bdi,bjd->bij", {2, 4, 3}, {2, 5, 4}, 2},
      {"ij,j->i", {3, 4}, {4}, 0},
  };
  for (const Case& c : cases) {
    ir::Model m = emptyModel();
    Builder b(m);
    b.output(b.op("Einsum", {b.input("a", c.a), b.input("b", c.b)}, {{"equation", c.equation}}));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "einsum_to_matmul", "infer_shapes"});
    EXPECT_EQ(countOps(*m.graph, "Einsum"), 0) << c.equation << "\n" << reportText();
    EXPECT_EQ(countOps(*m.graph, "MatMul"), 1) << c.equation;
    EXPECT_EQ(countOps(*m.graph, "Transpose"), c.transposes) << c.equation;
    EXPECT_TRUE(m.graph->outputs()[0]->type.hasStaticShape()) << c.equation;
  }
}

TEST(EinsumToMatMul, OtherContractionsStayWithAReason) {
  const std::vector<std::pair<std::string, std::pair<Shape, Shape>>> cases = {
      {"ij,jk->i", {{3, 4}, {4, 5}}},           // k is summed alone
      {"bij,bjk->ik", {{2, 3, 4}, {2, 4, 5}}},  // two contracted labels
      {"ii,ij->ij", {{3, 3}, {3, 4}}},          // a diagonal
      {"bi,bj->bij", {{2, 3}, {2, 4}}},         // an outer product: nothing contracted
      {"bij,bj->bi", {{2, 3, 4}, {2, 4}}},      // a batched matrix-vector product
  };
  for (const auto& [equation, shapes] : cases) {
    ir::Model m = emptyModel();
    Builder b(m);
    b.output(b.op("Einsum", {b.input("a", shapes.first), b.input("b", shapes.second)}, {{"equation", equation}}));
    runPipelineChecked(m, {"infer_shapes", "einsum_to_matmul"});
    EXPECT_EQ(countOps(*m.graph, "Einsum"), 1) << equation;
    ASSERT_FALSE(g_reports.empty());
    EXPECT_EQ(g_reports.back().stats.near_misses.size(), 1u) << equation << "\n" << reportText();
  }
}

}  // namespace
}  // namespace poprt::passes
