#include "lib/ir/graph.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

namespace poprt::ir {

TensorType TensorType::of(DType t, const Shape& shape) {
  TensorType type;
  type.dtype = t;
  type.dims.emplace();
  for (int64_t d : shape) type.dims->push_back(Dim::fixed(d));
  return type;
}

bool TensorType::hasStaticShape() const {
  return dims && std::all_of(dims->begin(), dims->end(), [](const Dim& d) { return d.isStatic(); });
}

Shape TensorType::staticShape() const {
  POPRT_CHECK(hasStaticShape(), "shape is not static: " + toString());
  Shape s;
  for (const Dim& d : *dims) s.push_back(d.value);
  return s;
}

int64_t TensorType::numElements() const {
  POPRT_CHECK(hasStaticShape(), "shape is not static: " + toString());
  int64_t n = 1;  // from the dims, without building the shape: the compiler asks often
  for (const Dim& d : *dims) n *= d.value;
  return n;
}

std::string TensorType::toString() const {
  if (!isTensor()) return "<non-tensor>";
  std::string s(dtypeName(dtype));
  if (!dims) return s + "[*]";
  s += "[";
  for (size_t i = 0; i < dims->size(); ++i) {
    if (i) s += ",";
    const Dim& d = (*dims)[i];
    s += d.isStatic() ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol);
  }
  return s + "]";
}

bool Value::isGraphInput() const {
  const auto& in = graph_->inputs();
  return std::find(in.begin(), in.end(), this) != in.end();
}

bool Value::isGraphOutput() const {
  const auto& out = graph_->outputs();
  return std::find(out.begin(), out.end(), this) != out.end();
}

std::string Node::describe() const {
  return "node '" + (name_.empty() ? std::string("<unnamed>") : name_) + "' (" + op_type_ + ")";
}

void Node::setInput(size_t i, Value* v) {
  POPRT_CHECK(i < inputs_.size(), "input index out of range");
  if (Value* old = inputs_[i]) {
    auto& uses = old->uses_;
    uses.erase(std::find(uses.begin(), uses.end(), Use{this, i}));
  }
  inputs_[i] = v;
  if (v) v->uses_.push_back({this, i});
}

void Node::addInput(Value* v) {
  inputs_.push_back(nullptr);
  setInput(inputs_.size() - 1, v);
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& [name, attr] : attributes) {
    if (auto* g = std::get_if<GraphPtr>(&attr.value); g && *g) out.push_back(g->get());
    if (auto* gs = std::get_if<std::vector<GraphPtr>>(&attr.value))
      for (const auto& b : *gs)
        if (b) out.push_back(b.get());
  }
  return out;
}

int64_t Node::attrInt(const std::string& name, int64_t fallback) const {
  auto it = attributes.find(name);
  if (it == attributes.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second.value)) return *v;
  return fallback;
}

float Node::attrFloat(const std::string& name, float fallback) const {
  auto it = attributes.find(name);
  if (it == attributes.end()) return fallback;
  if (auto* v = std::get_if<float>(&it->second.value)) return *v;
  return fallback;
}

std::string Node::attrString(const std::string& name, const std::string& fallback) const {
  auto it = attributes.find(name);
  if (it == attributes.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second.value)) return *v;
  return fallback;
}

std::vector<int64_t> Node::attrInts(const std::string& name, std::vector<int64_t> fallback) const {
  auto it = attributes.find(name);
  if (it == attributes.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second.value)) return *v;
  return fallback;
}

std::vector<float> Node::attrFloats(const std::string& name, std::vector<float> fallback) const {
  auto it = attributes.find(name);
  if (it == attributes.end()) return fallback;
  if (auto* v = std::get_if<std::vector<float>>(&it->second.value)) return *v;
  return fallback;
}

Value* Graph::addValue(const std::string& name, TensorType type) {
  POPRT_CHECK(name.empty() || !by_name_.count(name), "duplicate value name '" + name + "'");
  auto v = std::make_unique<Value>();
  v->name_ = name;
  v->graph_ = this;
  v->type = std::move(type);
  Value* raw = v.get();
  values_.push_back(std::move(v));
  if (!name.empty()) by_name_[name] = raw;
  return raw;
}

