#include "sim/engine.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <tuple>

#include "lib/onnx/onnx_io.h"
#include "lib/ops/registry.h"
#include "lib/support/copy_bytes.h"
#include "lib/support/log.h"
#include "sim/codelets.h"
#include "sim/scratch_inputs.h"
#include "sim/thread_pool.h"
#include "sim/verify_popef.h"

namespace poprt::sim {

using Role = exec::HostStream::Role;

Engine::Engine(std::shared_ptr<const exec::Executable> exe) : shared_exe_(std::move(exe)), exe_(*shared_exe_) {}
Engine::~Engine() = default;

std::vector<const exec::HostStream*> Engine::streams(Role role) const {
  std::vector<const exec::HostStream*> out;
  for (const auto& s : exe_.streams)
    if (s.role == role) out.push_back(&s);
  return out;
}

Expected<std::unique_ptr<Engine>> Engine::create(exec::Executable exe, const std::map<std::string, Tensor>& weights,
                                                 unsigned workers) {
  POPRT_TRY(verifyExecutable(exe));  // the PopEF verifier's checks of the executable (sim/verify_popef.h)
  return create(std::make_shared<const exec::Executable>(std::move(exe)), weights, workers);
}

Expected<std::unique_ptr<Engine>> Engine::create(std::shared_ptr<const exec::Executable> shared,
                                                 const std::map<std::string, Tensor>& weights, unsigned workers,
                                                 std::shared_ptr<const ExecutionPlan> plan) {
  std::unique_ptr<Engine> engine(new Engine(std::move(shared)));
  // Host programs are ONNX models run by the reference evaluator; import them once.
  for (const auto& hp : engine->exe_.host_programs) {
    onnx::ModelProto proto;
    if (!proto.ParseFromString(hp.onnx)) return Error("host program '" + hp.name + "' is not a valid ONNX model");
    auto model = onnxio::importModelProto(proto, "", "host program '" + hp.name + "'", {false, false});
    if (!model.ok()) return model.error();
    if (model->graph->inputs().size() != hp.inputs.size() || model->graph->outputs().size() != hp.outputs.size())
      return Error("host program '" + hp.name + "' does not match its stream lists");
    engine->host_opsets_.push_back(ops::opsetsOf(*model));
    engine->host_models_.push_back(std::move(model).value());
  }
  engine->pool_ = std::make_unique<ThreadPool>(workers ? workers : ThreadPool::defaultWorkers());
  if (!plan) {
    plan = std::make_shared<const ExecutionPlan>(makeExecutionPlan(engine->exe_));
    POPRT_LOG(Debug, "simulator: " << plan->shared_fields << " vertex fields (" << plan->shared_bytes
                                   << " bytes) read a shared copy of their weights");
  } else if (plan->exe != &engine->exe_) {
    return Error("the execution plan given belongs to another executable");
  }
  engine->plan_ = std::move(plan);
  POPRT_TRY(engine->reload(weights));
  engine->computeEstimate();
  return engine;
}

Status Engine::reload(const std::map<std::string, Tensor>& weights) {
  const size_t n = exe_.streams.size();
  tiles_.reset(exe_.tile_bytes, uint64_t{pool_->workers()} * kTogether * scratchSlotBytes());
  // The load program streams each weight to its tiles once, straight from the caller's tensor
  // (bound as memory, not copied into a host buffer: a 1.2 GB model's weights are held once).
  RunState state{std::vector<ops::RtValue>(n), std::vector<const InputBinding*>(n), std::vector<const OutputBinding*>(n),
                 std::vector<bool>(n)};
  std::vector<InputBinding> bound(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& s = exe_.streams[i];
    if (s.role != Role::Weight) continue;
    auto it = weights.find(s.name);
    if (it == weights.end()) return Error("weight '" + s.name + "' has no data");
    if (it->second.dtype() != s.dtype || it->second.shape() != s.shape)
      return Error("weight '" + s.name + "' data is " + std::string(dtypeName(it->second.dtype())) +
                   shapeToString(it->second.shape()) + ", expected " + std::string(dtypeName(s.dtype)) + shapeToString(s.shape));
    bound[i].bytes = it->second.bytes();
    state.in[i] = &bound[i];
  }
  return runProgram(exe_.load, state);
}

Expected<Tensor> Engine::readWeight(const std::string& name) const {
  for (const auto& s : exe_.streams) {
    if (s.role != Role::Weight || s.name != name) continue;
    Tensor t(s.dtype, s.shape);
    for (const auto& c : s.copies)
      exec::forEachStreamPiece(c, [&](uint64_t host, uint64_t tile, uint64_t n) {
        copyBytes(t.bytes().data() + host, tiles_.tile(c.tile) + tile, n);
      });
    return t;
  }
  return Error("the executable has no weight named '" + name + "'");
}

void Engine::scramble(uint64_t seed) {
  uint64_t state = seed;
  for (uint32_t t = 0; t < tiles_.tiles(); ++t)
    for (uint8_t *b = tiles_.tile(t), *end = b + tiles_.size(t); b != end; ++b) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;  // an LCG is plenty for noise
      *b = static_cast<uint8_t>(state >> 56);
    }
}

