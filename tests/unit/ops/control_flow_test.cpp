// Control flow (If, Loop, Scan, SequenceMap), sequence and optional ops of the reference
// evaluator: edge cases beyond the ONNX backend data. Expected values are hand-computed.
#include <gtest/gtest.h>

#include <optional>

#include "lib/ops/control_flow_util.h"
#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

using ir::TensorType;

// Runs one node on values (nullopt = omitted input) at `opset`.
Expected<std::vector<RtValue>> run(const ir::Node& node, const std::vector<std::optional<RtValue>>& in, int64_t opset = 17) {
  std::vector<const RtValue*> args;
  for (const auto& v : in) args.push_back(v ? &*v : nullptr);
  EvalContext ctx({{"", opset}});
  return runNode(node, args, ctx);
}

void setGraph(ir::Node* n, const std::string& name, ir::GraphPtr g) {
  ir::Attribute a;
  a.value = std::move(g);
  n->attributes[name] = a;
}

// ---- If ----------------------------------------------------------------------------------------

// then: a + a, else: a (an outer value as the branch output).
struct IfFixture {
  ir::Graph g;
  ir::Node* node;
  IfFixture() {
    auto* cond = g.addInput("cond", TensorType::of(DType::Bool, {}));
    auto* a = g.addInput("a", TensorType::of(DType::Float, {2}));
    auto then_g = std::make_shared<ir::Graph>("then", &g);
    auto* sum = then_g->addValue("sum");
    then_g->addNode("Add", {a, a}, {sum});
    then_g->addOutput(sum);
    auto else_g = std::make_shared<ir::Graph>("else", &g);
    else_g->addOutput(a);
    auto* y = g.addValue("y");
    node = g.addNode("If", {cond}, {y});
    setGraph(node, "then_branch", then_g);
    setGraph(node, "else_branch", else_g);
    g.addOutput(y);
  }
  Expected<std::vector<Tensor>> run(Tensor cond) { return evaluateGraph(g, {{"cond", cond}, {"a", f32({2}, {1, -2})}}); }
};

TEST(If, PicksTheBranchAndSeesOuterValues) {
  IfFixture f;
  auto t = f.run(boolean(true));
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(values<float>((*t)[0]), (std::vector<float>{2, -4}));
  auto e = f.run(boolean(false));
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(values<float>((*e)[0]), (std::vector<float>{1, -2}));
}

TEST(If, ConditionShapeOneWorksTwoElementsIsAnError) {
  IfFixture f;
  Tensor c1(DType::Bool, {1});
  c1.data<uint8_t>()[0] = 1;
  auto r = f.run(c1);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(values<float>((*r)[0]), (std::vector<float>{2, -4}));
  Tensor c2(DType::Bool, {2});
  EXPECT_FALSE(f.run(c2).ok());
  EXPECT_FALSE(f.run(Tensor(DType::Bool, {0})).ok());
}

TEST(If, MissingBranchIsAnError) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "If", 1, 1);
  auto r = run(*n, {RtValue::of(boolean(true))});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("then_branch"), std::string::npos) << r.error().message();
}

TEST(If, BranchMayReturnASequence) {
  ir::Graph g;
  auto* a = g.addInput("a", TensorType::of(DType::Float, {1}));
  auto br = std::make_shared<ir::Graph>("then", &g);
  auto* s = br->addValue("s");
  br->addNode("SequenceConstruct", {a, a}, {s});
  br->addOutput(s);
  ir::Node* n = makeNode(g, "If", 1, 1);
  setGraph(n, "then_branch", br);
  setGraph(n, "else_branch", br);
  std::vector<std::pair<std::string, RtValue>> in = {{n->input(0)->name(), RtValue::of(boolean(true))},
                                                     {"a", RtValue::of(f32({1}, {5}))}};
  g.addOutput(n->output(0));
  EvalContext ctx;
  auto r = runGraph(g, in, ctx);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].kind, RtValue::Kind::Sequence);
  EXPECT_EQ((*r)[0].sequence.size(), 2u);
}

// ---- Loop --------------------------------------------------------------------------------------

