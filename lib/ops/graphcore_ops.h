// The custom fused ops of domain "ai.graphcore" (PopRT's convention), opset version 1. The fusion
// passes (passes/fuse_*.cpp) create them; the importer accepts them because the registry knows
// them; ONNX's checker does not schema-check non-ONNX domains, and ONNX shape inference skips
// them (the passes give every value they create a type). ONNX Runtime cannot run them. ConvAct
// and GemmAct run on the device (their vertices apply the activation as they write each output),
// Gelu (Unary vertices), LayerNorm and MultiHeadAttention too (Norm and Attention vertices).
//
// Gelu(X) -> Y
//   approximate = "none" (default): Y = 0.5·X·(1 + erf(X/√2))
//   approximate = "tanh":           Y = 0.5·X·(1 + tanh(√(2/π)·(X + 0.044715·X³)))
//   Float types; Y has X's shape and dtype.
//
// LayerNorm(X, Scale, [B]) -> Y            (used below default-domain opset 17; from 17 on the
//   passes use the standard LayerNormalization, which this mirrors)
//   axis (default -1), epsilon (default 1e-5). Normalises over the dims [axis, rank):
//   Y = (X - mean) / sqrt(var + epsilon) · Scale + B, var the biased variance. Scale and B are
//   unidirectionally broadcastable to X.shape[axis:]. Statistics in double.
//
// MultiHeadAttention(Q, K, V, [Mask]) -> Y
//   Q [B, Sq, H·D], K [B, Sk, H·D], V [B, Sk, H·Dv] — already projected (the MatMul+Add
//   projections stay ordinary ops, so the codegen lowers them as matmuls and can lower this op
//   as per-head batched matmuls plus a row softmax without any layout change of its inputs).
//   num_heads = H (required), scale (float, default 1/√D).
//   Mask (optional): an additive mask of Q's dtype, numpy-broadcastable to [B, H, Sq, Sk] (rank
//   <= 4, right-aligned; typically [B, 1, 1, Sk] with 0 to keep and a large negative to drop).
//   For batch b, head h, query i (Q_h = the D columns h·D.. of Q, likewise K_h, V_h):
//     S[j] = scale · Σ_d Q_h[b, i, d]·K_h[b, j, d] + Mask[b, h, i, j]
//     P = softmax_j(S);  Y[b, i, h·Dv + e] = Σ_j P[j]·V_h[b, j, e]
//   Y is [B, Sq, H·Dv]: the heads concatenated back along the last axis.
//
// ConvAct(X, W, [B]) -> Y
//   Conv's attributes (auto_pad, dilations, group, kernel_shape, pads, strides) plus
//   activation: Y = act(Conv(X, W, B)).
// GemmAct(A, B, [C]) -> Y
//   Gemm's attributes (alpha, beta, transA, transB) plus activation: Y = act(Gemm(A, B, C)).
//   The activation (attribute `activation`, a string) and its parameters, named apart from
//   Gemm's own alpha/beta:
//     Relu         max(x, 0)
//     Clip         min(max(x, activation_min), activation_max)  (defaults: the float range)
//     LeakyRelu    x < 0 ? activation_alpha·x : x               (default alpha 0.01)
//     Sigmoid      1 / (1 + exp(-x))
//     HardSigmoid  max(0, min(1, activation_alpha·x + activation_beta))  (defaults 0.2, 0.5)
//     HardSwish    x · max(0, min(1, x/6 + 1/2))
//     Tanh         tanh(x)
//     Swish        x / (1 + exp(-x))   (SiLU: x · Sigmoid(x), as exporters write it)
//   Computed exactly as the Conv/Gemm evaluator followed by the activation.
//
// ElementwiseChain(X, S1, ..., Sk) -> Y
//   ops (strings): the steps in order, each an elementwise op: one of the device's unary
//   functions (Round, Neg, Relu, Exp, ...) or Add, Sub, Mul, Div, Max, Min, Pow.
//   operands (ints, one per step): 0 for a unary step; j for v = op(v, Sj), -j for v = op(Sj, v).
//   At most 64 steps. Each Sj holds one value of X's dtype (float32 or float16). v starts as an
//   element of X; every step computes in float32; Y (X's shape and dtype) is the last step's
//   value, rounded once.
//   fuse_elementwise_chain makes it of an elementwise op and the ops after it whose other operands
//   are one value each (a dynamic quantizer's Div, Round, Max and Min by run-time scalars), which
//   in float32 it equals exactly.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include <string>
#include "lib/ir/graph.h"
#include "lib/ops/scalar_math.h"

namespace poprt::ops::graphcore {

inline constexpr const char* kDomain = "ai.graphcore";
inline constexpr int64_t kOpsetVersion = 1;

// The activations ConvAct/GemmAct take, and their scalar function (parameters as documented above).
// Their numbers are stored in PopEFs (vertex params, docs/POPEF.md): they never change, new kinds
// take the next number (tests/unit/sim/format_pins_test.cpp).
enum class ActivationKind { Relu = 0, Clip = 1, LeakyRelu = 2, Sigmoid = 3, HardSigmoid = 4, HardSwish = 5, Tanh = 6, Swish = 7 };
inline constexpr ActivationKind kLastActivationKind = ActivationKind::Swish;
struct Activation {
  ActivationKind kind = ActivationKind::Relu;
  double alpha = 0, beta = 0, min = 0, max = 0;
};
// The kind of the activation op `op_type` ("Relu", ...), or nullopt if ConvAct/GemmAct cannot take it.
std::optional<ActivationKind> activationKind(const std::string& op_type);
inline bool isFusableActivation(const std::string& op_type) { return activationKind(op_type).has_value(); }
// Inline so that a loop over one kind (the simulator's epilogues) folds the switch away.
inline double applyActivation(const Activation& act, double x) {
  switch (act.kind) {
    case ActivationKind::Relu: return scalar::relu(x);
    case ActivationKind::Clip: return scalar::clip(x, act.min, act.max);
    case ActivationKind::LeakyRelu: return scalar::leakyRelu(x, act.alpha);
    case ActivationKind::Sigmoid: return scalar::sigmoid(x);
    case ActivationKind::HardSigmoid: return scalar::hardSigmoid(x, act.alpha, act.beta);
    case ActivationKind::HardSwish: return scalar::hardSwish(x);
    case ActivationKind::Tanh: return std::tanh(x);
    case ActivationKind::Swish: return scalar::swish(x);
  }
  return x;
}
// The activation a ConvAct/GemmAct node applies (from its attributes).
Expected<Activation> activationOf(const ir::Node& node);
// The scalar function of a Gelu node (by its `approximate` attribute).
Expected<UnaryFn> geluFn(const ir::Node& node);
// ElementwiseChain's steps, checked against its inputs (each operand one of them).
struct ChainStep {
  bool unary = true;
  UnaryFn unary_fn = UnaryFn{};
  BinaryFn binary_fn = BinaryFn::Add;
  int64_t operand = 0;  // as the `operands` attribute: 0, j or -j
};
inline constexpr const char* kElementwiseChain = "ElementwiseChain";
inline constexpr int64_t kMaxChainSteps = 64;  // its steps, at most (a vertex's params hold them)
Expected<std::vector<ChainStep>> chainSteps(const ir::Node& node);
// The activation a plain default-domain activation node computes (Relu, Clip, LeakyRelu...) at
// `opset`. Clip's bounds must be constants: attributes before opset 11, initializers from 11.
Expected<Activation> activationOfOp(const ir::Node& node, int64_t opset);

}  // namespace poprt::ops::graphcore
