// What the compiler knows about an executable that the executable itself does not say: how each
// tile's memory splits between weights, activations and exchange buffers when it peaks, the live
// bytes after every node (liveness over the program), and the op type of each node. codegen fills
// it (TileMemory records it as it allocates); poprt-convert stores it in the PopEF as the opaque
// blob "poprt.profile" (docs/REPORT.md) and the profile reports read it back. Small: a few numbers
// per tile and per node, so it rides along in every PopEF.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "lib/exec/executable.h"
#include "lib/support/status.h"

namespace poprt::exec {

inline constexpr uint32_t kMemoryProfileVersion = 1;
inline constexpr const char* kMemoryProfileBlobName = "poprt.profile";

// A tile's main region (the memory the main program reuses) when its live bytes peaked.
struct TilePeak {
  uint64_t activations = 0;       // values' own memory: inputs, intermediate values, outputs
  uint64_t exchange_buffers = 0;  // operand copies and node buffers (windows, scratch) the exchanges fill
  uint32_t point = 0;             // index into MemoryProfile::liveness of the node when it peaked
};

// Live main-region bytes when a node's step ends (nothing is freed during a step, so this is the
// step's peak). Weights live in the persistent region for the whole program and are not in here.
struct LivenessPoint {
  std::string node;               // the node lowered ("" for the final stream-outs)
  uint32_t program_steps = 0;     // main-program steps emitted by then: the node's last step is program_steps - 1
  uint64_t activations = 0;       // summed over the tiles
  uint64_t exchange_buffers = 0;  // summed over the tiles
  uint32_t busiest_tile = 0;      // the tile with the most live main-region bytes (the lowest on a tie)
  uint64_t busiest_bytes = 0;
};

struct MemoryProfile {
  std::vector<uint64_t> weights;  // per tile: the persistent region (always live)
  std::vector<TilePeak> peaks;    // per tile
  std::vector<LivenessPoint> liveness;
  std::map<std::string, std::string> op_types;  // node name -> op type ("Conv", "ai.graphcore.ConvAct")
};

// CBOR (the same rules as the executable blob); keys in sorted order, so the bytes are deterministic.
std::vector<uint8_t> serializeMemoryProfile(const MemoryProfile& profile);
// Parses and checks it against the executable it describes (one entry per tile, points in range,
// each tile's weights and peak within its memory). `source` names the blob in errors.
Expected<MemoryProfile> deserializeMemoryProfile(std::span<const uint8_t> bytes, const Executable& exe,
                                                 const std::string& source);

}  // namespace poprt::exec
