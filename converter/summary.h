// --summary_json FILE: what a conversion did, as JSON — the model's inputs and outputs, node
// counts per op type before and after the passes, each pass with its time, changed flag and
// statistics, warnings, where each node runs, the compile time and the files written.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/compiler.h"
#include "lib/ir/graph.h"
#include "passes/pass_manager.h"

namespace poprt::converter {

// Top-level nodes per op type ("domain:Op" outside the default domain), sorted by name.
std::map<std::string, int64_t> countOps(const ir::Graph& graph);

struct ConvertSummary {
  std::string input_model;
  int64_t opset_before = 0, opset_after = 0;
  const ir::Model* model = nullptr;  // the converted model (inputs and outputs are listed from it)
  std::map<std::string, int64_t> nodes_before, nodes_after;
  const std::vector<passes::PassReport>* passes = nullptr;
  std::vector<std::string> warnings;
  const codegen::CompileResult* compiled = nullptr;  // with --export_popef
  std::string target;                                // with --export_popef
  std::optional<std::pair<double, double>> check;    // rtol, atol of a --check that passed
  std::string precision = "fp32";
  const nlohmann::ordered_json* precision_compare = nullptr;  // with --precision_compare
  double seconds = 0;                                         // the whole conversion
  double codegen_seconds = 0;
  std::string onnx_path, popef_path, summary_path;
  const nlohmann::ordered_json* cache = nullptr;  // with a compile cache: {dir, key, hit}
};

// Pretty-printed JSON text, ending in a newline.
std::string summaryJson(const ConvertSummary& s);

// The summary a cache entry keeps: `summary` without what belongs to the run that made it (the
// input model's path, the files written, the cache fields), so no path goes into a cache.
std::string summaryForEntry(const std::string& summary);

// A cache hit's summary: the one the compile that made the entry wrote (`stored`), with this run's
// input model, files and cache fields.
std::string summaryForCacheHit(const std::string& stored, const std::string& input_model, const std::string& onnx_path,
                               const std::string& popef_path, const std::string& summary_path,
                               const nlohmann::ordered_json& cache);

}  // namespace poprt::converter
