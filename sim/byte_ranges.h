// Sets of byte ranges, for proving that one part of a program does not touch what another part
// reads or writes (shared weights, moves made by the vertex that reads them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace poprt::sim {

struct ByteRange {
  uint64_t begin = 0, end = 0;  // [begin, end)
  bool operator<(const ByteRange& o) const { return begin < o.begin; }
};

// Sorted by start, overlapping and touching ranges joined, empty ones dropped.
inline std::vector<ByteRange> mergeRanges(std::vector<ByteRange> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<ByteRange> merged;
  for (const ByteRange& r : ranges) {
    if (r.end <= r.begin) continue;
    if (!merged.empty() && r.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, r.end);
    else
      merged.push_back(r);
  }
  return merged;
}

// Whether [begin, end) shares a byte with one of `merged` (mergeRanges' result).
inline bool overlapsAny(const std::vector<ByteRange>& merged, uint64_t begin, uint64_t end) {
  if (end <= begin) return false;
  auto it = std::upper_bound(merged.begin(), merged.end(), ByteRange{begin, 0});  // first starting after begin
  if (it != merged.begin() && std::prev(it)->end > begin) return true;
  return it != merged.end() && it->begin < end;
}

// overlapsAny for queries that mostly move a little from the one before (a gather's sources,
// read in order): searched from where the last one ended, by galloping.
class RangeCursor {
 public:
  explicit RangeCursor(const std::vector<ByteRange>& merged) : ranges_(merged) {}
  bool overlaps(uint64_t begin, uint64_t end) {
    if (end <= begin || ranges_.empty()) return false;
    // at_: the first range ending after `begin`, found from the last one.
    if (at_ > 0 && ranges_[at_ - 1].end > begin) {
      size_t step = 1;
      while (at_ > step && ranges_[at_ - step - 1].end > begin) step *= 2;
      const size_t lo = at_ > step ? at_ - step : 0;
      at_ = static_cast<size_t>(std::partition_point(ranges_.begin() + static_cast<std::ptrdiff_t>(lo),
                                                     ranges_.begin() + static_cast<std::ptrdiff_t>(at_),
                                                     [&](const ByteRange& r) { return r.end <= begin; }) -
                                ranges_.begin());
    } else {
      size_t step = 1;
      while (at_ + step < ranges_.size() && ranges_[at_ + step].end <= begin) step *= 2;
      const size_t hi = std::min(ranges_.size(), at_ + step + 1);
      at_ = static_cast<size_t>(std::partition_point(ranges_.begin() + static_cast<std::ptrdiff_t>(at_),
                                                     ranges_.begin() + static_cast<std::ptrdiff_t>(hi),
                                                     [&](const ByteRange& r) { return r.end <= begin; }) -
                                ranges_.begin());
    }
    return at_ < ranges_.size() && ranges_[at_].begin < end;
  }

 private:
  const std::vector<ByteRange>& ranges_;
  size_t at_ = 0;
};

}  // namespace poprt::sim