// Body: (i, cond, x) -> (cond, x + x, x + x as a scan output).
ir::GraphPtr doublingBody(ir::Graph& parent) {
  auto body = std::make_shared<ir::Graph>("body", &parent);
  body->addInput("i", TensorType::of(DType::Int64, {}));
  auto* cond = body->addInput("cond_in", TensorType::of(DType::Bool, {}));
  auto* x = body->addInput("x", TensorType::of(DType::Float, {1}));
  auto* x2 = body->addValue("x2", TensorType::of(DType::Float, {1}));
  body->addNode("Add", {x, x}, {x2});
  body->addOutput(cond);
  body->addOutput(x2);
  body->addOutput(x2);
  return body;
}

TEST(Loop, TripCountOnlyStacksScanOutputs) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "Loop", 3, 2);
  setGraph(n, "body", doublingBody(g));
  auto r = run(*n, {RtValue::of(i64({}, {3})), std::nullopt, RtValue::of(f32({1}, {1}))});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(values<float>((*r)[0].tensor), (std::vector<float>{8}));
  EXPECT_EQ((*r)[1].tensor.shape(), (Shape{3, 1}));
  EXPECT_EQ(values<float>((*r)[1].tensor), (std::vector<float>{2, 4, 8}));
}

TEST(Loop, ZeroOrNegativeTripCountKeepsInitialValuesAndGivesEmptyScans) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "Loop", 3, 2);
  setGraph(n, "body", doublingBody(g));
  for (int64_t m : {0, -5}) {
    auto r = run(*n, {RtValue::of(i64({}, {m})), RtValue::of(boolean(true)), RtValue::of(f32({1}, {3}))});
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(values<float>((*r)[0].tensor), (std::vector<float>{3}));
    EXPECT_EQ((*r)[1].tensor.shape(), (Shape{0, 1}));  // from the body output's declared shape
  }
  // A false initial condition runs nothing either.
  auto r = run(*n, {RtValue::of(i64({}, {4})), RtValue::of(boolean(false)), RtValue::of(f32({1}, {3}))});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values<float>((*r)[0].tensor), (std::vector<float>{3}));
}

TEST(Loop, ConditionFromTheBodyStopsTheLoop) {
  // cond_out = SequenceAt(flags, i) with flags = [T, T, F, T] from the enclosing graph: 3 iterations.
  ir::Graph g;
  auto* flags = g.addInput("flags", {});
  auto* m = g.addInput("M", {});
  auto* c = g.addInput("c", {});
  auto* x0 = g.addInput("x0", {});
  auto body = std::make_shared<ir::Graph>("body", &g);
  auto* i = body->addInput("i", {});
  body->addInput("cond_in", {});
  auto* x = body->addInput("x", {});
  auto* cond_out = body->addValue("cond_out");
  auto* x2 = body->addValue("x2");
  body->addNode("SequenceAt", {flags, i}, {cond_out});
  body->addNode("Add", {x, x}, {x2});
  body->addOutput(cond_out);
  body->addOutput(x2);
  body->addOutput(x);
  auto* y = g.addValue("y");
  auto* scan = g.addValue("scan");
  ir::Node* n = g.addNode("Loop", {m, c, x0}, {y, scan});
  setGraph(n, "body", body);
  g.addOutput(y);
  g.addOutput(scan);
  std::vector<Tensor> fl = {boolean(true), boolean(true), boolean(false), boolean(true)};
  EvalContext ctx;
  auto r = runGraph(g,
                    {{"flags", RtValue::seq(fl, DType::Bool)},
                     {"M", RtValue::of(i64({}, {100}))},
                     {"c", RtValue::of(boolean(true))},
                     {"x0", RtValue::of(f32({}, {1}))}},
                    ctx);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(values<float>((*r)[0].tensor), (std::vector<float>{8}));
  EXPECT_EQ(values<float>((*r)[1].tensor), (std::vector<float>{1, 2, 4}));
  // The trip count still bounds it.
  auto r2 = runGraph(g,
                     {{"flags", RtValue::seq(fl, DType::Bool)},
                      {"M", RtValue::of(i64({}, {1}))},
                      {"c", RtValue::of(boolean(true))},
                      {"x0", RtValue::of(f32({}, {1}))}},
                     ctx);
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(values<float>((*r2)[0].tensor), (std::vector<float>{2}));
}

