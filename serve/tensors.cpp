#include "serve/tensors.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "lib/support/copy_bytes.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::serve {
namespace {

struct DatatypeName {
  DType dtype;
  std::string_view name;
};
constexpr DatatypeName kDatatypes[] = {
    {DType::Bool, "BOOL"},     {DType::UInt8, "UINT8"},  {DType::UInt16, "UINT16"}, {DType::UInt32, "UINT32"},
    {DType::UInt64, "UINT64"}, {DType::Int8, "INT8"},    {DType::Int16, "INT16"},   {DType::Int32, "INT32"},
    {DType::Int64, "INT64"},   {DType::Float16, "FP16"}, {DType::BFloat16, "BF16"}, {DType::Float, "FP32"},
    {DType::Double, "FP64"},
};

// Nested arrays deeper than this are refused before they are walked (no tensor has rank > 64).
constexpr int kMaxDepth = 64;

// One JSON element as T, or why it cannot be.
template <class T>
std::optional<std::string> toElement(const nlohmann::json& v, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return "expected true or false, got " + v.dump();
    out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return v.dump() + " is out of range";
      out = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const int64_t s = v.get<int64_t>();
      if (s < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (s > 0 && static_cast<uint64_t>(s) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
        return v.dump() + " is out of range";
      out = static_cast<T>(s);
    } else {
      return "expected an integer, got " + v.dump();
    }
  } else {  // float, double, Half, BFloat16
    if (!v.is_number()) return "expected a number, got " + v.dump();
    const double d = v.get<double>();
    if constexpr (std::is_same_v<T, double>)
      out = d;
    else if constexpr (std::is_same_v<T, float>)
      out = static_cast<float>(d);
    else
      out = T(static_cast<float>(d));
  }
  return std::nullopt;
}

// Appends the leaves of `v` (arrays walked depth first) to `out`; stops at `count` + 1 so a
// request cannot make us hold more than the tensor it should be.
template <class T>
Status flatten(const nlohmann::json& v, int depth, int64_t count, std::vector<T>& out) {
  if (depth > kMaxDepth) return Error("arrays nested deeper than " + std::to_string(kMaxDepth));
  if (v.is_array()) {
    for (const auto& item : v) {
      POPRT_TRY(flatten(item, depth + 1, count, out));
      if (static_cast<int64_t>(out.size()) > count) return okStatus();
    }
    return okStatus();
  }
  T x{};
  if (auto why = toElement(v, x)) return Error("element " + std::to_string(out.size()) + ": " + *why);
  out.push_back(x);
  return okStatus();
}

}  // namespace

std::optional<std::string_view> kserveDatatype(DType dtype) {
  for (const auto& d : kDatatypes)
    if (d.dtype == dtype) return d.name;
  return std::nullopt;
}

std::optional<DType> dtypeFromKserve(std::string_view datatype) {
  for (const auto& d : kDatatypes)
    if (d.name == datatype) return d.dtype;
  return std::nullopt;
}

Expected<std::vector<uint8_t>> decodeJsonData(const nlohmann::json& data, DType dtype, int64_t count) {
  std::vector<uint8_t> bytes;
  Status inner = okStatus();
  Status st = dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> elements;
    elements.reserve(static_cast<size_t>(count));
    inner = flatten(data, 0, count, elements);
    if (!inner.ok()) return;
    if (static_cast<int64_t>(elements.size()) != count) {
      inner = Error(static_cast<int64_t>(elements.size()) > count
                        ? "more than the " + std::to_string(count) + " elements its shape holds"
                        : std::to_string(elements.size()) + " elements, its shape holds " + std::to_string(count));
      return;
    }
    bytes.resize(elements.size() * sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < elements.size(); ++i) bytes[i] = elements[i] ? 1 : 0;
    } else {
      copyBytes(bytes.data(), elements.data(), bytes.size());
    }
  });
  POPRT_TRY(st);
  POPRT_TRY(inner);
  return bytes;
}

nlohmann::json encodeJsonData(std::span<const uint8_t> bytes, DType dtype) {
  nlohmann::json out = nlohmann::json::array();
  auto& array = out.get_ref<nlohmann::json::array_t&>();
  Status st = dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    const size_t n = bytes.size() / sizeof(T);
    array.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        array.emplace_back(bytes[i] != 0);  // a byte that is not 0 or 1 is not a valid bool object
        continue;
      }
      T x;
      std::memcpy(&x, bytes.data() + i * sizeof(T), sizeof(T));
      if constexpr (std::is_integral_v<T>) {
        array.emplace_back(x);
      } else {
        const double d = static_cast<double>(toCompute(x));
        if (std::isfinite(d))
          array.emplace_back(d);
        else
          array.emplace_back(nullptr);
      }
    }
  });
  POPRT_CHECK(st.ok(), "encodeJsonData: dtype without a KServe datatype");
  return out;
}

}  // namespace poprt::serve
