#include "lib/exec/packed_tables.h"

#include <bit>
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
  VarintReader(std::span<const uint8_t> in, const char* table) : in_(in), table_(table) {}
  Expected<uint64_t> next() {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return Error(std::string("packed ") + table_ + " end inside a number");
      const uint8_t b = in_[pos_++];
      if (shift == 63 && b > 1) break;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return Error(std::string("packed ") + table_ + " hold a number beyond 64 bits");
  }
  // A count read from the file, refused unless `left()` bytes can hold that many items of at
  // least `min_bytes` each: what a reader reserves is bounded by the bytes there are.
  Expected<uint64_t> count(const char* items, size_t min_bytes) {
    POPRT_ASSIGN_OR_RETURN(const uint64_t n, next());
    if (n > left() / min_bytes)
      return Error(std::string("packed ") + table_ + " declare " + std::to_string(n) + " " + items + " in " +
                   std::to_string(left()) + " bytes");
    return n;
  }
  // The next number as the difference from `base` it stores (zigzag, modulo 2^64).
  Expected<uint64_t> delta(uint64_t base) {
    POPRT_ASSIGN_OR_RETURN(const uint64_t z, next());
    return unzigzag(base, z);
  }
  // The same for the tile of a `row` ("copy", "region", "vertex"): at most 32 bits.
  Expected<uint32_t> tile(uint64_t base, const char* row) {
    POPRT_ASSIGN_OR_RETURN(const uint64_t t, delta(base));
    if (t > std::numeric_limits<uint32_t>::max())
      return Error(std::string("a packed ") + row + " names tile " + std::to_string(t));
    return static_cast<uint32_t>(t);
  }
  Expected<float> real() {  // 4 bytes, little-endian IEEE binary32
    if (left() < 4) return Error(std::string("packed ") + table_ + " end inside a float");
    uint32_t bits = 0;
    for (int i = 0; i < 4; ++i) bits |= static_cast<uint32_t>(in_[pos_++]) << (8 * i);
    return std::bit_cast<float>(bits);
  }
  size_t left() const { return in_.size() - pos_; }
  Status finish() const {
    if (left() != 0)
      return Error(std::string("packed ") + table_ + " have " + std::to_string(left()) + " bytes after the last row");
    return okStatus();
  }

 private:
  std::span<const uint8_t> in_;
  const char* table_;
  size_t pos_ = 0;
};

void putFloat(std::vector<uint8_t>& out, float f) {
  const auto bits = std::bit_cast<uint32_t>(f);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

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
  VarintReader r(bytes, "copies");
  POPRT_ASSIGN_OR_RETURN(const uint64_t count, r.count("copies", 5));
  out.reserve(out.size() + count);
  TileCopy prev;
  for (uint64_t i = 0; i < count; ++i) {
    TileCopy c;
    POPRT_ASSIGN_OR_RETURN(c.src_tile, r.tile(prev.src_tile, "copy"));
    POPRT_ASSIGN_OR_RETURN(c.src_offset, r.delta(prev.src_offset));
    POPRT_ASSIGN_OR_RETURN(c.dst_tile, r.tile(prev.dst_tile, "copy"));
    POPRT_ASSIGN_OR_RETURN(c.dst_offset, r.delta(prev.dst_offset + prev.bytes));
    POPRT_ASSIGN_OR_RETURN(c.bytes, r.delta(prev.bytes));
    out.push_back(c);
    prev = c;
  }
  return r.finish();
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
  VarintReader r(bytes, "regions");
  POPRT_ASSIGN_OR_RETURN(const uint64_t count, r.count("regions", 4));
  out.reserve(out.size() + count);
  LayoutRegion prev;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  for (uint64_t i = 0; i < count; ++i) {
    LayoutRegion g;
    POPRT_ASSIGN_OR_RETURN(const uint64_t begin, r.delta(u(prev.begin) + u(prev.count)));
    POPRT_ASSIGN_OR_RETURN(const uint64_t n, r.delta(u(prev.count)));
    g.begin = static_cast<int64_t>(begin), g.count = static_cast<int64_t>(n);
    POPRT_ASSIGN_OR_RETURN(g.tile, r.tile(prev.tile, "region"));
    POPRT_ASSIGN_OR_RETURN(g.offset, r.delta(prev.offset + u(prev.count)));
    out.push_back(g);
    prev = g;
  }
  return r.finish();
}

namespace {

// A packed vertex's flags: which of its parts differ from the vertex before (docs/POPEF.md).
constexpr uint64_t kNewKind = 1;     // codelet, dtype, field dtypes and the three counts follow; so do all values
constexpr uint64_t kNewParams = 2;   // the params follow, as differences from the previous vertex's
constexpr uint64_t kNewFparams = 4;  // the fparams follow, 4 bytes each
constexpr uint64_t kNewSizes = 8;    // the fields' byte counts follow, as differences

bool sameKind(const Vertex& a, const Vertex& b) {
  if (a.codelet != b.codelet || a.dtype != b.dtype || a.fields.size() != b.fields.size() || a.params.size() != b.params.size() ||
      a.fparams.size() != b.fparams.size())
    return false;
  for (size_t i = 0; i < a.fields.size(); ++i)
    if (a.fields[i].dtype != b.fields[i].dtype) return false;
  return true;
}

bool sameSizes(const Vertex& a, const Vertex& b) {
  for (size_t i = 0; i < a.fields.size(); ++i)
    if (a.fields[i].bytes != b.fields[i].bytes) return false;
  return true;
}

// ONNX's data type numbers; a field's 0 (undefined) means the vertex's own dtype.
Expected<DType> dtypeOf(uint64_t code, bool field) {
  if (field && code == 0) return DType::Undefined;
  const auto dt = code <= 64 ? dtypeFromOnnx(static_cast<int64_t>(code)) : std::nullopt;
  if (!dt || *dt == DType::Undefined) return Error("a packed vertex has dtype code " + std::to_string(code));
  return *dt;
}

}  // namespace