TEST(Loop, SequenceAndOptionalLoopCarriedValues) {
  // Body: seq_out = SequenceInsert(seq_in, x); carried empty optional passes through.
  ir::Graph g;
  auto* x = g.addInput("x", {});
  auto body = std::make_shared<ir::Graph>("body", &g);
  body->addInput("i", {});
  auto* cond = body->addInput("cond_in", {});
  auto* seq = body->addInput("seq", {});
  auto* opt = body->addInput("opt", {});
  auto* seq2 = body->addValue("seq2");
  body->addNode("SequenceInsert", {seq, x}, {seq2});
  body->addOutput(cond);
  body->addOutput(seq2);
  body->addOutput(opt);
  ir::Node* n = makeNode(g, "Loop", 4, 2);
  setGraph(n, "body", body);
  EvalContext ctx;
  std::vector<std::pair<std::string, RtValue>> in = {{n->input(0)->name(), RtValue::of(i64({1}, {2}))},
                                                     {n->input(1)->name(), RtValue::of(boolean(true))},
                                                     {n->input(2)->name(), RtValue::seq({}, DType::Float)},
                                                     {n->input(3)->name(), RtValue::none()},
                                                     {"x", RtValue::of(f32({}, {7}))}};
  g.addOutput(n->output(0));
  g.addOutput(n->output(1));
  auto r = runGraph(g, in, ctx);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].kind, RtValue::Kind::Sequence);
  EXPECT_EQ((*r)[0].sequence.size(), 2u);
  EXPECT_EQ((*r)[1].kind, RtValue::Kind::None);
}

TEST(Loop, ScanOutputChangingShapeIsAnError) {
  // The body's scan output is SequenceAt(shapes, i), whose shape differs between iterations.
  ir::Graph g;
  auto* shapes = g.addInput("shapes", {});
  auto body = std::make_shared<ir::Graph>("body", &g);
  auto* i = body->addInput("i", {});
  auto* cond = body->addInput("cond_in", {});
  auto* item = body->addValue("item");
  body->addNode("SequenceAt", {shapes, i}, {item});
  body->addOutput(cond);
  body->addOutput(item);
  auto* m = g.addInput("M", {});
  auto* out = g.addValue("out");
  ir::Node* n = g.addNode("Loop", {m, nullptr}, {out});
  setGraph(n, "body", body);
  g.addOutput(out);
  EvalContext ctx;
  auto r = runGraph(
      g, {{"shapes", RtValue::seq({f32({1}, {1}), f32({2}, {1, 2})}, DType::Float)}, {"M", RtValue::of(i64({}, {2}))}}, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("changed"), std::string::npos) << r.error().message();
}

TEST(Loop, BadInputsAreErrors) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "Loop", 3, 2);
  setGraph(n, "body", doublingBody(g));
  // Trip count with two elements, float trip count, float cond with two elements.
  EXPECT_FALSE(run(*n, {RtValue::of(i64({2}, {1, 2})), std::nullopt, RtValue::of(f32({1}, {1}))}).ok());
  EXPECT_FALSE(run(*n, {RtValue::of(f32({}, {1})), std::nullopt, RtValue::of(f32({1}, {1}))}).ok());
  EXPECT_FALSE(run(*n, {std::nullopt, RtValue::of(f32({2}, {1, 1})), RtValue::of(f32({1}, {1}))}).ok());
  // Body input count differs from the node's.
  ir::Node* n2 = makeNode(g, "Loop", 4, 2);
  setGraph(n2, "body", doublingBody(g));
  auto r = run(*n2, {RtValue::of(i64({}, {1})), std::nullopt, RtValue::of(f32({1}, {1})), RtValue::of(f32({1}, {1}))});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("body takes"), std::string::npos) << r.error().message();
  // No body.
  ir::Node* n3 = makeNode(g, "Loop", 3, 1);
  EXPECT_FALSE(run(*n3, {RtValue::of(i64({}, {1})), std::nullopt, RtValue::of(f32({1}, {1}))}).ok());
}

