#include <sstream>

#include "lib/ir/graph.h"

namespace poprt::ir {
namespace {

std::string attrToString(const AttributeValue& v) {
  std::ostringstream s;
  auto list = [&s](const auto& xs) {
    s << "[";
    for (size_t i = 0; i < xs.size(); ++i) s << (i ? "," : "") << xs[i];
    s << "]";
  };
  if (auto* f = std::get_if<float>(&v))
    s << *f;
  else if (auto* i = std::get_if<int64_t>(&v))
    s << *i;
  else if (auto* str = std::get_if<std::string>(&v))
    s << '"' << *str << '"';
  else if (auto* t = std::get_if<Tensor>(&v))
    s << "tensor<" << dtypeName(t->dtype()) << shapeToString(t->shape()) << ">";
  else if (auto* g = std::get_if<GraphPtr>(&v))
    s << "graph<" << (*g ? (*g)->name() : "") << ">";
  else if (auto* fs = std::get_if<std::vector<float>>(&v))
    list(*fs);
  else if (auto* is = std::get_if<std::vector<int64_t>>(&v))
    list(*is);
  else if (auto* ss = std::get_if<std::vector<std::string>>(&v))
    list(*ss);
  else if (auto* ts = std::get_if<std::vector<Tensor>>(&v))
    s << "tensors<" << ts->size() << ">";
  else if (auto* gs = std::get_if<std::vector<GraphPtr>>(&v))
    s << "graphs<" << gs->size() << ">";
  else if (auto* tp = std::get_if<TensorType>(&v))
    s << "type<" << tp->toString() << ">";
  else if (auto* tps = std::get_if<std::vector<TensorType>>(&v))
    s << "types<" << tps->size() << ">";
  return s.str();
}

void printGraph(const Graph& g, std::ostringstream& s, const std::string& indent) {
  auto values = [](const std::vector<Value*>& vs) {
    std::string r;
    for (size_t i = 0; i < vs.size(); ++i) {
      if (i) r += ", ";
      r += vs[i] ? "%" + vs[i]->name() + ": " + vs[i]->type.toString() : "_";
    }
    return r;
  };
  s << indent << "graph " << g.name() << "(" << values(g.inputs()) << ") {\n";
  for (const Value* init : g.initializers())
    s << indent << "  %" << init->name() << ": " << init->type.toString() << " = initializer\n";
  for (const auto& n : g.nodes()) {
    s << indent << "  " << values(n->outputs()) << " = " << n->opType() << "(";
    for (size_t i = 0; i < n->inputs().size(); ++i) s << (i ? ", " : "") << (n->inputs()[i] ? "%" + n->inputs()[i]->name() : "_");
    s << ")";
    bool first = true;
    for (const auto& [name, attr] : n->attributes) {
      s << (first ? " {" : ", ") << name << "=" << attrToString(attr.value);
      first = false;
    }
    if (!first) s << "}";
    if (!n->name().empty()) s << "  # " << n->name();
    s << "\n";
    for (const auto& [name, attr] : n->attributes) {
      if (auto* sg = std::get_if<GraphPtr>(&attr.value); sg && *sg) printGraph(**sg, s, indent + "    ");
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&attr.value))
        for (const auto& sub : *sgs)
          if (sub) printGraph(*sub, s, indent + "    ");
    }
  }
  s << indent << "  return ";
  for (size_t i = 0; i < g.outputs().size(); ++i) s << (i ? ", " : "") << "%" << g.outputs()[i]->name();
  s << "\n" << indent << "}\n";
}

}  // namespace

std::string print(const Graph& graph) {
  std::ostringstream s;
  printGraph(graph, s, "");
  return s.str();
}

}  // namespace poprt::ir
