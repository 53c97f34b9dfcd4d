// Data parallelism for the host's own heavy loops (the reference evaluator's convolutions):
// the calling thread and up to one helper per further core take indices until none are left.
#pragma once

#include <cstdint>
#include <functional>

namespace poprt {

// How many threads parallelFor runs on (the machine's cores, at least 1).
unsigned parallelWidth();

// How many parts to split `work` (multiply-adds, or elements touched) into: 1 below about a
// million, where starting a thread (tens of microseconds) would cost more than it saves;
// otherwise as many as parallelWidth(), at most `max_parts`.
int64_t parallelParts(int64_t work, int64_t max_parts);

// Runs fn(i) for every i in [0, n), concurrently for different i (each call must touch only
// its own outputs). The first exception a call throws is rethrown once all have finished.
void parallelFor(int64_t n, const std::function<void(int64_t)>& fn);

}  // namespace poprt
