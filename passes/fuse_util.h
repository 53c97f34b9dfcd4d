// Shared by the folding passes (fuse_batchnorm, fuse_mul_add_into_conv_matmul,
// fuse_matmul_add_into_gemm): recognising a linear op with per-output-channel weights, reading
// per-channel constants, folding a per-channel affine map y = x * scale + shift into the op's
// weights and bias, and replacing a pattern by new nodes that produce the pattern's own output
// Value (so graph outputs keep their Value and name).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace poprt::passes::fuse {

using ir::constantOf;

// Why `v` is not a constant, naming it `what` ("its weight (input 1) is not a constant"); an
// initializer that is also a graph input is called out, as IR < 4 exporters list every weight so.
std::string notConstant(const ir::Value* v, const std::string& what);

bool isLinearOp(const ir::Node& n);  // Conv, ConvTranspose, Gemm or MatMul in the default domain

// A linear op (Conv, ConvTranspose, Gemm, or MatMul with a constant 2-D weight) with constant
// weights, optionally followed by an Add of a constant per-channel bias. `out` is what the chain
// computes; its only user is the node being folded into it.
struct LinearChain {
  ir::Node* op = nullptr;
  ir::Node* bias_add = nullptr;   // Add(op output, constant per-channel bias), or null
  std::vector<double> add_bias;   // that bias per channel (empty without bias_add)
  ir::Value* out = nullptr;       // op's output, or bias_add's
  int64_t rank = 0;               // of `out`; -1 when unknown (a MatMul whose input has no rank yet)
  int64_t axis = 0;               // the channel axis: 1 for Conv/ConvTranspose/Gemm, the last for MatMul (-1 if unknown rank)
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
ChainMatch matchChain(const ir::Graph& g, ir::Value* v);

// The `chain.channels` values of constant `t` when, broadcast against the chain's output, it
// varies only along the channel axis and leaves the output shape unchanged; else sets `why`.
std::optional<std::vector<double>> perChannel(const Tensor& t, const LinearChain& chain, std::string& why);

// Checks `values` are finite; else sets `why` ("<what> is not finite").
bool allFinite(const std::vector<double>& values, const std::string& what, std::string& why);

// Replaces `last` (whose data input is chain.out) and the chain by the chain's op with folded
// weights and bias computing last's output y = chain.out * scale + shift (per channel). `y` keeps
// its Value. A MatMul that needs a bias gets an Add of it, or becomes a Gemm when its input is 2-D.
// New weights and biases are new initializers; the old ones are left for dead_code_elimination.
// Leaves the graph out of topological order: call finish() when the pass is done.
Status foldAffine(ir::Graph& g, const LinearChain& chain, const std::vector<double>& scale,
                  const std::vector<double>& shift, ir::Node* last);

// Removes `remove` (the node producing `y` first, then the nodes feeding it; each one's outputs
// used only by the nodes removed before it) and returns a placeholder holding y's uses and graph
// outputs. Build the replacement producing `y`, then call reattach(tmp, y).
ir::Value* detach(ir::Graph& g, ir::Value* y, const std::vector<ir::Node*>& remove);
void reattach(ir::Graph& g, ir::Value* tmp, ir::Value* y);

// Restores topological order and drops the placeholders once the pass has rewritten the graph.
Status finish(ir::Graph& g);

// A new initializer named after `base`.
ir::Value* addConstant(ir::Graph& g, const std::string& base, Tensor t);

// Lower-case counter name of an op type: "Conv" -> "conv", "ConvTranspose" -> "conv_transpose".
std::string counterName(const std::string& op_type);

}  // namespace poprt::passes::fuse
