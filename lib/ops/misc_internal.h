// Internal to the misc op family: the registration functions of its files (called from
// registerMiscOps in misc_ops.cpp) and the helpers they share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cmath>
#include <limits>
#include <type_traits>

#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::misc {

// Local versions of the op_util.h helpers (its toInt64s does not compile for the 16-bit float
// types, so this family does not include it).

inline Expected<const Tensor*> requireInput(const std::vector<const Tensor*>& in, size_t i) {
  if (i >= in.size() || !in[i]) return Error("input " + std::to_string(i) + " is required");
  return in[i];
}

// The values of an integer (or bool) tensor as int64.
inline Expected<std::vector<int64_t>> toInt64s(const Tensor& t) {
  if (!isInteger(t.dtype()) && t.dtype() != DType::Bool)
    return Error("expected an integer tensor, got " + std::string(dtypeName(t.dtype())));
  std::vector<int64_t> out;
  Status st = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>)
      for (T v : t.data<T>()) out.push_back(static_cast<int64_t>(v));
  });
  if (!st.ok()) return st.error();
  return out;
}

// The values of any numeric tensor as double.
inline Expected<std::vector<double>> toDoubles(const Tensor& t) {
  std::vector<double> out;
  Status st = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.data<T>()) out.push_back(static_cast<double>(toCompute(v)));
  });
  if (!st.ok()) return st.error();
  return out;
}

// A tensor of `dtype` and `shape` from doubles; integer types take NaN as 0 and saturate.
inline Expected<Tensor> fromDoubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numElements()) return Error("internal: value count mismatch");
  Status st = dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto d = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      if constexpr (std::is_same_v<T, bool>) {
        d[i] = v != 0;
      } else if constexpr (std::is_integral_v<T>) {
        if (std::isnan(v)) d[i] = 0;
        else if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) d[i] = std::numeric_limits<T>::lowest();
        else if (v >= static_cast<double>(std::numeric_limits<T>::max())) d[i] = std::numeric_limits<T>::max();
        else d[i] = static_cast<T>(v);
      } else {
        d[i] = fromCompute<T>(static_cast<typename ComputeType<T>::type>(v));
      }
    }
  });
  if (!st.ok()) return st.error();
  return t;
}

inline std::vector<Tensor> single(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

// Cap on the elements of any tensor or buffer these ops allocate (sizes come from untrusted
// models); beyond it an op returns an error.
inline constexpr int64_t kMaxElements = int64_t{1} << 28;

inline Status checkSize(const Shape& shape) {
  auto n = checkedNumElements(shape, kMaxElements);
  if (!n.ok()) return n.error();
  return okStatus();
}

// A string-list attribute, or empty.
inline std::vector<std::string> attrStrings(const ir::Node& node, const std::string& name) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end()) return {};
  if (auto* v = std::get_if<std::vector<std::string>>(&it->second.value)) return *v;
  return {};
}

void registerEinsumOps(std::vector<OpDef>& ops);
void registerStringOps(std::vector<OpDef>& ops);
void registerRandomOps(std::vector<OpDef>& ops);

}  // namespace poprt::ops::misc
