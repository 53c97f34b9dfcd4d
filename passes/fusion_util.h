// Helpers the fusion passes (fuse_*.cpp) share: reading constant operands, use checks, dims, and
// replacing the last node of a matched pattern by a fused node that produces the same Value (so
// graph outputs keep their name and type).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/ir/graph.h"

namespace poprt::passes::fusion {

// True for a node of the default domain with this op type.
bool isOp(const ir::Node* n, const char* op_type);

using ir::constantOf;
// A one-element constant's value, else nullopt.
std::optional<double> scalarOf(const ir::Value* v);
// The value of the one-element constant operand of binary node `n` whose other operand is `x`,
// provided broadcasting it does not change x's shape (its rank is at most x's). nullopt otherwise.
std::optional<double> scalarOperand(const ir::Node& n, const ir::Value* x);
// The operand of binary node `n` that is not `v` (nullptr if v is not an operand).
ir::Value* otherOperand(const ir::Node& n, const ir::Value* v);
// |v - target| within `rel` of |target| — constants written with float precision.
bool near(double v, double target, double rel = 1e-6);

// The node that is the only use of `v`, or nullptr (no use, several uses or a graph output).
ir::Node* singleUser(const ir::Value* v);
// v has exactly `n` uses (counting a node that reads it twice twice) and is not a graph output.
bool usedExactly(const ir::Value* v, size_t n);

// Static-or-same-symbol equality of two dims (unknown dims are never equal).
bool sameDim(const ir::Dim& a, const ir::Dim& b);
// The dims of a value's type, or nullopt when its rank is unknown.
std::optional<std::vector<ir::Dim>> dimsOf(const ir::Value* v);
// The result dims of a Reshape: from its constant target (0 copies, -1 inferred) and input dims,
// completed by its output type; nullopt when neither says the rank.
std::optional<std::vector<ir::Dim>> reshapeResult(const ir::Node& reshape);
// Integer list from a constant input or, when absent, an attribute (axes, starts, ...).
std::optional<std::vector<int64_t>> intsFromInputOrAttr(const ir::Node& n, size_t input, const std::string& attr);

// Removes nodes none of whose outputs is used or returned (leftovers of earlier rewrites and the
// interior of matched patterns). Returns how many were removed.
int64_t removeDeadNodes(ir::Graph& graph);

// Replaces `last` by a new node (op_type, domain, inputs) that produces `last`'s output 0 —
// the same Value, with its name, type and uses. `last` must have one output. Returns the new node,
// appended to the node list: the caller runs graph.topoSort() before it returns.
ir::Node* replaceWithNode(ir::Graph& graph, ir::Node* last, const std::string& op_type, const std::string& domain,
                          const std::vector<ir::Value*>& inputs);

// Completes y's type with what `known` says (dtype, rank, static dims or symbols): a fused node's
// output is typed even when the value it took over was not (ONNX inference cannot type it later).
void refineType(ir::Value* y, const ir::TensorType& known);

// Adds the ai.graphcore opset import (version 1) unless the model has one.
void importGraphcoreDomain(ir::Model& model);

// After a pass's rewrites: removes the dead interior and restores topological order.
Status finishRewrites(ir::Graph& graph);

}  // namespace poprt::passes::fusion