const ops::RtValue& Engine::hostValue(uint32_t i, RunState& state) {
  ops::RtValue& buffer = state.buffers[i];
  if (!(buffer.isTensor() && buffer.tensor.dtype() == DType::Undefined)) return buffer;
  if (state.in[i] && state.in[i]->value) return *state.in[i]->value;
  // A tensor in the caller's memory that a host program reads: the evaluator needs a Tensor.
  std::span<const uint8_t> bytes;
  if (state.in[i])
    bytes = state.in[i]->bytes;
  else if (state.out[i] && state.streamed_out[i])
    bytes = state.out[i]->bytes;
  else
    return buffer;
  const auto& s = exe_.streams[i];
  buffer = ops::RtValue::of(Tensor(s.dtype, s.shape));
  copyBytes(buffer.tensor.bytes().data(), bytes.data(), bytes.size());
  return buffer;
}

Status Engine::runHostProgram(uint32_t index, RunState& state) {
  const auto& hp = exe_.host_programs[index];
  const ir::Graph& graph = *host_models_[index].graph;
  std::vector<std::pair<std::string, ops::RtValue>> inputs;
  for (size_t i = 0; i < hp.inputs.size(); ++i) inputs.emplace_back(graph.inputs()[i]->name(), hostValue(hp.inputs[i], state));
  ops::EvalContext ctx(host_opsets_[index]);
  auto outs = ops::runGraph(graph, inputs, ctx);
  if (!outs.ok()) return outs.error().withContext("host program '" + hp.name + "'");
  for (size_t i = 0; i < hp.outputs.size(); ++i) {
    const auto& s = exe_.streams[hp.outputs[i]];
    ops::RtValue& v = (*outs)[i];
    // A buffer the device reads later must hold exactly what the program was compiled for.
    if (v.isTensor()) {
      bool match = v.tensor.dtype() == s.dtype && v.tensor.shape().size() == s.shape.size();
      for (size_t d = 0; match && d < s.shape.size(); ++d) match = s.shape[d] < 0 || s.shape[d] == v.tensor.shape()[d];
      if (!match)
        return Error("host program '" + hp.name + "' produced " + std::string(dtypeName(v.tensor.dtype())) +
                     shapeToString(v.tensor.shape()) + " for '" + s.name + "', compiled for " + std::string(dtypeName(s.dtype)) +
                     shapeToString(s.shape));
    }
    state.buffers[hp.outputs[i]] = std::move(v);
  }
  return okStatus();
}

