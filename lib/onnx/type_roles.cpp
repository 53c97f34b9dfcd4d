#include "lib/onnx/type_roles.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <set>
#include <string>

#include "lib/ops/graphcore_ops.h"

namespace poprt::onnxio {
namespace {

// The formal parameter behind actual slot i (the last formal one is variadic when declared so).
const onnx::OpSchema::FormalParameter* formalAt(const std::vector<onnx::OpSchema::FormalParameter>& formals, size_t i) {
  if (i < formals.size()) return &formals[i];
  if (!formals.empty() && formals.back().GetOption() == onnx::OpSchema::Variadic) return &formals.back();
  return nullptr;
}

}  // namespace

std::optional<NodeTypeRoles> typeRoles(const ir::Node& node, int64_t opset) {
  NodeTypeRoles roles;
  if (node.domain() == ops::graphcore::kDomain) {
    roles.inputs.assign(node.inputs().size(), TypeRole::Data);
    roles.outputs.assign(node.outputs().size(), TypeRole::Data);
    roles.float16_allowed = true;
    return roles;
  }
  const std::string& domain = node.domain();
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.opType(), static_cast<int>(opset), domain);
  if (!schema) return std::nullopt;

  // The type parameters (T, T1...) that admit float: a Where's bool condition is never data.
  std::set<std::string> params;
  for (const auto& c : schema->typeConstraintParams()) {
    const auto& allowed = c.allowed_type_strs;
    if (std::find(allowed.begin(), allowed.end(), "tensor(float)") != allowed.end() ||
        std::find(allowed.begin(), allowed.end(), "tensor(float16)") != allowed.end())
      params.insert(c.type_param_str);
  }
  std::set<std::string> data;
  auto consider = [&](const onnx::OpSchema::FormalParameter* f) {
    if (f && params.count(f->GetTypeStr())) data.insert(f->GetTypeStr());
  };
  // Input 0's parameter is data (Equal's T, Cast's T1, Resize's T1); so is a present output's
  // parameter when some input shares it (Where's T, Clip's T). A parameter only outputs have
  // (ConstantOfShape's T2, Cast's T2, TopK's I) is set by attributes and stays.
  if (!node.inputs().empty()) consider(formalAt(schema->inputs(), 0));
  std::set<std::string> input_params;
  for (size_t i = 0; i < node.inputs().size(); ++i)
    if (const auto* f = formalAt(schema->inputs(), i)) input_params.insert(f->GetTypeStr());
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    const auto* f = formalAt(schema->outputs(), i);
    if (node.output(i) && f && input_params.count(f->GetTypeStr())) consider(f);
  }

  auto roleOf = [&](const onnx::OpSchema::FormalParameter* f) {
    return f && data.count(f->GetTypeStr()) ? TypeRole::Data : TypeRole::Fixed;
  };
  for (size_t i = 0; i < node.inputs().size(); ++i) roles.inputs.push_back(roleOf(formalAt(schema->inputs(), i)));
  for (size_t i = 0; i < node.outputs().size(); ++i) roles.outputs.push_back(roleOf(formalAt(schema->outputs(), i)));
  roles.float16_allowed = !data.empty();
  for (const auto& c : schema->typeConstraintParams()) {
    if (!data.count(c.type_param_str)) continue;
    const auto& allowed = c.allowed_type_strs;
    if (std::find(allowed.begin(), allowed.end(), "tensor(float16)") == allowed.end()) roles.float16_allowed = false;
  }
  return roles;
}

}  // namespace poprt::onnxio
