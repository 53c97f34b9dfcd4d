// float_to_half and fold_casts: what converts and what stays float32 (policy, skip lists,
// overflow-prone paths, parameter inputs), the boundary Casts, constant clamping, --fp16_io, and
// that the converted graph computes what the float32 one did (reference evaluator, fp16 tolerance).
#include <cmath>
#include <limits>

#include "lib/support/dtype_dispatch.h"
#include "passes/fp16_constants.h"
#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;

const std::vector<std::string> kFp16Passes = {"infer_shapes", "float_to_half", "fold_casts", "infer_shapes_final"};

std::vector<double> doublesOf(const Tensor& t) {
  std::vector<double> out;
  EXPECT_TRUE(dispatchNumeric(t.dtype(), [&](auto tag) {
                using T = decltype(tag);
                for (const T& v : t.data<T>()) out.push_back(static_cast<double>(static_cast<float>(v)));
              }).ok());
  return out;
}

struct Fp16Run {
  std::vector<PassReport> reports;
  std::vector<Tensor> before, after;
  int64_t counter(const std::string& pass, const std::string& name) const {
    for (const auto& r : reports)
      if (r.name == pass) {
        auto it = r.stats.counters.find(name);
        return it == r.stats.counters.end() ? 0 : it->second;
      }
    return -1;
  }
  std::vector<std::string> warnings() const {
    std::vector<std::string> w;
    for (const auto& r : reports) w.insert(w.end(), r.stats.warnings.begin(), r.stats.warnings.end());
    return w;
  }
};

// Most graphs here are small vector-op graphs testing the per-op rules, which
// --fp16_keep_vector_regions (tested on its own) would keep float32 whole.
Fp16Options perOpRules() {
  Fp16Options o;
  o.keep_vector_regions = false;
  return o;
}

// Runs float_to_half (and fold_casts) with `options` and evaluates the graph before and after on
// the same inputs (`scale` times the usual [-1, 1) ones); the graph must verify.
Fp16Run runFp16(ir::Model& m, Fp16Options options = perOpRules(), float scale = 1) {
  options.enabled = true;
  Fp16Run run;
  auto inputs = randomInputs(*m.graph);
  for (auto& [name, t] : inputs)
    for (float& x : t.data<float>()) x *= scale;
  PipelineOptions shapes;
  shapes.passes = {"infer_shapes"};
  EXPECT_TRUE(runPipeline(m, shapes).ok());
  auto before = ops::evaluateGraph(*m.graph, inputs, opsetsOf(m));
  EXPECT_TRUE(before.ok()) << before.error().message();
  if (before.ok()) run.before = *before;
  PipelineOptions p;
  p.passes = kFp16Passes;
  p.fp16 = options;
  auto reports = runPipeline(m, p);
  EXPECT_TRUE(reports.ok()) << (reports.ok() ? "" : reports.error().message());
  if (reports.ok()) run.reports = *reports;
  EXPECT_TRUE(ir::verify(*m.graph).ok());
  // --fp16_io inputs are fed rounded to float16.
  for (auto& [name, t] : inputs) {
    const ir::Value* v = m.graph->findLocalValue(name);
    if (v && v->type.dtype == DType::Float16) {
      Tensor h(DType::Float16, t.shape());
      for (size_t i = 0; i < t.data<float>().size(); ++i) h.data<Half>()[i] = Half(t.data<float>()[i]);
      t = std::move(h);
    }
  }
  auto after = ops::evaluateGraph(*m.graph, inputs, opsetsOf(m));
  EXPECT_TRUE(after.ok()) << after.error().message();
  if (after.ok()) run.after = *after;
  return run;
}

// Every output within fp16 tolerance of the float32 result (and finite where it is).
void expectClose(const Fp16Run& r, double rtol = 2e-2, double atol = 2e-2) {
  ASSERT_EQ(r.before.size(), r.after.size());
  for (size_t o = 0; o < r.before.size(); ++o) {
    auto a = doublesOf(r.before[o]);
    auto b = doublesOf(r.after[o]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(std::isfinite(b[i]) || !std::isfinite(a[i])) << "output " << o << " element " << i << ": " << b[i];
      ASSERT_NEAR(a[i], b[i], atol + rtol * std::fabs(a[i])) << "output " << o << " element " << i;
    }
  }
}

const ir::Node* nodeNamed(const ir::Graph& g, const std::string& prefix_of_name, const std::string& op) {
  for (const auto& n : g.nodes())
    if (n->opType() == op && n->name().rfind(prefix_of_name, 0) == 0) return n.get();
  return nullptr;
}

DType inputDtype(const ir::Node* n, size_t i) { return n && n->input(i) ? n->input(i)->type.dtype : DType::Undefined; }
// The dtype node `n` makes (Undefined when there is no such node).
DType outputDtype(const ir::Node* n) { return n && n->output(0) ? n->output(0)->type.dtype : DType::Undefined; }

