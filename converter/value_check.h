// Model values for the CLIs: generated inputs (poprt-convert --check, popef-run --fill random) and
// the element-wise comparison of outputs with a reference (--check's original graph, popef-run's
// --expected_dir), with its table and its one-line verdict.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lib/ops/value.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::converter {

// Element i of a generated input: floats uniform in [-1, 1), integers in 0..3, bools at random;
// deterministic for a given seed, input index and shape. Numeric and bool dtypes only.
Expected<Tensor> generateInput(DType dtype, const Shape& shape, uint64_t seed, size_t input_index);

// How outputs are judged against their references: element-wise within atol + rtol |ref|
// (allclose), by the cosine similarity of the whole output (cosine: at least min_cosine; what
// reduced precision is judged by), or by the index of the largest value along the last axis of
// each row (top1: every row's the same; classifiers).
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-4;
  std::string compare = "allclose";  // allclose, cosine or top1
  double min_cosine = 0.999;
};

// How one output compares with its reference. An element is bad when |got - ref| > atol + rtol |ref|;
// NaN matches NaN, equal infinities match, strings must be equal.
struct ValueDiff {
  std::string name, type;
  double max_abs = 0;
  double max_rel = 0;  // over the elements whose reference is not zero
  double cosine = 1;   // of the elements finite in both
  double top1 = 1;     // the fraction of rows (along the last axis) whose largest element is at the same index
  double worst_excess = -std::numeric_limits<double>::infinity();  // max of |d| - (atol + rtol |ref|)
  int64_t bad = 0, total = 0;
  std::string mismatch;  // set when the two are not even comparable (dtype, shape, kind)
  bool over = false;     // beyond the tolerance, by the comparison Tolerance::compare names
  bool failed() const { return !mismatch.empty() || over; }
};

// Where the reference and the value under test come from, to word a mismatch:
// "is float32[2] <ref_where> but float64[2] <got_where>".
struct DiffLabels {
  std::string ref_where = "in the reference";
  std::string got_where = "here";
};

Status compareValues(const ops::RtValue& ref, const ops::RtValue& got, const Tolerance& tol, const DiffLabels& labels,
                     ValueDiff& diff);

// "output  type  max abs err  max rel err  result" rows, aligned, each line starting with `indent`.
std::vector<std::string> diffTable(const std::vector<ValueDiff>& diffs, const std::string& indent);
// ok when no output failed; else an Error "<what>: output 'y' ..." naming the worst output.
Status worstDiff(const std::vector<ValueDiff>& diffs, const std::string& what, const Tolerance& tol);
// A number as the table prints it (%.3g, inf).
std::string formatError(double v);

// The cosine similarity of the elements finite in both: 1 when both are all zero, 0 when one is.
double cosineSimilarity(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace poprt::converter
