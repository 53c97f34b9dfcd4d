// memcpy for byte ranges that may be empty: memcpy wants valid pointers even for 0 bytes, and an
// empty tensor's or vector's data() is null (UBSan reports it).
#pragma once

#include <cstddef>
#include <cstring>

namespace poprt {

inline void copyBytes(void* dst, const void* src, std::size_t n) {
  if (n != 0) std::memcpy(dst, src, n);
}

}  // namespace poprt
