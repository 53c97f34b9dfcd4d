#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

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
