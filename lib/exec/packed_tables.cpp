#include "lib/exec/packed_tables.h"

#include <limits>
#include <string>

namespace poprt::exec {

namespace {

void putVarint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// The difference b - a modulo 2^64, zigzag-encoded (small of either sign -> small).
uint64_t zigzag(uint64_t a, uint64_t b) {
  const auto d = static_cast<int64_t>(b - a);
  return (static_cast<uint64_t>(d) << 1) ^ static_cast<uint64_t>(d >> 63);
}
uint64_t unzigzag(uint64_t base, uint64_t z) { return base + ((z >> 1) ^ (~(z & 1) + 1)); }

class VarintReader {
 public:
  explicit VarintReader(std::span<const uint8_t> in) : in_(in) {}
  Expected<uint64_t> next() {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return Error("packed copies end inside a number");
      const uint8_t b = in_[pos_++];
      if (shift == 63 && b > 1) return Error("packed copies hold a number beyond 64 bits");
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return Error("packed copies hold a number beyond 64 bits");
  }
  size_t left() const { return in_.size() - pos_; }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<uint8_t> packCopies(std::span<const TileCopy> copies) {
  std::vector<uint8_t> out;
  out.reserve(copies.size() * 6 + 4);
  putVarint(out, copies.size());
  TileCopy prev;
  for (const TileCopy& c : copies) {
    putVarint(out, zigzag(prev.src_tile, c.src_tile));
    putVarint(out, zigzag(prev.src_offset, c.src_offset));
    putVarint(out, zigzag(prev.dst_tile, c.dst_tile));
    putVarint(out, zigzag(prev.dst_offset + prev.bytes, c.dst_offset));
    putVarint(out, zigzag(prev.bytes, c.bytes));
    prev = c;
  }
  return out;
}

Status unpackCopies(std::span<const uint8_t> bytes, std::vector<TileCopy>& out) {
  VarintReader r(bytes);
  POPRT_ASSIGN_OR_RETURN(const uint64_t count, r.next());
  if (count > r.left() / 5)
    return Error("packed copies declare " + std::to_string(count) + " copies in " + std::to_string(r.left()) + " bytes");
  out.reserve(out.size() + count);
  TileCopy prev;
  auto tile = [](uint64_t v) -> Expected<uint32_t> {
    if (v > std::numeric_limits<uint32_t>::max()) return Error("a packed copy names tile " + std::to_string(v));
    return static_cast<uint32_t>(v);
  };
  for (uint64_t i = 0; i < count; ++i) {
    TileCopy c;
    POPRT_ASSIGN_OR_RETURN(const uint64_t src_tile, r.next());
    POPRT_ASSIGN_OR_RETURN(c.src_tile, tile(unzigzag(prev.src_tile, src_tile)));
    POPRT_ASSIGN_OR_RETURN(const uint64_t src_offset, r.next());
    c.src_offset = unzigzag(prev.src_offset, src_offset);
    POPRT_ASSIGN_OR_RETURN(const uint64_t dst_tile, r.next());
    POPRT_ASSIGN_OR_RETURN(c.dst_tile, tile(unzigzag(prev.dst_tile, dst_tile)));
    POPRT_ASSIGN_OR_RETURN(const uint64_t dst_offset, r.next());
    c.dst_offset = unzigzag(prev.dst_offset + prev.bytes, dst_offset);
    POPRT_ASSIGN_OR_RETURN(const uint64_t n, r.next());
    c.bytes = unzigzag(prev.bytes, n);
    out.push_back(c);
    prev = c;
  }
  if (r.left() != 0) return Error("packed copies have " + std::to_string(r.left()) + " bytes after the last copy");
  return okStatus();
}

std::vector<uint8_t> packRegions(std::span<const LayoutRegion> regions) {
  std::vector<uint8_t> out;
  out.reserve(regions.size() * 5 + 4);
  putVarint(out, regions.size());
  LayoutRegion prev;
  for (const LayoutRegion& g : regions) {
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    putVarint(out, zigzag(u(prev.begin) + u(prev.count), u(g.begin)));
    putVarint(out, zigzag(u(prev.count), u(g.count)));
    putVarint(out, zigzag(prev.tile, g.tile));
    putVarint(out, zigzag(prev.offset + u(prev.count), g.offset));  // elements, not bytes: a guess that costs nothing
    prev = g;
  }
  return out;
}

Status unpackRegions(std::span<const uint8_t> bytes, std::vector<LayoutRegion>& out) {
  VarintReader r(bytes);
  POPRT_ASSIGN_OR_RETURN(const uint64_t count, r.next());
  if (count > r.left() / 4)
    return Error("packed regions declare " + std::to_string(count) + " regions in " + std::to_string(r.left()) + " bytes");
  out.reserve(out.size() + count);
  LayoutRegion prev;
  for (uint64_t i = 0; i < count; ++i) {
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    LayoutRegion g;
    POPRT_ASSIGN_OR_RETURN(const uint64_t begin, r.next());
    g.begin = static_cast<int64_t>(unzigzag(u(prev.begin) + u(prev.count), begin));
    POPRT_ASSIGN_OR_RETURN(const uint64_t n, r.next());
    g.count = static_cast<int64_t>(unzigzag(u(prev.count), n));
    POPRT_ASSIGN_OR_RETURN(const uint64_t tile, r.next());
    const uint64_t t = unzigzag(prev.tile, tile);
    if (t > std::numeric_limits<uint32_t>::max()) return Error("a packed region names tile " + std::to_string(t));
    g.tile = static_cast<uint32_t>(t);
    POPRT_ASSIGN_OR_RETURN(const uint64_t offset, r.next());
    g.offset = unzigzag(prev.offset + u(prev.count), offset);
    out.push_back(g);
    prev = g;
  }
  if (r.left() != 0) return Error("packed regions have " + std::to_string(r.left()) + " bytes after the last region");
  return okStatus();
}

}  // namespace poprt::exec
