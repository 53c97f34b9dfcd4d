// Small helpers the op family files share: input checks, axis handling, reading shape-like
// tensors and making tensors from values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops {

// Input i, or an error naming it when it is missing.
inline Expected<const Tensor*> requireInput(const std::vector<const Tensor*>& in, size_t i) {
  if (i >= in.size() || !in[i]) return Error("input " + std::to_string(i) + " is required");
  return in[i];
}

// An axis in [-rank, rank) made non-negative; an error if out of range.
inline Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// The values of an integer (or bool) tensor as int64 (shape, axes, pads, indices inputs).
inline Expected<std::vector<int64_t>> toInt64s(const Tensor& t) {
  std::vector<int64_t> out;
  if (!isInteger(t.dtype()) && t.dtype() != DType::Bool)
    return Error("expected an integer tensor, got " + std::string(dtypeName(t.dtype())));
  Status st = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.data<T>()) out.push_back(static_cast<int64_t>(toCompute(v)));
  });
  POPRT_TRY(st);
  return out;
}

// The values of any numeric tensor as double.
inline Expected<std::vector<double>> toDoubles(const Tensor& t) {
  std::vector<double> out;
  Status st = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.data<T>()) out.push_back(static_cast<double>(toCompute(v)));
  });
  POPRT_TRY(st);
  return out;
}

// A tensor of dtype `dtype` and shape `shape` filled from doubles (converted per element).
inline Expected<Tensor> fromDoubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numElements()) return Error("internal: value count mismatch");
  Status st = dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto d = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) d[i] = fromCompute<T>(static_cast<typename ComputeType<T>::type>(values[i]));
  });
  POPRT_TRY(st);
  return t;
}

inline Tensor int64Tensor(const std::vector<int64_t>& values, Shape shape) {
  Tensor t(DType::Int64, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<int64_t>().begin());
  return t;
}

inline std::vector<Tensor> single(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

}  // namespace poprt::ops
