#include <onnx/onnx_pb.h>

#include <optional>
#include <unordered_set>

#include "lib/onnx/onnx_io.h"
#include "lib/onnx/type_map.h"
#include "lib/support/exact_integers.h"
#include "lib/support/file_io.h"
#include "lib/support/tensor_proto.h"

namespace poprt::onnxio {
namespace {

void exportGraph(const ir::Graph& g, onnx::GraphProto* gp, WeightData weights);

void valueInfo(const ir::Value& v, onnx::ValueInfoProto* vi) {
  vi->set_name(v.name());
  if (!v.doc_string.empty()) vi->set_doc_string(v.doc_string);
  if (v.type.dtype != DType::Undefined || !v.type.isTensor()) typeToProto(v.type, vi->mutable_type());
}

void exportAttribute(const std::string& name, const ir::Attribute& attr, onnx::AttributeProto* ap, WeightData weights) {
  ap->set_name(name);
  if (!attr.doc_string.empty()) ap->set_doc_string(attr.doc_string);
  const auto& v = attr.value;
  if (auto* f = std::get_if<float>(&v)) {
    ap->set_type(onnx::AttributeProto::FLOAT);
    ap->set_f(*f);
  } else if (auto* i = std::get_if<int64_t>(&v)) {
    ap->set_type(onnx::AttributeProto::INT);
    ap->set_i(*i);
  } else if (auto* s = std::get_if<std::string>(&v)) {
    ap->set_type(onnx::AttributeProto::STRING);
    ap->set_s(*s);
  } else if (auto* t = std::get_if<Tensor>(&v)) {
    ap->set_type(onnx::AttributeProto::TENSOR);
    tensorToProto(*t, "", ap->mutable_t());
  } else if (auto* g = std::get_if<ir::GraphPtr>(&v)) {
    ap->set_type(onnx::AttributeProto::GRAPH);
    exportGraph(**g, ap->mutable_g(), weights);
  } else if (auto* fs = std::get_if<std::vector<float>>(&v)) {
    ap->set_type(onnx::AttributeProto::FLOATS);
    for (float x : *fs) ap->add_floats(x);
  } else if (auto* is = std::get_if<std::vector<int64_t>>(&v)) {
    ap->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : *is) ap->add_ints(x);
  } else if (auto* ss = std::get_if<std::vector<std::string>>(&v)) {
    ap->set_type(onnx::AttributeProto::STRINGS);
    for (const auto& x : *ss) ap->add_strings(x);
  } else if (auto* ts = std::get_if<std::vector<Tensor>>(&v)) {
    ap->set_type(onnx::AttributeProto::TENSORS);
    for (const auto& x : *ts) tensorToProto(x, "", ap->add_tensors());
  } else if (auto* gs = std::get_if<std::vector<ir::GraphPtr>>(&v)) {
    ap->set_type(onnx::AttributeProto::GRAPHS);
    for (const auto& x : *gs) exportGraph(*x, ap->add_graphs(), weights);
  } else if (auto* tp = std::get_if<ir::TensorType>(&v)) {
    ap->set_type(onnx::AttributeProto::TYPE_PROTO);
    typeToProto(*tp, ap->mutable_tp());
  } else if (auto* tps = std::get_if<std::vector<ir::TensorType>>(&v)) {
    ap->set_type(onnx::AttributeProto::TYPE_PROTOS);
    for (const auto& x : *tps) typeToProto(x, ap->add_type_protos());
  }
}

// A graph's node names, each once: ONNX Runtime refuses a graph with two nodes of one name, and
// passes name the nodes they make after the node they replace, which can repeat a name (the Min
// nodes quantized_to_float makes of a DynamicQuantizeLinear). The first node of a name keeps it;
// a repeat, or a node the export adds, gets the first "_<k>" suffix no node of the graph has.
class NodeNames {
 public:
  explicit NodeNames(const ir::Graph& g) {
    for (const auto& n : g.nodes()) taken_.insert(n->name());
  }
  std::string of(const ir::Node& n) {
    if (n.name().empty() || emitted_.insert(n.name()).second) return n.name();
    return fresh(n.name());
  }
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (size_t k = 1; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
    taken_.insert(name);
    emitted_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> taken_, emitted_;
};

// The value names of the graphs nested in g's nodes (If branches, Loop bodies), at every depth:
// a name the export adds to g must not be one of them either (ONNX names a value once in scope).
void nestedNames(const ir::Graph& g, std::unordered_set<std::string>& names) {
  for (const auto& n : g.nodes())
    for (const ir::Graph* sub : n->subgraphs()) {
      for (const ir::Value* v : sub->inputs()) names.insert(v->name());
      for (const ir::Value* v : sub->initializers()) names.insert(v->name());
      for (const auto& m : sub->nodes())
        for (const ir::Value* out : m->outputs())
          if (out) names.insert(out->name());
      nestedNames(*sub, names);
    }
}

void exportGraph(const ir::Graph& g, onnx::GraphProto* gp, WeightData weights) {
  NodeNames node_names(g);
  std::optional<std::unordered_set<std::string>> taken;  // nested names and the added ones, once needed
  auto freshValueName = [&](const std::string& base) {
    if (!taken) nestedNames(g, taken.emplace());
    std::string name = base;
    for (size_t k = 1; g.findValue(name) || taken->count(name); ++k) name = base + "_" + std::to_string(k);
    taken->insert(name);
    return name;
  };
  gp->set_name(g.name());
  if (!g.doc_string.empty()) gp->set_doc_string(g.doc_string);
  for (const ir::Value* v : g.inputs()) valueInfo(*v, gp->add_input());
  for (const ir::Value* v : g.initializers()) {
    if (weights == WeightData::ShapesOnly && v->initializer()->numElements() > kShapeDataElements) {
      if (!v->isGraphInput()) valueInfo(*v, gp->add_input());  // its type, without its values
      continue;
    }
    if (weights == WeightData::IntegersNarrowed && !v->isGraphInput() && v->initializer()->numElements() > kShapeDataElements)
      if (auto narrow = exactIntegerStorage(*v->initializer())) {
        const std::string stored = freshValueName(v->name() + "/" + std::string(dtypeName(*narrow)));
        tensorToProto(narrowedTo(*v->initializer(), *narrow), stored, gp->add_initializer());
        auto* cast = gp->add_node();  // first: every node after it may read the weight
        cast->set_op_type("Cast");
        cast->set_name(node_names.fresh(stored));
        cast->add_input(stored);
        cast->add_output(v->name());
        auto* to = cast->add_attribute();
        to->set_name("to");
        to->set_type(onnx::AttributeProto::INT);
        to->set_i(onnx::TensorProto::FLOAT);
        continue;
      }
    tensorToProto(*v->initializer(), v->name(), gp->add_initializer());
  }
  for (const auto& n : g.nodes()) {
    auto* np = gp->add_node();
    np->set_op_type(n->opType());
    if (!n->name().empty()) np->set_name(node_names.of(*n));
    if (!n->domain().empty()) np->set_domain(n->domain());
    if (!n->doc_string.empty()) np->set_doc_string(n->doc_string);
    for (const ir::Value* in : n->inputs()) np->add_input(in ? in->name() : "");
    for (const ir::Value* out : n->outputs()) np->add_output(out ? out->name() : "");
    for (const auto& [name, attr] : n->attributes) exportAttribute(name, attr, np->add_attribute(), weights);
    for (const ir::Value* out : n->outputs())
      if (out && !out->isGraphOutput() && (out->type.dtype != DType::Undefined || !out->type.isTensor()))
        valueInfo(*out, gp->add_value_info());
  }
  for (const ir::Value* v : g.outputs()) valueInfo(*v, gp->add_output());
}

}  // namespace

onnx::ModelProto exportModelProto(const ir::Model& model, WeightData weights) {
  // Narrowed weights are read through ONNX's Cast: not for a model that imports no default domain.
  if (weights == WeightData::IntegersNarrowed && model.opsetVersion("") == 0) weights = WeightData::Full;
  onnx::ModelProto proto;
  proto.set_ir_version(model.ir_version);
  for (const auto& op : model.opset_imports) {
    auto* o = proto.add_opset_import();
    o->set_domain(op.domain);
    o->set_version(op.version);
  }
  if (!model.producer_name.empty()) proto.set_producer_name(model.producer_name);
  if (!model.producer_version.empty()) proto.set_producer_version(model.producer_version);
  if (!model.domain.empty()) proto.set_domain(model.domain);
  if (!model.doc_string.empty()) proto.set_doc_string(model.doc_string);
  if (model.model_version) proto.set_model_version(model.model_version);
  for (const auto& [k, v] : model.metadata_props) {
    auto* p = proto.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  for (const auto& f : model.functions) proto.add_functions()->ParseFromString(f);
  exportGraph(*model.graph, proto.mutable_graph(), weights);
  return proto;
}

Expected<std::string> serializeModel(const ir::Model& model, WeightData weights) {
  onnx::ModelProto proto = exportModelProto(model, weights);
  size_t size = proto.ByteSizeLong();
  if (size > static_cast<size_t>(INT32_MAX))
    return Error("the model is " + std::to_string(size) +
                 " bytes, over protobuf's 2 GiB limit (external data output is not supported yet)");
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) return Error("cannot serialise the model");
  return bytes;
}

}  // namespace poprt::onnxio
