#include "codegen/lowering.h"

#include <algorithm>
#include <cstdint>

namespace poprt::codegen {

namespace {
constexpr int64_t kGrainBytes = 64;  // smallest piece of a tensor worth its own tile
}

Lowering::Lowering(const CompileOptions& options, ops::Opsets opsets)
    : options_(options),
      opsets_(std::move(opsets)),
      mem_(options.target.numTiles(), options.target.bytes_per_tile),
      resident_bytes_(options.target.numTiles(), 0),
      other_ipu_weights_(options.target.num_ipus) {
  exe_.target = options.target;
  for (uint32_t i = 0; i < options.target.num_ipus; ++i) next_tile_.push_back(i * options.target.tiles_per_ipu);
}

int64_t Lowering::opset() const {
  auto it = opsets_.find("");
  return it == opsets_.end() ? 17 : it->second;
}

uint32_t Lowering::startTile(int64_t count) {
  const uint32_t tiles = tileCount(), base = ipu_ * tiles, start = next_tile_[ipu_];
  if (tiles > 0 && count > 0)
    next_tile_[ipu_] = base + static_cast<uint32_t>((start - base + static_cast<uint64_t>(count)) % tiles);
  return start;
}

uint32_t Lowering::nextTile(uint32_t tile) const {
  const uint32_t tiles = tileCount(), base = (tile / tiles) * tiles;
  return base + (tile - base + 1) % tiles;
}

void Lowering::setIpu(uint32_t ipu) {
  POPRT_CHECK(ipu < target().num_ipus, "IPU " + std::to_string(ipu) + " is not in the target");
  if (ipu == ipu_) return;
  // Whole-weight mappings are per IPU: a node reads the copy the load program put on its own IPU.
  auto& stash = other_ipu_weights_[ipu_];
  for (auto it = mappings_.begin(); it != mappings_.end();) {
    if (!it->first->isInitializer()) {
      ++it;
      continue;
    }
    stash.emplace_back(it->first, std::move(it->second));
    layouts_.erase(it->first);
    it = mappings_.erase(it);
  }
  ipu_ = ipu;
  for (auto& [v, m] : other_ipu_weights_[ipu_]) mappings_[v] = std::move(m);
  other_ipu_weights_[ipu_].clear();
}

std::vector<const ir::Value*> Lowering::liveActivations() const {
  std::vector<const ir::Value*> live;
  for (const auto& [v, m] : mappings_)
    if (!v->isInitializer()) live.push_back(v);
  std::sort(live.begin(), live.end(), [](const ir::Value* a, const ir::Value* b) { return a->name() < b->name(); });
  return live;
}

void Lowering::moveHere(const std::vector<const ir::Value*>& values, const std::string& step_name) {
  if (values.empty()) return;
  beginNode(step_name);
  std::vector<TileMapping> moved;
  for (const ir::Value* v : values) {
    POPRT_CHECK(!v->isInitializer() && hasMapping(v), "value '" + v->name() + "' cannot move between IPUs");
    const size_t esize = dtypeSize(v->type.dtype);
    TileMapping m = spreadLinear(v->type.numElements(), esize);
    for (const Region& r : m.regions) gather(v, r.begin, r.count, 1, 0, r.tile, r.offset, 0);
    moved.push_back(std::move(m));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    release(values[i]);
    layouts_.erase(values[i]);
    setMapping(values[i], std::move(moved[i]));
  }
  endNode();
}

// No value holds scratch, so the node's end frees it (TileMemory::endStep).
uint64_t Lowering::scratch(uint32_t tile, uint64_t bytes) { return mem_.allocator().allocate(tile, bytes); }

void Lowering::setMapping(const ir::Value* v, TileMapping m) {
  mem_.holdMapping(v, m);
  mappings_[v] = std::move(m);
}

void Lowering::release(const ir::Value* v) {
  mem_.release(v);
  mappings_.erase(v);
  gathered_.erase(gathered_.lower_bound(std::make_tuple(v, INT64_MIN, INT64_MIN, uint32_t{0})),
                  gathered_.upper_bound(std::make_tuple(v, INT64_MAX, INT64_MAX, UINT32_MAX)));
}

uint32_t Lowering::weightStream(const ir::Value* v) {
  auto [it, added] = weight_streams_.try_emplace(v, static_cast<uint32_t>(exe_.streams.size()));
  if (added) {
    Shape shape = v->type.staticShape();
    exe_.streams.push_back({v->name(), exec::HostStream::Role::Weight, v->type.dtype, shape, {}, ValueKind::Tensor});
    exe_.load.steps.push_back({exec::StepKind::StreamIn, it->second});
    weights_.push_back(v);
  }
  return it->second;
}

std::optional<uint64_t> Lowering::residentWeight(const ir::Value* v, int64_t begin, int64_t count, int64_t reps, int64_t stride,
                                                 uint32_t tile) {
  if (!v->isInitializer()) return std::nullopt;
  const auto key = std::make_tuple(v, begin, count, reps, stride, tile);
  if (auto hit = resident_.find(key); hit != resident_.end()) return hit->second;
  const uint64_t esize = dtypeSize(v->type.dtype), bytes = static_cast<uint64_t>(count * reps) * esize;
  const auto share = [&](double s) { return static_cast<uint64_t>(s * static_cast<double>(target().bytes_per_tile)); };
  uint64_t& weight_resident = resident_of_weight_[v];
  // A slice that is so far its weight's only copy may go past the share (only_copy_resident_share).
  const bool only_copy = !hasMapping(v) && weight_resident + bytes <= static_cast<uint64_t>(v->type.numElements()) * esize;
  if (resident_bytes_[tile] + bytes > share(only_copy ? options_.only_copy_resident_share : options_.resident_weight_share))
    return std::nullopt;
  resident_bytes_[tile] += bytes;
  weight_resident += bytes;
  const uint64_t offset = mem_.allocator().allocatePersistent(tile, bytes);
  if (bytes > 0) mem_.nameResidentSlice(v, tile, offset);  // an empty slice has no block
  if (count > 0 && reps > 0)
    exe_.streams[weightStream(v)].copies.push_back({static_cast<uint64_t>(begin) * esize, tile, offset,
                                                    static_cast<uint64_t>(count) * esize, static_cast<uint64_t>(reps),
                                                    static_cast<uint64_t>(stride) * esize});
  resident_[key] = offset;
  return offset;
}

void Lowering::requireMapping(const ir::Value* v) {
  if (hasMapping(v)) return;
  POPRT_CHECK(placer_, "no placer for value '" + v->name() + "'");
  placer_(v);
}

std::optional<uint64_t> Lowering::inPlaceOffset(const ir::Value* v, int64_t begin, int64_t count, uint32_t tile) const {
  if (!hasMapping(v)) return std::nullopt;
  const TileMapping& m = mapping(v);
  auto it = std::upper_bound(m.regions.begin(), m.regions.end(), begin,
                             [](int64_t value, const Region& r) { return value < r.begin + r.count; });
  if (it != m.regions.end() && it->tile == tile && it->begin <= begin && begin + count <= it->begin + it->count)
    return it->offset + static_cast<uint64_t>(begin - it->begin) * dtypeSize(v->type.dtype);
  return std::nullopt;
}

uint64_t Lowering::operandInScratch(const ir::Value* v, int64_t begin, int64_t count, uint32_t tile) {
  const size_t esize = dtypeSize(v->type.dtype);
  if (auto in_place = inPlaceOffset(v, begin, count, tile)) return *in_place;
  if (auto resident = residentWeight(v, begin, count, 1, 0, tile)) return *resident;
  if (auto hit = gathered_.find(std::make_tuple(v, begin, count, tile)); hit != gathered_.end()) return hit->second;
  uint64_t offset = scratch(tile, static_cast<uint64_t>(count) * esize);
  gather(v, begin, count, 1, 0, tile, offset, 0);
  return offset;
}

uint64_t Lowering::operandRows(const ir::Value* v, int64_t begin, int64_t count, int64_t reps, int64_t stride, uint32_t tile) {
  if (auto resident = residentWeight(v, begin, count, reps, stride, tile)) return *resident;
  const uint64_t row_bytes = static_cast<uint64_t>(count) * dtypeSize(v->type.dtype);
  const uint64_t offset = scratch(tile, row_bytes * static_cast<uint64_t>(reps));
  gather(v, begin, count, reps, stride, tile, offset, row_bytes);
  return offset;
}

void Lowering::gather(const ir::Value* v, int64_t begin, int64_t count, int64_t reps, int64_t stride, uint32_t tile,
                      uint64_t dst_offset, uint64_t dst_stride) {
  requireMapping(v);
  auto [it, added] = layouts_.try_emplace(v, static_cast<uint32_t>(exe_.layouts.size()));
  if (added) {
    exec::Layout layout;
    layout.elem_bytes = static_cast<uint32_t>(dtypeSize(v->type.dtype));
    for (const Region& r : mapping(v).regions) layout.regions.push_back({r.begin, r.count, r.tile, r.offset});
    exe_.layouts.push_back(std::move(layout));
  }
  if (count > 0 && reps > 0)
    pending_exchange_.gathers.push_back({it->second, begin, count, reps, stride, tile, dst_offset, dst_stride});
}

std::vector<uint64_t> Lowering::finalizeMemory() {
  mem_.endStep("", static_cast<uint32_t>(exe_.main.steps.size()));
  const TileAllocator& a = mem_.allocator();
  for (auto& set : exe_.compute_sets)
    for (auto& v : set.vertices)
      for (auto& f : v.fields) f.offset = a.relocate(v.tile, f.offset);
  for (auto& ex : exe_.exchanges) {
    for (auto& c : ex.copies) {
      c.src_offset = a.relocate(c.src_tile, c.src_offset);
      c.dst_offset = a.relocate(c.dst_tile, c.dst_offset);
    }
    for (auto& g : ex.gathers) g.dst_offset = a.relocate(g.dst_tile, g.dst_offset);
  }
  for (auto& layout : exe_.layouts)
    for (auto& r : layout.regions) r.offset = a.relocate(r.tile, r.offset);
  for (auto& stream : exe_.streams)
    for (auto& c : stream.copies) c.tile_offset = a.relocate(c.tile, c.tile_offset);
  return mem_.peaks();
}

int64_t Lowering::linearShare(int64_t numel, size_t elem_size) const {
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / static_cast<int64_t>(elem_size));
  const int64_t grains = (numel + grain - 1) / grain;
  const int64_t used = std::max<int64_t>(1, std::min<int64_t>(tileCount(), grains));
  return ((grains + used - 1) / used) * grain;
}

