#include "lib/onnx/import_checks.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>
#include <onnx/defs/schema.h>

#include <map>
#include <optional>
#include <set>

#include "lib/onnx/graph_walk.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/support/tensor_proto.h"
#include "lib/support/text.h"

namespace poprt::onnxio {
namespace {

using Attr = onnx::AttributeProto;

Status checkType(const onnx::TypeProto& t, const std::string& what) {
  if (t.has_sequence_type()) return checkType(t.sequence_type().elem_type(), what);
  if (t.has_optional_type()) return checkType(t.optional_type().elem_type(), what);
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return okStatus();
  int64_t n = 1;
  bool overflow = false;
  for (const auto& d : t.tensor_type().shape().dim()) {
    if (!d.has_dim_value()) continue;
    const int64_t v = d.dim_value();
    if (v < 0) return Error(what + " has the negative dimension " + std::to_string(v));
    if (v != 0 && n > INT64_MAX / v)
      overflow = true;
    else
      n *= v;
  }
  if (overflow) return Error(what + " declares a shape whose element count does not fit in 64 bits");
  return okStatus();
}

struct CustomOp {
  int min_inputs, max_inputs;
  std::map<std::string, Attr::AttributeType> attrs;
  const char* base = nullptr;  // a default-domain op whose attributes it also takes
};

const std::map<std::string, CustomOp>& customOps() {
  static const std::map<std::string, CustomOp> ops = [] {
    const std::map<std::string, Attr::AttributeType> act = {{"activation", Attr::STRING},
                                                            {"activation_alpha", Attr::FLOAT},
                                                            {"activation_beta", Attr::FLOAT},
                                                            {"activation_min", Attr::FLOAT},
                                                            {"activation_max", Attr::FLOAT}};
    return std::map<std::string, CustomOp>{
        {"Gelu", {1, 1, {{"approximate", Attr::STRING}}}},
        {"LayerNorm", {2, 3, {{"axis", Attr::INT}, {"epsilon", Attr::FLOAT}}}},
        {"MultiHeadAttention", {3, 4, {{"num_heads", Attr::INT}, {"scale", Attr::FLOAT}}}},
        {"ConvAct", {2, 3, act, "Conv"}},
        {"GemmAct", {2, 3, act, "Gemm"}},
        {"ElementwiseChain", {1, 65, {{"ops", Attr::STRINGS}, {"operands", Attr::INTS}}}},
    };
  }();
  return ops;
}

std::optional<Attr::AttributeType> attrType(const CustomOp& op, const std::string& name, int64_t opset) {
  if (auto it = op.attrs.find(name); it != op.attrs.end()) return it->second;
  if (op.base)
    if (const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op.base, static_cast<int>(opset))) {
      auto it = s->attributes().find(name);
      if (it != s->attributes().end()) return it->second.type;
    }
  return std::nullopt;
}

Status checkNames(const onnx::GraphProto& g, const std::string& where, std::set<std::string> defined) {
  std::set<std::string> local;  // defined in this graph, for duplicates (outer names may be shadowed)
  auto define = [&](const std::string& name, const std::string& by) -> Status {
    if (name.empty()) return okStatus();
    if (!local.insert(name).second) return Error(where + ": value '" + name + "' is defined twice (again by " + by + ")");
    defined.insert(name);
    return okStatus();
  };
  for (const auto& v : g.input()) POPRT_TRY(define(v.name(), "a graph input"));
  for (const auto& t : g.initializer())
    if (!local.count(t.name())) POPRT_TRY(define(t.name(), "an initializer"));  // IR < 4 lists them as inputs too
  for (const auto& n : g.node()) {
    const std::string node = "node '" + n.name() + "' (" + n.op_type() + ")";
    for (const auto& in : n.input())
      if (!in.empty() && !defined.count(in))
        return Error(where + ": " + node + " reads '" + in +
                     "', which no graph input, initializer or earlier node defines (a missing value, or a cycle)");
    for (const auto& a : n.attribute()) {
      const std::string sub = where + ": " + node + " attribute '" + a.name() + "'";
      if (a.has_g()) POPRT_TRY(checkNames(a.g(), sub + ": graph '" + a.g().name() + "'", defined));
      for (const auto& g2 : a.graphs()) POPRT_TRY(checkNames(g2, sub + ": graph '" + g2.name() + "'", defined));
    }
    for (const auto& out : n.output()) POPRT_TRY(define(out, node));
  }
  for (const auto& v : g.output())
    if (!defined.count(v.name())) return Error(where + ": graph output '" + v.name() + "' is never produced");
  return okStatus();
}

}  // namespace