Status Engine::runStep(const exec::Step& step, RunState& state, bool split) {
  switch (step.kind) {
    case exec::StepKind::StreamIn: {
      const auto& s = exe_.streams[step.index];
      const InputBinding* bound = state.in[step.index];
      const uint8_t* src = nullptr;
      if (bound && !bound->value) {  // the caller's memory, checked to be the stream's size
        src = bound->bytes.data();
      } else {
        const ops::RtValue& buffer = hostValue(step.index, state);
        if (!buffer.isTensor() || buffer.tensor.byteSize() != s.byteSize() || buffer.tensor.dtype() != s.dtype)
          return Error("stream '" + s.name + "' has no data of the compiled size to copy to the device");
        src = buffer.tensor.bytes().data();
      }
      for (const auto& c : s.copies)
        exec::forEachStreamPiece(
            c, [&](uint64_t host, uint64_t tile, uint64_t n) { copyBytes(tiles_.tile(c.tile) + tile, src + host, n); });
      break;
    }
    case exec::StepKind::StreamOut: {
      const auto& s = exe_.streams[step.index];
      const OutputBinding* bound = state.out[step.index];
      uint8_t* dst = nullptr;
      if (bound && !bound->value) {  // straight into the caller's memory
        dst = bound->bytes.data();
        state.streamed_out[step.index] = true;
      } else {
        ops::RtValue& buffer = state.buffers[step.index];
        if (!buffer.isTensor() || buffer.tensor.shape() != s.shape || buffer.tensor.dtype() != s.dtype)
          buffer = ops::RtValue::of(Tensor(s.dtype, s.shape));
        dst = buffer.tensor.bytes().data();
      }
      for (const auto& c : s.copies)
        exec::forEachStreamPiece(
            c, [&](uint64_t host, uint64_t tile, uint64_t n) { copyBytes(dst + host, tiles_.tile(c.tile) + tile, n); });
      break;
    }
    case exec::StepKind::Exchange: runExchange(step.index, split); break;
    case exec::StepKind::Compute: runComputeSet(step.index, split); break;
    case exec::StepKind::HostCall: return runHostProgram(step.index, state);
  }
  return okStatus();
}

Status Engine::runProgram(const exec::Program& program, RunState& state, RunTimes* times) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last = times ? Clock::now() : Clock::time_point{};
  for (const exec::Step& step : program.steps) {
    POPRT_TRY(runStep(step, state, true));
    if (times) {
      const Clock::time_point now = Clock::now();
      const double seconds = std::chrono::duration<double>(now - last).count();
      last = now;
      if (times->step_seconds) times->step_seconds->push_back(seconds);
      (step.kind == exec::StepKind::StreamIn    ? times->stream_in
       : step.kind == exec::StepKind::StreamOut ? times->stream_out
                                                : times->compute) += seconds;
    }
  }
  return okStatus();
}

namespace {

// Whether `tile` is in `worker`'s share of the tiles (one worker: all of them, with no division
// per copy or vertex).
bool inShare(uint32_t tile, unsigned worker, unsigned workers) { return workers == 1 || tile % workers == worker; }

}  // namespace

template <class Work>
void Engine::runSuperstep(Split& how, bool split, const Work& work) {
  if (!split || how == Split::Inline || pool_->workers() == 1) return work(0, 1);
  if (how == Split::Cold) {
    how = Split::Untimed;
    return work(0, 1);
  }
  if (how == Split::Untimed) {
    const auto start = std::chrono::steady_clock::now();
    work(0, 1);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    how = static_cast<uint64_t>(ns) >= kParallelNs ? Split::Parallel : Split::Inline;
    return;
  }
  const unsigned workers = pool_->workers();
  pool_->run([&](unsigned w) { work(w, workers); });
}

// Codegen only gathers into fresh buffers, so the moves of one step never overlap: each worker
// makes the moves into its share of the tiles.
void Engine::runExchange(uint32_t index, bool split) {
  const ExchangePlan& plan = plan_->exchanges[index];
  uint8_t* const base = tiles_.base();
  auto work = [&](unsigned worker, unsigned workers) {
    size_t begin = 0;
    for (const ExchangeRun& run : plan.runs) {
      if (inShare(run.dst_tile, worker, workers))
        makeMoves(plan.moves.data() + begin, plan.moves.data() + run.end, tiles_.tile(run.dst_tile), base);
      begin = run.end;
    }
  };
  runSuperstep(exchange_split_[index], split, work);
}