// No Cast reads another Cast.
void expectNoCastChains(const ir::Graph& g) {
  for (const auto& n : g.nodes())
    if (n->opType() == "Cast") {
      const ir::Node* p = n->input(0)->producer();
      EXPECT_FALSE(p && p->opType() == "Cast") << n->describe() << " reads " << p->describe();
    }
}

// x[1,8] -> MatMul(w) -> Add(b) -> Relu -> MatMul(w2) -> y
ir::Model mlp() {
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {1, 8});
  ir::Value* h = b.op("Relu", {b.op("Add", {b.op("MatMul", {x, b.weight({8, 16}, 1)}), b.weight({16}, 2)})});
  b.output(b.op("MatMul", {h, b.weight({16, 4}, 3)}));
  return m;
}

TEST(FloatToHalf, ConvertsWeightsAndActivationsAndKeepsModelIoFloat32) {
  ir::Model m = mlp();
  auto r = runFp16(m);
  expectClose(r);
  const ir::Graph& g = *m.graph;
  EXPECT_EQ(g.inputs()[0]->type.dtype, DType::Float);
  EXPECT_EQ(g.outputs()[0]->type.dtype, DType::Float);
  EXPECT_EQ(g.outputs()[0]->name(), "MatMul_out_1");  // the output keeps its name
  for (const ir::Value* w : g.initializers()) EXPECT_EQ(w->type.dtype, DType::Float16) << w->name();
  for (const auto& n : g.nodes())
    if (n->opType() != "Cast") { EXPECT_EQ(n->output(0)->type.dtype, DType::Float16) << n->describe(); }
  EXPECT_EQ(countOps(g, "Cast"), 2);  // one at the input, one at the output
  EXPECT_EQ(r.counter("float_to_half", "nodes_fp16"), 4);
  EXPECT_EQ(r.counter("float_to_half", "weight_bytes_fp32"), 2 * r.counter("float_to_half", "weight_bytes_fp16"));
  EXPECT_EQ(r.counter("fold_casts", "casts_remaining"), 2);
  EXPECT_EQ(r.counter("fold_casts", "cast_chains_remaining"), 0);
  // The weights keep their names: a constant only fp16 ops read converts in place.
  EXPECT_NE(g.findLocalValue("w"), nullptr);
}

// x -> MatMul -> Relu -> y is one region with a matrix op: float16. x -> Relu -> Add -> y has only
// vector ops between float32 values: its Casts would cost more than float16 saves, so it stays
// float32 and says why; --fp16_keep_vector_regions=false converts it.
TEST(FloatToHalf, RegionsOfVectorOpsOnlyStayFloat32) {
  auto vector_only = [] {
    ir::Model m = emptyModel();
    Builder b(m);
    b.output(b.op("Add", {b.op("Relu", {b.input("x", {1, 8})}), b.weight({8}, 1)}));
    return m;
  };
  ir::Model m = vector_only();
  Fp16Options o;
  auto r = runFp16(m, o);
  expectClose(r);
  EXPECT_EQ(outputDtype(nodeNamed(*m.graph, "", "Relu")), DType::Float);
  EXPECT_EQ(outputDtype(nodeNamed(*m.graph, "", "Add")), DType::Float);
  EXPECT_EQ(r.counter("float_to_half", "kept_vector_region"), 2);
  EXPECT_EQ(r.counter("fold_casts", "casts_remaining"), 0);

  ir::Model converted = vector_only();
  auto r2 = runFp16(converted, perOpRules());
  EXPECT_EQ(outputDtype(nodeNamed(*converted.graph, "", "Add")), DType::Float16);
  EXPECT_EQ(r2.counter("float_to_half", "kept_vector_region"), 0);

  ir::Model with_matmul = mlp();
  auto r3 = runFp16(with_matmul, o);
  expectClose(r3);
  EXPECT_EQ(outputDtype(nodeNamed(*with_matmul.graph, "", "Relu")), DType::Float16);
  EXPECT_EQ(r3.counter("float_to_half", "kept_vector_region"), 0);
}

