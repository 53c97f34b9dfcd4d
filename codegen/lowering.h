// The state one compile shares between the lowering functions of each op family.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "codegen/compiler.h"
#include "codegen/tile_mapping.h"
#include "codegen/tile_memory.h"
#include "lib/ops/registry.h"

namespace poprt::codegen {

// How an out-of-memory error starts its hint for data of `dtype`: float32 takes half the bytes in
// float16, so --precision fp16 comes first ("" for other dtypes).
inline std::string halfPrecisionHint(DType dtype) { return dtype == DType::Float ? "--precision fp16 (half the bytes), " : ""; }

class Lowering {
 public:
  Lowering(const CompileOptions& options, ops::Opsets opsets);

  const exec::Target& target() const { return options_.target; }
  const CompileOptions& options() const { return options_; }
  const ops::Opsets& opsets() const { return opsets_; }
  int64_t opset() const;  // of the default domain
  exec::Executable& executable() { return exe_; }
  const exec::Executable& executable() const { return exe_; }
  // Memory a lowering allocates itself and maps no value onto lives until its node ends.
  TileAllocator& allocator() { return mem_.allocator(); }
  const TileAllocator& allocator() const { return mem_.allocator(); }

  const TileMapping& mapping(const ir::Value* v) const { return mappings_.at(v); }
  bool hasMapping(const ir::Value* v) const { return mappings_.count(v) != 0; }
  // `v` holds the memory under `m` until release(v): its own, or its input's for a view.
  void setMapping(const ir::Value* v, TileMapping m);
  // `v` is dead (every node reading it is lowered, or has streamed it out): its mapping and the
  // operand copies made of it are forgotten, and memory no live value holds is reused.
  void release(const ir::Value* v);

  // Where spreadLinear places memory: anywhere free now (data the main program writes), or in the
  // persistent region, which nothing else ever uses (data the load program writes before the main
  // program runs). Persistent offsets are provisional until finalizeMemory().
  enum class Placement { Reuse, Persistent };
  // Spreads `numel` elements over consecutive tiles (whole grains per tile), allocating memory.
  TileMapping spreadLinear(int64_t numel, size_t elem_size, Placement placement = Placement::Reuse);
  // The elements spreadLinear puts on each tile (whole grains; the last tile may get fewer).
  int64_t linearShare(int64_t numel, size_t elem_size) const;
  // A fresh mapping for an elementwise result shaped like `like`: each of its regions on the same
  // tile, so the op reads that operand in place with no exchange (as Poplar maps elementwise
  // outputs like their inputs). spreadLinear when `like` is a weight, has no mapping, or piles
  // more than twice spreadLinear's share on a tile.
  TileMapping spreadLike(const ir::Value* like, size_t elem_size);

  // Regions of an elementwise output that one vertex covers: a run of a tile's regions (in order)
  // lying one after another in its memory, each operand's elements either in place and as
  // consecutive, or not in place (then gathered into one buffer for the run). A conv with split
  // input channels leaves its output in many short regions per tile (its reduction slices cross
  // channels): with a vertex per region, an elementwise op after it cost several per tile.
  struct Run {
    uint32_t tile = 0;
    uint64_t offset = 0;          // of the output
    int64_t count = 0;            // elements, all regions'
    std::vector<Region> regions;  // the output's, in order
  };
  // Null operands are skipped; with a weight among them every region is a run of its own.
  std::vector<Run> elementwiseRuns(const TileMapping& out, size_t elem_size,
                                   std::initializer_list<const ir::Value*> operands) const;