namespace {

// Most of what a vertex reads was last touched a superstep or a whole run ago (its weights, its
// tile's share of an activation): asking for the next vertex's inputs while this one computes
// hides much of that wait (light_resnet50 ran 14% faster on one thread). The cap keeps a huge
// field from flushing the cache the running vertex works in.
constexpr uint64_t kPrefetchBytes = 256 * 1024;

// Asks for up to `left` of the n bytes at p; returns what is left of the budget.
uint64_t prefetchBytes(const uint8_t* p, uint64_t n, uint64_t left) {
  n = std::min(n, left);
  for (uint64_t at = 0; at < n; at += 64) __builtin_prefetch(p + at, 0, 2);
  return left - n;
}

// The inputs of vertex v. `skip`: a field whose bytes in the tile nobody reads (read from scratch,
// as rows where the exchange's sources hold them, or moved into its codelet's copy:
// sim/scratch_inputs.h); the sources of the moves [first, last) that fill its scratch are asked for
// instead. (Asking for a row table's rows, mostly a few cache lines each, made resnet20_cifar and
// oww_embedding 4-5% slower; for the sources of the moves into a tile, mobilenetv3_small_feat's
// 42 pieces of 15 bytes a block, 3-8% slower.)
void prefetchInputs(const VertexView& v, const uint8_t* mem, size_t skip, const ExchangeMove* first, const ExchangeMove* last) {
  // GCC finds no side effect in a function of prefetches alone and drops calls to it: an empty
  // volatile asm is one it must keep.
  asm volatile("");
  uint64_t left = kPrefetchBytes;
  for (const ExchangeMove* m = first; m != last && left > 0; ++m) left = prefetchBytes(mem + m->src, m->bytes, left);
  for (size_t f = 1; f < v.fields.size() && left > 0; ++f)
    if (f != skip) left = prefetchBytes(mem + v.fields[f].offset, v.fields[f].bytes, left);
}

}  // namespace