// Two MatMuls by equal weights, the second kept float32 by --fp16_skip_node_names: after
// common_subexpression_elimination it reads the float16 weight through a Cast (the PopEF stores
// float32 weights rounded to float16 anyway), so the model holds one weight.
TEST(FloatToHalf, AFloat32WeightEqualToAFloat16OneIsReadThroughACast) {
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* h = b.op("MatMul", {b.input("x", {1, 8}), b.weight({8, 8}, 7)});
  b.output(b.op("MatMul", {h, b.weight({8, 8}, 7)}));
  auto inputs = randomInputs(*m.graph);
  PipelineOptions shapes;
  shapes.passes = {"infer_shapes"};
  ASSERT_TRUE(runPipeline(m, shapes).ok());
  auto before = ops::evaluateGraph(*m.graph, inputs, opsetsOf(m));
  ASSERT_TRUE(before.ok()) << before.error().message();
  PipelineOptions p;
  p.passes = {"infer_shapes",          "float_to_half",     "fold_casts", "common_subexpression_elimination",
              "dead_code_elimination", "infer_shapes_final"};
  p.fp16 = perOpRules();
  p.fp16.enabled = true;
  p.fp16.skip_node_names = {"n1_MatMul"};
  auto reports = runPipeline(m, p);
  ASSERT_TRUE(reports.ok()) << reports.error().message();
  Fp16Run r{*reports, {}, {}};
  EXPECT_EQ(r.counter("common_subexpression_elimination", "initializers_shared_as_fp16"), 1);
  ASSERT_EQ(m.graph->initializers().size(), 1u);
  EXPECT_EQ(m.graph->initializers()[0]->type.dtype, DType::Float16);
  EXPECT_EQ(outputDtype(nodeNamed(*m.graph, "n1_MatMul", "MatMul")), DType::Float);
  auto after = ops::evaluateGraph(*m.graph, inputs, opsetsOf(m));
  ASSERT_TRUE(after.ok()) << after.error().message();
  r.before = *before;
  r.after = *after;
  expectClose(r);
}

TEST(FloatToHalf, Fp16IoMakesModelInputsAndOutputsFloat16) {
  ir::Model m = mlp();
  Fp16Options o = perOpRules();
  o.io = true;
  auto r = runFp16(m, o);
  expectClose(r);
  EXPECT_EQ(m.graph->inputs()[0]->type.dtype, DType::Float16);
  EXPECT_EQ(m.graph->outputs()[0]->type.dtype, DType::Float16);
  EXPECT_EQ(countOps(*m.graph, "Cast"), 0);
  EXPECT_EQ(r.counter("float_to_half", "io_converted"), 2);
}

TEST(FloatToHalf, KeepFp32PolicyOpsStayFloat32WithOneCastEachWay) {
  // x -> MatMul -> Abs -> Log (KeepFp32) -> MatMul -> y, and Abs also feeds a second Log.
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {2, 8});
  ir::Value* a = b.op("Abs", {b.op("MatMul", {x, b.weight({8, 8}, 4)})});
  ir::Value* l = b.op("Log", {b.op("Add", {a, b.constant(0.5f)})});
  b.output(b.op("MatMul", {l, b.weight({8, 3}, 5)}));
  b.output(b.op("Log", {b.op("Add", {a, b.constant(1.5f)})}));
  auto r = runFp16(m);
  expectClose(r);
  const ir::Graph& g = *m.graph;
  for (const auto& n : g.nodes())
    if (n->opType() == "Log") {
      EXPECT_EQ(inputDtype(n.get(), 0), DType::Float);
      EXPECT_EQ(n->output(0)->type.dtype, DType::Float);
    }
  EXPECT_EQ(r.counter("float_to_half", "kept_policy"), 2);
  expectNoCastChains(g);
}

TEST(FloatToHalf, SkipListsKeepOpTypesAndNamedNodesFloat32) {
  ir::Model m = mlp();
  Fp16Options o = perOpRules();
  o.skip_op_types = {"Relu"};
  o.skip_node_names = {"n0_MatMul", "no_such_node"};
  auto r = runFp16(m, o);
  expectClose(r);
  const ir::Graph& g = *m.graph;
  EXPECT_EQ(outputDtype(nodeNamed(g, "n0_MatMul", "MatMul")), DType::Float);
  EXPECT_EQ(outputDtype(findNode(g, "Relu")), DType::Float);
  EXPECT_EQ(outputDtype(nodeNamed(g, "n1_Add", "Add")), DType::Float16);
  EXPECT_EQ(r.counter("float_to_half", "kept_skip_op_type"), 1);
  EXPECT_EQ(r.counter("float_to_half", "kept_skip_node_name"), 1);
  // The name that matches nothing is reported, not ignored.
  auto w = r.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("no_such_node"), std::string::npos);
  expectNoCastChains(g);
}

