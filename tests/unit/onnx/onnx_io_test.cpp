#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "lib/onnx/onnx_io.h"
#include "passes/input_shapes.h"

namespace poprt::onnxio {
namespace {

const std::filesystem::path kNodeData = "/usr/share/libonnx-testdata/data/node";

onnx::ModelProto twoNodeModel(const std::string& op1, const std::string& op2, int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* d0 = in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();
  d0->set_dim_param("batch");
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  auto* n1 = g->add_node();
  n1->set_op_type(op1);
  n1->set_name("first");
  n1->add_input("x");
  n1->add_output("a");
  auto* n2 = g->add_node();
  n2->set_op_type(op2);
  n2->set_name("second");
  n2->add_input("a");
  n2->add_output("y");
  g->add_output()->set_name("y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("m");
  return m;
}

TEST(Import, BackendModelWithInferredShapes) {
  auto model = importModel(kNodeData / "test_add" / "model.onnx");
  ASSERT_TRUE(model.ok()) << model.error().message();
  const ir::Graph& g = *model->graph;
  ASSERT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.nodes().front()->opType(), "Add");
  EXPECT_EQ(g.outputs()[0]->type.toString(), "float32[3,4,5]");
  EXPECT_TRUE(ir::verify(g).ok());
}

TEST(Import, ReportsAllUnknownOpsAtOnce) {
  auto proto = twoNodeModel("NoSuchOp", "AlsoMissing");
  auto model = importModelProto(proto, "", "m.onnx");
  ASSERT_FALSE(model.ok());
  const std::string& msg = model.error().message();
  EXPECT_NE(msg.find("2 node(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'first' (NoSuchOp)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'second' (AlsoMissing)"), std::string::npos) << msg;
}

TEST(Import, RefusesOpsetsAboveRange) {
  auto proto = twoNodeModel("Relu", "Relu", 18);
  auto model = importModelProto(proto, "", "m.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().message().find("outside the supported range 7-17"), std::string::npos);
}

TEST(Import, UpgradesOpsetsBelowRange) {
  auto proto = twoNodeModel("Relu", "Neg", 6);
  auto model = importModelProto(proto, "", "m.onnx");
  ASSERT_TRUE(model.ok()) << model.error().message();
  EXPECT_EQ(model->opsetVersion(), 7);
  EXPECT_EQ(model->graph->numNodes(), 2u);
}

TEST(Import, RefusesGarbageFiles) {
  auto dir = std::filesystem::temp_directory_path() / "poprt_onnx_garbage";
  std::filesystem::create_directories(dir);
  for (const std::string& content : {std::string(), std::string("\x08\x07\x12", 3), std::string(1000, '\xff')}) {
    std::ofstream(dir / "bad.onnx", std::ios::binary) << content;
    auto model = importModel(dir / "bad.onnx");
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.error().message().find('\n'), std::string::npos);
    EXPECT_NE(model.error().message().find("bad.onnx"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(RoundTrip, ExportThenImportGivesTheSameIR) {
  // A model with subgraphs (If) exercises attributes of every nesting.
  for (const char* test : {"test_gemm_all_attributes", "test_if_seq", "test_loop11", "test_conv_with_strides_padding"}) {
    auto path = kNodeData / test / "model.onnx";
    if (!std::filesystem::exists(path)) continue;
    auto first = importModel(path);
    ASSERT_TRUE(first.ok()) << first.error().message();
    onnx::ModelProto proto = exportModelProto(*first);
    auto second = importModelProto(proto, "", "roundtrip");
    ASSERT_TRUE(second.ok()) << test << ": " << second.error().message();
    EXPECT_EQ(ir::print(*first->graph), ir::print(*second->graph)) << test;
  }
}

// Two nodes of one name (passes name new nodes after what they replace): ONNX Runtime refuses the
// graph, so the export gives the repeat the first suffix no node has.
TEST(Export, RepeatedNodeNamesGetASuffixNoOtherNodeHas) {
  ir::Model model;
  model.opset_imports = {{"", 13}};
  ir::Graph& g = *model.graph;
  ir::Value* v = g.addInput("x", ir::TensorType::of(DType::Float, {2}));
  for (const char* name : {"a", "a", "a_1", "a"}) {
    ir::Value* out = g.addValue(g.uniqueName("v"), v->type);
    g.addNode("Relu", {v}, {out}, name);
    v = out;
  }
  g.addOutput(v);
  onnx::ModelProto proto = exportModelProto(model);
  std::vector<std::string> names;
  for (const auto& n : proto.graph().node()) names.push_back(n.name());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "a_2", "a_1", "a_3"}));
}

// The converted ONNX stores float32 weights of small integers in int8 / int16 behind a Cast; a
// weight with a fraction and a small constant stay.
TEST(Export, IntegerWeightsAreNarrowedBehindACast) {
  ir::Model model;
  model.opset_imports = {{"", 13}};
  ir::Graph& g = *model.graph;
  auto weight = [&](const std::string& name, int64_t n, float scale, float offset) {
    Tensor t(DType::Float, {n});
    for (int64_t i = 0; i < n; ++i) t.data<float>()[static_cast<size_t>(i)] = static_cast<float>(i % 200 - 100) * scale + offset;
    return g.addInitializer(name, std::move(t));
  };
  ir::Value* small = weight("int8_weight", 2048, 1, 0);
  ir::Value* wide = weight("int16_weight", 2048, 3, 0);
  ir::Value* fraction = weight("fraction", 2048, 1, 0.5f);
  ir::Value* shape_data = weight("few", 16, 1, 0);
  ir::Value* sum = small;
  for (ir::Value* w : {wide, fraction}) {
    ir::Value* out = g.addValue(g.uniqueName("sum"), small->type);
    g.addNode("Add", {sum, w}, {out}, "add_" + w->name());
    sum = out;
  }
  g.addOutput(sum);
  g.addOutput(shape_data);
  onnx::ModelProto proto = exportModelProto(model, WeightData::IntegersNarrowed);
  std::map<std::string, int> stored;
  for (const auto& t : proto.graph().initializer()) stored[t.name()] = t.data_type();
  EXPECT_EQ(stored, (std::map<std::string, int>{{"int8_weight/int8", onnx::TensorProto::INT8},
                                                {"int16_weight/int16", onnx::TensorProto::INT16},
                                                {"fraction", onnx::TensorProto::FLOAT},
                                                {"few", onnx::TensorProto::FLOAT}}));
  ASSERT_GE(proto.graph().node_size(), 2);
  for (int i = 0; i < 2; ++i) {  // the Casts come first: every node may read the weights
    const auto& cast = proto.graph().node(i);
    EXPECT_EQ(cast.op_type(), "Cast");
    EXPECT_EQ(cast.input(0), cast.output(0) + (i == 0 ? "/int8" : "/int16"));
    EXPECT_EQ(cast.attribute(0).i(), onnx::TensorProto::FLOAT);
  }
  // Read back, the narrowed values are the weight's floats.
  auto back = importModelProto(proto, "", "narrowed");
  ASSERT_TRUE(back.ok()) << back.error().message();
  for (const auto& [name, original] : {std::pair{"int8_weight/int8", small}, std::pair{"int16_weight/int16", wide}}) {
    const ir::Value* narrow = back->graph->findValue(name);
    ASSERT_TRUE(narrow && narrow->isInitializer()) << name;
    const Tensor& t = *narrow->initializer();
    for (int64_t i = 0; i < 2048; ++i) {
      const size_t k = static_cast<size_t>(i);
      const float widened = t.dtype() == DType::Int8 ? t.data<int8_t>()[k] : t.data<int16_t>()[k];
      ASSERT_EQ(widened, original->initializer()->data<float>()[k]) << name << " " << i;
    }
  }
  EXPECT_EQ(exportModelProto(model).graph().initializer_size(), 4);  // the default export keeps float32
}

// The narrowed weight's name is new in every scope: an If branch already has "w/int8" (ONNX names a
// value once), and an initializer that is also a graph input (a default the caller may override)
// keeps its float32 values. A model that imports no default domain has no Cast: nothing narrows.
TEST(Export, NarrowedWeightsTakeNamesNoNestedGraphHasAndSkipOverridableOnes) {
  ir::Model model;
  model.opset_imports = {{"", 13}};
  ir::Graph& g = *model.graph;
  Tensor ints(DType::Float, {2048});
  for (size_t i = 0; i < 2048; ++i) ints.data<float>()[i] = static_cast<float>(i % 7);
  ir::Value* w = g.addInitializer("w", ints);
  ir::Value* d = g.addInput("d", ir::TensorType::of(DType::Float, {2048}));
  g.addInitializer("d", ints);  // an input with a default
  ir::Value* cond = g.addInput("cond", ir::TensorType::of(DType::Bool, {}));
  auto branch = [&](const char* name) {
    auto b = std::make_shared<ir::Graph>(name, &g);
    ir::Value* out = b->addValue("w/int8", w->type);  // the name the narrowed weight would take
    b->addNode("Neg", {w}, {out}, std::string(name) + "_neg");
    b->addOutput(out);
    return b;
  };
  ir::Value* y = g.addValue("y", w->type);
  ir::Node* iff = g.addNode("If", {cond}, {y}, "if");
  iff->attributes["then_branch"].value = branch("then");
  iff->attributes["else_branch"].value = branch("else");
  ir::Value* sum = g.addValue("sum", w->type);
  g.addNode("Add", {y, d}, {sum}, "add");
  g.addOutput(sum);
  ASSERT_TRUE(ir::verify(g).ok());
  onnx::ModelProto proto = exportModelProto(model, WeightData::IntegersNarrowed);
  std::map<std::string, int> stored;
  for (const auto& t : proto.graph().initializer()) stored[t.name()] = t.data_type();
  EXPECT_EQ(stored, (std::map<std::string, int>{{"w/int8_1", onnx::TensorProto::INT8}, {"d", onnx::TensorProto::FLOAT}}));
  model.opset_imports = {{"ai.onnx.preview.training", 1}};
  proto = exportModelProto(model, WeightData::IntegersNarrowed);
  stored.clear();
  for (const auto& t : proto.graph().initializer()) stored[t.name()] = t.data_type();
  EXPECT_EQ(stored, (std::map<std::string, int>{{"w", onnx::TensorProto::FLOAT}, {"d", onnx::TensorProto::FLOAT}}));
}

TEST(InputShapes, FillsDynamicDimsAndPropagates) {
  auto proto = twoNodeModel("Relu", "Neg");
  auto model = importModelProto(proto, "", "m.onnx");
  ASSERT_TRUE(model.ok()) << model.error().message();
  EXPECT_EQ(model->graph->outputs()[0]->type.toString(), "float32[n,4]");  // the declared symbol wins, dim 1 inferred
  auto shape = passes::parseInputShape("x=8,4");
  ASSERT_TRUE(shape.ok());
  ASSERT_TRUE(passes::applyInputShapes(*model, {*shape}).ok());
  EXPECT_EQ(model->graph->outputs()[0]->type.toString(), "float32[8,4]");
  EXPECT_EQ(passes::firstDynamicTensor(*model->graph), "");
}

TEST(InputShapes, ClashWithStaticDimNamesBoth) {
  auto proto = twoNodeModel("Relu", "Neg");
  auto model = importModelProto(proto, "", "m.onnx");
  ASSERT_TRUE(model.ok()) << model.error().message();
  auto st = passes::applyInputShapes(*model, {{"x", {8, 5}}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("dim 1 is given as 5 but input 'x' fixes it to 4"), std::string::npos)
      << st.error().message();
  EXPECT_FALSE(passes::applyInputShapes(*model, {{"nope", {1, 4}}}).ok());
  EXPECT_FALSE(passes::applyInputShapes(*model, {{"x", {1}}}).ok());
  EXPECT_FALSE(passes::parseInputShape("x=1,a").ok());
  EXPECT_FALSE(passes::parseInputShape("x1,2").ok());
}

}  // namespace
}  // namespace poprt::onnxio