// A vertex writes only its own tile's memory (it may read a shared weight copy elsewhere, which
// nothing writes); each worker runs the vertices of its tiles, in order, each after the moves of
// the exchange before it that it makes itself (ExecutionPlan::vertex_moves): into its tile, into
// the worker's scratch, or none where it reads its input rows at their sources
// (sim/scratch_inputs.h). Only a pipelined program's stages run sets side by side as worker 0, and
// such a program has no scratch inputs.
void Engine::runComputeSet(uint32_t index, bool split) {
  const auto& vertices = plan_->sets[index].vertices;
  const auto& runs = plan_->sets[index].runs;
  const VertexMoves& moves = plan_->vertex_moves[index];
  uint8_t* const base = tiles_.base();
  const uint64_t slot_bytes = scratchSlotBytes();
  auto work = [&](unsigned worker, unsigned workers) {
    auto mine = [&](size_t i) {
      while (i < vertices.size() && !inShare(vertices[i].tile, worker, workers)) ++i;
      return i;
    };
    auto scratchField = [&](size_t i) -> size_t { return moves.scratch_field.empty() ? 0 : moves.scratch_field[i]; };
    auto copyMoves = [&](size_t i) -> InputMoves {
      if (moves.copy_ends.empty()) return {};
      const ExchangeMove* m = moves.copy_moves.data();
      return {m + (i ? moves.copy_ends[i - 1] : 0), m + moves.copy_ends[i]};
    };
    auto inputRows = [&](size_t i) -> const uint64_t* {
      if (moves.row_ends.empty()) return nullptr;
      const uint32_t first = i ? moves.row_ends[i - 1] : 0;
      return moves.row_ends[i] > first ? moves.rows.data() + first : nullptr;
    };
    // This worker's scratch, room for the scratch fields of a group of vertices, packed one after
    // another (slots a fixed size apart, a multiple of 4 KiB, fell on the same cache sets); and
    // the fields of the vertices that read one (the verifier's, but one pointing at its slot).
    const uint64_t scratch = tiles_.scratchOffset() + uint64_t{worker} * kTogether * slot_bytes;
    uint64_t scratch_used = 0;  // by the group being prepared
    exec::Field slot_fields[kTogether][kMaxScratchVertexFields];
    VertexView slot_views[kTogether];
    // Makes vertex i's moves; returns the view it runs as, the group's k-th.
    auto prepare = [&](size_t i, size_t k) -> const VertexView* {
      if (k == 0) scratch_used = 0;
      if (moves.ends.empty()) return &vertices[i];
      const ExchangeMove* m = moves.moves.data();
      makeMoves(m + (i ? moves.ends[i - 1] : 0), m + moves.ends[i], tiles_.tile(vertices[i].tile), base);
      const VertexView& v = vertices[i];
      if (const uint64_t* rows = inputRows(i)) {
        slot_views[k] = v;
        slot_views[k].input_rows = rows;
        return &slot_views[k];
      }
      const size_t f = scratchField(i);
      if (!f) return &vertices[i];
      exec::Field* fields = slot_fields[k];
      for (size_t g = 0; g < v.fields.size(); ++g) fields[g] = v.fields[g];
      fields[f].offset = scratch + scratch_used;
      scratch_used += (fields[f].bytes + 63) / 64 * 64;
      const ExchangeMove* sm = moves.scratch_moves.data();
      makeMoves(sm + (i ? moves.scratch_ends[i - 1] : 0), sm + moves.scratch_ends[i], base + fields[f].offset, base);
      slot_views[k] = VertexView(v.tile, v.codelet, v.dtype, std::span<const exec::Field>(fields, v.fields.size()));
      return &slot_views[k];
    };
    auto prefetchNext = [&](size_t i) {
      const ExchangeMove* m = moves.scratch_moves.data();
      const InputMoves copy = copyMoves(i);
      if (inputRows(i) || copy.first != copy.last) return prefetchInputs(vertices[i], base, 1, m, m);
      const size_t f = scratchField(i);
      if (!f) return prefetchInputs(vertices[i], base, 0, m, m);
      prefetchInputs(vertices[i], base, f, m + (i ? moves.scratch_ends[i - 1] : 0), m + moves.scratch_ends[i]);
    };
    const VertexRun* run = runs.data();
    for (size_t i = mine(0); i < vertices.size();) {
      while (run->end <= i) ++run;
      if (run->together) {  // up to kTogether of the run's vertices at once, after all their moves
        const VertexView* group[kTogether];
        InputMoves copies[kTogether];
        size_t n = 0, next = i;
        for (; n < kTogether && next < run->end; next = mine(next + 1)) {
          group[n] = prepare(next, n);
          copies[n] = copyMoves(next);
          ++n;
        }
        if (next < vertices.size()) prefetchNext(next);
        runVertices(group, n, run->params, base, moves.copy_ends.empty() ? nullptr : copies);
        i = next;
        continue;
      }
      const size_t next = mine(i + 1);
      const VertexView* v = prepare(i, 0);
      if (next < vertices.size()) prefetchNext(next);
      runVertex(*v, run->params, base);
      i = next;
    }
  };
  runSuperstep(compute_split_[index], split, work);
}

bool isFixedSize(const exec::HostStream& s) {
  return s.kind == ValueKind::Tensor && s.dtype != DType::String &&
         std::all_of(s.shape.begin(), s.shape.end(), [](int64_t d) { return d >= 0; });
}

