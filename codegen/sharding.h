// Which IPU and stage each node of a graph runs on when a model is sharded over several IPUs:
// by the user's list (PopRT's manual sharding config) or balanced automatically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/exec/executable.h"
#include "lib/ir/graph.h"
#include "lib/support/status.h"

namespace poprt::codegen {

// One entry of a manual sharding config: `node` and every ancestor not placed by an earlier
// entry run on IPU `device` in `stage` (the device's number when the entry gives none).
struct ShardEntry {
  std::string node;
  uint32_t device = 0;
  int64_t stage = -1;
};

// The name a node goes by in sharding configs, reports and errors: its own, or "<op>_<index in
// the graph>" when it has none.
std::string nodeName(const ir::Node& node, size_t index);

struct ShardingOptions {
  exec::Strategy strategy = exec::Strategy::Sharded;
  std::vector<ShardEntry> manual;  // empty: automatic placement
  std::string manual_source;       // the config file, for errors
};

struct NodePlacement {
  std::vector<size_t> order;        // node indices in the order they are compiled: by stage, then graph order
  std::vector<uint32_t> stage;      // per node index
  std::vector<uint32_t> stage_ipu;  // per stage
};

// Placement of the graph's top-level nodes over `num_ipus` IPUs. Automatic placement cuts the
// graph, in its order, into one stage per IPU holding about equal shares of the weight and
// activation bytes plus the work (multiply-accumulates, elementwise operations). Errors name the config file and the node: an
// unknown node, a device outside
// --num_ipus, a stage on two IPUs, a node that reads a later stage's value, and (pipelined)
// two stages on one IPU.
Expected<NodePlacement> placeNodes(const ir::Graph& graph, uint32_t num_ipus, const ShardingOptions& options);

}  // namespace poprt::codegen
