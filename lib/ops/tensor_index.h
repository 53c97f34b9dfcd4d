// Indexing ops of the tensor family: Gather*, Scatter*, OneHot, NonZero, Compress, Unique,
// ReverseSequence.
#pragma once

#include <vector>

#include "lib/ops/registry.h"

namespace poprt::ops {

void registerIndexOps(std::vector<OpDef>& ops);

}  // namespace poprt::ops
