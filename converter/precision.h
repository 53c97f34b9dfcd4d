// --precision_compare: runs the float32 model (the graph just before float_to_half, so value
// names match) and the float16 one with the reference evaluator on the same inputs — generated as
// --check's are (value_check.h), or read from --precision_compare_input NAME=FILE — and reports per model output
// (and, with --precision_compare_per_layer, per value both graphs compute) the largest abs/rel
// error, the cosine similarity and the values the fp16 model made NaN/Inf where fp32 has none.
// It reports; it does not fail the conversion.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/value.h"

namespace poprt::converter {

struct PrecisionCompareOptions {
  bool per_layer = false;
  std::vector<std::string> inputs;  // NAME=FILE (.npy or .pb); the others are generated
  uint64_t seed = 0;
  std::string input_flag = "--precision_compare_input";  // the flag `inputs` came from, for errors
  // The float32 model's outputs on these inputs, for comparing several float16 models with one
  // run of it: filled by the first call, read (the float32 model not run again) by the next.
  std::vector<ops::RtValue>* fp32_outputs = nullptr;
};

// How one value of the fp16 model compares with the fp32 model's.
struct PrecisionDiff {
  std::string name, op_type;  // op_type: the producer's, for layers
  std::string dtype;          // of the fp16 model's value
  int64_t elements = 0;
  double max_abs = 0, max_rel = 0;  // over the elements finite in both
  double ref_max = 0;               // the largest finite |x| of the fp32 value (beyond 65504: overflow)
  double cosine = 1;                // over the elements finite in both; 1 when both are all zero
  int64_t new_nonfinite = 0;        // NaN/Inf in fp16 where fp32 is finite
  std::string mismatch;             // shape or kind differ: not comparable
};

struct PrecisionReport {
  std::vector<PrecisionDiff> outputs;
  std::vector<PrecisionDiff> layers;  // in the fp32 graph's order; with per_layer only
  std::vector<std::string> generated_inputs, file_inputs;
};

// `fp32_snapshot` is the serialized fp32 model; `fp16` the converted one. Errors name the flag.
Expected<PrecisionReport> comparePrecision(const std::string& fp32_snapshot, const ir::Model& fp16,
                                           const PrecisionCompareOptions& options);

// A cosine similarity as the reports print it ("0.999220", "nan").
std::string formatCosine(double v);

// A model serialized by the conversion (the float32 snapshot), imported again as it was.
Expected<ir::Model> reimportModel(const std::string& bytes, const std::string& what);

// The inputs of float_to_half's range check: --fp16_calibration_input files (NAME=FILE), the
// others generated as --check's are. When an input has no file and no static shape there is no
// range check: returns none and says why in `skipped`.
Expected<std::vector<std::pair<std::string, ops::RtValue>>> calibrationInputs(const ir::Graph& graph,
                                                                              const std::vector<std::string>& files,
                                                                              std::string& skipped);

// The readable tables (outputs, then the worst layers).
void printPrecisionReport(const PrecisionReport& report, std::ostream& out);
nlohmann::ordered_json precisionReportJson(const PrecisionReport& report);

// Cosine similarity, max abs/rel error and new non-finite values of `got` against `ref` (equal
// sizes); exposed for the tests.
void precisionDiff(const std::vector<double>& ref, const std::vector<double>& got, PrecisionDiff& d);

}  // namespace poprt::converter
