// The op registry: one declaration per op (or op family) carrying what every stage needs — its
// reference evaluator (the host engine: constant folding, --check, host fallback, test oracle),
// its fp16 policy and the codegen family that lowers it to vertices.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lib/ir/graph.h"

namespace poprt::ops {

enum class Fp16Policy {
  Convert,         // runs in fp16 when its inputs are fp16
  AccumulateFp32,  // fp16 storage, fp32 accumulation (matmul, conv, reductions)
  KeepFp32,        // must stay fp32 (range or precision)
  TypeAgnostic,    // moves data only (reshape, transpose, gather...)
};

// The codegen family that lowers an op; None means no device lowering yet.
enum class LoweringFamily { None, Unary, Binary, MatMul };

// Inputs may be null (omitted optional inputs). Returns one tensor per node output.
using EvalFn = std::function<Expected<std::vector<Tensor>>(const ir::Node&, const std::vector<const Tensor*>&)>;

struct OpDef {
  std::string op_type;
  Fp16Policy fp16 = Fp16Policy::Convert;
  LoweringFamily lowering = LoweringFamily::None;
  EvalFn eval;
};

// Default-domain ops by type; nullptr if the registry has no entry.
const OpDef* findOp(const std::string& domain, const std::string& op_type);
std::vector<const OpDef*> allOps();

// Runs one node with the reference evaluator; errors name the node.
Expected<std::vector<Tensor>> evaluateNode(const ir::Node& node, const std::vector<const Tensor*>& inputs);

// Runs a whole graph: inputs by name; returns the graph outputs in order.
Expected<std::vector<Tensor>> evaluateGraph(const ir::Graph& graph,
                                            const std::vector<std::pair<std::string, Tensor>>& inputs);

// Registration, used by the op definition files (see registry.cpp for the list).
void registerElementwiseOps(std::vector<OpDef>& ops);
void registerMatMulOps(std::vector<OpDef>& ops);

}  // namespace poprt::ops