std::vector<uint8_t> packVertices(std::span<const Vertex> vertices) {
  std::vector<uint8_t> out;
  out.reserve(vertices.size() * 8 + 4);
  putVarint(out, vertices.size());
  const Vertex none;
  const Vertex* prev = nullptr;
  for (const Vertex& v : vertices) {
    const bool kind = !prev || !sameKind(*prev, v);
    const uint64_t flags = kind ? kNewKind | kNewParams | kNewFparams | kNewSizes
                                : (v.params == prev->params ? 0 : kNewParams) | (v.fparams == prev->fparams ? 0 : kNewFparams) |
                                      (sameSizes(*prev, v) ? 0 : kNewSizes);
    putVarint(out, flags);
    putVarint(out, zigzag(prev ? prev->tile : 0, v.tile));
    const Vertex& base = kind ? none : *prev;  // what the differences are taken from
    if (kind) {
      putVarint(out, static_cast<uint32_t>(v.codelet)), putVarint(out, static_cast<uint64_t>(v.dtype));
      putVarint(out, v.fields.size());
      for (const Field& f : v.fields) putVarint(out, static_cast<uint64_t>(f.dtype));
      putVarint(out, v.params.size()), putVarint(out, v.fparams.size());
    }
    for (size_t i = 0; i < v.fields.size(); ++i) putVarint(out, zigzag(kind ? 0 : base.fields[i].offset, v.fields[i].offset));
    if (flags & kNewSizes)
      for (size_t i = 0; i < v.fields.size(); ++i) putVarint(out, zigzag(kind ? 0 : base.fields[i].bytes, v.fields[i].bytes));
    if (flags & kNewParams)
      for (size_t i = 0; i < v.params.size(); ++i)
        putVarint(out, zigzag(kind ? 0 : static_cast<uint64_t>(base.params[i]), v.params[i]));
    if (flags & kNewFparams)
      for (float f : v.fparams) putFloat(out, f);
    prev = &v;
  }
  return out;
}

Status unpackVertices(std::span<const uint8_t> bytes, std::vector<Vertex>& out) {
  VarintReader r(bytes, "vertices");
  POPRT_ASSIGN_OR_RETURN(const uint64_t count, r.count("vertices", 2));  // flags and tile at least
  out.reserve(out.size() + count);
  for (uint64_t i = 0; i < count; ++i) {
    POPRT_ASSIGN_OR_RETURN(const uint64_t flags, r.next());
    if (flags > (kNewKind | kNewParams | kNewFparams | kNewSizes))
      return Error("a packed vertex has unknown flags " + std::to_string(flags));
    const bool kind = flags & kNewKind;
    if (kind && flags != (kNewKind | kNewParams | kNewFparams | kNewSizes))
      return Error("a packed vertex of a new kind does not give all its values");
    if (!kind && i == 0) return Error("the first packed vertex does not give its kind");
    Vertex v = kind ? Vertex{} : out.back();  // a copy shares the previous vertex's params
    POPRT_ASSIGN_OR_RETURN(v.tile, r.tile(i == 0 ? 0 : out.back().tile, "vertex"));
    std::vector<int64_t> params;
    if (kind) {
      POPRT_ASSIGN_OR_RETURN(const uint64_t codelet, r.next());
      if (codelet < 1 || codelet > kMaxCodelet) return Error("a packed vertex has unknown codelet " + std::to_string(codelet));
      v.codelet = static_cast<Codelet>(codelet);
      POPRT_ASSIGN_OR_RETURN(const uint64_t dtype, r.next());
      POPRT_ASSIGN_OR_RETURN(v.dtype, dtypeOf(dtype, false));
      POPRT_ASSIGN_OR_RETURN(const uint64_t fields, r.count("fields", 3));  // dtype, offset, bytes
      v.fields.resize(fields);
      for (Field& f : v.fields) {
        POPRT_ASSIGN_OR_RETURN(const uint64_t field_dtype, r.next());
        POPRT_ASSIGN_OR_RETURN(f.dtype, dtypeOf(field_dtype, true));
      }
      POPRT_ASSIGN_OR_RETURN(const uint64_t nparams, r.count("params", 1));
      params.resize(nparams);
      POPRT_ASSIGN_OR_RETURN(const uint64_t nfparams, r.count("fparams", 4));
      v.fparams = std::vector<float>(nfparams);  // sized here, read below
    } else if (flags & kNewParams) {
      params = v.params.vec();
    }
    for (Field& f : v.fields) { POPRT_ASSIGN_OR_RETURN(f.offset, r.delta(f.offset)); }
    if (flags & kNewSizes)
      for (Field& f : v.fields) { POPRT_ASSIGN_OR_RETURN(f.bytes, r.delta(f.bytes)); }
    if (flags & kNewParams) {
      for (int64_t& p : params) {
        POPRT_ASSIGN_OR_RETURN(const uint64_t value, r.delta(static_cast<uint64_t>(p)));
        p = static_cast<int64_t>(value);
      }
      v.params = std::move(params);
    }
    if (flags & kNewFparams) {
      std::vector<float> fparams(v.fparams.size());
      for (float& f : fparams) { POPRT_ASSIGN_OR_RETURN(f, r.real()); }
      v.fparams = std::move(fparams);
    }
    out.push_back(std::move(v));
  }
  return r.finish();
}

}  // namespace poprt::exec
