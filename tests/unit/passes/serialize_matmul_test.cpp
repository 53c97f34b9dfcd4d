#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;

// Runs serialize_matmul on `node` with `factor` after infer_shapes; the evaluator's outputs before
// and after must agree and every value must be typed (runOptionsChecked).
PassReport serialize(ir::Model& m, const std::string& node, int64_t factor) {
  runPassesChecked(m, {"infer_shapes"});
  PipelineOptions options;
  options.passes = {"serialize_matmul"};
  options.serialize_matmul = {{node, factor}};
  auto reports = runOptionsChecked(m, options, 1e-5, /*check_types=*/true);
  return reports.empty() ? PassReport{} : reports.back();
}

// Each kind is split into `factor` nodes over output-channel slices (an uneven last slice too),
// joined by a Concat; every new value is typed and the outputs match the evaluator's.
TEST(SerializeMatMul, SplitsConvMatMulAndGemmOverOutputChannels) {
  struct Case {
    std::string op;
    int64_t factor;
  };
  for (const Case& c : std::vector<Case>{{"Conv", 4}, {"MatMul", 3}, {"Gemm", 2}, {"GemmT", 4}}) {
    SCOPED_TRACE(c.op);
    ir::Model m = emptyModel();
    Builder b(m);
    ir::Value* y = nullptr;
    if (c.op == "Conv") {
      y = b.op("Conv", {b.input("x", {1, 6, 5, 5}), b.weight({10, 6, 3, 3}, 1), b.weight({10}, 2)},
               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    } else if (c.op == "MatMul") {
      y = b.op("MatMul", {b.input("x", {2, 3, 8}), b.weight({8, 7}, 3)});
    } else {
      const bool t = c.op == "GemmT";
      y = b.op("Gemm", {b.input("x", {3, 8}), b.weight(t ? Shape{9, 8} : Shape{8, 9}, 4), b.weight({9}, 5)},
               {{"transB", int64_t{t}}, {"alpha", 0.5f}});
    }
    b.output(y);
    const std::string name = y->producer()->name();
    PassReport r = serialize(m, name, c.factor);
    EXPECT_EQ(counter(r, "nodes_serialized"), 1);
    const std::string op = c.op == "GemmT" ? "Gemm" : c.op;
    EXPECT_EQ(countOps(*m.graph, op), c.factor);
    EXPECT_EQ(countOps(*m.graph, "Concat"), 1);
    for (const auto& n : m.graph->nodes())
      for (const ir::Value* v : n->outputs()) EXPECT_TRUE(v->type.hasStaticShape()) << v->name();
  }
}

TEST(SerializeMatMul, NodesItCannotSplitAreErrorsNamingThem) {
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {1, 4, 5, 5});
  ir::Value* grouped = b.op("Conv", {x, b.weight({4, 2, 3, 3}, 1)}, {{"group", int64_t{2}}});
  b.output(b.op("Relu", {grouped}));
  runPassesChecked(m, {"infer_shapes"});
  for (const auto& [node, why] :
       std::vector<std::pair<std::string, std::string>>{{grouped->producer()->name(), "a grouped conv"},
                                                        {"no_such_node", "no node named 'no_such_node'"},
                                                        {m.graph->nodes().back()->name(), "a Relu"}}) {
    PipelineOptions options;
    options.passes = {"serialize_matmul"};
    options.serialize_matmul = {{node, 2}};
    auto r = runPipeline(m, options);
    ASSERT_FALSE(r.ok()) << node;
    EXPECT_NE(r.error().message().find(why), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace poprt::passes