Status checkGraphStructure(const onnx::GraphProto& graph, const std::string& source) {
  return checkNames(graph, source + ": graph '" + graph.name() + "'", {});
}

Status checkExternalLocations(const onnx::GraphProto& graph, const std::filesystem::path& model_dir, const std::string& source) {
  return forEachGraph(
      graph, source + ": graph '" + graph.name() + "'", [&](const onnx::GraphProto& g, const std::string& where) -> Status {
        auto check = [&](const onnx::TensorProto& t, const std::string& what) -> Status {
          if (t.data_location() != onnx::TensorProto::EXTERNAL) return okStatus();
          auto file = externalDataFile(t, model_dir);
          if (!file.ok()) return file.error().withContext(where + ": " + what);
          return okStatus();
        };
        for (const auto& t : g.initializer()) POPRT_TRY(check(t, "initializer '" + t.name() + "'"));
        for (const auto& n : g.node())
          for (const auto& a : n.attribute()) {
            const std::string attr = "node '" + n.name() + "' (" + n.op_type() + "): attribute '" + a.name() + "'";
            if (a.has_t()) POPRT_TRY(check(a.t(), attr));
            for (const auto& t : a.tensors()) POPRT_TRY(check(t, attr));
          }
        return okStatus();
      });
}

Status checkDeclaredShapes(const onnx::GraphProto& graph, const std::string& source) {
  return forEachGraph(
      graph, source + ": graph '" + graph.name() + "'", [](const onnx::GraphProto& g, const std::string& where) -> Status {
        for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
          for (const auto& v : *list) POPRT_TRY(checkType(v.type(), where + ": value '" + v.name() + "'"));
        for (const auto& t : g.initializer())
          if (auto st = checkTensorDeclaration(t); !st.ok())
            return st.error().withContext(where + ": initializer '" + t.name() + "'");
        for (const auto& n : g.node())
          for (const auto& a : n.attribute()) {
            const std::string attr = where + ": node '" + n.name() + "' (" + n.op_type() + "): attribute '" + a.name() + "'";
            if (a.has_t())
              if (auto st = checkTensorDeclaration(a.t()); !st.ok()) return st.error().withContext(attr);
            for (const auto& t : a.tensors())
              if (auto st = checkTensorDeclaration(t); !st.ok()) return st.error().withContext(attr);
          }
        return okStatus();
      });
}

namespace {

// The path of the first string field of `m` (below `path`) that is not UTF-8; "" when all are.
// Recursion is bounded by protobuf's parse depth (100 nested messages).
std::string firstNonUtf8(const google::protobuf::Message& m, const std::string& path) {
  using FD = google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const FD*> fields;
  r->ListFields(m, &fields);
  std::string scratch;
  for (const FD* f : fields) {
    const std::string name = path + (path.empty() ? "" : ".") + f->name();
    const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      const std::string at = f->is_repeated() ? name + "[" + std::to_string(i) + "]" : name;
      if (f->type() == FD::TYPE_STRING) {
        const std::string& s =
            f->is_repeated() ? r->GetRepeatedStringReference(m, f, i, &scratch) : r->GetStringReference(m, f, &scratch);
        if (!isValidUtf8(s)) return at;
      } else if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
        const auto& sub = f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f);
        if (std::string bad = firstNonUtf8(sub, at); !bad.empty()) return bad;
      }
    }
  }
  return "";
}

}  // namespace

Status checkTextFields(const onnx::ModelProto& model, const std::string& source) {
  if (std::string bad = firstNonUtf8(model, ""); !bad.empty())
    return Error(source + ": " + bad + " is not valid UTF-8 (ONNX strings must be)");
  return okStatus();
}

