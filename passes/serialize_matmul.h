// What --serialize_matmul can split (passes/serialize_matmul.cpp): a Conv/ConvAct of one group, a
// MatMul with a constant 2-D weight, a Gemm/GemmAct with a constant weight. codegen names such a
// node in its out-of-memory hints.
#pragma once

#include <string>

#include "lib/ir/graph.h"

namespace poprt::passes {

// Why serialize_matmul cannot split `n` ("" when it can).
std::string serializeBlocker(const ir::Node& n);

}  // namespace poprt::passes