TileMapping Lowering::spreadLinear(int64_t numel, size_t elem_size, Placement placement) {
  TileMapping m;
  if (numel == 0) return m;
  const int64_t per_tile = linearShare(numel, elem_size);
  uint32_t tile = next_tile_[ipu_];
  for (int64_t begin = 0; begin < numel; begin += per_tile) {
    int64_t count = std::min(per_tile, numel - begin);
    const uint64_t bytes = static_cast<uint64_t>(count) * elem_size;
    uint64_t offset = placement == Placement::Persistent ? mem_.allocator().allocatePersistent(tile, bytes)
                                                         : mem_.allocator().allocate(tile, bytes);
    m.regions.push_back({begin, count, tile, offset});
    tile = nextTile(tile);
  }
  next_tile_[ipu_] = tile;
  return m;
}

TileMapping Lowering::spreadLike(const ir::Value* like, size_t elem_size) {
  const int64_t numel = like->type.numElements();
  if (like->isInitializer() || !hasMapping(like)) return spreadLinear(numel, elem_size);
  const TileMapping& src = mapping(like);
  // A layout piling more than twice spreadLinear's share on a tile is not copied.
  const int64_t per_tile = linearShare(numel, elem_size);
  std::unordered_map<uint32_t, int64_t> on_tile;
  for (const Region& r : src.regions)
    if ((on_tile[r.tile] += r.count) > 2 * per_tile) return spreadLinear(numel, elem_size);
  // One block per tile, its regions one after another in order: elementwiseRuns can then give a
  // tile's regions one vertex.
  std::unordered_map<uint32_t, uint64_t> tile_bytes, next_offset;
  for (const Region& r : src.regions) tile_bytes[r.tile] += static_cast<uint64_t>(r.count) * elem_size;
  TileMapping m;
  for (const Region& r : src.regions) {
    auto [at, first] = next_offset.try_emplace(r.tile, 0);
    if (first) at->second = mem_.allocator().allocate(r.tile, tile_bytes[r.tile]);
    m.regions.push_back({r.begin, r.count, r.tile, at->second});
    at->second += static_cast<uint64_t>(r.count) * elem_size;
  }
  return m;
}

