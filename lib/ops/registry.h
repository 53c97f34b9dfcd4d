// The op registry: one declaration per op (or op family) carrying what every stage needs — its
// reference evaluator (the host engine: constant folding, --check, host fallback, test oracle),
// its fp16 policy and the codegen family that lowers it to vertices.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/value.h"

namespace poprt::ops {

enum class Fp16Policy {
  Convert,         // runs in fp16 when its inputs are fp16
  AccumulateFp32,  // fp16 storage, fp32 accumulation (matmul, conv, reductions)
  KeepFp32,        // must stay fp32 (range or precision)
  TypeAgnostic,    // moves data only (reshape, transpose, gather...)
};

// The codegen family that lowers an op; None means no device lowering yet (host fallback).
//  View:      the output is the input's elements in the same order (Reshape, Flatten, Squeeze...):
//             it reuses the input's tile mapping, no copy.
//  Rearrange: every output element is a copy of one input element, or a constant fill, chosen by
//             the op's (constant) parameters (Transpose, Concat, Slice, Pad, Gather with constant
//             indices, nearest Resize...): lowered to exchange copies only. Input 0 is the data
//             (every input for Concat); the other inputs must be constants.
//  Conv:      Conv and ConvAct (1-3 spatial dims): planned over tiles, one ConvPartial vertex per block.
//  Pool:      MaxPool (Y only), AveragePool, GlobalMaxPool, GlobalAveragePool: Pool vertices; input 0
//             is the data.
//  Binary:    Add/Sub/Mul/Div/Pow and variadic Sum/Max/Min with broadcasting (a chain of binary
//             vertices, one superstep per extra input).
//  Activation: Clip (constant bounds), LeakyRelu, HardSigmoid, HardSwish: Activation vertices with
//             the ConvAct/GemmAct functions; input 0 is the data.
//  Reduce:    Reduce* with constant axes; input 0 is the data.
//  Softmax:   Softmax and LogSoftmax along one axis; input 0 is the data.
//  Norm:      BatchNormalization (inference), InstanceNormalization, LayerNormalization and
//             ai.graphcore LayerNorm: row statistics on the device.
//  Attention: ai.graphcore MultiHeadAttention: one vertex per (batch, head, block of queries).
//  Cast:      Cast between float32 and float16: Cast vertices over the output's mapping.
enum class LoweringFamily {
  None,
  Unary,
  Binary,
  MatMul,
  View,
  Rearrange,
  Conv,
  Pool,
  Activation,
  Reduce,
  Softmax,
  Norm,
  Attention,
  Cast,
  CumSum,
  ElementwiseChain
};

using Opsets = std::map<std::string, int64_t>;  // domain ("" = ai.onnx) -> version
// The opsets a model imports, "ai.onnx" written "".
Opsets opsetsOf(const ir::Model& model);

struct Scope;

// What an evaluator may ask of its surroundings: opset versions, a seed for random ops, and
// running a subgraph (If/Loop/Scan bodies) in the scope of the node being evaluated.
class EvalContext {
 public:
  explicit EvalContext(Opsets opsets = {{"", 17}}, uint64_t seed = 0) : opsets_(std::move(opsets)), seed_(seed) {}
  int64_t opset(const std::string& domain = "") const;
  uint64_t seed() const { return seed_; }
  // Binds `inputs` to the subgraph's inputs, runs it, returns its outputs. Values of enclosing
  // graphs are visible, as ONNX scoping requires.
  Expected<std::vector<RtValue>> runSubgraph(const ir::Graph& graph, const std::vector<RtValue>& inputs);
  // Called with each value a node makes, when it is made (in bodies too): watches a whole run
  // without making every value a graph output.
  using Observer = std::function<void(const ir::Value&, const RtValue&)>;
  void setObserver(Observer observer) { observer_ = std::move(observer); }
  // MatMul, Gemm and Conv of float32 tensors sum in float32, as the model does, instead of in
  // double (the reference's default): twice as fast, for runs that need magnitudes, not digits.
  void setFloat32Sums(bool on) { float32_sums_ = on; }
  bool float32Sums() const { return float32_sums_; }