Status checkWindowAttributes(const onnx::GraphProto& graph, const std::string& source) {
  // Whatever the op (Conv, the pools, ConvTranspose, ai.graphcore ConvAct...), these attributes
  // count elements of a window: ONNX wants them positive, and libonnx's shape inference divides
  // by strides and dilations unchecked. The cap keeps its products and sums inside int64.
  constexpr int64_t kMaxWindowValue = int64_t{1} << 31;
  return forEachGraph(graph, source + ": graph '" + graph.name() + "'",
                      [&](const onnx::GraphProto& g, const std::string& where) -> Status {
                        for (const auto& n : g.node())
                          for (const auto& a : n.attribute()) {
                            if (a.name() != "strides" && a.name() != "dilations" && a.name() != "kernel_shape") continue;
                            for (int64_t v : a.ints())
                              if (v < 1 || v > kMaxWindowValue)
                                return Error(where + ": node '" + n.name() + "' (" + n.op_type() + "): attribute '" + a.name() +
                                             "' has " + std::to_string(v) + "; each value must be from 1 to 2^31");
                          }
                        return okStatus();
                      });
}

Status checkForVersionConverter(const onnx::GraphProto& graph, const std::string& source) {
  return forEachGraph(
      graph, source + ": graph '" + graph.name() + "'", [](const onnx::GraphProto& g, const std::string& where) -> Status {
        std::map<std::string, int> ranks;  // declared (or initializer) ranks; -1: declared without a shape
        auto declare = [&](const onnx::ValueInfoProto& v) {
          const auto& t = v.type();
          ranks[v.name()] = t.has_tensor_type() && t.tensor_type().has_shape() ? t.tensor_type().shape().dim_size() : -1;
        };
        for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
          for (const auto& v : *list) declare(v);
        for (const auto& t : g.initializer()) ranks[t.name()] = t.dims_size();
        for (const auto& n : g.node()) {
          const std::string node = where + ": node '" + n.name() + "' (" + n.op_type() + ")";
          if (n.op_type() == "ConstantFill")
            return Error(node + ": the ONNX version converter cannot convert ConstantFill (an experimental op)");
          if (n.op_type() != "Gemm" || !n.domain().empty()) continue;
          for (int i = 0; i < 2 && i < n.input_size(); ++i) {
            auto it = ranks.find(n.input(i));
            if (it == ranks.end() || it->second != 2)
              return Error(node + ": the ONNX version converter needs input '" + n.input(i) +
                           "' declared as a 2-D tensor (in the graph's inputs, initializers or value_info)" +
                           (it == ranks.end() || it->second < 0 ? "" : ", not " + std::to_string(it->second) + "-D"));
          }
        }
        return okStatus();
      });
}

Status checkCustomOps(const onnx::GraphProto& graph, int64_t opset, const std::string& source) {
  return forEachGraph(
      graph, source + ": graph '" + graph.name() + "'", [&](const onnx::GraphProto& g, const std::string& where) -> Status {
        for (const auto& n : g.node()) {
          if (n.domain() != ops::graphcore::kDomain) continue;
          auto it = customOps().find(n.op_type());
          if (it == customOps().end()) continue;  // the importer reports ops it does not know
          const CustomOp& op = it->second;
          const std::string node = where + ": node '" + n.name() + "' (" + n.domain() + "." + n.op_type() + ")";
          // Trailing empty names are omitted optional inputs, as in ONNX.
          int inputs = n.input_size();
          while (inputs > 0 && n.input(inputs - 1).empty()) --inputs;
          if (inputs < op.min_inputs || inputs > op.max_inputs)
            return Error(node + " has " + std::to_string(inputs) + " inputs, expected " + std::to_string(op.min_inputs) +
                         (op.max_inputs != op.min_inputs ? " to " + std::to_string(op.max_inputs) : ""));
          if (n.output_size() != 1) return Error(node + " has " + std::to_string(n.output_size()) + " outputs, expected 1");
          for (const auto& a : n.attribute()) {
            auto type = attrType(op, a.name(), opset);
            if (!type) return Error(node + " has an unknown attribute '" + a.name() + "'");
            if (a.type() != *type)
              return Error(node + ": attribute '" + a.name() + "' is " + Attr::AttributeType_Name(a.type()) + ", expected " +
                           Attr::AttributeType_Name(*type));
          }
        }
        return okStatus();
      });
}

}  // namespace poprt::onnxio
