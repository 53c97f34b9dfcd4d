// The vertices as the engine runs them on a TileArena: every field's offset counted from the
// arena's base, and a field that reads weights nothing overwrites after the load program pointed
// at the first copy of the same weight bytes, on whichever tile that is.
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
#include "sim/tile_arena.h"

namespace poprt::sim {

struct ResolvedVertices {
  std::vector<std::vector<exec::Vertex>> sets;  // by compute set
  uint64_t shared_fields = 0, shared_bytes = 0;  // fields pointed at another copy, and their bytes
};

ResolvedVertices resolveVertices(const exec::Executable& exe, const TileArena& arena);

}  // namespace poprt::sim