std::string inputMismatch(const ops::RtValue& v, const exec::HostStream& s) {
  auto expected = [&] {
    return std::string(valueKindName(s.kind)) + " of " + std::string(dtypeName(s.dtype)) +
           (s.kind == ValueKind::Tensor ? shapeToString(s.shape) : "");
  };
  auto itemsOk = [&] {
    return std::all_of(v.sequence.begin(), v.sequence.end(), [&](const Tensor& t) { return t.dtype() == s.dtype; });
  };
  bool ok = false;
  switch (s.kind) {
    case ValueKind::Tensor: ok = v.isTensor() && v.tensor.dtype() == s.dtype && v.tensor.shape() == s.shape; break;
    case ValueKind::Sequence: ok = v.kind == ops::RtValue::Kind::Sequence && itemsOk(); break;
    case ValueKind::Optional: ok = v.kind == ops::RtValue::Kind::None || (v.isTensor() && v.tensor.dtype() == s.dtype); break;
    case ValueKind::OptionalSequence:
      ok = v.kind == ops::RtValue::Kind::None || (v.kind == ops::RtValue::Kind::Sequence && itemsOk());
      break;
  }
  if (ok) return "";
  std::string got = v.isTensor() ? "tensor of " + std::string(dtypeName(v.tensor.dtype())) + shapeToString(v.tensor.shape())
                    : v.kind == ops::RtValue::Kind::Sequence ? "sequence of " + std::to_string(v.sequence.size()) + " tensors"
                                                             : "empty optional";
  return "input '" + s.name + "' is a " + got + ", the model expects a " + expected();
}

Status Engine::run(std::span<const InputBinding> inputs, std::span<const OutputBinding> outputs, RunTimes* times) {
  RunState state;
  POPRT_TRY(bind(inputs, outputs, state));
  POPRT_TRY(runProgram(exe_.main, state, times));
  return finish(state);
}

Status Engine::bind(std::span<const InputBinding> inputs, std::span<const OutputBinding> outputs, RunState& state) const {
  const size_t n = exe_.streams.size();
  state.buffers.assign(n, {});
  state.in.assign(n, nullptr);
  state.out.assign(n, nullptr);
  state.streamed_out.assign(n, false);
  auto typeOf = [](const exec::HostStream& s) { return std::string(dtypeName(s.dtype)) + shapeToString(s.shape); };
  size_t next_in = 0, next_out = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto& s = exe_.streams[i];
    if (s.role == Role::Input) {
      if (next_in >= inputs.size()) return Error("input '" + s.name + "' was not given");
      const InputBinding& b = inputs[next_in++];
      if (b.value) {
        if (auto why = inputMismatch(*b.value, s); !why.empty()) return Error(why);
      } else if (!isFixedSize(s)) {
        return Error("input '" + s.name + "' is a " + std::string(valueKindName(s.kind)) + " of " + typeOf(s) +
                     " that lives on the host; it needs a host value, not raw memory");
      } else if (b.bytes.size() != s.byteSize()) {
        return Error("input '" + s.name + "' is " + std::to_string(b.bytes.size()) + " bytes, the model expects " +
                     std::to_string(s.byteSize()) + " (" + typeOf(s) + ")");
      }
      state.in[i] = &b;
    } else if (s.role == Role::Output) {
      if (next_out >= outputs.size()) return Error("output '" + s.name + "' has no destination");
      const OutputBinding& b = outputs[next_out++];
      if (!b.value && (!isFixedSize(s) || b.bytes.size() != s.byteSize()))
        return Error("output '" + s.name + "' (" + typeOf(s) + ") cannot go to " + std::to_string(b.bytes.size()) +
                     " bytes of raw memory");
      state.out[i] = &b;
    }
  }
  if (next_in != inputs.size())
    return Error(std::to_string(inputs.size()) + " inputs given, the model has " + std::to_string(next_in));
  if (next_out != outputs.size())
    return Error(std::to_string(outputs.size()) + " output destinations given, the model has " + std::to_string(next_out));
  return okStatus();
}

