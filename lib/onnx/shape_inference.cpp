#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <unordered_map>

#include "lib/onnx/inference_guard.h"
#include "lib/onnx/onnx_io.h"
#include "lib/onnx/type_map.h"

namespace poprt::onnxio {
namespace {

// A type from inference replaces ours when it tells more: a known dtype, a rank, static dims.
void merge(ir::TensorType& ours, const ir::TensorType& inferred) {
  if (!ours.isTensor() || !inferred.isTensor()) {
    if (ours.opaque.empty()) ours.opaque = inferred.opaque;
    return;
  }
  if (ours.dtype == DType::Undefined) ours.dtype = inferred.dtype;
  if (!inferred.dims) return;
  if (!ours.dims || ours.dims->size() != inferred.dims->size()) {
    ours.dims = inferred.dims;
    return;
  }
  for (size_t i = 0; i < ours.dims->size(); ++i) {
    ir::Dim& d = (*ours.dims)[i];
    const ir::Dim& e = (*inferred.dims)[i];
    if (!d.isStatic() && (e.isStatic() || d.symbol.empty())) d = e;
  }
}

// Walks the IR graph and its exported proto in step (export keeps node order).
void update(ir::Graph& g, const onnx::GraphProto& gp) {
  std::unordered_map<std::string, const onnx::TypeProto*> types;
  for (const auto& vi : gp.value_info()) types[vi.name()] = &vi.type();
  for (const auto& vi : gp.output()) types[vi.name()] = &vi.type();
  auto node_it = gp.node().begin();
  for (const auto& n : g.nodes()) {
    if (node_it == gp.node().end()) break;
    for (ir::Value* out : n->outputs()) {
      if (!out) continue;
      if (auto it = types.find(out->name()); it != types.end()) merge(out->type, typeFromProto(*it->second));
    }
    for (const auto& ap : node_it->attribute()) {
      auto attr = n->attributes.find(ap.name());
      if (attr == n->attributes.end()) continue;
      if (auto* sg = std::get_if<ir::GraphPtr>(&attr->second.value); sg && ap.has_g()) update(**sg, ap.g());
      if (auto* sgs = std::get_if<std::vector<ir::GraphPtr>>(&attr->second.value))
        for (size_t i = 0; i < sgs->size() && i < static_cast<size_t>(ap.graphs_size()); ++i)
          update(*(*sgs)[i], ap.graphs(static_cast<int>(i)));
    }
    ++node_it;
  }
}

// Outputs of nodes ONNX has no schema for (custom domains such as ai.graphcore's fused ops):
// inference cannot recompute their types, so they are handed to it, and values downstream of
// such nodes are still inferred.
void keepCustomOpTypes(const ir::Graph& g, onnx::GraphProto& gp) {
  for (const auto& n : g.nodes()) {
    const std::string& d = n->domain();
    if (d.empty() || d == "ai.onnx" || d == "ai.onnx.ml" || d == "ai.onnx.preview.training") continue;
    for (const ir::Value* out : n->outputs()) {
      if (!out || out->isGraphOutput() || !out->type.isTensor() || out->type.dtype == DType::Undefined) continue;
      auto* vi = gp.add_value_info();
      vi->set_name(out->name());
      typeToProto(out->type, vi->mutable_type());
    }
  }
}

}  // namespace

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string libraryFailure(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) || dynamic_cast<const std::length_error*>(&e))
    return "libonnx asked for more memory than the model can need (malformed sizes?)";
  if (dynamic_cast<const std::out_of_range*>(&e)) return "libonnx indexed past the end of a list (malformed model?)";
  return oneLine(e.what());
}

namespace {

// libonnx's inference errors repeat their category at every level ("[ShapeInferenceError] Shape
// inference error(s): (op_type:Conv): [ShapeInferenceError] ..."): the line keeps the node and
// what is wrong with it.
std::string inferenceMessage(const std::string& what) {
  std::string text = oneLine(what);
  for (const std::string noise : {"[ShapeInferenceError] ", "[TypeInferenceError] ", "Shape inference error(s): "})
    for (size_t at; (at = text.find(noise)) != std::string::npos;) text.erase(at, noise.size());
  return text;
}

}  // namespace

Status runOnnxShapeInference(onnx::ModelProto& proto, InferenceStrictness strictness) {
  try {
    onnx::shape_inference::InferShapes(proto, &guardedSchemas(),
                                       onnx::ShapeInferenceOptions(strictness.check_types, strictness.strict ? 1 : 0, true));
  } catch (const onnx::InferenceError& e) {
    return Error("ONNX shape inference: " + inferenceMessage(e.what()));
  } catch (const std::exception& e) { return Error("ONNX shape inference: " + libraryFailure(e)); }
  return okStatus();
}

Status inferShapes(ir::Model& model) {
  onnx::ModelProto proto = exportModelProto(model, WeightData::ShapesOnly);
  // Old types would only constrain inference; clear what it can recompute.
  proto.mutable_graph()->clear_value_info();
  keepCustomOpTypes(*model.graph, *proto.mutable_graph());
  POPRT_TRY(runOnnxShapeInference(proto));
  update(*model.graph, proto.graph());
  return okStatus();
}

}  // namespace poprt::onnxio
