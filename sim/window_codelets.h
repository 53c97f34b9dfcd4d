// The sliding-window codelets, ConvPartial and Pool (layouts in lib/exec/codelets.h): check, run
// and cycle estimate. Internal to sim/codelets.cpp, which dispatches on the codelet id.
#pragma once

#include <cstdint>

#include "lib/exec/executable.h"

namespace poprt::sim {

Status checkConvPartial(const exec::Vertex& v);
void runConvPartial(const exec::Vertex& v, uint8_t* mem);
uint64_t convPartialCycles(const exec::Vertex& v, const exec::Target& t);
uint64_t convPartialFlops(const exec::Vertex& v);

Status checkPool(const exec::Vertex& v);
void runPool(const exec::Vertex& v, uint8_t* mem);
uint64_t poolCycles(const exec::Vertex& v, const exec::Target& t);
uint64_t poolFlops(const exec::Vertex& v);

}  // namespace poprt::sim