TEST(FloatToHalf, SkippingConvAlsoKeepsFusedConvActFloat32) {
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {1, 2, 5, 5});
  ir::Value* c = b.op("Relu", {b.op("Conv", {x, b.weight({3, 2, 3, 3}, 15)}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
  b.output(b.op("Conv", {c, b.weight({2, 3, 1, 1}, 16)}));
  PipelineOptions p;
  p.passes = {"infer_shapes", "fuse_conv_activation", "float_to_half", "fold_casts", "infer_shapes_final"};
  p.fp16.enabled = true;
  p.fp16.skip_op_types = {"Conv"};
  auto r = runPipeline(m, p);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ir::Node* fused = findNode(*m.graph, "ConvAct");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(outputDtype(fused), DType::Float);
  EXPECT_EQ(outputDtype(findNode(*m.graph, "Conv")), DType::Float);
  EXPECT_EQ(countOps(*m.graph, "Cast"), 0);  // nothing converted, nothing cast
}

TEST(FloatToHalf, UnknownSkipOpTypeIsAnError) {
  EXPECT_TRUE(checkSkipOpTypes({"Softmax", "MatMul"}).ok());
  auto st = checkSkipOpTypes({"Softmax", "softmax"});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("'softmax'"), std::string::npos);
}

TEST(FloatToHalf, RunsOnlyWithPrecisionFp16) {
  ir::Model m = mlp();
  PipelineOptions p;
  p.passes = {"float_to_half"};
  auto r = runPipeline(m, p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("--precision fp16"), std::string::npos);
  // And the default pipeline leaves it out.
  auto names = resolvePipeline(PipelineOptions{});
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(std::count(names->begin(), names->end(), "float_to_half"), 0);
  PipelineOptions fp16;
  fp16.fp16.enabled = true;
  auto fp16_names = resolvePipeline(fp16);
  ASSERT_TRUE(fp16_names.ok());
  EXPECT_EQ(std::count(fp16_names->begin(), fp16_names->end(), "float_to_half"), 1);
}

// LayerNorm written out, on inputs scaled by 1000: (x - mean)^2 reaches 4e6, far beyond 65504.
ir::Model decomposedLayerNorm() {
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {2, 64});
  ir::Value* axes = b.ints({-1});
  ir::Value* mean = b.op("ReduceMean", {x}, {{"axes", std::vector<int64_t>{-1}}});
  ir::Value* d = b.op("Sub", {x, mean});
  ir::Value* var = b.op("ReduceMean", {b.op("Pow", {d, b.constant(2.f)})}, {{"axes", std::vector<int64_t>{-1}}});
  ir::Value* std_dev = b.op("Sqrt", {b.op("Add", {var, b.constant(1e-5f)})});
  b.output(b.op("Mul", {b.op("Div", {d, std_dev}), b.weight({64}, 7)}));
  (void)axes;
  return m;
}

TEST(FloatToHalf, OverflowingVarianceStaysFloat32) {
  ir::Model m = decomposedLayerNorm();
  auto r = runFp16(m, perOpRules(), /*scale=*/1000);
  expectClose(r);
  const ir::Graph& g = *m.graph;
  // Pow, the second ReduceMean, Add and Sqrt (which brings the values back) stay float32; Sub, Div
  // and Mul run in fp16.
  EXPECT_EQ(r.counter("float_to_half", "kept_overflow_pattern"), 4);
  EXPECT_EQ(outputDtype(findNode(g, "Sqrt")), DType::Float);
  EXPECT_EQ(outputDtype(findNode(g, "Div")), DType::Float16);
  EXPECT_EQ(outputDtype(findNode(g, "Sub")), DType::Float16);
  expectNoCastChains(g);
}

TEST(FloatToHalf, WithoutOverflowPatternsTheVarianceOverflows) {
  // The same graph with --enable_avoid_overflow_patterns=false: the squares overflow float16 and
  // the result is wrong — the case the patterns exist for (the test proves it is a real one).
  ir::Model m = decomposedLayerNorm();
  Fp16Options o = perOpRules();
  o.avoid_overflow_patterns = false;
  auto r = runFp16(m, o, /*scale=*/1000);
  ASSERT_EQ(r.after.size(), 1u);
  auto a = doublesOf(r.before[0]);
  auto b = doublesOf(r.after[0]);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::isfinite(b[i]) ? std::fabs(a[i] - b[i]) : 1e9);
  EXPECT_GT(worst, 0.1);
  EXPECT_EQ(r.counter("float_to_half", "kept_overflow_pattern"), 0);
}

TEST(FloatToHalf, SoftmaxWithoutMaxSubtractionAndPowerSpectrumStayFloat32) {
  // exp(x) / sum(exp(x)) on inputs up to 15 (exp(15) = 3.3e6), and a power spectrum
  // log(re^2 + im^2 ...) with |re| up to 1000.
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {2, 16});
  ir::Value* e = b.op("Exp", {b.op("Mul", {x, b.constant(15.f)})});
  ir::Value* s = b.op("ReduceSum", {e, b.ints({-1})}, {{"keepdims", int64_t{1}}});
  b.output(b.op("MatMul", {b.op("Div", {e, s}), b.weight({16, 4}, 8)}));
  ir::Value* re = b.op("MatMul", {x, b.weight({16, 16}, 9, 1000)});
  ir::Value* power = b.op("Add", {b.op("Pow", {re, b.constant(2.f)}), b.op("Mul", {re, re})});
  b.output(b.op("Log", {b.op("MatMul", {power, b.constant(0.01f, {16, 4})})}));
  auto r = runFp16(m);
  expectClose(r, 2e-2, 5e-2);
  const ir::Graph& g = *m.graph;
  EXPECT_EQ(outputDtype(findNode(g, "ReduceSum")), DType::Float);
  EXPECT_EQ(outputDtype(findNode(g, "Div")), DType::Float);  // computed in fp32, cast after
  EXPECT_EQ(outputDtype(nodeNamed(g, "n4_MatMul", "MatMul")), DType::Float16);
  EXPECT_EQ(outputDtype(nodeNamed(g, "n5_MatMul", "MatMul")), DType::Float16);  // |re| <= ~4000
  EXPECT_EQ(outputDtype(nodeNamed(g, "n9_MatMul", "MatMul")), DType::Float);    // reads the power
  expectNoCastChains(g);
}

