// Caps on what an untrusted file may make poprt allocate, checked against the sizes a file
// declares before anything is allocated or read. Each has a default that no real model reaches
// and can be changed with an environment variable (a byte count, e.g. POPRT_MAX_TENSOR_BYTES=1073741824).
#pragma once

#include <cstdint>

#include "lib/support/status.h"

namespace poprt {

// The largest single tensor read from a file: an ONNX initializer or constant attribute (inline
// or external data), a .npy or .pb input. POPRT_MAX_TENSOR_BYTES, default 4 GiB (the largest
// file poprt reads whole, kMaxFileBytes).
inline constexpr uint64_t kDefaultMaxTensorBytes = uint64_t{4} << 30;
Expected<uint64_t> maxTensorBytes();

// The tile memory a PopEF may ask the simulator to allocate, summed over all tiles, with its plan
// of the exchanges (sim/exchange_plan.h: 16 bytes a move).
// POPRT_MAX_DEVICE_BYTES, default 16 GiB (a full ipu2 is 0.9 GiB).
inline constexpr uint64_t kDefaultMaxDeviceBytes = uint64_t{16} << 30;
Expected<uint64_t> maxDeviceBytes();

}  // namespace poprt
