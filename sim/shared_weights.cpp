#include "sim/shared_weights.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "sim/byte_ranges.h"

namespace poprt::sim {
namespace {

using Role = exec::HostStream::Role;

// The byte ranges of each tile that anything but the load program writes: vertex outputs,
// exchange destinations and non-weight stream copies, merged and sorted.
std::vector<std::vector<ByteRange>> writtenRanges(const exec::Executable& exe) {
  std::vector<std::vector<ByteRange>> written(exe.tile_bytes.size());
  for (const auto& cs : exe.compute_sets)
    for (const auto& v : cs.vertices)
      if (!v.fields.empty()) written[v.tile].push_back({v.fields[0].offset, v.fields[0].offset + v.fields[0].bytes});
  for (const auto& ex : exe.exchanges) {
    for (const auto& c : ex.copies) written[c.dst_tile].push_back({c.dst_offset, c.dst_offset + c.bytes});
    for (const auto& g : ex.gathers) {
      if (g.reps <= 0 || g.count <= 0) continue;
      const uint64_t last = g.dst_offset + static_cast<uint64_t>(g.reps - 1) * g.dst_stride;
      written[g.dst_tile].push_back({g.dst_offset, last + static_cast<uint64_t>(g.count) * exe.layouts[g.layout].elem_bytes});
    }
  }
  for (const auto& s : exe.streams)
    if (s.role != Role::Weight)
      for (const auto& c : s.copies) written[c.tile].push_back({c.tile_offset, c.tile_offset + c.tileBytes()});
  for (auto& ranges : written) ranges = mergeRanges(std::move(ranges));
  return written;
}

// A weight stream copy on a tile, shareable when nothing else writes its bytes.
struct WeightCopy {
  uint64_t begin, end;
  uint32_t stream;
  const exec::StreamCopy* copy;
  bool shareable;
  bool operator<(const WeightCopy& o) const { return begin < o.begin; }
};

std::vector<std::vector<WeightCopy>> weightCopies(const exec::Executable& exe) {
  const auto written = writtenRanges(exe);
  std::vector<std::vector<WeightCopy>> copies(exe.tile_bytes.size());
  for (uint32_t s = 0; s < exe.streams.size(); ++s)
    if (exe.streams[s].role == Role::Weight)
      for (const auto& c : exe.streams[s].copies)
        if (c.bytes > 0 && c.reps > 0) copies[c.tile].push_back({c.tile_offset, c.tile_offset + c.tileBytes(), s, &c, true});
  for (uint32_t t = 0; t < copies.size(); ++t) {
    auto& list = copies[t];
    std::sort(list.begin(), list.end());
    size_t reach = 0;  // of the copies before i, the one ending last
    for (size_t i = 0; i < list.size(); ++i) {
      if (i > 0 && list[i].begin < list[reach].end) list[i].shareable = list[reach].shareable = false;
      if (i > 0 && list[i].end > list[reach].end) reach = i;
      if (overlapsAny(written[t], list[i].begin, list[i].end)) list[i].shareable = false;
    }
  }
  return copies;
}

// Which weight bytes a field holds: its stream, first host byte and length, and, when it spans
// rows of a strided copy, the row length, the host stride and where in a row it starts.
using WeightKey = std::tuple<uint32_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>;

}  // namespace

void resolveVertexFields(const exec::Executable& exe, const std::vector<uint64_t>& tile_offsets, ExecutionPlan& out) {
  const auto copies = weightCopies(exe);
  std::map<WeightKey, uint64_t> first_copy;  // -> arena offset
  // The arena offset a field of a vertex on `tile` reads: its own, or the first copy's of its bytes.
  auto source = [&](uint32_t tile, const exec::Field& field) {
    const uint64_t own = tile_offsets[tile] + field.offset, end = field.offset + field.bytes;
    const auto& list = copies[tile];
    auto it = std::upper_bound(list.begin(), list.end(), WeightCopy{field.offset, 0, 0, nullptr, false});
    if (field.bytes == 0 || it == list.begin()) return own;
    const WeightCopy& w = *std::prev(it);
    if (!w.shareable || end > w.end) return own;
    const exec::StreamCopy& c = *w.copy;
    const uint64_t rel = field.offset - c.tile_offset, phase = rel % c.bytes;
    const uint64_t host = c.host_offset + rel / c.bytes * c.host_stride + phase;
    const bool contiguous = phase + field.bytes <= c.bytes || c.host_stride == c.bytes;
    const WeightKey key = contiguous ? WeightKey{w.stream, host, field.bytes, 0, 0, 0}
                                     : WeightKey{w.stream, host, field.bytes, c.bytes, c.host_stride, phase};
    return first_copy.try_emplace(key, own).first->second;
  };
  out.sets.resize(exe.compute_sets.size());
  for (size_t i = 0; i < exe.compute_sets.size(); ++i) {
    const auto& vertices = exe.compute_sets[i].vertices;
    PlannedSet& set = out.sets[i];
    size_t count = 0;
    for (const auto& v : vertices) count += v.fields.size();
    set.fields.reserve(count);  // the views below point into it: it must not move
    set.vertices.reserve(vertices.size());
    for (const auto& v : vertices) {
      const size_t first = set.fields.size();
      for (size_t f = 0; f < v.fields.size(); ++f) {
        exec::Field field = v.fields[f];
        const uint64_t own = tile_offsets[v.tile] + field.offset;
        field.offset = f == 0 ? own : source(v.tile, field);  // fields[0] is written
        if (field.offset != own) {
          ++out.shared_fields;
          out.shared_bytes += field.bytes;
        }
        set.fields.push_back(field);
      }
      set.vertices.emplace_back(v.tile, v.codelet, v.dtype, std::span(set.fields).subspan(first, v.fields.size()));
    }
  }
}

}  // namespace poprt::sim