TEST(FloatToHalf, ConstantsBeyondTheRangeAreClampedWithAWarning) {
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {4});
  ir::Value* big = b.constant(1e6f, {4});
  b.output(b.op("Min", {b.op("Add", {x, big}), b.constant(3.f)}));
  auto r = runFp16(m);
  expectClose(r);
  EXPECT_EQ(r.counter("float_to_half", "values_clamped"), 4);
  EXPECT_EQ(r.counter("float_to_half", "constants_clamped"), 1);
  auto w = r.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("'" + big->name() + "'"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("65504"), std::string::npos) << w[0];
}

TEST(Fp16Constants, ClampsFiniteValuesKeepsInfinitiesAndCountsFlushes) {
  Tensor t(DType::Float, {6});
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {1e6f, -7e4f, -inf, 1e-9f, 0.f, 1.5f};
  std::copy(v.begin(), v.end(), t.data<float>().begin());
  HalfConstant h = toHalfConstant(t);
  auto got = doublesOf(h.tensor);
  EXPECT_EQ(got, (std::vector<double>{65504, -65504, -inf, 0, 0, 1.5}));
  EXPECT_EQ(h.clamped, 2);
  EXPECT_EQ(h.largest_clamped, 1e6f);
  EXPECT_EQ(h.nonzero, 5);
  EXPECT_EQ(h.flushed, 1);
}

TEST(FloatToHalf, AnEpsilonThatVanishesIsReported) {
  // x / (|x| + 1e-9): in float16 the epsilon is 0; the warning names it and the node to skip.
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {4});
  ir::Value* eps = b.constant(1e-9f);
  b.output(b.op("Mul", {b.op("Div", {x, b.op("Add", {b.op("Abs", {x}), eps})}), b.constant(2.f)}));
  auto r = runFp16(m);
  expectClose(r);
  auto w = r.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("'" + eps->name() + "'"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("--fp16_skip_node_names n1_Add"), std::string::npos) << w[0];
  EXPECT_EQ(r.counter("float_to_half", "values_flushed_to_zero"), 1);
}

TEST(FloatToHalf, ParameterInputsKeepTheirTypeAndDataInputsFollow) {
  // Resize's scales stay float32; Clip's bounds follow the data to float16; a shape input stays int64.
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("x", {1, 2, 3, 3});
  Tensor scales(DType::Float, {4});
  for (float& s : scales.data<float>()) s = 1;
  scales.data<float>()[2] = scales.data<float>()[3] = 2;
  ir::Value* sc = m.graph->addInitializer("scales", std::move(scales));
  ir::Value* roi = m.graph->addInitializer("roi", Tensor(DType::Float, {0}));
  ir::Value* y = b.op("Resize", {b.op("Relu", {x}), roi, sc}, {{"mode", std::string("nearest")}});
  ir::Value* c = b.op("Clip", {y, b.constant(-0.5f), b.constant(0.5f)});
  b.output(b.op("Reshape", {b.op("Concat", {c, c}, {{"axis", int64_t{0}}}), b.ints({1, -1})}));
  auto r = runFp16(m);
  expectClose(r);
  const ir::Graph& g = *m.graph;
  const ir::Node* resize = findNode(g, "Resize");
  EXPECT_EQ(inputDtype(resize, 0), DType::Float16);
  EXPECT_EQ(inputDtype(resize, 2), DType::Float);
  const ir::Node* clip = findNode(g, "Clip");
  EXPECT_EQ(inputDtype(clip, 1), DType::Float16);
  EXPECT_EQ(inputDtype(clip, 2), DType::Float16);
  EXPECT_EQ(inputDtype(findNode(g, "Reshape"), 1), DType::Int64);
}

