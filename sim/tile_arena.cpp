#include "sim/tile_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
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
constexpr uint64_t kPage = 4096;
constexpr uint64_t kHugePage = uint64_t{2} << 20;  // x86-64's transparent huge page

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

void TileArena::reset(const std::vector<uint64_t>& sizes, uint64_t scratch_bytes) {
  release();
  sizes_ = sizes;
  uint64_t end = 0;
  offsets_ = layout(sizes, &end);
  scratch_ = end;
  end += roundUp(scratch_bytes, kAlign);
  mapped_ = static_cast<size_t>(roundUp(std::max<uint64_t>(end, kAlign), kPage));
  // Anonymous memory arrives zeroed, a page at a time as it is first touched. The arena starts on
  // a huge page boundary and asks for huge pages (where the kernel gives them on request, as
  // Debian's does): a superstep touches a few pages on each of a thousand tiles or more, more than
  // the TLB holds in 4 KiB pages (yolox_nano and light_resnet50 ran 6-12% faster so).
  void* p = mmap(nullptr, mapped_ + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(p), aligned = roundUp(start, kHugePage);
  if (aligned > start) munmap(p, aligned - start);
  munmap(reinterpret_cast<void*>(aligned + mapped_), start + kHugePage - aligned);  // never empty: aligned < start + kHugePage
  base_ = reinterpret_cast<uint8_t*>(aligned);
  madvise(base_, mapped_, MADV_HUGEPAGE);  // a hint: refused or ignored, nothing else changes
  for (size_t t = 0; t < sizes.size(); ++t) {
    const uint64_t gap_end = t + 1 < sizes.size() ? offsets_[t + 1] : scratch_;
    POPRT_POISON(base_ + offsets_[t] + sizes[t], gap_end - offsets_[t] - sizes[t]);
  }
  POPRT_POISON(base_ + end, mapped_ - end);
}

}  // namespace poprt::sim
