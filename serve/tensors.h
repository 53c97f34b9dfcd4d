// popef-serve's tensor data in the KServe v2 protocol: datatype names (FP32, INT64, BOOL...) and
// the elements of a tensor as JSON ("data": nested or flat arrays of numbers or booleans) to and
// from the raw little-endian bytes the runtime reads and writes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/support/dtype.h"
#include "lib/support/status.h"

namespace poprt::serve {

// KServe v2 datatype of a dtype: BOOL, UINT8..UINT64, INT8..INT64, FP16, BF16, FP32, FP64;
// nullopt for dtypes the protocol has no fixed-size name for (string, complex).
std::optional<std::string_view> kserveDatatype(DType dtype);
std::optional<DType> dtypeFromKserve(std::string_view datatype);

// The `count` elements of a tensor from its JSON "data": a flat array or arrays nested to any
// depth (flattened row-major, as Triton does). Booleans for BOOL, integers within range for the
// integer types, any number for the float types (rounded to the nearest value). Errors name the
// element's flat index and what it is.
Expected<std::vector<uint8_t>> decodeJsonData(const nlohmann::json& data, DType dtype, int64_t count);

// The elements of `bytes` as a flat JSON array (non-finite floats become null: JSON has no
// NaN or infinity; the binary extension carries them exactly).
nlohmann::json encodeJsonData(std::span<const uint8_t> bytes, DType dtype);

}  // namespace poprt::serve
