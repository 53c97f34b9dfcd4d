// The passes' factories; the one list of passes is in pass_list.cpp.
#pragma once

#include <memory>

#include "passes/pass.h"

namespace poprt::passes {

std::unique_ptr<Pass> makeInferShapes();
std::unique_ptr<Pass> makeConstantFolding();
std::unique_ptr<Pass> makeIdentityElimination();
// Folding fusions (fuse_*.cpp; shared helpers in fuse_util.h).
std::unique_ptr<Pass> makeFuseBatchNorm();
std::unique_ptr<Pass> makeFuseMulAddIntoConvMatMul();
std::unique_ptr<Pass> makeFuseMatMulAddIntoGemm();
std::unique_ptr<Pass> makeDeadCode();

}  // namespace poprt::passes
