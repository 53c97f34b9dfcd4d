// Reduce op family of the reference evaluator (see registry.h).
#include "lib/ops/registry.h"

namespace poprt::ops {

void registerReduceOps(std::vector<OpDef>& ops) { (void)ops; }

}  // namespace poprt::ops