  // Tile-memory offset of a contiguous buffer on `tile` holding elements [begin, begin+count) of
  // `v`: in place when the mapping already has them there, else a new buffer the node's exchange
  // step fills. Buffers are reused by later nodes (values never change once computed) and freed
  // with `v`.
  uint64_t operandOnTile(const ir::Value* v, int64_t begin, int64_t count, uint32_t tile);
  // The same for the elements of a run of `v`'s shape (elementwiseRuns), one after another.
  uint64_t operandOnTile(const ir::Value* v, const Run& run);
  // Weights (initializers) live where vertices read them: the load program copies each slice a
  // tile needs straight there, once, so no exchange moves weights at run time. For r < reps,
  // elements [begin + r*stride, +count) go one after another to the returned offset. Refused
  // (nullopt) when the tile's resident weights would pass CompileOptions::resident_weight_share
  // of its memory (only_copy_resident_share for a slice no other copy of the weight overlaps):
  // the caller then gathers from the weight's own mapping (requireMapping) like any value.
  std::optional<uint64_t> residentWeight(const ir::Value* v, int64_t begin, int64_t count, int64_t reps, int64_t stride,
                                         uint32_t tile);
  // The Weight stream of an initializer, created with its load step on first use; and every
  // initializer given one, in order (their data goes into the PopEF).
  uint32_t weightStream(const ir::Value* v);
  const std::vector<const ir::Value*>& weights() const { return weights_; }
  // Gives `v` a mapping if it has none (a weight first needed whole) through the compiler's placer.
  void requireMapping(const ir::Value* v);
  void setPlacer(std::function<void(const ir::Value*)> placer) { placer_ = std::move(placer); }

  // Where elements [begin, begin+count) of `v` already lie contiguously on `tile`, if they do.
  std::optional<uint64_t> inPlaceOffset(const ir::Value* v, int64_t begin, int64_t count, uint32_t tile) const;

  // Node-local buffers: memory on a tile that lives from the node's exchange step to the end of
  // its compute set and is reused by the next nodes (operand windows only this node reads).
  uint64_t scratch(uint32_t tile, uint64_t bytes);
  // Elements [begin, begin+count) of `v` contiguous on `tile`: in place, or a buffer an earlier
  // node gathered, else gathered into scratch by this node's exchange step.
  uint64_t operandInScratch(const ir::Value* v, int64_t begin, int64_t count, uint32_t tile);
  uint64_t operandInScratch(const ir::Value* v, const Run& run);
  // For r < reps, elements [begin + r*stride, +count) of `v` one after another on `tile`: a weight
  // slice resident there, or node scratch this node's exchange fills with one gather (however many
  // tiles `v` is spread over).
  uint64_t operandRows(const ir::Value* v, int64_t begin, int64_t count, int64_t reps, int64_t stride, uint32_t tile);
  // Appends to this node's exchange one gather of `v`: for r < reps, elements
  // [begin + r*stride, +count) to dst_offset + r*dst_stride bytes on `tile` (exec::Gather).
  void gather(const ir::Value* v, int64_t begin, int64_t count, int64_t reps, int64_t stride, uint32_t tile, uint64_t dst_offset,
              uint64_t dst_stride);
  // Ends the program (after the outputs stream out): places each tile's persistent region above
  // its main region's high-water mark, rewriting the provisional offsets of every vertex field,
  // copy, gather, layout and stream; returns the bytes each tile needs.
  std::vector<uint64_t> finalizeMemory();
  // What lived on `tile` when it peaked over its capacity (TileMemory::describePeak).
  std::string describePeak(uint32_t tile, size_t items) const { return mem_.describePeak(tile, items); }
  const std::string& peakStep(uint32_t tile) const { return mem_.peakStep(tile); }
  // Liveness and per-tile peaks (TileMemory::memoryProfile), after finalizeMemory.
  exec::MemoryProfile memoryProfile() const { return mem_.memoryProfile(); }

  // The first tile of an op whose `count` blocks go to consecutive tiles (wrapping within the
  // IPU): rotates like spreadLinear so that small ops do not all start on tile 0.
  uint32_t startTile(int64_t count);
  // The tiles the next nodes run on are one IPU's (a model sharded over IPUs runs each node on
  // one). Weights a node needs whole get a mapping on each IPU that reads them.
  void setIpu(uint32_t ipu);
  uint32_t ipu() const { return ipu_; }
  uint32_t tileCount() const { return target().tiles_per_ipu; }  // on one IPU
  uint32_t nextTile(uint32_t tile) const;                        // of the same IPU, wrapping
  // The values with a mapping that are not weights (the live activations), by name.
  std::vector<const ir::Value*> liveActivations() const;
  // Moves `values` (live activations, none a weight) to the current IPU in one exchange step over
  // the IPU-Links: each gets a fresh mapping there and its memory on the old IPU is freed.
  void moveHere(const std::vector<const ir::Value*>& values, const std::string& step_name);

