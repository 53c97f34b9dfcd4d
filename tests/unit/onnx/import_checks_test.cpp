// The importer's own checks (lib/onnx/import_checks.h): ai.graphcore ops' arity and attribute
// types, and declared shapes that would overflow.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "lib/onnx/onnx_io.h"

namespace poprt::onnxio {
namespace {

using Attr = onnx::AttributeProto;

void addValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
              const std::vector<int64_t>& dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

// One ai.graphcore node `op` reading x (and w, b when asked) into y.
onnx::ModelProto customModel(const std::string& op, int inputs) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(13);
  o = m.add_opset_import();
  o->set_domain("ai.graphcore");
  o->set_version(1);
  auto* g = m.mutable_graph();
  g->set_name("g");
  const char* names[] = {"x", "w", "b", "m"};
  for (int i = 0; i < inputs; ++i) addValue(g->mutable_input(), names[i], {1, 2, 4, 4});
  addValue(g->mutable_output(), "y", {1, 2, 4, 4});
  auto* n = g->add_node();
  n->set_name("n");
  n->set_op_type(op);
  n->set_domain("ai.graphcore");
  for (int i = 0; i < inputs; ++i) n->add_input(names[i]);
  n->add_output("y");
  return m;
}

void addAttr(onnx::ModelProto& m, const std::string& name, Attr::AttributeType type) {
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(type);
  if (type == Attr::INT) a->set_i(1);
  if (type == Attr::FLOAT) a->set_f(1.f);
  if (type == Attr::STRING) a->set_s("Relu");
  if (type == Attr::INTS) a->add_ints(1), a->add_ints(1);
}

std::string importError(onnx::ModelProto m) {
  auto r = importModelProto(m, "", "m.onnx");
  return r.ok() ? std::string("(accepted)") : r.error().message();
}

TEST(ImportChecks, ConvActTakesConvAndActivationAttributes) {
  onnx::ModelProto m = customModel("ConvAct", 2);
  addAttr(m, "strides", Attr::INTS);
  addAttr(m, "group", Attr::INT);
  addAttr(m, "activation", Attr::STRING);
  addAttr(m, "activation_alpha", Attr::FLOAT);
  EXPECT_EQ(importError(m), "(accepted)");
}

TEST(ImportChecks, RefusesWrongAttributeTypesAndUnknownAttributes) {
  onnx::ModelProto m = customModel("ConvAct", 2);
  addAttr(m, "group", Attr::FLOAT);
  EXPECT_EQ(importError(m), "m.onnx: graph 'g': node 'n' (ai.graphcore.ConvAct): attribute 'group' is FLOAT, expected INT");
  m = customModel("LayerNorm", 2);
  addAttr(m, "epsilon", Attr::INT);
  EXPECT_EQ(importError(m), "m.onnx: graph 'g': node 'n' (ai.graphcore.LayerNorm): attribute 'epsilon' is INT, expected FLOAT");
  m = customModel("Gelu", 1);
  addAttr(m, "bogus", Attr::INT);
  EXPECT_EQ(importError(m), "m.onnx: graph 'g': node 'n' (ai.graphcore.Gelu) has an unknown attribute 'bogus'");
}

TEST(ImportChecks, RefusesWrongInputCounts) {
  EXPECT_EQ(importError(customModel("MultiHeadAttention", 2)),
            "m.onnx: graph 'g': node 'n' (ai.graphcore.MultiHeadAttention) has 2 inputs, expected 3 to 4");
  EXPECT_EQ(importError(customModel("Gelu", 3)), "m.onnx: graph 'g': node 'n' (ai.graphcore.Gelu) has 3 inputs, expected 1");
}

// Attribute values the ops' evaluators would refuse, found when the model is read (a host node
// would otherwise convert and fail only when popef-run first runs it).
TEST(ImportChecks, RefusesAttributeValuesTheOpsCannotRun) {
  auto strings = [](onnx::ModelProto& m, const std::string& name, std::vector<std::string> values) {
    auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name(name);
    a->set_type(Attr::STRINGS);
    for (auto& v : values) a->add_strings(v);
  };
  auto ints = [](onnx::ModelProto& m, const std::string& name, std::vector<int64_t> values) {
    auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name(name);
    a->set_type(Attr::INTS);
    for (int64_t v : values) a->add_ints(v);
  };
  onnx::ModelProto chain = customModel("ElementwiseChain", 2);
  strings(chain, "ops", {"Relu", "Foo"});
  ints(chain, "operands", {0, 1});
  EXPECT_EQ(importError(chain),
            "m.onnx: graph 'g': node 'n' (ai.graphcore.ElementwiseChain): ElementwiseChain step 1 is Foo with operand 1: not a "
            "unary op with 0 nor Add/Sub/Mul/Div/Max/Min/Pow with an input");
  onnx::ModelProto past = customModel("ElementwiseChain", 2);
  strings(past, "ops", {"Add"});
  ints(past, "operands", {-2});
  EXPECT_EQ(importError(past),
            "m.onnx: graph 'g': node 'n' (ai.graphcore.ElementwiseChain): ElementwiseChain step 0 (Add) names input 2, which it "
            "does not have");
  onnx::ModelProto conv = customModel("ConvAct", 2);
  auto* act = conv.mutable_graph()->mutable_node(0)->add_attribute();
  act->set_name("activation");
  act->set_type(Attr::STRING);
  act->set_s("Bogus");
  EXPECT_EQ(importError(conv).rfind("m.onnx: graph 'g': node 'n' (ai.graphcore.ConvAct): activation must be one of Relu", 0), 0u)
      << importError(conv);
  onnx::ModelProto mha = customModel("MultiHeadAttention", 3);
  auto* heads = mha.mutable_graph()->mutable_node(0)->add_attribute();
  heads->set_name("num_heads");
  heads->set_type(Attr::INT);
  heads->set_i(0);
  EXPECT_EQ(importError(mha), "m.onnx: graph 'g': node 'n' (ai.graphcore.MultiHeadAttention): num_heads must be >= 1");
  // The same chain with a step it can run imports.
  onnx::ModelProto good = customModel("ElementwiseChain", 2);
  strings(good, "ops", {"Relu", "Mul"});
  ints(good, "operands", {0, 1});
  EXPECT_EQ(importError(good), "(accepted)");
}

TEST(ImportChecks, RefusesDeclaredShapesThatOverflowOrAreNegative) {
  onnx::ModelProto m = customModel("Gelu", 1);
  addValue(m.mutable_graph()->mutable_value_info(), "big", {int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_EQ(importError(m), "m.onnx: graph 'g': value 'big' declares a shape whose element count does not fit in 64 bits");
  m = customModel("Gelu", 1);
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-3);
  EXPECT_EQ(importError(m), "m.onnx: graph 'g': value 'x' has the negative dimension -3");
}

}  // namespace
}  // namespace poprt::onnxio
