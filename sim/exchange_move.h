// A move of an exchange as the simulator makes it: bytes from an arena offset to an offset in a
// tile, or in a copy a codelet assembles its input in (sim/scratch_inputs.h), and the inline
// memmove it is made with.
#pragma once

#include <cstdint>
#include <cstring>

namespace poprt::sim {

struct ExchangeMove {
  uint64_t src = 0;  // arena offset
  uint32_t dst = 0;  // offset in its run's tile (a tile holds less than 4 GiB: exec::validate), or in a copy
  uint32_t bytes = 0;
  bool operator==(const ExchangeMove&) const = default;
};

// memmove, inline for the moves an exchange is mostly made of (a gather row of 4 bytes, slices of
// partial sums, conv window rows of 64-512 bytes: yolox_nano makes 0.9 million moves under 8 bytes
// and 1.6 million of 64-511 a run, each a library call before). Up to 64 bytes every load comes
// before any store, so overlapping ranges come out as memmove's; longer moves copy forward in 16
// bytes at a time only when the ranges do not overlap.
inline void moveBytes(uint8_t* dst, const uint8_t* src, uint32_t n) {
  struct Chunk {
    uint64_t a, b;
  };
  if (n < 16) {
    if (n >= 8) {
      uint64_t head, tail;
      std::memcpy(&head, src, 8);
      std::memcpy(&tail, src + n - 8, 8);
      std::memcpy(dst, &head, 8);
      std::memcpy(dst + n - 8, &tail, 8);
    } else if (n >= 4) {
      uint32_t head, tail;
      std::memcpy(&head, src, 4);
      std::memcpy(&tail, src + n - 4, 4);
      std::memcpy(dst, &head, 4);
      std::memcpy(dst + n - 4, &tail, 4);
    } else {
      std::memmove(dst, src, n);
    }
    return;
  }
  if (n > 64) {
    if (n > 512 || (dst < src + n && src < dst + n)) return static_cast<void>(std::memmove(dst, src, n));
    Chunk c;
    for (uint32_t at = 0; at + 16 < n; at += 16) {
      std::memcpy(&c, src + at, 16);
      std::memcpy(dst + at, &c, 16);
    }
    std::memcpy(&c, src + n - 16, 16);  // the last 16, overlapping the chunk before
    std::memcpy(dst + n - 16, &c, 16);
    return;
  }
  Chunk c0, c1, c2, c3;
  std::memcpy(&c0, src, 16);
  std::memcpy(&c1, src + n - 16, 16);
  if (n > 32) {
    std::memcpy(&c2, src + 16, 16);
    std::memcpy(&c3, src + n - 32, 16);
    std::memcpy(dst + 16, &c2, 16);
    std::memcpy(dst + n - 32, &c3, 16);
  }
  std::memcpy(dst, &c0, 16);
  std::memcpy(dst + n - 16, &c1, 16);
}

// Moves [first, last) into the memory at `dst` (a tile, a scratch slot, a codelet's copy), their
// sources at `base` (the arena).
inline void makeMoves(const ExchangeMove* first, const ExchangeMove* last, uint8_t* dst, const uint8_t* base) {
  for (const ExchangeMove* m = first; m != last; ++m) moveBytes(dst + m->dst, base + m->src, m->bytes);
}

}  // namespace poprt::sim
