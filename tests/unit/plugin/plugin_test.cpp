// Custom-op plugins (lib/plugin) against the test plugins of test_plugin.c: loading, ABI and table
// checks, shape inference through libonnx, the host kernels through the reference evaluator, and
// the PopEF's plugin record.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>

#include "lib/onnx/onnx_io.h"
#include "lib/ops/registry.h"
#include "lib/plugin/plugin.h"

namespace poprt::plugin {
namespace {

using ::testing::HasSubstr;

std::string library(const std::string& variant) {
  return std::string(POPRT_TEST_PLUGIN_DIR) + "/libtest_plugin_" + variant + ".so";
}

const Plugin& okPlugin() {
  auto p = loadPlugin(library("ok"));
  if (!p.ok()) throw std::runtime_error(p.error().message());
  return **p;
}

std::string loadError(const std::string& path) {
  auto p = loadPlugin(path);
  return p.ok() ? std::string("(loaded)") : p.error().message();
}

// x: float32[dims] -> domain::op (attributes) -> outputs y0..; imported with shape inference.
Expected<ir::Model> model(const std::string& domain, const std::string& op, const std::vector<int64_t>& dims, int outputs,
                          const std::vector<std::pair<std::string, float>>& attrs = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* custom = m.add_opset_import();
  custom->set_domain(domain);
  custom->set_version(1);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  auto* n = g->add_node();
  n->set_name("custom");
  n->set_op_type(op);
  n->set_domain(domain);
  n->add_input("x");
  for (const auto& [name, value] : attrs) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  for (int o = 0; o < outputs; ++o) {
    n->add_output("y" + std::to_string(o));
    auto* y = g->add_output();
    y->set_name("y" + std::to_string(o));
    // The checker wants a shape; its dims are left for inference to fill.
    y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    for (size_t d = 0; d < dims.size(); ++d) y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();
  }
  return onnxio::importModelProto(m, "", "test.onnx");
}

Tensor vector(std::vector<float> values) {
  Tensor t(DType::Float, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<float>().begin());
  return t;
}

TEST(Plugin, ItsOpsInferAndRunLikeOnnxOps) {
  const Plugin& p = okPlugin();
  EXPECT_EQ(p.name, "test_ok");
  EXPECT_EQ(p.ops.size(), 3u);
  auto m = model("test.plugin", "ScaleShift", {4}, 1, {{"scale", 2.0f}, {"shift", -1.0f}});
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->graph->outputs()[0]->type.toString(), "float32[4]");  // the plugin's inference, through libonnx
  auto out = ops::evaluateGraph(*m->graph, {{"x", vector({0.5f, -2.0f, 3.0f, 0.0f})}}, ops::opsetsOf(*m));
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_THAT(std::vector<float>(out->at(0).data<float>().begin(), out->at(0).data<float>().end()),
              ::testing::ElementsAre(0.0f, -5.0f, 5.0f, -1.0f));
}

TEST(Plugin, SeveralOutputsOfAnotherShape) {
  okPlugin();
  auto m = model("test.plugin", "SplitHalves", {6}, 2);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->graph->outputs()[1]->type.toString(), "float32[3]");
  auto out = ops::evaluateGraph(*m->graph, {{"x", vector({1, 2, 3, 4, 5, 6})}}, ops::opsetsOf(*m));
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->at(0), vector({1, 2, 3}));
  EXPECT_EQ(out->at(1), vector({4, 5, 6}));
  // The plugin's inference refusing a matrix fails import with its reason and the node.
  auto bad = model("test.plugin", "SplitHalves", {2, 3}, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("SplitHalves takes a vector, got rank 2"));
  EXPECT_THAT(bad.error().message(), HasSubstr("custom"));
}

TEST(Plugin, AFailingKernelNamesTheNodeAndThePluginOnOneLine) {
  okPlugin();
  auto m = model("test.plugin", "Fail", {2}, 1);
  ASSERT_TRUE(m.ok()) << m.error().message();
  auto out = ops::evaluateGraph(*m->graph, {{"x", vector({1, 2})}}, ops::opsetsOf(*m));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message(),
            "node 'custom' (Fail): custom op test.plugin::Fail (plugin test_ok): kernel failed on purpose\\nsecond line");
}

TEST(Plugin, LoadingTwiceIsLoadingOnce) {
  const Plugin* first = &okPlugin();
  EXPECT_EQ(&okPlugin(), first);
  EXPECT_EQ(pluginOf("test.plugin", "SplitHalves"), first);
  EXPECT_EQ(pluginOf("", "Relu"), nullptr);
}

TEST(Plugin, BadLibrariesAreRefusedByName) {
  okPlugin();
  EXPECT_THAT(loadError("/nonexistent/libx.so"), HasSubstr("/nonexistent/libx.so: No such file"));
  const std::string text = testing::TempDir() + "/not_a_library.so";
  std::ofstream(text) << "hello\n";
  EXPECT_THAT(loadError(text), HasSubstr("not_a_library.so: not a loadable shared library ("));
  EXPECT_THAT(loadError(library("no_entry")), HasSubstr("not a poprt plugin (it has no poprt_plugin_v1 function"));
  EXPECT_THAT(loadError(library("bad_abi")), HasSubstr("built for plugin ABI version 99, this poprt has version 1"));
  EXPECT_THAT(loadError(library("reserved")), HasSubstr("::Relu: the domain belongs to ONNX or poprt"));
  EXPECT_THAT(loadError(library("duplicate")), HasSubstr("test.plugin::ScaleShift is already defined by plugin 'test_ok' ("));
  // A refused library registers nothing.
  EXPECT_EQ(ops::findOp("test.abi", "Op"), nullptr);
}

TEST(Plugin, WhatAPluginsInferenceSaysIsChecked) {
  ASSERT_EQ(loadError(library("bad_infer")), "(loaded)");
  auto m = model("test.bad", "Rank9", {2}, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.error().message(), HasSubstr("the plugin's inference gave output 0 rank 9"));
}

TEST(Plugin, ThePopefRecordNamesThePluginsAModelUses) {
  okPlugin();
  auto m = model("test.plugin", "ScaleShift", {4}, 1);
  ASSERT_TRUE(m.ok()) << m.error().message();
  const nlohmann::json record = pluginRecord(*m);
  EXPECT_EQ(record, nlohmann::json::parse(R"([{"name":"test_ok","version":"0.1","ops":["test.plugin::ScaleShift"]}])"));
  EXPECT_TRUE(checkPluginRecord(record).ok());
  EXPECT_TRUE(checkPluginRecord(nullptr).ok());
  auto missing = checkPluginRecord(nlohmann::json::parse(R"([{"name":"gone","version":"1","ops":["x.y::Z"]}])"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(),
            "it needs custom op 'x.y::Z' of plugin 'gone', which is not loaded (pass the plugin's library with "
            "--custom_library_so_paths)");
  for (const char* malformed :
       {R"({"name":"a"})", R"([{"name":1,"version":"1","ops":[]}])", R"([{"name":"a","ops":["x::Y"]}])",
        R"([{"name":"a","version":"1","ops":["NoSeparator"]}])", R"([{"name":"a","version":"1","ops":[3]}])"})
    EXPECT_EQ(checkPluginRecord(nlohmann::json::parse(malformed)).error().message(), "its plugin record is malformed")
        << malformed;
}

}  // namespace
}  // namespace poprt::plugin
