// libonnx's inference functions behind poprt's guard (lib/onnx/inference_guard.h): the rules
// refuse what the functions would read out of bounds, and a sweep runs every default-domain
// schema of opsets 7-17 on inputs of every rank up to 5 (and index-like attributes out of range)
// through runOnnxShapeInference. The sweep's property is that nothing crashes: under the sanitizer
// build (scripts/test.sh --sanitize) any wild read of an unguarded function is a failure.
#include <gtest/gtest.h>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "lib/onnx/onnx_io.h"
#include "lib/onnx/type_map.h"

namespace poprt::onnxio {
namespace {

using Attr = onnx::AttributeProto;

void addInput(onnx::GraphProto& g, const std::string& name, int elem_type, const std::vector<int64_t>& dims) {
  auto* v = g.add_input();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// A model of one node `op` ("n") whose inputs x0, x1, ... have `input_dims` and `elem_types`
// (float when not given), and whose `outputs` outputs are y, y1, y2, ...
onnx::ModelProto oneNode(const std::string& op, int opset, const std::vector<std::vector<int64_t>>& input_dims,
                         const std::vector<int>& elem_types = {}, int outputs = 1) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* n = g->add_node();
  n->set_name("n");
  n->set_op_type(op);
  for (size_t i = 0; i < input_dims.size(); ++i) {
    addInput(*g, "x" + std::to_string(i), i < elem_types.size() ? elem_types[i] : int{onnx::TensorProto::FLOAT}, input_dims[i]);
    n->add_input("x" + std::to_string(i));
  }
  for (int o = 0; o < outputs; ++o) {
    const std::string name = o == 0 ? "y" : "y" + std::to_string(o);
    n->add_output(name);
    g->add_output()->set_name(name);
  }
  return m;
}

std::string inferError(onnx::ModelProto m) {
  auto st = runOnnxShapeInference(m, {/*strict=*/true, /*check_types=*/true});
  return st.ok() ? std::string("(inferred)") : st.error().message();
}

TEST(InferenceGuard, RefusesAConvTransposeWeightOfTheWrongRank) {
  // The fuzz finding: W declared with rank 1 under a 5-D X made convTransposeShapeInference read
  // wild memory.
  EXPECT_EQ(inferError(oneNode("ConvTranspose", 11, {{1, 1, 3, 4, 5}, {3}})),
            "ONNX shape inference: (op_type:ConvTranspose, node name: n): input 1 has rank 1, expected 5 (the rank of "
            "input 0)");
  EXPECT_EQ(inferError(oneNode("ConvTranspose", 11, {{1, 1, 3, 4, 5}, {1, 2, 3, 3, 3}})), "(inferred)");
}

// --------------------------------------------------------------------------------- the sweep

// A tensor type the schema's constraint for input `i` allows: float when it may, else the first.
int inputElemType(const onnx::OpSchema& s, size_t i) {
  const auto& formal = s.inputs()[std::min(i, s.inputs().size() - 1)];
  std::vector<std::string> allowed;
  for (const auto& c : s.typeConstraintParams())
    if (c.type_param_str == formal.GetTypeStr()) allowed = c.allowed_type_strs;
  if (allowed.empty()) allowed.push_back(formal.GetTypeStr());
  std::string pick = allowed.front();
  for (const auto& a : allowed)
    if (a == "tensor(float)") pick = a;
  static const std::vector<std::pair<std::string, int>> names = {
      {"tensor(float)", onnx::TensorProto::FLOAT},   {"tensor(int64)", onnx::TensorProto::INT64},
      {"tensor(int32)", onnx::TensorProto::INT32},   {"tensor(bool)", onnx::TensorProto::BOOL},
      {"tensor(uint8)", onnx::TensorProto::UINT8},   {"tensor(int8)", onnx::TensorProto::INT8},
      {"tensor(string)", onnx::TensorProto::STRING}, {"tensor(float16)", onnx::TensorProto::FLOAT16},
      {"tensor(double)", onnx::TensorProto::DOUBLE}, {"tensor(uint16)", onnx::TensorProto::UINT16},
      {"tensor(int16)", onnx::TensorProto::INT16},   {"tensor(uint32)", onnx::TensorProto::UINT32},
      {"tensor(uint64)", onnx::TensorProto::UINT64}, {"tensor(bfloat16)", onnx::TensorProto::BFLOAT16}};
  for (const auto& [n, t] : names)
    if (n == pick) return t;
  return -1;  // a sequence, map or optional: not swept
}

// Every attribute the schema declares of a kind that can be given as a number, set to `value`
// (`optional_too`: the optional ones as well as the required).
bool addAttributes(const onnx::OpSchema& s, onnx::NodeProto& n, int64_t value, bool optional_too) {
  for (const auto& [name, a] : s.attributes()) {
    if (!a.required && !optional_too) continue;
    auto* p = n.add_attribute();
    p->set_name(name);
    p->set_type(a.type);
    switch (a.type) {
      case Attr::INT: p->set_i(value); break;
      case Attr::INTS: p->add_ints(value), p->add_ints(value); break;
      case Attr::FLOAT: p->set_f(0.5f); break;
      case Attr::FLOATS: p->add_floats(0.5f); break;
      case Attr::STRING: p->set_s(a.required ? "x" : ""); break;
      case Attr::STRINGS: p->add_strings("x"); break;
      case Attr::TENSOR: {
        auto* t = p->mutable_t();
        t->set_data_type(onnx::TensorProto::FLOAT);
        t->add_float_data(1.f);
        break;
      }
      default:
        if (a.required) return false;  // graphs and type protos: not swept
        n.mutable_attribute()->RemoveLast();
    }
  }
  return true;
}

TEST(InferenceGuard, SweepEverySchemaOverInputRanksAndAttributeValues) {
  // Debugging aids: POPRT_SWEEP_TRACE prints each case before it runs; POPRT_SWEEP_FORK runs each
  // in a child process and prints the ones that crash.
  const bool trace = std::getenv("POPRT_SWEEP_TRACE") != nullptr;
  const bool fork_each = std::getenv("POPRT_SWEEP_FORK") != nullptr;
  int models = 0;
  std::set<std::string> swept;
  for (const onnx::OpSchema& s : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    if (!s.domain().empty() || s.Deprecated() || s.SinceVersion() > 17 || s.inputs().empty()) continue;
    const int opset = std::max(7, s.SinceVersion());
    if (onnx::OpSchemaRegistry::Schema(s.Name(), opset) != onnx::OpSchemaRegistry::Schema(s.Name(), s.SinceVersion()))
      continue;  // superseded before opset 7
    const int max_inputs = std::min(s.max_input(), s.min_input() + 3);
    for (int inputs = std::max(1, s.min_input()); inputs <= max_inputs; ++inputs) {
      std::vector<int> types;
      for (int i = 0; i < inputs; ++i) types.push_back(inputElemType(s, static_cast<size_t>(i)));
      if (std::count(types.begin(), types.end(), -1)) continue;
      for (int r0 = 0; r0 <= 5; ++r0)
        for (int rest = -1; rest <= 3; ++rest)  // -1: every input of rank r0
          for (int64_t attr_value : {int64_t{1}, int64_t{5}, int64_t{-7}}) {
            std::vector<std::vector<int64_t>> dims;
            for (int i = 0; i < inputs; ++i) dims.emplace_back(i == 0 || rest < 0 ? r0 : rest, 2);
            onnx::ModelProto m = oneNode(s.Name(), opset, dims, types, std::max(1, s.min_output()));
            onnx::NodeProto* n = m.mutable_graph()->mutable_node(0);
            if (!addAttributes(s, *n, attr_value, attr_value != 1)) continue;
            if (trace)  // which model a crash came from
              std::fprintf(stderr, "%s-%d inputs=%d r0=%d rest=%d attrs=%lld\n", s.Name().c_str(), s.SinceVersion(), inputs, r0,
                           rest, static_cast<long long>(attr_value));
            if (fork_each) {  // lists every case that crashes instead of stopping at the first
              if (pid_t pid = fork(); pid == 0) {
                (void)runOnnxShapeInference(m, {/*strict=*/true, /*check_types=*/true});
                _exit(0);
              } else {
                int status = 0;
                waitpid(pid, &status, 0);
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                  std::printf("CRASH %s-%d inputs=%d r0=%d rest=%d attrs=%lld\n", s.Name().c_str(), s.SinceVersion(), inputs, r0,
                              rest, static_cast<long long>(attr_value));
              }
            } else {
              (void)runOnnxShapeInference(m, {/*strict=*/true, /*check_types=*/true});  // may refuse, must not crash
            }
            ++models;
            swept.insert(s.Name());
          }
    }
  }
  EXPECT_GT(swept.size(), 150u) << models << " models";
}

}  // namespace
}  // namespace poprt::onnxio