TEST(FloatToHalf, BatchNormParametersFollowTheirInputFromOpset15) {
  // Opset 15 lets them stay float32 (T1, T2); the device runs one dtype per node.
  ir::Model m = emptyModel(15);
  Builder b(m);
  ir::Value* x = b.input("x", {1, 3, 4, 4});
  auto param = [&](const std::string& name, std::vector<float> values) {
    Tensor t(DType::Float, {3});
    std::copy(values.begin(), values.end(), t.data<float>().begin());
    return m.graph->addInitializer(name, std::move(t));
  };
  ir::Value* y = b.op("BatchNormalization", {b.op("Relu", {x}), param("scale", {0.5f, 2, -1}), param("bias", {0, 1, -2}),
                                             param("mean", {0.25f, -0.5f, 1}), param("var", {1, 0.5f, 4})});
  b.output(b.op("Relu", {y}));
  auto r = runFp16(m);
  expectClose(r);
  const ir::Node* bn = findNode(*m.graph, "BatchNormalization");
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(inputDtype(bn, i), DType::Float16) << "input " << i;
}

TEST(FloatToHalf, OutputsTypedByAttributesOrUnclearSchemasStayFloat32) {
  // EyeLike's output takes its input's dtype when `dtype` is absent, but its schema gives the
  // output a type parameter of its own: converting the input would change the output's type.
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {3, 3});
  ir::Value* h = b.op("MatMul", {x, b.weight({3, 3}, 14)});
  b.output(b.op("Add", {b.op("EyeLike", {h}), h}));
  auto r = runFp16(m);  // infer_shapes_final would refuse a mismatch
  expectClose(r);
  EXPECT_EQ(inputDtype(findNode(*m.graph, "EyeLike"), 0), DType::Float);
  EXPECT_EQ(r.counter("float_to_half", "kept_output_type"), 1);
}

// y = If(cond, then: (h + c1) * h, else: (h - c2) * h) with h = MatMul(x, w); the bodies read h
// from the outer graph. Returns the model and the cond/x inputs to feed.
struct IfModel {
  ir::Model m = emptyModel();
  ir::Value* h = nullptr;
  ir::Value* out = nullptr;
  std::vector<ir::Graph*> bodies;
  std::vector<std::pair<std::string, Tensor>> inputs;
};

IfModel ifModel() {
  IfModel im;
  ir::Model& m = im.m;
  Builder b(m);
  ir::Value* x = b.input("x", {2, 4});
  ir::Value* cond = m.graph->addInput("cond", ir::TensorType::of(DType::Bool, {}));
  im.h = b.op("MatMul", {x, b.weight({4, 4}, 11)});
  im.out = m.graph->addValue("y", f32({2, 4}));
  ir::Node* iff = m.graph->addNode("If", {cond}, {im.out}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto body = std::make_shared<ir::Graph>(branch, m.graph.get());
    // The then branch reads an initializer of its own, the else branch a Constant node's value.
    ir::Value* one = nullptr;
    if (branch[0] == 't') {
      one = body->addInitializer(std::string(branch) + "_one", randomTensor({1}, 12));
    } else {
      one = body->addValue(std::string(branch) + "_one", f32({1}));
      ir::Node* c = body->addNode("Constant", {}, {one}, "else_constant");
      c->attributes["value"].value = randomTensor({1}, 12);
    }
    ir::Value* r1 = body->addValue(std::string(branch) + "_r1", f32({2, 4}));
    ir::Value* r = body->addValue(std::string(branch) + "_r", f32({2, 4}));
    body->addNode(branch[0] == 't' ? "Add" : "Sub", {im.h, one}, {r1}, std::string(branch) + "_op");
    body->addNode("Mul", {r1, im.h}, {r}, std::string(branch) + "_mul");
    body->addOutput(r);
    iff->attributes[branch].value = body;
    im.bodies.push_back(body.get());
  }
  m.graph->addOutput(im.out);
  PipelineOptions shapes;
  shapes.passes = {"infer_shapes"};
  EXPECT_TRUE(runPipeline(m, shapes).ok());
  Tensor c(DType::Bool, {});
  c.data<bool>()[0] = true;
  im.inputs = {{"x", randomTensor({2, 4}, 13)}, {"cond", c}};
  return im;
}

// Converts `im` with `o` and checks the result against the float32 one; returns the reports.
std::vector<PassReport> convertIf(IfModel& im, Fp16Options o = perOpRules()) {
  auto before = ops::evaluateGraph(*im.m.graph, im.inputs, opsetsOf(im.m));
  EXPECT_TRUE(before.ok()) << before.error().message();
  PipelineOptions p;
  p.passes = kFp16Passes;
  p.fp16 = o;
  p.fp16.enabled = true;
  auto reports = runPipeline(im.m, p);
  EXPECT_TRUE(reports.ok()) << reports.error().message();
  EXPECT_TRUE(ir::verify(*im.m.graph).ok());
  auto after = ops::evaluateGraph(*im.m.graph, im.inputs, opsetsOf(im.m));
  EXPECT_TRUE(after.ok()) << after.error().message();
  if (before.ok() && after.ok()) {
    auto a = doublesOf((*before)[0]);
    auto bb = doublesOf((*after)[0]);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], bb[i], 1e-2 + 1e-2 * std::fabs(a[i]));
  }
  return reports.ok() ? *reports : std::vector<PassReport>{};
}