std::vector<Lowering::Run> Lowering::elementwiseRuns(const TileMapping& out, size_t elem_size,
                                                     std::initializer_list<const ir::Value*> operands) const {
  std::vector<const ir::Value*> in;
  bool weights = false;
  for (const ir::Value* v : operands)
    if (v) {
      in.push_back(v);
      weights = weights || v->isInitializer();
    }
  struct Open {
    size_t run;                                 // its index in `runs`
    std::vector<std::optional<uint64_t>> next;  // where each operand's next element lies, if in place
  };
  std::vector<Run> runs;
  std::unordered_map<uint32_t, Open> open;  // per tile, its last run
  std::vector<std::optional<uint64_t>> here(in.size());
  for (const Region& r : out.regions) {
    for (size_t k = 0; k < in.size(); ++k) here[k] = inPlaceOffset(in[k], r.begin, r.count, r.tile);
    auto it = open.find(r.tile);
    bool extend = !weights && it != open.end();
    if (extend) {
      const Region& last = runs[it->second.run].regions.back();
      extend = last.offset + static_cast<uint64_t>(last.count) * elem_size == r.offset && here == it->second.next;
    }
    if (extend) {
      Run& run = runs[it->second.run];
      run.regions.push_back(r);
      run.count += r.count;
    } else {
      it = open.insert_or_assign(r.tile, Open{runs.size(), {}}).first;
      runs.push_back({r.tile, r.offset, r.count, {r}});
    }
    it->second.next = here;
    for (size_t k = 0; k < in.size(); ++k)
      if (here[k]) it->second.next[k] = *here[k] + static_cast<uint64_t>(r.count) * dtypeSize(in[k]->type.dtype);
  }
  return runs;
}

