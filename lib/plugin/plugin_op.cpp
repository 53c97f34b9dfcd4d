#include "lib/plugin/plugin_op.h"

#include <array>
#include <map>
#include <new>

#include "lib/support/limits.h"
#include "lib/support/text.h"

// The node a plugin reads attributes from: an IR node (compute, and inference at run time) or
// libonnx's inference context (shape inference while converting).
struct poprt_node {
  const poprt::ir::Node* node = nullptr;
  const onnx::InferenceContext* inference = nullptr;
  // Attributes read from the inference context, kept until the plugin's call returns (the
  // readers hand out pointers into them).
  mutable std::map<std::string, poprt::ir::AttributeValue> read;

  const poprt::ir::AttributeValue* find(const char* name) const {
    if (node) {
      auto it = node->attributes.find(name);
      return it == node->attributes.end() ? nullptr : &it->second.value;
    }
    const onnx::AttributeProto* ap = inference->getAttribute(name);
    if (!ap) return nullptr;
    poprt::ir::AttributeValue value;
    switch (ap->type()) {
      case onnx::AttributeProto::INT: value = static_cast<int64_t>(ap->i()); break;
      case onnx::AttributeProto::FLOAT: value = ap->f(); break;
      case onnx::AttributeProto::STRING: value = ap->s(); break;
      case onnx::AttributeProto::INTS: value = std::vector<int64_t>(ap->ints().begin(), ap->ints().end()); break;
      case onnx::AttributeProto::FLOATS: value = std::vector<float>(ap->floats().begin(), ap->floats().end()); break;
      default: return nullptr;  // kinds the ABI has no reader for
    }
    return &(read[name] = std::move(value));
  }
};

namespace poprt::plugin {
namespace {

// ---- The host API: attribute readers (never throw across the C boundary) --------------------

template <class T>
const T* attribute(const poprt_node* node, const char* name) {
  if (!node || !name) return nullptr;
  try {
    const ir::AttributeValue* v = node->find(name);
    return v ? std::get_if<T>(v) : nullptr;
  } catch (...) { return nullptr; }
}

int attrInt(const poprt_node* node, const char* name, int64_t* value) {
  const auto* v = attribute<int64_t>(node, name);
  if (!v || !value) return 0;
  *value = *v;
  return 1;
}

int attrFloat(const poprt_node* node, const char* name, float* value) {
  const auto* v = attribute<float>(node, name);
  if (!v || !value) return 0;
  *value = *v;
  return 1;
}

int attrString(const poprt_node* node, const char* name, const char** data, size_t* size) {
  const auto* v = attribute<std::string>(node, name);
  if (!v || !data || !size) return 0;
  *data = v->c_str();
  *size = v->size();
  return 1;
}

int attrInts(const poprt_node* node, const char* name, const int64_t** values, size_t* count) {
  const auto* v = attribute<std::vector<int64_t>>(node, name);
  if (!v || !values || !count) return 0;
  *values = v->data();
  *count = v->size();
  return 1;
}

int attrFloats(const poprt_node* node, const char* name, const float** values, size_t* count) {
  const auto* v = attribute<std::vector<float>>(node, name);
  if (!v || !values || !count) return 0;
  *values = v->data();
  *count = v->size();
  return 1;
}

// ---- Types between poprt and the ABI ----------------------------------------------------------

poprt_tensor_type unknownType() {
  poprt_tensor_type t{};
  t.dtype = POPRT_DTYPE_UNDEFINED;
  t.rank = -1;
  for (auto& d : t.dims) d = -1;
  return t;
}

Expected<poprt_tensor_type> typeOfTensor(const Tensor& x, size_t index) {
  if (x.dtype() == DType::String)
    return Error("input " + std::to_string(index) + " is a string tensor, which plugins cannot take");
  if (x.shape().size() > POPRT_MAX_RANK)
    return Error("input " + std::to_string(index) + " has rank " + std::to_string(x.shape().size()) +
                 ", above the plugin ABI's " + std::to_string(POPRT_MAX_RANK));
  poprt_tensor_type t = unknownType();
  t.dtype = static_cast<int32_t>(x.dtype());
  t.rank = static_cast<int32_t>(x.shape().size());
  for (size_t i = 0; i < x.shape().size(); ++i) t.dims[i] = x.shape()[i];
  return t;
}

poprt_tensor_type typeOfProto(const onnx::TypeProto* type) {
  poprt_tensor_type t = unknownType();
  if (!type || type->value_case() != onnx::TypeProto::kTensorType) return t;
  const auto& tt = type->tensor_type();
  if (dtypeFromOnnx(tt.elem_type())) t.dtype = tt.elem_type();
  if (tt.has_shape() && tt.shape().dim_size() <= POPRT_MAX_RANK) {
    t.rank = tt.shape().dim_size();
    for (int i = 0; i < t.rank; ++i) t.dims[i] = tt.shape().dim(i).has_dim_value() ? tt.shape().dim(i).dim_value() : -1;
  }
  return t;
}

// What the plugin's inference said about output `index`, checked; `complete` asks for a known
// dtype and shape (what compute needs).
Status checkOutputType(const poprt_tensor_type& t, size_t index, bool complete) {
  const std::string what = "the plugin's inference gave output " + std::to_string(index);
  if (t.dtype != POPRT_DTYPE_UNDEFINED || complete) {
    auto dtype = dtypeFromOnnx(t.dtype);
    if (!dtype || dtypeSize(*dtype) == 0) return Error(what + " the element type " + std::to_string(t.dtype));
  }
  if (t.rank < -1 || t.rank > POPRT_MAX_RANK || (complete && t.rank < 0))
    return Error(what + (complete && t.rank == -1 ? " no shape for known inputs" : " rank " + std::to_string(t.rank)));
  for (int32_t i = 0; i < t.rank; ++i)
    if (t.dims[i] < -1 || (complete && t.dims[i] < 0))
      return Error(what + " dim " + std::to_string(t.dims[i]) + (complete ? " for known inputs" : ""));
  return okStatus();
}

// The plugin's one-line reason from its error buffer.
std::string pluginReason(std::array<char, 1024>& buffer) {
  buffer.back() = '\0';
  std::string text(buffer.data());
  if (text.empty()) text = "failed without saying why";
  return escapeControlBytes(isValidUtf8(text) ? text : quoteForError(text), false);
}

class OpAdapter {
 public:
  OpAdapter(const poprt_custom_op& op, std::string library) : op_(op), library_(std::move(library)) {}

