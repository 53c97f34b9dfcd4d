// File helpers: bounded reads of untrusted files and atomic writes (temp file + rename), so a
// failed run never leaves a half-written output behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "lib/support/status.h"

namespace poprt {

// Default cap on a single file we read whole: 4 GiB.
inline constexpr uint64_t kMaxFileBytes = uint64_t{4} << 30;

Expected<std::vector<uint8_t>> readFileBytes(const std::filesystem::path& path,
                                             uint64_t max_bytes = kMaxFileBytes);
// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
Status writeFileAtomic(const std::filesystem::path& path, std::span<const uint8_t> bytes);
Status writeFileAtomic(const std::filesystem::path& path, const std::string& text);

}  // namespace poprt
