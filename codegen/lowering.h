// The state one compile shares between the lowering functions of each op family.
#pragma once

#include <map>
#include <tuple>
#include <unordered_map>

#include "codegen/compiler.h"
#include "codegen/tile_mapping.h"

namespace poprt::codegen {

class Lowering {
 public:
  Lowering(const CompileOptions& options);

  const exec::Target& target() const { return options_.target; }
  const CompileOptions& options() const { return options_; }
  exec::Executable& executable() { return exe_; }
  TileAllocator& allocator() { return alloc_; }

  const TileMapping& mapping(const ir::Value* v) const { return mappings_.at(v); }
  bool hasMapping(const ir::Value* v) const { return mappings_.count(v) != 0; }
  void setMapping(const ir::Value* v, TileMapping m) { mappings_[v] = std::move(m); }
  // Spreads `numel` elements over consecutive tiles (whole grains per tile), allocating memory.
  TileMapping spreadLinear(int64_t numel, size_t elem_size);

  // Tile-memory offset of a contiguous buffer on `tile` holding elements [begin, begin+count) of
  // `v`: in place when the mapping already has them there, else a new buffer the node's exchange
  // step fills. Buffers are reused by later nodes (values never change once computed).
  uint64_t operandOnTile(const ir::Value* v, int64_t begin, int64_t count, uint32_t tile);

  // Begins the superstep of a node: an exchange step (if anything moves) then a compute set.
  exec::Exchange& exchange() { return pending_exchange_; }
  exec::ComputeSet& computeSet() { return pending_set_; }
  void beginNode(const std::string& name);
  void endNode();

 private:
  CompileOptions options_;
  exec::Executable exe_;
  TileAllocator alloc_;
  std::unordered_map<const ir::Value*, TileMapping> mappings_;
  exec::Exchange pending_exchange_;
  exec::ComputeSet pending_set_;
  std::map<std::tuple<const ir::Value*, int64_t, int64_t, uint32_t>, uint64_t> gathered_;
  uint32_t next_tile_ = 0;  // rotates where small tensors start, so tile 0 is not always the busiest
};

Status lowerUnary(Lowering& l, const ir::Node& node);
Status lowerBinary(Lowering& l, const ir::Node& node);
Status lowerMatMul(Lowering& l, const ir::Node& node);
Status lowerView(Lowering& l, const ir::Node& node);
struct RearrangeMap;
Status lowerRearrange(Lowering& l, const ir::Node& node, const RearrangeMap& map);

}  // namespace poprt::codegen