Status Engine::finish(RunState& state) {
  auto typeOf = [](const exec::HostStream& s) { return std::string(dtypeName(s.dtype)) + shapeToString(s.shape); };
  Status st = okStatus();
  for (size_t i = 0; st.ok() && i < exe_.streams.size(); ++i) {
    const OutputBinding* b = state.out[i];
    if (!b || (!b->value && state.streamed_out[i])) continue;
    const auto& s = exe_.streams[i];
    ops::RtValue& v = state.buffers[i];
    if (v.isTensor() && v.tensor.dtype() == DType::Undefined) {
      st = Error("output '" + s.name + "' was not produced");
    } else if (b->value) {
      *b->value = std::move(v);
    } else if (!v.isTensor() || v.tensor.dtype() != s.dtype || v.tensor.shape() != s.shape) {
      st = Error("output '" + s.name + "' was produced with another type than the " + typeOf(s) + " it was compiled for");
    } else {
      copyBytes(b->bytes.data(), v.tensor.bytes().data(), b->bytes.size());
    }
  }
  return st;
}

Status Engine::runBatches(std::span<const Batch> batches, RunTimes* times) {
  if (exe_.strategy == exec::Strategy::Pipelined) return runPipelined(batches, times);
  for (const Batch& b : batches) POPRT_TRY(run(b.inputs, b.outputs, times));
  return okStatus();
}

Status Engine::runPipelined(std::span<const Batch> batches, RunTimes* times) {
  std::vector<RunState> states(batches.size());
  for (size_t b = 0; b < batches.size(); ++b) POPRT_TRY(bind(batches[b].inputs, batches[b].outputs, states[b]));
  const auto& segments = exe_.segments;
  const size_t stages = segments.size(), n = batches.size();
  std::vector<Status> failed(stages, okStatus());
  auto start = std::chrono::steady_clock::now();
  // The verifier checked that a stage's steps touch its IPU's tiles alone and that it has no
  // host steps, so stages on different batches never share memory or host state.
  for (size_t phase = 0; phase + 1 < n + stages; ++phase) {
    auto active = [&](size_t s) { return phase >= s && phase - s < n; };
    const unsigned workers = pool_->workers();
    pool_->run([&](unsigned w) {
      for (size_t s = w; s < stages; s += workers)
        if (active(s) && failed[s].ok()) failed[s] = runSteps(segments[s].begin, segments[s].copies, states[phase - s], false);
    });
    for (const Status& st : failed) POPRT_TRY(st);
    for (size_t s = stages; s-- > 0;)
      if (active(s)) POPRT_TRY(runSteps(segments[s].copies, segments[s].end, states[phase - s], true));
  }
  if (times) times->compute += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (RunState& state : states) POPRT_TRY(finish(state));
  return okStatus();
}

Status Engine::runSteps(uint32_t begin, uint32_t end, RunState& state, bool split) {
  for (uint32_t i = begin; i < end; ++i) POPRT_TRY(runStep(exe_.main.steps[i], state, split));
  return okStatus();
}

Expected<std::vector<ops::RtValue>> Engine::run(std::vector<ops::RtValue> inputs) {
  std::vector<InputBinding> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) in[i].value = &inputs[i];
  std::vector<ops::RtValue> outputs(streams(Role::Output).size());
  std::vector<OutputBinding> out(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) out[i].value = &outputs[i];
  POPRT_TRY(run(in, out));
  return outputs;
}

Expected<std::vector<Tensor>> Engine::runTensors(const std::vector<const Tensor*>& inputs) {
  std::vector<ops::RtValue> values;
  for (const Tensor* t : inputs) {
    if (!t) return Error("an input tensor is missing");
    values.push_back(ops::RtValue::of(*t));
  }
  POPRT_ASSIGN_OR_RETURN(std::vector<ops::RtValue> outs, run(std::move(values)));
  std::vector<Tensor> tensors;
  for (auto& v : outs) {
    if (!v.isTensor()) return Error("an output is a sequence or optional; use the RtValue overload");
    tensors.push_back(std::move(v.tensor));
  }
  return tensors;
}

}  // namespace poprt::sim