  // The outputs' types for these inputs (some may be unknown while converting).
  Expected<std::vector<poprt_tensor_type>> infer(const poprt_node& node, const std::vector<poprt_tensor_type>& inputs,
                                                 bool complete) const {
    std::vector<poprt_tensor_type> outputs(static_cast<size_t>(op_.num_outputs), unknownType());
    std::array<char, 1024> error{};
    int rc = 1;
    try {
      rc = op_.infer(&node, static_cast<int32_t>(inputs.size()), inputs.data(), op_.num_outputs, outputs.data(), error.data(),
                     error.size());
    } catch (...) { return Error(where() + ": its inference threw an exception"); }
    if (rc != 0) return Error(where() + ": " + pluginReason(error));
    for (size_t i = 0; i < outputs.size(); ++i)
      if (auto st = checkOutputType(outputs[i], i, complete); !st.ok()) return st.error().withContext(where());
    return outputs;
  }

  Expected<std::vector<Tensor>> compute(const ir::Node& node, const std::vector<const Tensor*>& in) const {
    POPRT_TRY(checkArity(node.inputs().size(), node.outputs().size()));
    std::vector<poprt_tensor_type> types;
    std::vector<poprt_tensor> inputs;
    for (size_t i = 0; i < in.size(); ++i) {
      poprt_tensor t{unknownType(), nullptr};
      if (in[i]) {
        POPRT_ASSIGN_OR_RETURN(t.type, typeOfTensor(*in[i], i));
        t.data = const_cast<uint8_t*>(in[i]->bytes().data());  // the ABI's inputs are read-only
      } else if (i < static_cast<size_t>(op_.min_inputs)) {
        return Error("input " + std::to_string(i) + " is required");
      }
      types.push_back(t.type);
      inputs.push_back(t);
    }
    poprt_node pn;
    pn.node = &node;
    POPRT_ASSIGN_OR_RETURN(std::vector<poprt_tensor_type> out_types, infer(pn, types, /*complete=*/true));
    POPRT_ASSIGN_OR_RETURN(uint64_t max_bytes, maxTensorBytes());
    std::vector<Tensor> results;
    std::vector<poprt_tensor> outputs;
    for (size_t i = 0; i < out_types.size(); ++i) {
      const auto dtype = static_cast<DType>(out_types[i].dtype);
      Shape shape(out_types[i].dims, out_types[i].dims + out_types[i].rank);
      auto count = checkedNumElements(shape, static_cast<int64_t>(max_bytes / dtypeSize(dtype)));
      if (!count.ok())
        return Error(where() + ": output " + std::to_string(i) + " would be too large (" + count.error().message() + ")");
      results.emplace_back(dtype, shape);
    }
    for (size_t i = 0; i < results.size(); ++i) outputs.push_back({out_types[i], results[i].bytes().data()});
    std::array<char, 1024> error{};
    int rc = 1;
    try {
      rc = op_.compute(&pn, static_cast<int32_t>(inputs.size()), inputs.data(), static_cast<int32_t>(outputs.size()),
                       outputs.data(), error.data(), error.size());
    } catch (...) { return Error(where() + ": its kernel threw an exception"); }
    if (rc != 0) return Error(where() + ": " + pluginReason(error));
    return results;
  }

