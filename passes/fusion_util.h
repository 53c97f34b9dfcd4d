// The one helper module of the rewriting passes (fuse_*.cpp, fold_casts, float_to_half...): reading
// constant operands, use checks, dims, replacing the last node of a matched pattern by a fused node
// that produces the same Value (so graph outputs keep their name and type), and (fusion_fold.cpp)
// folding a per-channel affine map y = x * scale + shift into a linear op's weights and bias.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/support/status.h"

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

// ---- Folding into linear ops (fusion_fold.cpp: fuse_batchnorm, fuse_mul_add_into_conv_matmul,
// fuse_matmul_add_into_gemm) -------------------------------------------------------------------

// Why `v` is not a constant, naming it `what` ("its weight (input 1) is not a constant"); an
// initializer that is also a graph input is called out, as IR < 4 exporters list every weight so.
std::string notConstant(const ir::Value* v, const std::string& what);

bool isLinearOp(const ir::Node& n);  // Conv, ConvTranspose, Gemm or MatMul in the default domain

// A linear op (Conv, ConvTranspose, Gemm, or MatMul with a constant 2-D weight) with constant
// weights, optionally followed by an Add of a constant per-channel bias. `out` is what the chain
// computes; its only user is the node being folded into it.
struct LinearChain {
  ir::Node* op = nullptr;
  ir::Node* bias_add = nullptr;  // Add(op output, constant per-channel bias), or null
  std::vector<double> add_bias;  // that bias per channel (empty without bias_add)
  ir::Value* out = nullptr;      // op's output, or bias_add's
  int64_t rank = 0;              // of `out`; -1 when unknown (a MatMul whose input has no rank yet)
  int64_t axis = 0;              // the channel axis: 1 for Conv/ConvTranspose/Gemm, the last for MatMul (-1 if unknown rank)
  int64_t channels = 0;
  DType dtype = DType::Undefined;  // of the weights
};

struct ChainMatch {
  std::optional<LinearChain> chain;
  // Why `v` cannot be folded into; empty when `v` is not made by a linear op (or an Add after
  // one) at all, so it is not a candidate worth reporting.
  std::string why;
};

// The chain that computes `v`, if it can absorb a per-channel affine map applied by v's only user.
ChainMatch matchLinearChain(const ir::Graph& g, ir::Value* v);

// The `chain.channels` values of constant `t` when, broadcast against the chain's output, it
// varies only along the channel axis and leaves the output shape unchanged; else sets `why`.
std::optional<std::vector<double>> perChannel(const Tensor& t, const LinearChain& chain, std::string& why);

// Checks `values` are finite; else sets `why` ("<what> is not finite").
bool allFinite(const std::vector<double>& values, const std::string& what, std::string& why);

// Replaces `last` (whose data input is chain.out) and the chain by the chain's op with folded
// weights and bias computing last's output y = chain.out * scale + shift (per channel). `y` keeps
// its Value. A MatMul that needs a bias gets an Add of it, or becomes a Gemm when its input is 2-D.
// New weights and biases are new initializers; the old ones are left for dead_code_elimination.
// Leaves the graph out of topological order: call finishRewrites() when the pass is done.
Status foldAffine(ir::Graph& g, const LinearChain& chain, const std::vector<double>& scale, const std::vector<double>& shift,
                  ir::Node* last);

// Removes `remove` (the node producing `y` first, then the nodes feeding it; each one's outputs
// used only by the nodes removed before it) and returns a placeholder holding y's uses and graph
// outputs. Build the replacement producing `y`, then call reattach(tmp, y).
ir::Value* detach(ir::Graph& g, ir::Value* y, const std::vector<ir::Node*>& remove);
void reattach(ir::Graph& g, ir::Value* tmp, ir::Value* y);

// A new initializer named after `base`.
ir::Value* addConstant(ir::Graph& g, const std::string& base, Tensor t);
// A floating-point constant's values as doubles (the caller checked its dtype), and a constant
// of `dtype` and `shape` made of doubles: what the folds compute in.
std::vector<double> doubles(const Tensor& t);
Tensor tensorOf(DType dtype, Shape shape, const std::vector<double>& values);

// Lower-case counter name of an op type: "Conv" -> "conv", "ConvTranspose" -> "conv_transpose".
std::string counterName(const std::string& op_type);

}  // namespace poprt::passes::fusion
