// exec::Executable: what codegen produces and the simulator runs — tile memory sizes, host
// streams, exchange steps and compute sets of vertices, arranged in load and main programs.
// It is stored in the PopEF executable blob (CBOR, see docs/POPEF.md) and is untrusted on load:
// validate() bounds every field, copy and stream against the memories it touches.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"
#include "lib/support/value_kind.h"

namespace poprt::exec {

// 4: exchange copies and layout regions packed (lib/exec/packed_tables.h); 5: compute sets'
// vertices packed too. Versions 3 (every table as arrays) and 4 still load.
inline constexpr uint32_t kExecutableVersion = 5;

// The most memory a target's tile may have: offsets inside a tile are 32 bits in the simulator.
inline constexpr uint64_t kMaxBytesPerTile = (uint64_t{1} << 32) - 1;

// The machine a program was compiled for (see codegen/target.h for the presets).
struct Target {
  std::string name;         // ipu1, ipu2, ipu21, or "<name>-<tiles>t" for small test targets
  std::string ipu_version;  // ipu1 | ipu2 | ipu21
  uint32_t num_ipus = 1;
  uint32_t tiles_per_ipu = 0;
  uint64_t bytes_per_tile = 0;
  uint32_t workers_per_tile = 6;
  double clock_hz = 0;
  uint32_t exchange_bytes_per_cycle = 4;  // per tile, each direction
  uint32_t sync_cycles = 0;               // one BSP sync across the IPU
  uint32_t fp32_macs_per_cycle = 0;       // AMP throughput per tile
  uint32_t fp16_macs_per_cycle = 0;
  uint32_t vector_width_fp32 = 2;       // elements per cycle for elementwise float work
  uint32_t link_bytes_per_cycle = 48;   // IPU-Link bandwidth between two IPUs, each direction
  uint32_t link_latency_cycles = 1500;  // one copy between IPUs: the cross-IPU sync and link latency
  uint32_t numTiles() const { return num_ipus * tiles_per_ipu; }
  uint32_t ipuOf(uint32_t tile) const { return tile / tiles_per_ipu; }
};

// Ids are 1..kMaxCodelet, every one a kind.
inline constexpr uint32_t kMaxCodelet = [] {
  uint32_t count = 0;
#define POPRT_CODELET_COUNT(name, id) ++count;
  POPRT_CODELETS(POPRT_CODELET_COUNT)
#undef POPRT_CODELET_COUNT
  return count;
}();
// "Unary", "ConvPartial", ...; "unknown" for an id outside the list.
std::string_view codeletName(Codelet codelet);

struct Field {  // a byte range of the vertex's tile memory
  uint64_t offset = 0;
  uint64_t bytes = 0;
  // Undefined: the vertex's dtype. A float16 vertex may hold float32 fields, read and written as
  // they are: the partial sums a split matmul writes and its reduction reads.
  DType dtype = DType::Undefined;
};

// A vertex's params, immutable once built and shared by copies: the vertices of a compute set
// mostly repeat the params of the one before (one conv block on a thousand tiles), and a packed
// PopEF stores such a repeat in no bytes, so decoding one must cost a pointer, not a copy of
// whatever length the file declared. To edit, take a copy (`vec()`) and assign it back.
template <class T>
class SharedList {
 public:
  SharedList() = default;
  SharedList(std::vector<T> v) : list_(v.empty() ? nullptr : std::make_shared<const std::vector<T>>(std::move(v))) {}
  SharedList(std::initializer_list<T> v) : SharedList(std::vector<T>(v)) {}
  size_t size() const { return list_ ? list_->size() : 0; }
  bool empty() const { return size() == 0; }
  const T* data() const { return list_ ? list_->data() : nullptr; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const T& operator[](size_t i) const { return (*list_)[i]; }
  const T& back() const { return list_->back(); }
  std::vector<T> vec() const { return {begin(), end()}; }
  bool sharesWith(const SharedList& o) const { return list_ == o.list_; }
  // The same bits (so -0.0f is not 0.0f, as a packed repeat must not make it).
  friend bool operator==(const SharedList& a, const SharedList& b) { return sameBits(a.begin(), a.size(), b.begin(), b.size()); }
  friend bool operator==(const SharedList& a, const std::vector<T>& b) {
    return sameBits(a.begin(), a.size(), b.data(), b.size());
  }

 private:
  static bool sameBits(const T* a, size_t na, const T* b, size_t nb) {
    static_assert(std::is_trivially_copyable_v<T>);
    return na == nb && (na == 0 || std::memcmp(a, b, na * sizeof(T)) == 0);
  }
  std::shared_ptr<const std::vector<T>> list_;
};

struct Vertex {
  uint32_t tile = 0;
  Codelet codelet = Codelet::Unary;
  DType dtype = DType::Float;
  std::vector<Field> fields;  // fields[0] is the one every codelet writes; it only reads the others
  SharedList<int64_t> params;
  SharedList<float> fparams;
};

struct ComputeSet {
  std::string name;  // the node it lowers
  std::vector<Vertex> vertices;
};

struct TileCopy {
  uint32_t src_tile = 0;
  uint64_t src_offset = 0;
  uint32_t dst_tile = 0;
  uint64_t dst_offset = 0;
  uint64_t bytes = 0;
};

// Where a tensor's elements live, as exchange gathers read them: consecutive element ranges, each
// at a byte offset of one tile's memory, covering elements [0, numel) in order.
struct LayoutRegion {
  int64_t begin = 0;  // first element
  int64_t count = 0;
  uint32_t tile = 0;
  uint64_t offset = 0;
};

struct Layout {
  uint32_t elem_bytes = 4;
  std::vector<LayoutRegion> regions;
  int64_t numel() const { return regions.empty() ? 0 : regions.back().begin + regions.back().count; }
};

// A strided gather into one tile: for r < reps, the elements [begin + r*stride, +count) of a
// layout go, in order, to dst_offset + r*dst_stride (bytes) of dst_tile. One entry stands for all
// the tile copies it implies (say, rows of every channel of an image, wherever they live).
struct Gather {
  uint32_t layout = 0;
  int64_t begin = 0, count = 0, reps = 1, stride = 0;  // in elements
  uint32_t dst_tile = 0;
  uint64_t dst_offset = 0, dst_stride = 0;  // in bytes
};

// Calls fn(region, first element, elements, destination byte offset) for each piece of a gather:
// a run of elements in one region of its layout. The gather must be valid for the layout
// (validate() checks it).
template <class Fn>
void forEachGatherPiece(const Layout& layout, const Gather& g, Fn&& fn) {
  const auto& regions = layout.regions;
  auto ends_after = [](int64_t value, const LayoutRegion& x) { return value < x.begin + x.count; };
  auto hint = regions.begin();
  ptrdiff_t jump = 0;  // regions from the last rep's first to this one's, when they move forward
  for (int64_t r = 0; r < g.reps; ++r) {
    int64_t pos = g.begin + r * g.stride, left = g.count;
    uint64_t dst = g.dst_offset + static_cast<uint64_t>(r) * g.dst_stride;
    // Reps move forward through the layout, mostly by the same number of regions each (a
    // channel's rows, say): try that first, else gallop from where the last rep started (1, 2,
    // 4... regions on) and search the last stride, rather than the whole layout (a ResNet-50
    // layer's has thousands of regions, and gathers millions of reps a run).
    auto it = hint;
    if (it == regions.end() || pos < it->begin) it = regions.begin();
    if (regions.end() - it > jump && it[jump].begin <= pos && ends_after(pos, it[jump])) {
      it += jump;
    } else if (it != regions.end() && !ends_after(pos, *it)) {
      auto lo = it, hi = it + 1;  // lo ends at or before pos; the region sought is in (lo, hi]
      for (ptrdiff_t step = 2; hi != regions.end() && !ends_after(pos, *hi); step *= 2) {
        lo = hi;
        hi = regions.end() - lo > step ? lo + step : regions.end();
      }
      it = std::upper_bound(lo + 1, hi, pos, ends_after);
    }
    jump = std::max<ptrdiff_t>(0, it - hint);
    hint = it;
    for (; left > 0 && it != regions.end(); ++it) {
      const int64_t n = std::min(left, it->begin + it->count - pos);
      fn(*it, pos, n, dst);
      pos += n;
      left -= n;
      dst += static_cast<uint64_t>(n) * layout.elem_bytes;
    }
  }
}

struct Exchange {
  std::string name;
  std::vector<TileCopy> copies;
  std::vector<Gather> gathers;
};

// For r < reps: `bytes` from host_offset + r * host_stride go to tile_offset + r * bytes of the
// tile (a weight's columns for a tile are one entry, not one per row).
struct StreamCopy {
  uint64_t host_offset = 0;
  uint32_t tile = 0;
  uint64_t tile_offset = 0;
  uint64_t bytes = 0;
  uint64_t reps = 1;
  uint64_t host_stride = 0;
  uint64_t tileBytes() const { return reps * bytes; }
};

// Calls fn(host offset, tile offset, bytes) for each repeat of a stream copy.
template <class Fn>
void forEachStreamPiece(const StreamCopy& c, Fn&& fn) {
  for (uint64_t r = 0; r < c.reps; ++r) fn(c.host_offset + r * c.host_stride, c.tile_offset + r * c.bytes, c.bytes);
}

// A host buffer and the tile regions it is copied to or from. Host buffers also carry the values
// that cross between the device and host programs (role Host); a buffer with copies has a static
// shape, one filled only by a host program may have -1 dims (known at run time).
struct HostStream {
  enum class Role : uint32_t { Input = 0, Output = 1, Weight = 2, Host = 3 };
  std::string name;
  Role role = Role::Input;
  DType dtype = DType::Float;  // the element dtype for sequences and optionals
  Shape shape;
  std::vector<StreamCopy> copies;
  ValueKind kind = ValueKind::Tensor;  // only tensors have copies; the rest live on the host
  uint64_t byteSize() const;
};

// Nodes the device cannot run (no lowering, data-dependent shapes, control flow) run on the host
// with the reference evaluator: an ONNX model of those nodes whose inputs and outputs are host
// buffers, by stream index, in the order of its graph inputs and outputs.
struct HostProgram {
  std::string name;
  std::string onnx;  // serialized ModelProto
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<std::string> nodes;  // the node names it runs, for reports
};

enum class StepKind : uint32_t { StreamIn = 0, StreamOut = 1, Exchange = 2, Compute = 3, HostCall = 4 };

struct Step {
  StepKind kind = StepKind::Compute;
  uint32_t index = 0;  // into streams, exchanges, compute_sets or host_programs
};

struct Program {
  std::string name;
  std::vector<Step> steps;
};

// A program sharded over IPUs runs as segments of consecutive main-program steps, one IPU each,
// in order: steps [begin, copies) run on `ipu`'s tiles alone; steps [copies, end) are exchanges
// over the IPU-Links, moving the values later segments read from `ipu` to the next segment's IPU.
struct Segment {
  uint32_t ipu = 0;
  uint32_t begin = 0, copies = 0, end = 0;
};

// Sharded: the segments of one batch run one after another. Pipelined: each segment is a stage
// on an IPU of its own, and the stages overlap on consecutive batches of a step.
enum class Strategy : uint32_t { Sharded = 0, Pipelined = 1 };

struct Executable {
  Target target;
  Strategy strategy = Strategy::Sharded;
  std::vector<Segment> segments;     // empty: the whole main program on IPU 0
  std::vector<uint64_t> tile_bytes;  // bytes each tile's memory needs (one entry per tile)
  std::vector<HostStream> streams;
  std::vector<Layout> layouts;  // read by exchange gathers
  std::vector<Exchange> exchanges;
  std::vector<ComputeSet> compute_sets;
  std::vector<HostProgram> host_programs;
  Program load{"load", {}};
  Program main{"main", {}};
};

std::vector<uint8_t> serialize(const Executable& exe);
// Parses and validates; `source` names the blob in errors.
Expected<Executable> deserialize(std::span<const uint8_t> bytes, const std::string& source);
// Bounds of every vertex field, tile copy, layout region, gather and stream copy; step indices;
// tile count and sizes; segments that cover the main program in order.
Status validate(const Executable& exe);

}  // namespace poprt::exec