TEST(Loop, WithoutTripCountOrConditionStopsAtTheIterationCap) {
  // A body with no nodes: (i, cond, x) -> (cond, x). Neither M nor cond: runs until the cap.
  ir::Graph g;
  auto body = std::make_shared<ir::Graph>("body", &g);
  body->addInput("i", {});
  auto* cond = body->addInput("cond_in", {});
  auto* x = body->addInput("x", {});
  body->addOutput(cond);
  body->addOutput(x);
  ir::Node* n = makeNode(g, "Loop", 3, 1);
  setGraph(n, "body", body);
  EXPECT_EQ(cf::maxIterations(), 10'000'000);
  cf::IterationCapForTesting cap(1000);  // the real cap takes seconds to reach
  auto r = run(*n, {std::nullopt, std::nullopt, RtValue::of(f32({}, {1}))});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("more than 1000 iterations"), std::string::npos) << r.error().message();
  // A trip count beyond the cap stops there too; one within it runs.
  EXPECT_FALSE(run(*n, {RtValue::of(i64({}, {INT64_MAX})), std::nullopt, RtValue::of(f32({}, {1}))}).ok());
  EXPECT_TRUE(run(*n, {RtValue::of(i64({}, {1000})), std::nullopt, RtValue::of(f32({}, {1}))}).ok());
}

// ---- Scan --------------------------------------------------------------------------------------

// Body: (sum, x) -> (sum + x, sum + x): a running sum over rows.
ir::GraphPtr sumBody(ir::Graph& parent) {
  auto body = std::make_shared<ir::Graph>("body", &parent);
  auto* s = body->addInput("s", {});
  auto* x = body->addInput("x", {});
  auto* s2 = body->addValue("s2");
  body->addNode("Add", {s, x}, {s2});
  body->addOutput(s2);
  body->addOutput(s2);
  return body;
}

TEST(Scan, Opset9AxesAndDirections) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "Scan", 2, 2);
  setGraph(n, "body", sumBody(g));
  n->attributes["num_scan_inputs"].value = int64_t{1};
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto base = run(*n, {RtValue::of(f32({2}, {0, 0})), RtValue::of(x)}, 11);
  ASSERT_TRUE(base.ok()) << base.error().message();
  EXPECT_EQ(values<float>((*base)[0].tensor), (std::vector<float>{9, 12}));
  EXPECT_EQ(values<float>((*base)[1].tensor), (std::vector<float>{1, 2, 4, 6, 9, 12}));

  // Scan along axis -1 (columns) in reverse: steps see [2,4,6] then [1,3,5].
  n->attributes["scan_input_axes"].value = std::vector<int64_t>{-1};
  n->attributes["scan_input_directions"].value = std::vector<int64_t>{1};
  auto r = run(*n, {RtValue::of(f32({3}, {0, 0, 0})), RtValue::of(x)}, 11);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(values<float>((*r)[0].tensor), (std::vector<float>{3, 7, 11}));
  EXPECT_EQ((*r)[1].tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>((*r)[1].tensor), (std::vector<float>{2, 4, 6, 3, 7, 11}));

  // Output stacked along axis 1, in reverse order.
  n->attributes["scan_output_axes"].value = std::vector<int64_t>{1};
  n->attributes["scan_output_directions"].value = std::vector<int64_t>{1};
  auto r2 = run(*n, {RtValue::of(f32({3}, {0, 0, 0})), RtValue::of(x)}, 11);
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ((*r2)[1].tensor.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>((*r2)[1].tensor), (std::vector<float>{3, 2, 7, 4, 11, 6}));
}