uint64_t Lowering::operandOnTile(const ir::Value* v, const Run& run) {
  const Region& first = run.regions.front();
  if (run.regions.size() == 1) return operandOnTile(v, first.begin, first.count, run.tile);
  if (auto in_place = inPlaceOffset(v, first.begin, first.count, run.tile)) return *in_place;  // and the rest after it
  const size_t esize = dtypeSize(v->type.dtype);
  requireMapping(v);
  const uint64_t offset = mem_.allocator().allocate(run.tile, static_cast<uint64_t>(run.count) * esize);
  uint64_t at = offset;
  for (const Region& r : run.regions) {
    gatherElements(mapping(v), r.begin, r.count, esize, run.tile, at, pending_exchange_.copies);
    at += static_cast<uint64_t>(r.count) * esize;
  }
  if (run.count > 0) mem_.holdCopy(v, run.tile, offset);
  return offset;
}

uint64_t Lowering::operandInScratch(const ir::Value* v, const Run& run) {
  const Region& first = run.regions.front();
  if (run.regions.size() == 1) return operandInScratch(v, first.begin, first.count, run.tile);
  if (auto in_place = inPlaceOffset(v, first.begin, first.count, run.tile)) return *in_place;  // and the rest after it
  const size_t esize = dtypeSize(v->type.dtype);
  const uint64_t offset = scratch(run.tile, static_cast<uint64_t>(run.count) * esize);
  uint64_t at = offset;
  for (const Region& r : run.regions) {
    gather(v, r.begin, r.count, 1, 0, run.tile, at, 0);
    at += static_cast<uint64_t>(r.count) * esize;
  }
  return offset;
}

uint64_t Lowering::operandOnTile(const ir::Value* v, int64_t begin, int64_t count, uint32_t tile) {
  const size_t esize = dtypeSize(v->type.dtype);
  if (auto in_place = inPlaceOffset(v, begin, count, tile)) return *in_place;
  if (auto resident = residentWeight(v, begin, count, 1, 0, tile)) return *resident;
  requireMapping(v);
  auto key = std::make_tuple(v, begin, count, tile);
  if (auto hit = gathered_.find(key); hit != gathered_.end()) return hit->second;
  uint64_t offset = mem_.allocator().allocate(tile, static_cast<uint64_t>(count) * esize);
  gatherElements(mapping(v), begin, count, esize, tile, offset, pending_exchange_.copies);
  if (count > 0) mem_.holdCopy(v, tile, offset);
  gathered_[key] = offset;
  return offset;
}

void Lowering::beginNode(const std::string& name) {
  node_ = name;
  pending_exchange_ = exec::Exchange{name, {}};
  pending_set_ = exec::ComputeSet{name, {}};
}

void Lowering::flushSuperstep() {
  if (!pending_exchange_.copies.empty() || !pending_exchange_.gathers.empty()) {
    exe_.main.steps.push_back({exec::StepKind::Exchange, static_cast<uint32_t>(exe_.exchanges.size())});
    exe_.exchanges.push_back(std::move(pending_exchange_));
  }
  if (!pending_set_.vertices.empty()) {
    exe_.main.steps.push_back({exec::StepKind::Compute, static_cast<uint32_t>(exe_.compute_sets.size())});
    exe_.compute_sets.push_back(std::move(pending_set_));
  }
  pending_exchange_ = {};
  pending_set_ = {};
}

void Lowering::endNode() {
  flushSuperstep();
  mem_.endStep(node_, static_cast<uint32_t>(exe_.main.steps.size()));
}

void Lowering::nextSuperstep() {
  flushSuperstep();
  pending_exchange_ = exec::Exchange{node_, {}};
  pending_set_ = exec::ComputeSet{node_, {}};
}

}  // namespace poprt::codegen