TEST(FloatToHalf, TheOpFinishingAFloat32OutputComputesInFloat32) {
  // sigmoid(-6 (x + 2)) for x in [-1, 1) lies in [1.5e-8, 2.5e-3]: float16 would store most of it
  // as subnormals with a digit or two, and flush what is below 3e-8 to zero. The Sigmoid (and the Reshape after it) run in
  // float32 instead, behind the same one Cast, and keep a few percent of relative error at most (from the fp16 rounding of its
  // input).
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {4, 8});
  ir::Value* h = b.op("Mul", {b.op("Add", {x, b.constant(2.f)}), b.constant(-6.f)});
  b.output(b.op("Reshape", {b.op("Sigmoid", {h}), b.ints({32})}));
  auto r = runFp16(m);
  expectClose(r);
  const ir::Graph& g = *m.graph;
  EXPECT_EQ(inputDtype(findNode(g, "Sigmoid"), 0), DType::Float);
  EXPECT_EQ(outputDtype(findNode(g, "Mul")), DType::Float16);
  EXPECT_EQ(countOps(g, "Cast"), 2);
  EXPECT_EQ(r.counter("float_to_half", "kept_for_output_precision"), 1);
  auto a = doublesOf(r.before[0]);
  auto bb = doublesOf(r.after[0]);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(bb[i], a[i], 0.05 * a[i]) << "element " << i;
}

TEST(FloatToHalf, SubgraphBodiesConvertAndCastTheirResultsBack) {
  IfModel im = ifModel();
  convertIf(im);
  EXPECT_EQ(im.h->type.dtype, DType::Float16);
  EXPECT_EQ(im.out->type.dtype, DType::Float);
  for (ir::Graph* body : im.bodies) {
    // The branch reads h (fp16) directly, computes in fp16 and casts its result back to float32.
    const ir::Node* op = findNode(*body, body->name()[0] == 't' ? "Add" : "Sub");
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(inputDtype(op, 0), DType::Float16);
    EXPECT_EQ(inputDtype(op, 1), DType::Float16);  // its constant converted in the body
    EXPECT_EQ(outputDtype(op), DType::Float16);
    EXPECT_EQ(body->outputs()[0]->type.dtype, DType::Float);
    EXPECT_EQ(countOps(*body, "Cast"), 1);
  }
  const ir::Node* c = findNode(*im.bodies[1], "Constant");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(std::get<Tensor>(c->attributes.at("value").value).dtype(), DType::Float16);  // converted in place
}

TEST(FloatToHalf, SkippingAControlFlowNodeKeepsItsBodiesFloat32) {
  IfModel im = ifModel();
  Fp16Options o = perOpRules();
  o.skip_node_names = {"if"};
  auto reports = convertIf(im, o);
  for (ir::Graph* body : im.bodies) {
    const ir::Node* op = findNode(*body, body->name()[0] == 't' ? "Add" : "Sub");
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(inputDtype(op, 0), DType::Float);  // h through a Cast to float32 (in the outer graph)
    EXPECT_EQ(outputDtype(op), DType::Float);
  }
  EXPECT_EQ(countOps(*im.m.graph, "Cast"), 2);  // x to fp16, h back to fp32
  int64_t kept = 0;
  for (const auto& r : reports)
    if (r.name == "float_to_half") kept = r.stats.counters.count("kept_skip_body") ? r.stats.counters.at("kept_skip_body") : 0;
  EXPECT_EQ(kept, 4);
}

// ---- fold_casts ---------------------------------------------------------------------------------

ir::Value* cast(Builder& b, ir::Value* v, DType to) { return b.op("Cast", {v}, {{"to", static_cast<int64_t>(to)}}); }

std::vector<PassReport> runFoldCasts(ir::Model& m) {
  PipelineOptions p;
  p.passes = {"infer_shapes", "fold_casts", "infer_shapes_final"};
  auto r = runPassesChecked(m, p.passes, 0);
  return r;
}

int64_t foldCounter(const std::vector<PassReport>& reports, const std::string& name) {
  for (const auto& r : reports)
    if (r.name == "fold_casts") {
      auto it = r.stats.counters.find(name);
      return it == r.stats.counters.end() ? 0 : it->second;
    }
  return -1;
}