TEST(Scan, Opset9ErrorsOnBadAxesAndLengths) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "Scan", 3, 2);
  auto body = std::make_shared<ir::Graph>("body", &g);
  auto* s = body->addInput("s", {});
  auto* a = body->addInput("a", {});
  body->addInput("b", {});
  auto* s2 = body->addValue("s2");
  body->addNode("Add", {s, a}, {s2});
  body->addOutput(s2);
  body->addOutput(s2);
  setGraph(n, "body", body);
  n->attributes["num_scan_inputs"].value = int64_t{2};
  auto r = run(*n, {RtValue::of(f32({}, {0})), RtValue::of(f32({3}, {1, 2, 3})), RtValue::of(f32({2}, {1, 2}))}, 11);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("sequence length"), std::string::npos) << r.error().message();
  n->attributes["scan_input_axes"].value = std::vector<int64_t>{1, 0};
  EXPECT_FALSE(run(*n, {RtValue::of(f32({}, {0})), RtValue::of(f32({3}, {1, 2, 3})), RtValue::of(f32({3}, {1, 2, 3}))}, 11).ok());
  n->attributes["scan_input_axes"].value = std::vector<int64_t>{0};  // wrong count
  EXPECT_FALSE(run(*n, {RtValue::of(f32({}, {0})), RtValue::of(f32({3}, {1, 2, 3})), RtValue::of(f32({3}, {1, 2, 3}))}, 11).ok());
  n->attributes["num_scan_inputs"].value = int64_t{7};
  EXPECT_FALSE(run(*n, {RtValue::of(f32({}, {0})), RtValue::of(f32({3}, {1, 2, 3})), RtValue::of(f32({3}, {1, 2, 3}))}, 11).ok());
}

TEST(Scan, Opset9EmptySequenceGivesInitialStateAndEmptyOutput) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "Scan", 2, 2);
  auto body = sumBody(g);
  body->outputs()[1]->type = TensorType::of(DType::Float, {2});
  setGraph(n, "body", body);
  n->attributes["num_scan_inputs"].value = int64_t{1};
  auto r = run(*n, {RtValue::of(f32({2}, {5, 6})), RtValue::of(Tensor(DType::Float, {0, 2}))}, 11);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(values<float>((*r)[0].tensor), (std::vector<float>{5, 6}));
  EXPECT_EQ((*r)[1].tensor.shape(), (Shape{0, 2}));
}

TEST(Scan, Opset8BatchWithSequenceLengthsPadsWithZeros) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "Scan", 3, 2);
  setGraph(n, "body", sumBody(g));
  n->attributes["num_scan_inputs"].value = int64_t{1};
  // batch 2, 3 steps of [1]; batch 1 has length 1.
  Tensor x = f32({2, 3, 1}, {1, 2, 3, 10, 20, 30});
  Tensor lens(DType::Int32, {2});
  lens.data<int32_t>()[0] = 3;
  lens.data<int32_t>()[1] = 1;
  auto r = run(*n, {RtValue::of(lens), RtValue::of(f32({2, 1}, {0, 100})), RtValue::of(x)}, 8);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(values<float>((*r)[0].tensor), (std::vector<float>{6, 110}));
  EXPECT_EQ((*r)[1].tensor.shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(values<float>((*r)[1].tensor), (std::vector<float>{1, 3, 6, 110, 0, 0}));
  // Reverse direction: batch 0 sums 3, 2, 1.
  n->attributes["directions"].value = std::vector<int64_t>{1};
  auto rr = run(*n, {std::nullopt, RtValue::of(f32({2, 1}, {0, 0})), RtValue::of(x)}, 8);
  ASSERT_TRUE(rr.ok()) << rr.error().message();
  EXPECT_EQ(values<float>((*rr)[1].tensor), (std::vector<float>{3, 5, 6, 30, 50, 60}));
  // A length beyond the sequence and a batch mismatch are errors.
  lens.data<int32_t>()[1] = 4;
  EXPECT_FALSE(run(*n, {RtValue::of(lens), RtValue::of(f32({2, 1}, {0, 0})), RtValue::of(x)}, 8).ok());
  EXPECT_FALSE(run(*n, {std::nullopt, RtValue::of(f32({3, 1}, {0, 0, 0})), RtValue::of(x)}, 8).ok());
}

// ---- SequenceMap -------------------------------------------------------------------------------

