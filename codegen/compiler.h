// Lowers a static-shaped graph to an exec::Executable: maps every tensor onto tiles, turns each
// node into an exchange step (gathering its operands) and a compute set of vertices, and wraps
// them in the load program (weights to tiles) and the main program (inputs in, supersteps, outputs out).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/sharding.h"
#include "lib/exec/executable.h"
#include "lib/exec/memory_profile.h"
#include "lib/ir/graph.h"

namespace poprt::codegen {

struct CompileOptions {
  exec::Target target;
  double available_memory_proportion = 0.6;  // share of tile memory a matmul plan may use
  ShardingOptions sharding;                  // with target.num_ipus > 1
  // Share of tile memory that weight slices may keep resident on the tiles that read them
  // (Lowering::residentWeight); the rest of the weights are spread over all the tiles and
  // gathered when used. compile() retries a program that does not fit with kRetryResidentShare.
  double resident_weight_share = 0.4;
  // The share a tile's resident weights may reach with slices that are their weight's only copy:
  // refusing one would spread the whole weight, which takes the same bytes, and gather the slice
  // into the tile's memory again when it is read (VGG-11's 411 MB classifier fits only so).
  // compile()'s retries set it to their resident share.
  double only_copy_resident_share = 0.75;
  // The share of available_memory_proportion the conv and matmul planners try first; a node no
  // plan fits there is planned within the whole proportion. compile() lowers it when a program
  // runs out of tile memory (kRetryMemoryScales).
  double temporaries_scale = 1.0;
  // Stop at the first node after which a tile needs more than its memory: a tile's need only grows
  // as nodes are compiled, so the program cannot fit. compile() tries its placements so and
  // compiles in full only the one whose report it gives.
  bool stop_when_over = false;
  // The bytes per tile the planners may give one node's operands and results.
  uint64_t tileBudget() const {
    return static_cast<uint64_t>(available_memory_proportion * static_cast<double>(target.bytes_per_tile));
  }
  uint64_t preferredTileBudget() const { return static_cast<uint64_t>(temporaries_scale * static_cast<double>(tileBudget())); }
};

struct CompileResult {
  exec::Executable executable;
  // The initializers the Weight streams load, each stream named after its value: they point into
  // the compiled model, which must outlive the result.
  std::vector<const ir::Value*> weights;
  std::map<std::string, Tensor> weightData() const;  // a copy, by stream name
  std::vector<std::string> device_nodes;             // nodes lowered to vertices, in program order
  std::vector<std::string> host_nodes;               // nodes the host runs (host fallback)
  std::vector<std::string> host_reasons;             // why each host node is not on the device
  std::vector<std::string> warnings;                 // for the user, one line each
  exec::MemoryProfile memory_profile;                // for the profile reports (docs/REPORT.md)
};

// A node too big for the tiles that --serialize_matmul can split (a Conv, MatMul or Gemm with a
// constant weight) is named in the error's hint, "--serialize_matmul 'NODE=4'"; poprt-convert
// serialises the node so named and compiles again (nodeToSerialize reads the name back).
inline constexpr int64_t kSerializeFactor = 4;
std::string serializeHint(const ir::Node& node);  // "" for a node serialize_matmul cannot split
std::optional<std::string> nodeToSerialize(const std::string& error_message);

// Resident weight slices save exchange, but pile up on the tiles of each matmul's first blocks
// (a BERT-Base encoder at batch 16 has 40% of its fullest tiles in them): a program that runs out
// of tile memory is compiled again with this cap on them, and says so in its warnings.
inline constexpr double kRetryResidentShare = 0.3;
// Then the planners' first try (CompileOptions::temporaries_scale) is each of these in turn
// until the program fits: a 2048-channel conv planned within 60% of a tile does not fit beside
// the resident weights of FCN-ResNet50 (compile(), with a warning naming the share).
inline constexpr double kRetryMemoryScales[] = {1.0, 0.5, 0.25};

// Nodes the device cannot run go to host programs run by the reference evaluator. With
// target.num_ipus > 1 the nodes are placed on the IPUs (codegen/sharding.h) and the main program
// runs as segments, one per stage, each ending with the IPU-Link copies of the values later
// stages read (exec::Segment).
//
// A program that runs out of tile memory is compiled again with the next of placements() until
// one fits (or smaller temporaries stop at the same node as larger ones); the error is then
// compileInFull()'s report. With a `memo`, kept across compiles of one model by a caller that
// serialises the node an error names (nodeToSerialize): the error is the stop of the placement
// that got furthest when it names one, and the next compile starts at that placement (those
// before it ran out of memory earlier, at nodes the serialisation leaves as they were).
struct PlacementMemo {
  size_t first = 0;      // an index into placements()
  bool stopped = false;  // the last error was such a stop, not the report
};
Expected<CompileResult> compile(const ir::Model& model, const CompileOptions& options, PlacementMemo* memo = nullptr);

// The options' own placement alone, compiled to the end (unless stop_when_over) even when it
// runs out of tile memory: the report of a program that does not fit (the worst tiles, what they
// hold, hints).
Expected<CompileResult> compileInFull(const ir::Model& model, const CompileOptions& options);

// The model's constant weights as a share of the target's memory (all its IPUs).
double weightShare(const ir::Model& model, const exec::Target& target);

// Weights past this share of the IPUs' memory need their only copies resident beyond any retry
// share (VGG-11-BN's classifier, at 56%): such a model starts at the options' own placement.
inline constexpr double kOnlyCopiesWeightShare = 0.5;

// The placements compile() tries, in order, each stopping as soon as it cannot fit
// (stop_when_over): the options' own, then fewer resident weights (kRetryResidentShare), then
// smaller temporaries (kRetryMemoryScales). A model whose weights take between
// kRetryResidentShare and kOnlyCopiesWeightShare of the memory (`weight_share`) tries the first
// two the other way round: its weight slices fill most tiles' resident share, leaving too little
// for a matmul's temporaries (ViT-B/16, at 37%, ran half its nodes before stopping).
std::vector<CompileOptions> placements(const CompileOptions& options, double weight_share = 0.0);

}  // namespace poprt::codegen