  // libonnx's inference function: fails inference with a one-line reason.
  void inferForOnnx(onnx::InferenceContext& ctx) const {
    if (auto st = checkArity(ctx.getNumInputs(), ctx.getNumOutputs()); !st.ok()) fail_shape_inference(st.error().message());
    std::vector<poprt_tensor_type> inputs;
    for (size_t i = 0; i < ctx.getNumInputs(); ++i) inputs.push_back(typeOfProto(ctx.getInputType(i)));
    poprt_node pn;
    pn.inference = &ctx;
    auto outputs = infer(pn, inputs, /*complete=*/false);
    if (!outputs.ok()) fail_shape_inference(outputs.error().message());
    for (size_t i = 0; i < outputs->size() && i < ctx.getNumOutputs(); ++i) {
      const poprt_tensor_type& t = (*outputs)[i];
      auto* tt = ctx.getOutputType(i)->mutable_tensor_type();
      if (t.dtype != POPRT_DTYPE_UNDEFINED) tt->set_elem_type(t.dtype);
      if (t.rank < 0) continue;
      auto* shape = tt->mutable_shape();
      shape->clear_dim();
      for (int32_t d = 0; d < t.rank; ++d) {
        auto* dim = shape->add_dim();
        if (t.dims[d] >= 0) dim->set_dim_value(t.dims[d]);
      }
    }
  }

  std::string where() const { return "custom op " + std::string(op_.domain) + "::" + op_.op_type + " (plugin " + library_ + ")"; }

 private:
  Status checkArity(size_t inputs, size_t outputs) const {
    if (inputs < static_cast<size_t>(op_.min_inputs) || inputs > static_cast<size_t>(op_.max_inputs))
      return Error("takes " + std::to_string(op_.min_inputs) + " to " + std::to_string(op_.max_inputs) +
                   " inputs, the node has " + std::to_string(inputs));
    if (outputs != static_cast<size_t>(op_.num_outputs))
      return Error("has " + std::to_string(op_.num_outputs) + " outputs, the node has " + std::to_string(outputs));
    return okStatus();
  }

  poprt_custom_op op_;
  std::string library_;
};

}  // namespace

const poprt_host_api& hostApi() {
  static const poprt_host_api api{POPRT_CUSTOM_OP_ABI_VERSION, attrInt, attrFloat, attrString, attrInts, attrFloats};
  return api;
}

ops::OpDef makeOpDef(const poprt_custom_op& op, const std::string& library) {
  auto adapter = std::make_shared<const OpAdapter>(op, library);
  ops::OpDef def;
  def.op_type = op.op_type;
  def.domain = op.domain;
  def.plugin = library;
  def.fp16 = (op.flags & POPRT_OP_FLOAT16) ? ops::Fp16Policy::Convert : ops::Fp16Policy::KeepFp32;
  def.lowering = ops::LoweringFamily::None;  // the host runs it
  def.eval = [adapter](const ir::Node& node, const std::vector<const Tensor*>& in, ops::EvalContext&) {
    return adapter->compute(node, in);
  };
  return def;
}

onnx::OpSchema makeSchema(const poprt_custom_op& op, const std::string& library) {
  auto adapter = std::make_shared<const OpAdapter>(op, library);
  onnx::OpSchema schema(op.op_type, "plugin " + library, 0);
  schema.SetDomain(op.domain).SinceVersion(1).SetDoc("custom op of plugin " + library);
  for (int32_t i = 0; i < op.max_inputs; ++i) {
    const std::string type = "T" + std::to_string(i);
    schema.Input(i, "input" + std::to_string(i), "", type, i < op.min_inputs ? onnx::OpSchema::Single : onnx::OpSchema::Optional);
    schema.TypeConstraint(type, onnx::OpSchema::all_tensor_types(), "");
  }
  for (int32_t i = 0; i < op.num_outputs; ++i) {
    const std::string type = "U" + std::to_string(i);
    schema.Output(i, "output" + std::to_string(i), "", type);
    schema.TypeConstraint(type, onnx::OpSchema::all_tensor_types(), "");
  }
  schema.TypeAndShapeInferenceFunction([adapter](onnx::InferenceContext& ctx) { adapter->inferForOnnx(ctx); });
  schema.Finalize();
  return schema;
}

}  // namespace poprt::plugin
