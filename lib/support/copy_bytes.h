// memcpy for byte ranges that may be empty: memcpy wants valid pointers even for 0 bytes, and an
// empty tensor's or vector's data() is null (UBSan reports it).
#pragma once

#include <cstddef>
#include <cstring>

namespace poprt {

inline void copyBytes(void* dst, const void* src, std::size_t n) {
  if (n != 0) std::memcpy(dst, src, n);
}

namespace detail {
// n in [K, 2K]: both ends are loaded before either is stored, so the ranges may overlap.
template <std::size_t K>
inline void moveEnds(unsigned char* d, const unsigned char* s, std::size_t n) {
  unsigned char head[K], tail[K];
  std::memcpy(head, s, K);
  std::memcpy(tail, s + n - K, K);
  std::memcpy(d, head, K);
  std::memcpy(d + n - K, tail, K);
}
}  // namespace detail

// memmove for the simulator's exchange, which moves millions of pieces of a few dozen bytes a
// run: up to 64 bytes it uses fixed-size copies the compiler inlines (a call to memmove costs
// about as much as such a piece). May be empty; the ranges may overlap.
inline void moveBytes(void* dst, const void* src, std::size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (n >= 32 && n <= 64) return detail::moveEnds<32>(d, s, n);
  if (n >= 16 && n < 32) return detail::moveEnds<16>(d, s, n);
  if (n >= 8 && n < 16) return detail::moveEnds<8>(d, s, n);
  if (n >= 4 && n < 8) return detail::moveEnds<4>(d, s, n);
  if (n != 0) std::memmove(d, s, n);
}

}  // namespace poprt
