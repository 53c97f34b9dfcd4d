// The graph IR: a Model holds a Graph of Nodes connected by Values. Values are SSA: one producer
// (a node output, a graph input or an initializer) and any number of uses. Subgraphs (If/Loop/Scan
// bodies) are Graphs owned by a node attribute; their nodes may use Values of enclosing graphs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "lib/support/status.h"
#include "lib/support/tensor.h"
#include "lib/support/value_kind.h"

namespace poprt::ir {

// ONNX's default domain may be written "" or "ai.onnx"; poprt writes it "" everywhere (nodes,
// opset imports, lookups), so a default-domain test is `domain.empty()`.
inline std::string canonicalDomain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

class Graph;
class Node;

// A dimension: a static size, or a symbol ("batch") or unknown (empty symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;

  static Dim fixed(int64_t v) { return Dim{v, {}}; }
  static Dim symbolic(std::string s) { return Dim{-1, std::move(s)}; }
  bool isStatic() const { return value >= 0; }
  bool operator==(const Dim&) const = default;
};

// The type of a value. `dims` is empty-optional when even the rank is unknown.
// Non-tensor values (sequences, optionals, maps) keep their ONNX TypeProto bytes in `opaque`
// so they round-trip unchanged; `kind` and `dtype` say what they hold when it is a sequence or
// optional of tensors (dtype = the element type).
struct TensorType {
  DType dtype = DType::Undefined;
  std::optional<std::vector<Dim>> dims;
  std::string opaque;
  ValueKind kind = ValueKind::Tensor;

  static TensorType of(DType t, const Shape& shape);
  bool isTensor() const { return opaque.empty(); }
  bool hasRank() const { return dims.has_value(); }
  bool hasStaticShape() const;
  Shape staticShape() const;     // requires hasStaticShape()
  int64_t numElements() const;   // requires hasStaticShape()
  std::string toString() const;  // "float32[1,batch,?]"
  bool operator==(const TensorType&) const = default;
};

struct Use {
  Node* node;
  size_t input_index;
  bool operator==(const Use&) const = default;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  Graph* graph() const { return graph_; }
  Node* producer() const { return producer_; }
  const std::vector<Use>& uses() const { return uses_; }
  bool isInitializer() const { return initializer_ != nullptr; }
  const Tensor* initializer() const { return initializer_.get(); }
  bool isGraphInput() const;
  bool isGraphOutput() const;

  TensorType type;
  std::string doc_string;

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  Graph* graph_ = nullptr;
  Node* producer_ = nullptr;
  std::vector<Use> uses_;
  std::shared_ptr<const Tensor> initializer_;
};

// The tensor of a constant value: an initializer that is not also a graph input (a graph input's
// initializer is only a default the caller may override); nullptr otherwise, and for null.
inline const Tensor* constantOf(const Value* v) {
  return v && v->isInitializer() && !v->isGraphInput() ? v->initializer() : nullptr;
}

using GraphPtr = std::shared_ptr<Graph>;

// An attribute value; each alternative is one ONNX attribute kind (TensorType = TYPE_PROTO).
using AttributeValue =
    std::variant<float, int64_t, std::string, Tensor, GraphPtr, std::vector<float>, std::vector<int64_t>,
                 std::vector<std::string>, std::vector<Tensor>, std::vector<GraphPtr>, TensorType, std::vector<TensorType>>;

struct Attribute {
  AttributeValue value;
  std::string doc_string;
};

class Node {
 public:
  const std::string& opType() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  Graph* graph() const { return graph_; }
  // "node 'conv1' (Conv)" — how errors name a node.
  std::string describe() const;

  // Inputs/outputs may be null: an omitted optional input or output.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  void setInput(size_t i, Value* v);
  void addInput(Value* v);

  std::map<std::string, Attribute> attributes;
  std::string doc_string;

  bool hasAttr(const std::string& name) const { return attributes.count(name) != 0; }
  // The graphs its attributes hold (If branches, Loop/Scan bodies), in attribute-name order.
  std::vector<Graph*> subgraphs() const;
  int64_t attrInt(const std::string& name, int64_t fallback) const;
  float attrFloat(const std::string& name, float fallback) const;
  std::string attrString(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attrInts(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attrFloats(const std::string& name, std::vector<float> fallback = {}) const;

 private:
  friend class Graph;
  std::string op_type_, domain_, name_;
  Graph* graph_ = nullptr;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
};

class Graph {
 public:
  explicit Graph(std::string name = "main", Graph* parent = nullptr) : name_(std::move(name)), parent_(parent) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  Graph* parent() const { return parent_; }
  std::string doc_string;

  // Values. Names are unique within a graph (and must not shadow outer scopes in ONNX, but the
  // IR only requires uniqueness per graph).
  Value* addInput(const std::string& name, TensorType type);
  Value* addInitializer(const std::string& name, Tensor data);
  void setInitializer(Value* v, std::shared_ptr<const Tensor> data);
  Value* addValue(const std::string& name, TensorType type = {});
  // Looks a name up here, then in the enclosing graphs.
  Value* findValue(const std::string& name) const;
  Value* findLocalValue(const std::string& name) const;
  // A name not yet used in this graph, built from `base`.
  std::string uniqueName(const std::string& base) const;

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Value*>& initializers() const { return initializers_; }
  void addOutput(Value* v) { outputs_.push_back(v); }
  // The value stays (e.g. as an initializer); it is just no longer fed by the caller.
  void removeInput(Value* v) { std::erase(inputs_, v); }
  void setOutput(size_t i, Value* v) { outputs_.at(i) = v; }

  // Nodes in program order (kept topological by the importer and passes; see topoSort()). The
  // domain is kept canonical: ONNX's default domain is "" (never "ai.onnx").
  Node* addNode(const std::string& op_type, const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                const std::string& name = "", const std::string& domain = "");
  void removeNode(Node* node);  // the node's outputs must be unused (or already made constants)
  // Makes `node` produce `v` (a value of this graph without a producer) as its output i. The value
  // it produced before keeps its name, type and uses but has no producer until a new node makes
  // it: how a pass slips a node between an op and its output (float_to_half's boundary Casts).
  void setNodeOutput(Node* node, size_t i, Value* v);
  // Turns a node output into an initializer holding `data`; its producer no longer makes it.
  void makeConstant(Value* v, Tensor data);
  const std::list<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  size_t numNodes() const { return nodes_.size(); }
  // Reorders nodes topologically (stable); an error names a node on a cycle.
  Status topoSort();
  // Removes values no node, output or subgraph refers to (unused initializers stay unless asked).
  void removeUnusedValues(bool initializers_too);

  // Replaces every use of `from` (including graph outputs) with `to`.
  void replaceAllUses(Value* from, Value* to);

 private:
  friend class Node;
  std::string name_;
  Graph* parent_;
  std::vector<Value*> inputs_, outputs_, initializers_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> by_name_;
};

struct OpsetImport {
  std::string domain;
  int64_t version;
  bool operator==(const OpsetImport&) const = default;
};

struct Model {
  int64_t ir_version = 8;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  std::vector<std::string> functions;  // serialized FunctionProtos, kept for the round trip
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();

  // Opset version imported for `domain` ("" and "ai.onnx" are the default domain); 0 if none.
  int64_t opsetVersion(const std::string& domain = "") const;
};

// Checks SSA form, topological order, use lists and that every input is visible.
Status verify(const Graph& graph);
// Human-readable text for tests and --print_ir_after.
std::string print(const Graph& graph);

}  // namespace poprt::ir
