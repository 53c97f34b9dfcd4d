#include "codegen/host_program.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <set>

#include "lib/onnx/type_map.h"

namespace poprt::codegen {

std::vector<const ir::Value*> valuesRead(const ir::Node& node, const ir::Graph& graph) {
  std::vector<const ir::Value*> out;
  std::set<const ir::Value*> seen;
  std::function<void(const ir::Node&)> visit = [&](const ir::Node& n) {
    for (const ir::Value* v : n.inputs())
      if (v && v->graph() == &graph && seen.insert(v).second) out.push_back(v);
    for (const auto& [name, attr] : n.attributes) {
      std::vector<ir::GraphPtr> subs;
      if (auto* g = std::get_if<ir::GraphPtr>(&attr.value)) subs.push_back(*g);
      if (auto* gs = std::get_if<std::vector<ir::GraphPtr>>(&attr.value)) subs = *gs;
      for (const auto& sub : subs)
        if (sub)
          for (const auto& inner : sub->nodes()) visit(*inner);
    }
  };
  visit(node);
  return out;
}

std::string hostProgramModel(const ir::Model& model, const onnx::ModelProto& whole, const std::vector<size_t>& nodes,
                             const std::vector<const ir::Value*>& inputs, const std::vector<const ir::Value*>& outputs,
                             const std::string& name) {
  onnx::ModelProto proto;
  proto.set_ir_version(model.ir_version);
  *proto.mutable_opset_import() = whole.opset_import();
  *proto.mutable_functions() = whole.functions();
  auto* g = proto.mutable_graph();
  g->set_name(name);
  auto valueInfo = [](const ir::Value* v, onnx::ValueInfoProto* vi) {
    vi->set_name(v->name());
    onnxio::typeToProto(v->type, vi->mutable_type());
  };
  for (const ir::Value* v : inputs) valueInfo(v, g->add_input());
  for (const ir::Value* v : outputs) valueInfo(v, g->add_output());
  std::set<std::string> needed;
  for (size_t i : nodes) {
    const auto& np = whole.graph().node(static_cast<int>(i));
    *g->add_node() = np;
  }
  // Initializers the nodes (or their subgraphs) read from the main graph.
  std::set<std::string> input_names;
  for (const ir::Value* v : inputs) input_names.insert(v->name());
  size_t index = 0;
  std::set<size_t> wanted(nodes.begin(), nodes.end());
  for (const auto& n : model.graph->nodes()) {
    if (wanted.count(index++))
      for (const ir::Value* v : valuesRead(*n, *model.graph))
        if (v->isInitializer() && !input_names.count(v->name())) needed.insert(v->name());
  }
  for (const auto& t : whole.graph().initializer())
    if (needed.count(t.name())) *g->add_initializer() = t;
  return proto.SerializeAsString();
}

}  // namespace poprt::codegen
