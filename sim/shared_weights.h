// The vertices as the engine runs them on a TileArena: a field that reads weights nothing
// overwrites after the load program points at the first copy of the same weight bytes, on
// whichever tile that is. Only the vertices with such a field are copied (light_densenet121:
// 309k of 648k), the rest run from the executable.
//
// A program keeps the copies a tile needs of each weight slice (a ResNet-50 conv's slice on every
// tile of its row blocks: light_resnet50's vertices read 366 MB of weight fields a run, copies of
// 46 MB of weights). The simulator need not: identical bytes that stay identical can be read from
// one place, which then stays in cache for the next vertex that reads it. What every tile holds
// is unchanged (the load program still fills every copy, and readWeight reads them back), as is
// the cost model, which prices the program as compiled.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "lib/exec/executable.h"
#include "sim/tile_arena.h"

namespace poprt::sim {

// A vertex as the engine runs it: with the arena's base + `base` as its memory.
struct RunVertex {
  const exec::Vertex* vertex;
  uint64_t base;
};

struct ResolvedVertices {
  std::vector<std::vector<RunVertex>> sets;  // by compute set, in order
  // The vertices that read a shared copy, their fields as offsets from the arena's base (base 0);
  // the others run as the executable has them, from their tile's offset in the arena.
  std::deque<exec::Vertex> copies;
  const exec::Executable* exe = nullptr;  // whose vertices the rest are
  uint64_t shared_fields = 0, shared_bytes = 0;  // fields pointed at another copy, and their bytes
};

// Against TileArena::layout(exe.tile_bytes): every engine of `exe` may share the result, which
// points into `exe`'s vertices.
ResolvedVertices resolveVertices(const exec::Executable& exe);

}  // namespace poprt::sim