TEST(SequenceMap, MapsSequencesAndBroadcastsTensors) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "SequenceMap", 2, 1);
  auto body = std::make_shared<ir::Graph>("body", &g);
  auto* a = body->addInput("a", {});
  auto* b = body->addInput("b", {});
  auto* c = body->addValue("c");
  body->addNode("Add", {a, b}, {c});
  body->addOutput(c);
  setGraph(n, "body", body);
  auto r = run(*n, {RtValue::seq({f32({1}, {1}), f32({2}, {2, 3})}), RtValue::of(f32({}, {10}))});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].sequence.size(), 2u);
  EXPECT_EQ(values<float>((*r)[0].sequence[1]), (std::vector<float>{12, 13}));
  // Two sequences of different lengths are an error; an empty sequence maps to an empty one.
  EXPECT_FALSE(run(*n, {RtValue::seq({f32({1}, {1})}), RtValue::seq({})}).ok());
  auto e = run(*n, {RtValue::seq({}, DType::Float), RtValue::of(f32({}, {10}))});
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE((*e)[0].sequence.empty());
}

// ---- sequences ---------------------------------------------------------------------------------

TEST(Sequence, EmptyConstructLengthAt) {
  ir::Graph g;
  ir::Node* empty = makeNode(g, "SequenceEmpty", 0, 1);
  empty->attributes["dtype"].value = int64_t{7};
  auto e = run(*empty, {});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)[0].kind, RtValue::Kind::Sequence);
  EXPECT_EQ((*e)[0].elem_type, DType::Int64);
  empty->attributes["dtype"].value = int64_t{99};
  EXPECT_FALSE(run(*empty, {}).ok());

  ir::Node* construct = makeNode(g, "SequenceConstruct", 2, 1);
  auto s = run(*construct, {RtValue::of(f32({1}, {1})), RtValue::of(f32({2, 0}, {}))});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[0].sequence.size(), 2u);
  EXPECT_FALSE(run(*construct, {RtValue::of(f32({1}, {1})), RtValue::of(i64({1}, {1}))}).ok());  // dtypes differ

  ir::Node* length = makeNode(g, "SequenceLength", 1, 1);
  auto l = run(*length, {(*s)[0]});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ((*l)[0].tensor.data<int64_t>()[0], 2);
  EXPECT_FALSE(run(*length, {RtValue::of(f32({1}, {1}))}).ok());  // not a sequence

  ir::Node* at = makeNode(g, "SequenceAt", 2, 1);
  auto last = run(*at, {(*s)[0], RtValue::of(i64({}, {-1}))});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ((*last)[0].tensor.shape(), (Shape{2, 0}));
  Tensor p32(DType::Int32, {});
  p32.data<int32_t>()[0] = 0;
  auto first = run(*at, {(*s)[0], RtValue::of(p32)});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(values<float>((*first)[0].tensor), (std::vector<float>{1}));
  EXPECT_FALSE(run(*at, {(*s)[0], RtValue::of(i64({}, {2}))}).ok());
  EXPECT_FALSE(run(*at, {(*s)[0], RtValue::of(i64({}, {-3}))}).ok());
  EXPECT_FALSE(run(*at, {(*s)[0], RtValue::of(f32({}, {0}))}).ok());
  EXPECT_FALSE(run(*at, {(*s)[0], std::nullopt}).ok());
}

TEST(Sequence, InsertAndErase) {
  ir::Graph g;
  ir::Node* insert = makeNode(g, "SequenceInsert", 3, 1);
  RtValue seq = RtValue::seq({f32({}, {1}), f32({}, {2})}, DType::Float);
  auto front = run(*insert, {seq, RtValue::of(f32({}, {0})), RtValue::of(i64({}, {-2}))});
  ASSERT_TRUE(front.ok()) << front.error().message();
  ASSERT_EQ((*front)[0].sequence.size(), 3u);
  EXPECT_EQ((*front)[0].sequence[0].data<float>()[0], 0.f);
  auto back = run(*insert, {seq, RtValue::of(f32({}, {3})), std::nullopt});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0].sequence[2].data<float>()[0], 3.f);
  auto end = run(*insert, {seq, RtValue::of(f32({}, {3})), RtValue::of(i64({}, {2}))});
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(run(*insert, {seq, RtValue::of(f32({}, {3})), RtValue::of(i64({}, {3}))}).ok());
  EXPECT_FALSE(run(*insert, {seq, RtValue::of(i64({}, {3})), std::nullopt}).ok());  // wrong dtype
  EXPECT_FALSE(run(*insert, {RtValue::seq({}, DType::Int64), RtValue::of(f32({}, {3})), std::nullopt}).ok());

  ir::Node* erase = makeNode(g, "SequenceErase", 2, 1);
  auto e = run(*erase, {seq, std::nullopt});
  ASSERT_TRUE(e.ok());
  ASSERT_EQ((*e)[0].sequence.size(), 1u);
  EXPECT_EQ((*e)[0].sequence[0].data<float>()[0], 1.f);
  auto e0 = run(*erase, {seq, RtValue::of(i64({}, {-2}))});
  ASSERT_TRUE(e0.ok());
  EXPECT_EQ((*e0)[0].sequence[0].data<float>()[0], 2.f);
  EXPECT_FALSE(run(*erase, {seq, RtValue::of(i64({}, {2}))}).ok());
  EXPECT_FALSE(run(*erase, {RtValue::seq({}, DType::Float), std::nullopt}).ok());
}

