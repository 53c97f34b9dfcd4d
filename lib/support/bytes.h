// Byte counts for people: "816.0 KiB".
#pragma once

#include <cstdint>
#include <string>

namespace poprt {

std::string humanBytes(uint64_t bytes);

}  // namespace poprt
