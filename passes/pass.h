// A graph pass and what it may use while running: the model, limits and a place to report what it
// matched (and, for fusions, what almost matched and why not).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/registry.h"
#include "passes/fp16_options.h"

namespace poprt::passes {

struct PassStats {
  std::map<std::string, int64_t> counters;  // e.g. "folded": 12
  std::vector<std::string> near_misses;     // "node 'x' (Mul): scale is not a constant"
  std::vector<std::string> warnings;        // for the user: poprt-convert prints them ("constant 'w' clamped")
};

struct PassContext {
  ir::Model& model;
  int64_t max_tensor_size = int64_t{1} << 27;  // bytes a folded constant may take (--max_tensor_size)
  Fp16Options fp16;                            // --precision fp16 and its options
  // --serialize_matmul: node name -> the number of slices (serialize_matmul.cpp).
  std::vector<std::pair<std::string, int64_t>> serialize_matmul;
  PassStats stats;  // of the pass that is running

  ops::Opsets opsets() const;
  void count(const std::string& what, int64_t n = 1) { stats.counters[what] += n; }
  void nearMiss(const ir::Node& node, const std::string& why) { stats.near_misses.push_back(node.describe() + ": " + why); }
  void warn(const std::string& what) { stats.warnings.push_back(what); }
};

class Pass {
 public:
  virtual ~Pass() = default;
  // Returns whether the graph changed. A pass never removes or retypes a graph output, only
  // creates ops the registry (or ONNX) knows, and gives every value it creates a type.
  virtual Expected<bool> run(ir::Graph& graph, PassContext& ctx) = 0;
};

struct PassInfo {
  std::string name;
  std::string description;  // one line, for --list_all_passes
  std::function<std::unique_ptr<Pass>()> make;
  bool fp16_only = false;  // in the default pipeline only with --precision fp16 (errors in --passes without it)
};

// Every pass, in the order of the default pipeline (the one list; see pass_list.cpp).
const std::vector<PassInfo>& allPasses();
const PassInfo* findPass(const std::string& name);

}  // namespace poprt::passes
