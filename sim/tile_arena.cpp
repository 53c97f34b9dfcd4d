#include "sim/tile_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

#if defined(__SANITIZE_ADDRESS__)  // GCC
#define POPRT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // Clang
#define POPRT_ASAN 1
#endif
#endif

#ifdef POPRT_ASAN
#include <sanitizer/asan_interface.h>
#define POPRT_POISON(addr, size) ASAN_POISON_MEMORY_REGION(addr, size)
#define POPRT_UNPOISON(addr, size) ASAN_UNPOISON_MEMORY_REGION(addr, size)
#else
#define POPRT_POISON(addr, size) ((void)(addr), (void)(size))
#define POPRT_UNPOISON(addr, size) ((void)(addr), (void)(size))
#endif

namespace poprt::sim {
namespace {

constexpr uint64_t kAlign = 64;  // a cache line
constexpr uint64_t kGap = 64;    // between tiles, poisoned under AddressSanitizer

uint64_t roundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

}  // namespace

TileArena::~TileArena() { release(); }

void TileArena::release() {
  if (!base_) return;
  POPRT_UNPOISON(base_, mapped_);  // a later mapping may reuse these addresses
  munmap(base_, mapped_);
  base_ = nullptr;
  mapped_ = 0;
}

std::vector<uint64_t> TileArena::layout(const std::vector<uint64_t>& sizes, uint64_t* total) {
  std::vector<uint64_t> offsets(sizes.size());
  uint64_t end = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    offsets[t] = end;
    end = roundUp(end + sizes[t] + kGap, kAlign);
  }
  if (total) *total = end;
  return offsets;
}

void TileArena::reset(const std::vector<uint64_t>& sizes) {
  release();
  sizes_ = sizes;
  uint64_t end = 0;
  offsets_ = layout(sizes, &end);
  mapped_ = static_cast<size_t>(std::max<uint64_t>(end, kAlign));
  // Anonymous memory arrives zeroed, a page at a time as it is first touched.
  void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<uint8_t*>(p);
  for (size_t t = 0; t < sizes.size(); ++t) {
    const uint64_t gap_end = t + 1 < sizes.size() ? offsets_[t + 1] : mapped_;
    POPRT_POISON(base_ + offsets_[t] + sizes[t], gap_end - offsets_[t] - sizes[t]);
  }
}

}  // namespace poprt::sim
