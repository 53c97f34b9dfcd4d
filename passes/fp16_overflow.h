// --enable_avoid_overflow_patterns: the nodes float_to_half keeps in float32 because a value they
// read or make can leave the float16 range (±65504) on ordinary data, whatever the weights:
//  - a wide-range source makes values far larger than its input: Exp, Cosh, Sinh, a square or
//    higher power (Pow with exponent > 1, Mul(x, x)), ReduceSumSquare, ReduceProd, and
//    ReduceSum/ReduceL1 over 2048 or more elements;
//  - its result stays wide through every op that does not bring it back into range (Add, Sub,
//    Mul, MatMul, Clip, ReduceMean, layout ops...), until a range-compressing op reads it: Log,
//    Sqrt, Pow with |exponent| <= 0.5, Sigmoid, Tanh, Erf, Softmax, a Div by a wide value.
// Every node on such a path, the compressing op included, stays float32; what comes out of the
// compressing op is back in range and converts. So these patterns are kept in fp32 exactly:
//   LayerNorm variance      ReduceMean(Pow(x - mean, 2)) + eps -> Sqrt      (Div after it: fp16)
//   softmax without the max Exp(x) -> ReduceSum -> Div                       (Div's result: fp16)
//   power spectrum          Pow(re, 2) + Pow(im, 2) -> MatMul(mel) -> Clip -> Log
// A ReduceMean over a large extent needs nothing: its result stays within its input's range and
// its AccumulateFp32 policy has the device sum in float32.
#pragma once

#include <map>
#include <string>

#include "lib/ir/graph.h"

namespace poprt::passes {

// Node -> why it stays float32 ("reads 'x', which Exp 'e' can push beyond the float16 range").
// Only float32 tensors count; nodes of the top-level graph only.
std::map<const ir::Node*, std::string> overflowProneNodes(const ir::Graph& graph);

}  // namespace poprt::passes