Value* Graph::addInput(const std::string& name, TensorType type) {
  Value* v = addValue(name, std::move(type));
  inputs_.push_back(v);
  return v;
}

Value* Graph::addInitializer(const std::string& name, Tensor data) {
  Value* v = findLocalValue(name);
  if (!v) v = addValue(name, TensorType::of(data.dtype(), data.shape()));
  setInitializer(v, std::make_shared<const Tensor>(std::move(data)));
  return v;
}

void Graph::setInitializer(Value* v, std::shared_ptr<const Tensor> data) {
  POPRT_CHECK(v->graph_ == this, "initializer of another graph");
  if (!v->initializer_) initializers_.push_back(v);
  v->type.dtype = data->dtype();
  v->type.dims.emplace();
  for (int64_t d : data->shape()) v->type.dims->push_back(Dim::fixed(d));
  v->initializer_ = std::move(data);
}

Value* Graph::findLocalValue(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::findValue(const std::string& name) const {
  for (const Graph* g = this; g; g = g->parent_)
    if (Value* v = g->findLocalValue(name)) return v;
  return nullptr;
}

std::string Graph::uniqueName(const std::string& base) const {
  if (!findValue(base)) return base;
  for (size_t i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!findValue(candidate)) return candidate;
  }
}

Node* Graph::addNode(const std::string& op_type, const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                     const std::string& name, const std::string& domain) {
  auto node = std::make_unique<Node>();
  node->op_type_ = op_type;
  node->domain_ = canonicalDomain(domain);
  node->name_ = name;
  node->graph_ = this;
  for (Value* v : inputs) node->addInput(v);
  for (Value* v : outputs) {
    if (v) {
      POPRT_CHECK(v->producer_ == nullptr, "value '" + v->name() + "' already has a producer");
      v->producer_ = node.get();
    }
    node->outputs_.push_back(v);
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

namespace {
// Drops the uses that `node` and its subgraphs hold on values (so outer values forget them).
void dropUses(Node* node) {
  for (size_t i = 0; i < node->inputs().size(); ++i) node->setInput(i, nullptr);
  for (auto& [name, attr] : node->attributes) {
    auto visit = [](const GraphPtr& g) {
      if (!g) return;
      for (const auto& inner : g->nodes()) dropUses(inner.get());
    };
    if (auto* g = std::get_if<GraphPtr>(&attr.value)) visit(*g);
    if (auto* gs = std::get_if<std::vector<GraphPtr>>(&attr.value))
      for (const auto& g : *gs) visit(g);
  }
}
}  // namespace

void Graph::makeConstant(Value* v, Tensor data) {
  POPRT_CHECK(v->graph_ == this, "makeConstant on a value of another graph");
  if (Node* p = v->producer_)
    for (Value*& out : p->outputs_)
      if (out == v) out = nullptr;
  v->producer_ = nullptr;
  setInitializer(v, std::make_shared<const Tensor>(std::move(data)));
}

void Graph::setNodeOutput(Node* node, size_t i, Value* v) {
  POPRT_CHECK(node->graph_ == this && v->graph_ == this, "setNodeOutput across graphs");
  POPRT_CHECK(i < node->outputs_.size(), "setNodeOutput: output index out of range");
  POPRT_CHECK(!v->producer_ && !v->initializer_ && !v->isGraphInput(), "setNodeOutput: '" + v->name() + "' is already made");
  if (Value* old = node->outputs_[i]) old->producer_ = nullptr;
  node->outputs_[i] = v;
  v->producer_ = node;
}

void Graph::removeNode(Node* node) {
  for (Value* out : node->outputs_) {
    if (!out) continue;
    POPRT_CHECK(out->uses_.empty() && !out->isGraphOutput(), "removing " + node->describe() + " whose output is used");
    out->producer_ = nullptr;
  }
  dropUses(node);
  nodes_.remove_if([node](const std::unique_ptr<Node>& n) { return n.get() == node; });
}

void Graph::replaceAllUses(Value* from, Value* to) {
  std::vector<Use> uses = from->uses_;
  for (const Use& u : uses) u.node->setInput(u.input_index, to);
  for (Value*& out : outputs_)
    if (out == from) out = to;
}

void Graph::removeUnusedValues(bool initializers_too) {
  std::unordered_set<const Value*> keep(inputs_.begin(), inputs_.end());
  keep.insert(outputs_.begin(), outputs_.end());
  auto unused = [&](const std::unique_ptr<Value>& v) {
    if (keep.count(v.get()) || !v->uses_.empty() || v->producer_) return false;
    if (v->initializer_ && !initializers_too) return false;
    return true;
  };
  std::erase_if(initializers_, [&](Value* v) { return v->uses_.empty() && initializers_too && !keep.count(v); });
  for (const auto& v : values_)
    if (unused(v) && !v->name_.empty()) by_name_.erase(v->name_);
  std::erase_if(values_, unused);
}

Status Graph::topoSort() {
  std::unordered_map<const Node*, size_t> pending;
  std::vector<Node*> order;
  std::vector<Node*> ready;
  // A node waits for producers in this graph, including those its subgraphs read from.
  std::unordered_map<const Node*, std::vector<Node*>> consumers;
  std::function<void(const Graph&, Node*)> collect = [&](const Graph& g, Node* owner) {
    for (const auto& n : g.nodes()) {
      for (Value* in : n->inputs()) {
        if (in && in->producer_ && in->graph_ == this) {
          consumers[in->producer_].push_back(owner);
          ++pending[owner];
        }
      }
      for (auto& [name, attr] : n->attributes) {
        if (auto* sg = std::get_if<GraphPtr>(&attr.value); sg && *sg) collect(**sg, owner);
        if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&attr.value))
          for (const auto& s : *sgs)
            if (s) collect(*s, owner);
      }
    }
  };
  for (const auto& n : nodes_) {
    pending.emplace(n.get(), 0);
    for (Value* in : n->inputs()) {
      if (in && in->producer_ && in->graph_ == this) {
        consumers[in->producer_].push_back(n.get());
        ++pending[n.get()];
      }
    }
    for (auto& [name, attr] : n->attributes) {
      if (auto* sg = std::get_if<GraphPtr>(&attr.value); sg && *sg) collect(**sg, n.get());
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&attr.value))
        for (const auto& s : *sgs)
          if (s) collect(*s, n.get());
    }
  }
  // Stable: repeatedly take the earliest ready node in the current order.
  std::unordered_map<const Node*, size_t> position;
  size_t idx = 0;
  for (const auto& n : nodes_) position[n.get()] = idx++;
  auto later = [&](Node* a, Node* b) { return position[a] > position[b]; };
  for (const auto& n : nodes_)
    if (pending[n.get()] == 0) ready.push_back(n.get());
  std::make_heap(ready.begin(), ready.end(), later);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later);
    Node* n = ready.back();
    ready.pop_back();
    order.push_back(n);
    for (Node* c : consumers[n])
      if (--pending[c] == 0) {
        ready.push_back(c);
        std::push_heap(ready.begin(), ready.end(), later);
      }
  }
  if (order.size() != nodes_.size()) {
    for (const auto& n : nodes_)
      if (pending[n.get()] != 0) return Error("graph '" + name_ + "' has a cycle through " + n->describe());
  }
  std::unordered_map<const Node*, std::unique_ptr<Node>> owned;
  for (auto& n : nodes_) owned[n.get()] = std::move(n);
  nodes_.clear();
  for (Node* n : order) nodes_.push_back(std::move(owned[n]));
  return okStatus();
}

int64_t Model::opsetVersion(const std::string& domain) const {
  for (const auto& op : opset_imports)
    if (canonicalDomain(op.domain) == canonicalDomain(domain)) return op.version;
  return 0;
}

}  // namespace poprt::ir
