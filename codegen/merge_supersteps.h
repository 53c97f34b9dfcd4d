// Merges adjacent supersteps of the main program that do not depend on each other into one, so
// independent nodes (the two Casts before two Pows, two Convs reading one input) share a sync
// and their tiles work at the same time.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/exec/executable.h"

namespace poprt::codegen {

// Rewrites exe.main (and exe.exchanges, exe.compute_sets) after memory is final. A superstep is
// an exchange step, a compute set, or an exchange followed by a compute set; the next one joins
// the one before when no byte one writes is read or written by the other (fields[0] of a vertex
// is written, its other fields read; a gather or copy reads its sources, writes its
// destinations). Stream and host steps, and the bounds of exe.segments, are never moved or
// merged across (the segments are rewritten to the new steps). Returns, for each
// count of old main-program steps, the count of new steps that covers them (size: old steps + 1),
// to remap what was recorded against step counts (the memory profile's liveness points).
std::vector<uint32_t> mergeSupersteps(exec::Executable& exe);

}  // namespace poprt::codegen