TEST(FoldCasts, RemovesExactRoundTripsOnly) {
  // f32 -> f16 -> f32 rounds: it stays. f16 -> f32 -> f16 is an identity: it goes.
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {8});
  ir::Value* h = cast(b, x, DType::Float16);
  ir::Value* rounded = cast(b, h, DType::Float);                        // f32 -> f16 -> f32: kept (a chain that rounds)
  ir::Value* back = cast(b, cast(b, h, DType::Float), DType::Float16);  // f16 -> f32 -> f16: identity
  b.output(b.op("Add", {rounded, cast(b, b.op("Neg", {back}), DType::Float)}));
  auto r = runFoldCasts(m);
  EXPECT_EQ(foldCounter(r, "round_trips_removed"), 1);
  EXPECT_EQ(foldCounter(r, "cast_chains_remaining"), 1);  // the rounding one, reported
  const ir::Node* neg = findNode(*m.graph, "Neg");
  ASSERT_NE(neg, nullptr);
  EXPECT_EQ(neg->input(0), h);
}

TEST(FoldCasts, ComposesIntegerAndWideningChains) {
  // int32 -> f32 -> f16 is int32 -> f16; f16 -> f32 -> int64 is f16 -> int64. (Negs in between keep
  // the other Casts apart: int32 -> f16 -> f32, say, would not compose.)
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {8});
  ir::Value* i = b.op("Neg", {cast(b, b.op("Mul", {x, b.constant(100.f)}), DType::Int32)});
  ir::Value* h = b.op("Neg", {cast(b, cast(b, i, DType::Float), DType::Float16)});
  ir::Value* back = b.op("Neg", {cast(b, cast(b, h, DType::Float), DType::Int64)});
  b.output(cast(b, back, DType::Float));
  auto r = runFoldCasts(m);
  EXPECT_EQ(foldCounter(r, "chains_folded"), 2);
  EXPECT_EQ(foldCounter(r, "cast_chains_remaining"), 0);
  EXPECT_EQ(foldCounter(r, "casts_remaining"), 4);
  expectNoCastChains(*m.graph);
}

TEST(FoldCasts, LeavesChainsThatRound) {
  // int32 -> f16 -> f32 is not int32 -> f32 (f16 rounds 2049); f32 -> int32 -> f16 truncates.
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {8});
  ir::Value* i = cast(b, b.op("Mul", {x, b.constant(3000.f)}), DType::Int32);
  b.output(cast(b, cast(b, i, DType::Float16), DType::Float));
  auto r = runFoldCasts(m);
  EXPECT_EQ(foldCounter(r, "chains_folded"), 0);
  EXPECT_EQ(foldCounter(r, "cast_chains_remaining"), 2);
}

TEST(FoldCasts, MovesCastsThroughLayoutOpsSoTheyMeet) {
  // f16 -> Cast f32 -> Reshape -> Transpose -> Cast f16: the layout ops move to fp16 and the two
  // Casts cancel; a narrowing Cast after a Transpose of a float32 input moves above it.
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {2, 3, 4});
  ir::Value* h = b.op("Neg", {cast(b, x, DType::Float16)});
  ir::Value* f = cast(b, h, DType::Float);
  ir::Value* t = b.op("Transpose", {b.op("Reshape", {f, b.ints({6, 4})})}, {{"perm", std::vector<int64_t>{1, 0}}});
  ir::Value* y = b.op("Abs", {cast(b, t, DType::Float16)});
  b.output(cast(b, y, DType::Float));
  auto r = runFoldCasts(m);
  EXPECT_GE(foldCounter(r, "pushed_through_layout"), 1);
  EXPECT_EQ(foldCounter(r, "casts_remaining"), 2);  // the input's and the output's
  EXPECT_EQ(outputDtype(findNode(*m.graph, "Transpose")), DType::Float16);
  expectNoCastChains(*m.graph);

  ir::Model m2 = emptyModel();
  Builder b2(m2);
  ir::Value* x2 = b2.input("x", {2, 3});
  ir::Value* t2 = b2.op("Transpose", {x2}, {{"perm", std::vector<int64_t>{1, 0}}});
  b2.output(cast(b2, b2.op("Neg", {cast(b2, t2, DType::Float16)}), DType::Float));
  auto r2 = runFoldCasts(m2);
  EXPECT_EQ(foldCounter(r2, "pushed_through_layout"), 1);
  EXPECT_EQ(inputDtype(findNode(*m2.graph, "Transpose"), 0), DType::Float16);
}

TEST(FoldCasts, MergesDuplicateCastsAndKeepsModelOutputs) {
  ir::Model m = emptyModel();
  Builder b(m);
  ir::Value* x = b.input("x", {4});
  ir::Value* a = cast(b, x, DType::Float16);
  ir::Value* c = cast(b, x, DType::Float16);
  ir::Value* y = cast(b, b.op("Add", {a, c}), DType::Float);
  b.output(y);
  auto r = runFoldCasts(m);
  EXPECT_EQ(foldCounter(r, "duplicates_merged"), 1);
  EXPECT_EQ(m.graph->outputs()[0], y);
  EXPECT_EQ(foldCounter(r, "casts_remaining"), 2);
}

}  // namespace
}  // namespace poprt::passes
