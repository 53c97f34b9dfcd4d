// The vertices as the engine runs them on a TileArena: a field that reads weights nothing
// overwrites after the load program points at the first copy of the same weight bytes, on
// whichever tile that is.
//
// A program keeps the copies a tile needs of each weight slice (a ResNet-50 conv's slice on every
// tile of its row blocks: light_resnet50's vertices read 366 MB of weight fields a run, copies of
// 46 MB of weights). The simulator need not: identical bytes that stay identical can be read from
// one place, which then stays in cache for the next vertex that reads it. What every tile holds
// is unchanged (the load program still fills every copy, and readWeight reads them back), as is
// the cost model, which prices the program as compiled.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/exec/executable.h"
#include "sim/codelets.h"
#include "sim/tile_arena.h"

namespace poprt::sim {

struct ResolvedVertices {
  // By compute set, in order: the vertices with their fields as offsets from the arena's base.
  // Copies of all of them, in run order, rather than of only those that share: the engine walks
  // them one after another, and a run through the executable's own (allocated as the PopEF was
  // read) missed the cache on small vertices: resnet20_cifar ran 7-9% slower, for a popef-run peak
  // of 950 rather than 1019 MB on light_densenet121 (826 MB with no copies).
  std::vector<std::vector<exec::Vertex>> sets;
  // Each vertex's params decoded once (the verifier checked them), as sets[i][j] runs with them:
  // their arrays view that copy's params, so the whole is moved, never copied.
  std::vector<std::vector<VertexParams>> params;
  const exec::Executable* exe = nullptr;         // resolved for
  uint64_t shared_fields = 0, shared_bytes = 0;  // fields pointed at another copy, and their bytes

  ResolvedVertices() = default;
  ResolvedVertices(ResolvedVertices&&) = default;
  ResolvedVertices& operator=(ResolvedVertices&&) = default;
  ResolvedVertices(const ResolvedVertices&) = delete;
  ResolvedVertices& operator=(const ResolvedVertices&) = delete;
};

// Against TileArena::layout(exe.tile_bytes), for a verified `exe`: every engine of it may share
// the result.
ResolvedVertices resolveVertices(const exec::Executable& exe);

}  // namespace poprt::sim
