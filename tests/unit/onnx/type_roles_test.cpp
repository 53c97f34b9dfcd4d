// typeRoles: which inputs and outputs follow an op's data type (and so switch to float16 with it),
// read from the ONNX schemas — the table float_to_half relies on instead of a list of its own.
#include <gtest/gtest.h>

#include "lib/onnx/type_roles.h"
#include "lib/ops/graphcore_ops.h"

namespace poprt::onnxio {
namespace {

using R = TypeRole;

// The roles of a node `op` with `inputs` inputs and `outputs` outputs (all present).
std::optional<NodeTypeRoles> rolesOf(const std::string& op, size_t inputs, size_t outputs, int64_t opset,
                                     const std::string& domain = "") {
  ir::Graph g;
  std::vector<ir::Value*> in, out;
  for (size_t i = 0; i < inputs; ++i) in.push_back(g.addInput("i" + std::to_string(i), {}));
  for (size_t i = 0; i < outputs; ++i) out.push_back(g.addValue("o" + std::to_string(i)));
  ir::Node* n = g.addNode(op, in, out, "n", domain);
  return typeRoles(*n, opset);
}

TEST(TypeRoles, ResizeScalesAndRoiAreParameters) {
  auto r = rolesOf("Resize", 4, 1, 13);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->inputs, (std::vector<R>{R::Data, R::Fixed, R::Fixed, R::Fixed}));
  EXPECT_EQ(r->outputs, (std::vector<R>{R::Data}));
  EXPECT_TRUE(r->float16_allowed);
}

TEST(TypeRoles, ClipBoundsFollowTheDataButPowsExponentDoesNot) {
  EXPECT_EQ(rolesOf("Clip", 3, 1, 13)->inputs, (std::vector<R>{R::Data, R::Data, R::Data}));
  EXPECT_EQ(rolesOf("Pow", 2, 1, 13)->inputs, (std::vector<R>{R::Data, R::Fixed}));
  EXPECT_EQ(rolesOf("Where", 3, 1, 13)->inputs, (std::vector<R>{R::Fixed, R::Data, R::Data}));
  EXPECT_EQ(rolesOf("Reshape", 2, 1, 13)->inputs, (std::vector<R>{R::Data, R::Fixed}));
  EXPECT_EQ(rolesOf("Concat", 3, 1, 13)->inputs, (std::vector<R>{R::Data, R::Data, R::Data}));  // variadic
}

TEST(TypeRoles, BatchNormStatisticsFollowTheSchemasTypeParameters) {
  // One T for all up to opset 13; the mean and variance get their own U at 14; scale and bias
  // their own T1 at 15.
  EXPECT_EQ(rolesOf("BatchNormalization", 5, 1, 9)->inputs, (std::vector<R>(5, R::Data)));
  EXPECT_EQ(rolesOf("BatchNormalization", 5, 1, 14)->inputs, (std::vector<R>{R::Data, R::Data, R::Data, R::Fixed, R::Fixed}));
  EXPECT_EQ(rolesOf("BatchNormalization", 5, 1, 15)->inputs, (std::vector<R>{R::Data, R::Fixed, R::Fixed, R::Fixed, R::Fixed}));
}

TEST(TypeRoles, AttributeTypedOutputsStay) {
  // Cast reads data but its output dtype is the `to` attribute's; likewise ConstantOfShape's.
  auto cast = rolesOf("Cast", 1, 1, 13);
  EXPECT_EQ(cast->inputs, (std::vector<R>{R::Data}));
  EXPECT_EQ(cast->outputs, (std::vector<R>{R::Fixed}));
  EXPECT_EQ(rolesOf("ConstantOfShape", 1, 1, 13)->outputs, (std::vector<R>{R::Fixed}));
  // LayerNormalization's Mean/InvStdDev (type U: float or bfloat16) stay float32.
  auto ln = rolesOf("LayerNormalization", 3, 3, 17);
  EXPECT_EQ(ln->outputs, (std::vector<R>{R::Data, R::Fixed, R::Fixed}));
  EXPECT_TRUE(ln->float16_allowed);
}

TEST(TypeRoles, SchemasWithoutFloat16AndUnknownOps) {
  EXPECT_FALSE(rolesOf("Range", 3, 1, 13)->float16_allowed);  // float, double and integers only
  EXPECT_FALSE(rolesOf("NoSuchOp", 1, 1, 13));
  auto gelu = rolesOf("Gelu", 1, 1, 13, ops::graphcore::kDomain);
  ASSERT_TRUE(gelu);
  EXPECT_EQ(gelu->inputs, (std::vector<R>{R::Data}));
  EXPECT_TRUE(gelu->float16_allowed);
}

}  // namespace
}  // namespace poprt::onnxio