TEST(Sequence, SplitToSequence) {
  ir::Graph g;
  ir::Node* split = makeNode(g, "SplitToSequence", 2, 1);
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // No split: pieces of 1 along axis -1, kept ([2,1]) or squeezed ([2]).
  split->attributes["axis"].value = int64_t{-1};
  auto keep = run(*split, {RtValue::of(x), std::nullopt});
  ASSERT_TRUE(keep.ok()) << keep.error().message();
  ASSERT_EQ((*keep)[0].sequence.size(), 3u);
  EXPECT_EQ((*keep)[0].sequence[1].shape(), (Shape{2, 1}));
  EXPECT_EQ(values<float>((*keep)[0].sequence[1]), (std::vector<float>{2, 5}));
  split->attributes["keepdims"].value = int64_t{0};
  auto sq = run(*split, {RtValue::of(x), std::nullopt});
  ASSERT_TRUE(sq.ok());
  EXPECT_EQ((*sq)[0].sequence[2].shape(), (Shape{2}));
  EXPECT_EQ(values<float>((*sq)[0].sequence[2]), (std::vector<float>{3, 6}));
  // Scalar split 2 along 3: sizes 2 and 1 (keepdims ignored).
  auto sc = run(*split, {RtValue::of(x), RtValue::of(i64({}, {2}))});
  ASSERT_TRUE(sc.ok());
  ASSERT_EQ((*sc)[0].sequence.size(), 2u);
  EXPECT_EQ((*sc)[0].sequence[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>((*sc)[0].sequence[1]), (std::vector<float>{3, 6}));
  // 1-D split [1, 0, 2], including an empty piece.
  auto v = run(*split, {RtValue::of(x), RtValue::of(i64({3}, {1, 0, 2}))});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)[0].sequence[1].shape(), (Shape{2, 0}));
  EXPECT_EQ(values<float>((*v)[0].sequence[2]), (std::vector<float>{2, 3, 5, 6}));
  // Bad: sizes that do not add up, negative or zero sizes, axis out of range, rank 0.
  EXPECT_FALSE(run(*split, {RtValue::of(x), RtValue::of(i64({2}, {1, 1}))}).ok());
  EXPECT_FALSE(run(*split, {RtValue::of(x), RtValue::of(i64({2}, {4, -1}))}).ok());
  EXPECT_FALSE(run(*split, {RtValue::of(x), RtValue::of(i64({2}, {INT64_MAX, 4}))}).ok());
  EXPECT_FALSE(run(*split, {RtValue::of(x), RtValue::of(i64({}, {0}))}).ok());
  split->attributes["axis"].value = int64_t{2};
  EXPECT_FALSE(run(*split, {RtValue::of(x), std::nullopt}).ok());
  split->attributes["axis"].value = int64_t{0};
  EXPECT_FALSE(run(*split, {RtValue::of(f32({}, {1})), std::nullopt}).ok());
}

TEST(Sequence, SplitToSequenceOfStrings) {
  ir::Graph g;
  ir::Node* split = makeNode(g, "SplitToSequence", 1, 1);
  Tensor s(DType::String, {3});
  s.strings() = {"a", "bc", ""};
  auto r = run(*split, {RtValue::of(s)});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].sequence.size(), 3u);
  EXPECT_EQ((*r)[0].sequence[1].strings(), (std::vector<std::string>{"bc"}));
  ir::Node* concat = makeNode(g, "ConcatFromSequence", 1, 1);
  concat->attributes["axis"].value = int64_t{0};
  auto back = run(*concat, {(*r)[0]});
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ((*back)[0].tensor, s);
}

