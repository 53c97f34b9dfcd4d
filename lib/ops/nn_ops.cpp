// Nn op family of the reference evaluator (see registry.h): convolutions, pooling,
// normalizations, resizing/sampling and box ops, one file per job (nn_*.cpp, helpers in nn_util.h).
#include "lib/ops/nn_util.h"
#include "lib/ops/registry.h"

namespace poprt::ops {

void registerNnOps(std::vector<OpDef>& ops) {
  nn::registerNnConvOps(ops);
  nn::registerNnPoolOps(ops);
  nn::registerNnNormOps(ops);
  nn::registerNnResizeOps(ops);
  nn::registerNnRoiOps(ops);
}

}  // namespace poprt::ops