  // Begins the superstep of a node: an exchange step (if anything moves) then a compute set.
  exec::Exchange& exchange() { return pending_exchange_; }
  exec::ComputeSet& computeSet() { return pending_set_; }
  void beginNode(const std::string& name);
  void endNode();
  // Ends the node's current superstep and begins another (a node whose vertices run in sequence,
  // each step reading what the one before wrote). The node's buffers live on until endNode.
  void nextSuperstep();

 private:
  void flushSuperstep();  // appends the pending exchange and compute set to the main program

  CompileOptions options_;
  ops::Opsets opsets_;
  exec::Executable exe_;
  TileMemory mem_;
  std::unordered_map<const ir::Value*, TileMapping> mappings_;
  exec::Exchange pending_exchange_;
  exec::ComputeSet pending_set_;
  std::map<std::tuple<const ir::Value*, int64_t, int64_t, uint32_t>, uint64_t> gathered_;
  std::unordered_map<const ir::Value*, uint32_t> layouts_;  // the exec::Layout of each value gathers read
  std::string node_;                                        // the node being lowered
  std::map<std::tuple<const ir::Value*, int64_t, int64_t, int64_t, int64_t, uint32_t>, uint64_t> resident_;
  std::vector<uint64_t> resident_bytes_;                               // per tile
  std::unordered_map<const ir::Value*, uint64_t> resident_of_weight_;  // all its resident slices' bytes
  std::unordered_map<const ir::Value*, uint32_t> weight_streams_;
  std::vector<const ir::Value*> weights_;
  std::function<void(const ir::Value*)> placer_;
  uint32_t ipu_ = 0;
  // Per IPU, where the next small tensor starts (rotating, so that its first tile is not always
  // the busiest); and the whole-weight mappings of the IPUs not current (setIpu swaps them).
  std::vector<uint32_t> next_tile_;
  std::vector<std::vector<std::pair<const ir::Value*, TileMapping>>> other_ipu_weights_;
};

Status lowerUnary(Lowering& l, const ir::Node& node);
Status lowerCast(Lowering& l, const ir::Node& node);
Status lowerBinary(Lowering& l, const ir::Node& node);
// ai.graphcore ElementwiseChain: one vertex a run for all its steps; its blocker refuses steps
// the op's check refuses and operands of more than one element.
std::string elementwiseChainBlocker(const ir::Node& node);
Status lowerElementwiseChain(Lowering& l, const ir::Node& node);
Status lowerMatMul(Lowering& l, const ir::Node& node);
// Conv/ConvAct (family Conv) and MaxPool/AveragePool/GlobalMaxPool/GlobalAveragePool (family Pool).
Status lowerConv(Lowering& l, const ir::Node& node);
Status lowerPool(Lowering& l, const ir::Node& node);
// Why a Conv- or Pool-family node cannot run on the device (its geometry, or no plan fits the
// tile memory budget), or "" if it can. Its dtypes and static shapes are checked beforehand.
std::string windowBlocker(const ir::Node& node, const CompileOptions& options);
Status lowerView(Lowering& l, const ir::Node& node);
// Clip/LeakyRelu/HardSigmoid/HardSwish (family Activation).
Status lowerActivation(Lowering& l, const ir::Node& node);
std::string activationBlocker(const ir::Node& node, const Lowering& l);
// Reduce*, Softmax/LogSoftmax, CumSum and the normalisations (families Reduce, Softmax, CumSum, Norm).
Status lowerRows(Lowering& l, const ir::Node& node);
std::string rowsBlocker(const ir::Node& node, const Lowering& l);
Status lowerBatchNorm(Lowering& l, const ir::Node& node);
std::string batchNormBlocker(const ir::Node& node, const Lowering& l);
// ai.graphcore MultiHeadAttention (family Attention).
Status lowerAttention(Lowering& l, const ir::Node& node);
std::string attentionBlocker(const ir::Node& node, const Lowering& l);
struct RearrangeMap;
Status lowerRearrange(Lowering& l, const ir::Node& node, const RearrangeMap& map);

}  // namespace poprt::codegen
