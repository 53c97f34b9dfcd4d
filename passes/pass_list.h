// The passes' factories; the one list of passes is in pass_list.cpp.
#pragma once

#include <memory>

#include "passes/pass.h"

namespace poprt::passes {

std::unique_ptr<Pass> makeInferShapes();
std::unique_ptr<Pass> makeConstantFolding();
std::unique_ptr<Pass> makeIdentityElimination();
std::unique_ptr<Pass> makeEinsumToMatMul();
std::unique_ptr<Pass> makeQuantizedToFloat();
// Folding fusions (fuse_*.cpp; shared helpers in fusion_util.h).
std::unique_ptr<Pass> makeFuseBatchNorm();
std::unique_ptr<Pass> makeFuseMulAddIntoConvMatMul();
std::unique_ptr<Pass> makeFoldAffineIntoConvInput();
std::unique_ptr<Pass> makeFuseMatMulAddIntoGemm();
std::unique_ptr<Pass> makeDeadCode();
std::unique_ptr<Pass> makeCommonSubexpressions();
// Fusions into ai.graphcore ops (fuse_*.cpp; the ops are in lib/ops/graphcore_ops.h), after
// shape_fixpoint.cpp.
std::unique_ptr<Pass> makeShapeFixpoint();
std::unique_ptr<Pass> makeFuseLayerNorm();
std::unique_ptr<Pass> makeFuseGelu();
std::unique_ptr<Pass> makeFuseHardSigmoid();
std::unique_ptr<Pass> makeTrimConvTaps();
std::unique_ptr<Pass> makeConvTransposeToConv();
std::unique_ptr<Pass> makeFuseAttention();
std::unique_ptr<Pass> makeFuseConvActivation();
std::unique_ptr<Pass> makeSerializeMatMul();
// --precision fp16 (float_to_half.cpp, with fp16_overflow.h), then Cast clean-up.
std::unique_ptr<Pass> makeFloatToHalf();
std::unique_ptr<Pass> makeFoldCasts();
std::unique_ptr<Pass> makeFuseElementwiseChain();  // after them

}  // namespace poprt::passes
