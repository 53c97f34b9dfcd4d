// Casting between every dtype the evaluator knows (numeric, bool, string), shared by the tensor
// family's ops.
#pragma once

#include <string>
#include <vector>

#include "lib/ops/registry.h"

namespace poprt::ops {
namespace tensor_detail {

// `in` converted element by element to `to` as ONNX Cast does: floats round to nearest even
// (once), floats to integers truncate toward zero, numbers to strings as numpy's str().
Expected<Tensor> castTensor(const Tensor& in, DType to);

// numpy's str() of a float value ("0.5", "1e-05", "nan", "-inf").
template <class T>
std::string formatFloat(T v);

}  // namespace tensor_detail

void registerCastOps(std::vector<OpDef>& ops);

}  // namespace poprt::ops