TEST(Sequence, ConcatFromSequence) {
  ir::Graph g;
  ir::Node* concat = makeNode(g, "ConcatFromSequence", 1, 1);
  RtValue seq = RtValue::seq({f32({1, 2}, {1, 2}), f32({1, 2}, {3, 4})}, DType::Float);
  EXPECT_FALSE(run(*concat, {seq}).ok());  // 'axis' is required
  concat->attributes["axis"].value = int64_t{-1};
  auto c = run(*concat, {seq});
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ((*c)[0].tensor.shape(), (Shape{1, 4}));
  EXPECT_EQ(values<float>((*c)[0].tensor), (std::vector<float>{1, 2, 3, 4}));
  // new_axis: axis may be rank (-1 = the new last axis).
  concat->attributes["new_axis"].value = int64_t{1};
  auto s = run(*concat, {seq});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[0].tensor.shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(values<float>((*s)[0].tensor), (std::vector<float>{1, 3, 2, 4}));
  concat->attributes["axis"].value = int64_t{3};
  EXPECT_FALSE(run(*concat, {seq}).ok());
  // Scalars stack with new_axis; without it they cannot be concatenated.
  RtValue scalars = RtValue::seq({f32({}, {1}), f32({}, {2})}, DType::Float);
  concat->attributes["axis"].value = int64_t{0};
  auto st = run(*concat, {scalars});
  ASSERT_TRUE(st.ok());
  EXPECT_EQ((*st)[0].tensor.shape(), (Shape{2}));
  concat->attributes["new_axis"].value = int64_t{0};
  EXPECT_FALSE(run(*concat, {scalars}).ok());
  // Mismatched shapes, mixed dtypes, and an empty sequence are errors.
  EXPECT_FALSE(run(*concat, {RtValue::seq({f32({1, 2}, {1, 2}), f32({2, 1}, {3, 4})})}).ok());
  EXPECT_FALSE(run(*concat, {RtValue::seq({f32({1}, {1}), i64({1}, {3})})}).ok());
  EXPECT_FALSE(run(*concat, {RtValue::seq({}, DType::Float)}).ok());
  // Empty tensors concatenate.
  auto e = run(*concat, {RtValue::seq({f32({0, 2}, {}), f32({1, 2}, {5, 6})})});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)[0].tensor.shape(), (Shape{1, 2}));
}

// ---- optionals ---------------------------------------------------------------------------------

TEST(Optional, WrapTestAndGet) {
  ir::Graph g;
  ir::Node* opt = makeNode(g, "Optional", 1, 1);
  auto none = run(*opt, {std::nullopt});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)[0].kind, RtValue::Kind::None);
  auto some = run(*opt, {RtValue::of(f32({}, {4}))});
  ASSERT_TRUE(some.ok());
  EXPECT_TRUE((*some)[0].isTensor());

  ir::Node* has = makeNode(g, "OptionalHasElement", 1, 1);
  auto h0 = run(*has, {(*none)[0]});
  auto h1 = run(*has, {RtValue::seq({}, DType::Float)});
  auto h2 = run(*has, {std::nullopt}, 18);
  ASSERT_TRUE(h0.ok() && h1.ok() && h2.ok());
  EXPECT_EQ((*h0)[0].tensor.data<uint8_t>()[0], 0);
  EXPECT_EQ((*h1)[0].tensor.data<uint8_t>()[0], 1);
  EXPECT_EQ((*h2)[0].tensor.data<uint8_t>()[0], 0);

  ir::Node* get = makeNode(g, "OptionalGetElement", 1, 1);
  auto got = run(*get, {(*some)[0]});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(values<float>((*got)[0].tensor), (std::vector<float>{4}));
  auto bad = run(*get, {(*none)[0]});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("empty"), std::string::npos);
}

}  // namespace
}  // namespace poprt::ops
