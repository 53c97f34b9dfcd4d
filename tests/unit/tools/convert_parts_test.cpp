// poprt-convert's parts: --check's comparison (including its failure path, which a correct
// optimiser never reaches end to end) and --config_yaml's parsing and precedence.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "converter/check.h"
#include "converter/options.h"
#include "converter/value_check.h"
#include "tools/convert/convert_flags.h"

namespace poprt::tools {

using namespace poprt::converter;
namespace {

ir::TensorType f32(const Shape& s) { return ir::TensorType::of(DType::Float, s); }

// y = OP(x), x: float32[2,3].
ir::Model unaryModel(const std::string& op, Shape shape = {2, 3}) {
  ir::Model m;
  m.opset_imports.push_back({"", 13});
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32(shape));
  ir::Value* y = g.addValue("y", f32(shape));
  g.addNode(op, {x}, {y}, "n");
  g.addOutput(y);
  return m;
}

TEST(ConvertCheck, IdenticalGraphsPassAndPrintATable) {
  ir::Model m = unaryModel("Relu");
  auto snap = snapshotForCheck(m);
  ASSERT_TRUE(snap.ok()) << snap.error().message();
  std::ostringstream out;
  auto st = runCheck(*snap, m, {0, 0, 0}, out);
  EXPECT_TRUE(st.ok()) << st.error().message();
  EXPECT_NE(out.str().find("y"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("ok"), std::string::npos) << out.str();
}

TEST(ConvertCheck, DifferentResultsFailNamingTheOutput) {
  auto snap = snapshotForCheck(unaryModel("Relu"));
  ASSERT_TRUE(snap.ok());
  std::ostringstream out;
  auto st = runCheck(*snap, unaryModel("Abs"), {1e-3, 1e-4, 0}, out);
  ASSERT_FALSE(st.ok());
  const std::string& msg = st.error().message();
  EXPECT_NE(msg.find("--check"), std::string::npos) << msg;
  EXPECT_NE(msg.find("output 'y'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(out.str().find("FAIL"), std::string::npos) << out.str();
  // A tolerance wide enough accepts the same difference (|x| <= 1, so |Relu - Abs| <= 1).
  std::ostringstream out2;
  EXPECT_TRUE(runCheck(*snap, unaryModel("Abs"), {0, 2.0, 0}, out2).ok());
}

TEST(ConvertCheck, ShapeChangeIsAMismatch) {
  auto snap = snapshotForCheck(unaryModel("Relu", {2, 3}));
  ASSERT_TRUE(snap.ok());
  ir::Model other;
  other.opset_imports.push_back({"", 13});
  ir::Graph& g = *other.graph;
  ir::Value* x = g.addInput("x", f32({2, 3}));
  ir::Value* shape = g.addInitializer("shape", [] {
    Tensor t(DType::Int64, {2});
    t.data<int64_t>()[0] = 3;
    t.data<int64_t>()[1] = 2;
    return t;
  }());
  ir::Value* y = g.addValue("y", f32({3, 2}));
  g.addNode("Reshape", {x, shape}, {y}, "r");
  g.addOutput(y);
  std::ostringstream out;
  auto st = runCheck(*snap, other, {1, 1, 0}, out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("[3,2]"), std::string::npos) << st.error().message();
}

TEST(ConvertCheck, DynamicInputIsRefusedByName) {
  ir::Model m;
  m.opset_imports.push_back({"", 13});
  ir::Graph& g = *m.graph;
  ir::TensorType t;
  t.dtype = DType::Float;
  t.dims = std::vector<ir::Dim>{ir::Dim::symbolic("batch"), ir::Dim::fixed(3)};
  ir::Value* x = g.addInput("the_input", t);
  ir::Value* y = g.addValue("y", t);
  g.addNode("Relu", {x}, {y}, "n");
  g.addOutput(y);
  auto snap = snapshotForCheck(m);
  ASSERT_FALSE(snap.ok());
  EXPECT_NE(snap.error().message().find("the_input"), std::string::npos) << snap.error().message();
}

TEST(ConvertCheck, GeneratedInputsAreDeterministicAndInRange) {
  auto a = generateInput(DType::Float, {1000}, 0, 0);
  auto b = generateInput(DType::Float, {1000}, 0, 0);
  auto c = generateInput(DType::Float, {1000}, 0, 1);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(*a == *b);
  EXPECT_FALSE(*a == *c);
  for (float v : a->data<float>()) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  auto ints = generateInput(DType::Int64, {1000}, 0, 0);
  ASSERT_TRUE(ints.ok());
  bool seen[4] = {};
  for (int64_t v : ints->data<int64_t>()) {
    ASSERT_GE(v, 0);
    ASSERT_LE(v, 3);
    seen[v] = true;
  }
  EXPECT_TRUE(seen[0] && seen[1] && seen[2] && seen[3]);
  auto bools = generateInput(DType::Bool, {1000}, 0, 0);
  ASSERT_TRUE(bools.ok());
  int trues = 0;
  for (bool v : bools->data<bool>()) trues += v;
  EXPECT_GT(trues, 300);
  EXPECT_LT(trues, 700);
}

// ------------------------------------------------------------------------------- --config_yaml

class ConfigYaml : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("poprt-yaml-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& text) {
    std::string p = (dir_ / "config.yaml").string();
    std::ofstream(p) << text;
    return p;
  }
  // Parses `args` (after the program name) and applies the config file they name.
  Status parse(std::vector<std::string> args, ConvertOptions& o) {
    CLI::App app;
    addConvertFlags(app, o);
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);  // CLI11 takes the arguments reversed
    return applyConfigYaml(givenOptions(app), o);
  }

  std::filesystem::path dir_;
};

TEST_F(ConfigYaml, KeysAreAppliedAndFlagsWin) {
  std::string cfg = write(
      "input_model: m.onnx\noutput_dir: from_yaml\nexport_popef: true\ninput_shape: {x: [1, 3, 224, 224], y: \"2,2\"}\n"
      "passes: [constant_folding, dead_code_elimination]\ncheck_rtol: 0.5\nnum_ipus: 2\n");
  ConvertOptions o;
  auto st = parse({"--config_yaml", cfg, "--output_dir", "from_flag", "--num_ipus", "1"}, o);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(o.input_models, (std::vector<std::string>{"m.onnx"}));
  EXPECT_EQ(o.output_dir, "from_flag");
  EXPECT_TRUE(o.export_popef);
  EXPECT_EQ(o.input_shapes, (std::vector<std::string>{"x=1,3,224,224", "y=2,2"}));
  EXPECT_EQ(o.pipeline.passes, (std::vector<std::string>{"constant_folding", "dead_code_elimination"}));
  EXPECT_DOUBLE_EQ(o.check_rtol, 0.5);
  EXPECT_EQ(o.num_ipus, 1u);
}

TEST_F(ConfigYaml, ListAndTextForms) {
  std::string cfg = write("input_shape: [\"x=1,2\", {y: [3]}]\nskip_passes: \"a,b\"\n");
  ConvertOptions o;
  auto st = parse({"--config_yaml", cfg}, o);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(o.input_shapes, (std::vector<std::string>{"x=1,2", "y=3"}));
  EXPECT_EQ(o.pipeline.skip_passes, (std::vector<std::string>{"a", "b"}));
}

TEST_F(ConfigYaml, ErrorsNameTheKeyAndTheFile) {
  struct Case {
    std::string text, mention;
  };
  for (const Case& c :
       {Case{"bogus_key: 1\n", "bogus_key"}, Case{"num_ipus: many\n", "num_ipus"}, Case{"export_popef: [1]\n", "export_popef"},
        Case{"check_atol: -1\n", "check_atol"}, Case{"convert_version: 30\n", "convert_version"},
        Case{"input_model: {a: b}\n", "input_model"}, Case{"- just\n- a list\n", "map"}, Case{"a: [1\n", "YAML"}}) {
    std::string cfg = write(c.text);
    ConvertOptions o;
    auto st = parse({"--config_yaml", cfg}, o);
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_NE(st.error().message().find(c.mention), std::string::npos) << st.error().message();
    EXPECT_NE(st.error().message().find(cfg), std::string::npos) << st.error().message();
    EXPECT_EQ(st.error().message().find('\n'), std::string::npos) << st.error().message();
  }
}

}  // namespace
}  // namespace poprt::tools