 private:
  friend class GraphRunner;
  Opsets opsets_;
  uint64_t seed_;
  const Scope* scope_ = nullptr;
  Observer observer_;
  bool float32_sums_ = false;
};

// Tensor ops: inputs may be null (omitted optional inputs); one tensor per node output.
using EvalFn = std::function<Expected<std::vector<Tensor>>(const ir::Node&, const std::vector<const Tensor*>&, EvalContext&)>;
// Ops on sequences/optionals and control flow.
using ValueEvalFn =
    std::function<Expected<std::vector<RtValue>>(const ir::Node&, const std::vector<const RtValue*>&, EvalContext&)>;
// What the evaluator would refuse in a node's attributes, found without running it.
using CheckFn = std::function<Status(const ir::Node&)>;

struct OpDef {
  std::string op_type;
  Fp16Policy fp16 = Fp16Policy::Convert;
  LoweringFamily lowering = LoweringFamily::None;
  EvalFn eval;             // set for tensor ops
  ValueEvalFn value_eval;  // set for sequence/optional/control-flow ops
  std::string domain;      // "" = ai.onnx
  std::string plugin;      // the custom-op plugin that registered it (lib/plugin); "" for poprt's own
  // Set for ops whose attributes ONNX has no schema to check (ai.graphcore's): the importer runs
  // it on every such node, so a bad one is refused when the model is read, not when a host
  // program first runs it.
  CheckFn check;
};

// nullptr if the registry has no entry for (domain, op_type).
const OpDef* findOp(const std::string& domain, const std::string& op_type);
std::vector<const OpDef*> allOps();
// Adds an op of a plugin's own domain (lib/plugin): refused for ONNX's and poprt's domains and for
// an op already registered. Thread-safe; OpDefs never move once registered.
Status registerCustomOp(OpDef def);
// The domains of ONNX and of poprt's own ops (ai.graphcore), which plugins may not add to.
bool isReservedDomain(const std::string& domain);

// Runs one node; errors name the node.
Expected<std::vector<RtValue>> runNode(const ir::Node& node, const std::vector<const RtValue*>& inputs, EvalContext& ctx);
// Runs a graph: inputs by name; returns the graph outputs in order.
Expected<std::vector<RtValue>> runGraph(const ir::Graph& graph, const std::vector<std::pair<std::string, RtValue>>& inputs,
                                        EvalContext& ctx);

// Tensor-only conveniences over runNode/runGraph (default-domain opset 17 unless given).
Expected<std::vector<Tensor>> evaluateNode(const ir::Node& node, const std::vector<const Tensor*>& inputs, int64_t opset = 17);
Expected<std::vector<Tensor>> evaluateGraph(const ir::Graph& graph, const std::vector<std::pair<std::string, Tensor>>& inputs,
                                            const Opsets& opsets = {{"", 17}});

// Registration: one function per op family file (listed in registry.cpp).
void registerElementwiseOps(std::vector<OpDef>& ops);  // and, from it, registerElementwiseMathOps
void registerElementwiseMathOps(std::vector<OpDef>& ops);
void registerMatMulOps(std::vector<OpDef>& ops);
void registerReduceOps(std::vector<OpDef>& ops);
void registerTensorOps(std::vector<OpDef>& ops);  // and, from it, registerTensorMakingOps
void registerTensorMakingOps(std::vector<OpDef>& ops);
void registerNnOps(std::vector<OpDef>& ops);
void registerRnnOps(std::vector<OpDef>& ops);
void registerQuantOps(std::vector<OpDef>& ops);
void registerControlFlowOps(std::vector<OpDef>& ops);
void registerSignalOps(std::vector<OpDef>& ops);
void registerMiscOps(std::vector<OpDef>& ops);
void registerGraphcoreOps(std::vector<OpDef>& ops);  // ai.graphcore fused ops (graphcore_ops.h)

}  // namespace poprt::ops
