#include "sim/engine.h"

#include <algorithm>
#include <cstring>

#include "sim/codelets.h"

namespace poprt::sim {

Engine::Engine(exec::Executable exe) : exe_(std::move(exe)) {}

std::vector<const exec::HostStream*> Engine::streams(exec::HostStream::Role role) const {
  std::vector<const exec::HostStream*> out;
  for (const auto& s : exe_.streams)
    if (s.role == role) out.push_back(&s);
  return out;
}

Expected<std::unique_ptr<Engine>> Engine::create(exec::Executable exe, const std::map<std::string, Tensor>& weights) {
  POPRT_TRY(exec::validate(exe));
  for (const auto& cs : exe.compute_sets)
    for (size_t i = 0; i < cs.vertices.size(); ++i)
      if (auto st = checkVertex(cs.vertices[i]); !st.ok())
        return st.error().withContext("compute set '" + cs.name + "', vertex " + std::to_string(i));
  std::unique_ptr<Engine> engine(new Engine(std::move(exe)));
  engine->tiles_.resize(engine->exe_.tile_bytes.size());
  for (size_t t = 0; t < engine->tiles_.size(); ++t) engine->tiles_[t].assign(engine->exe_.tile_bytes[t], 0);
  // The load program streams each weight to its tiles once.
  std::vector<const uint8_t*> weight_buffers(engine->exe_.streams.size(), nullptr);
  for (size_t i = 0; i < engine->exe_.streams.size(); ++i) {
    const auto& s = engine->exe_.streams[i];
    if (s.role != exec::HostStream::Role::Weight) continue;
    auto it = weights.find(s.name);
    if (it == weights.end()) return Error("weight '" + s.name + "' has no data");
    if (it->second.dtype() != s.dtype || it->second.shape() != s.shape)
      return Error("weight '" + s.name + "' data is " + std::string(dtypeName(it->second.dtype())) +
                   shapeToString(it->second.shape()) + ", expected " + std::string(dtypeName(s.dtype)) + shapeToString(s.shape));
    weight_buffers[i] = it->second.bytes().data();
  }
  for (const auto& step : engine->exe_.load.steps)
    if (step.kind != exec::StepKind::StreamIn || engine->exe_.streams[step.index].role != exec::HostStream::Role::Weight)
      return Error("the load program may only stream weights in");
  engine->runProgram(engine->exe_.load, weight_buffers, {});
  for (const auto& step : engine->exe_.main.steps)
    if (step.kind == exec::StepKind::StreamIn || step.kind == exec::StepKind::StreamOut) {
      auto role = engine->exe_.streams[step.index].role;
      if ((step.kind == exec::StepKind::StreamIn) != (role == exec::HostStream::Role::Input))
        return Error("the main program streams '" + engine->exe_.streams[step.index].name + "' the wrong way");
    }
  engine->computeEstimate();
  return engine;
}

void Engine::runProgram(const exec::Program& program, const std::vector<const uint8_t*>& in_buffers,
                        const std::vector<uint8_t*>& out_buffers) {
  for (const exec::Step& step : program.steps) {
    switch (step.kind) {
      case exec::StepKind::StreamIn: {
        const auto& s = exe_.streams[step.index];
        const uint8_t* src = in_buffers[step.index];
        for (const auto& c : s.copies) std::memcpy(tiles_[c.tile].data() + c.tile_offset, src + c.host_offset, c.bytes);
        break;
      }
      case exec::StepKind::StreamOut: {
        const auto& s = exe_.streams[step.index];
        uint8_t* dst = out_buffers[step.index];
        for (const auto& c : s.copies) std::memcpy(dst + c.host_offset, tiles_[c.tile].data() + c.tile_offset, c.bytes);
        break;
      }
      case exec::StepKind::Exchange:
        // Codegen only gathers into fresh buffers, so copies of one step never overlap.
        for (const auto& c : exe_.exchanges[step.index].copies)
          std::memmove(tiles_[c.dst_tile].data() + c.dst_offset, tiles_[c.src_tile].data() + c.src_offset, c.bytes);
        break;
      case exec::StepKind::Compute:
        for (const auto& v : exe_.compute_sets[step.index].vertices) runVertex(v, tiles_[v.tile].data());
        break;
    }
  }
}

Expected<std::vector<Tensor>> Engine::run(const std::vector<const Tensor*>& inputs) {
  std::vector<const uint8_t*> in_buffers(exe_.streams.size(), nullptr);
  std::vector<uint8_t*> out_buffers(exe_.streams.size(), nullptr);
  std::vector<Tensor> outputs;
  size_t next_input = 0;
  for (size_t i = 0; i < exe_.streams.size(); ++i) {
    const auto& s = exe_.streams[i];
    if (s.role != exec::HostStream::Role::Input) continue;
    if (next_input >= inputs.size() || !inputs[next_input])
      return Error("input '" + s.name + "' was not given");
    const Tensor& t = *inputs[next_input++];
    if (t.dtype() != s.dtype || t.shape() != s.shape)
      return Error("input '" + s.name + "' is " + std::string(dtypeName(t.dtype())) + shapeToString(t.shape()) +
                   ", the model expects " + std::string(dtypeName(s.dtype)) + shapeToString(s.shape));
    in_buffers[i] = t.bytes().data();
  }
  if (next_input != inputs.size())
    return Error(std::to_string(inputs.size()) + " inputs given, the model has " + std::to_string(next_input));
  for (const auto& s : exe_.streams)
    if (s.role == exec::HostStream::Role::Output) outputs.emplace_back(s.dtype, s.shape);
  size_t next_output = 0;
  for (size_t i = 0; i < exe_.streams.size(); ++i)
    if (exe_.streams[i].role == exec::HostStream::Role::Output) out_buffers[i] = outputs[next_output++].bytes().data();
  runProgram(exe_.main, in_buffers, out_buffers);
  return outputs;
}

void Engine::computeEstimate() {
  const auto& t = exe_.target;
  const size_t tiles = exe_.tile_bytes.size();
  std::vector<uint64_t> per_tile(tiles);
  auto busiest = [&] { return *std::max_element(per_tile.begin(), per_tile.end()); };
  for (const exec::Step& step : exe_.main.steps) {
    std::fill(per_tile.begin(), per_tile.end(), 0);
    switch (step.kind) {
      case exec::StepKind::StreamIn:
      case exec::StepKind::StreamOut:
        for (const auto& c : exe_.streams[step.index].copies) per_tile[c.tile] += c.bytes;
        estimate_.exchange += (busiest() + t.exchange_bytes_per_cycle - 1) / t.exchange_bytes_per_cycle;
        break;
      case exec::StepKind::Exchange: {
        // A tile sends and receives at once; the slower direction bounds it.
        std::vector<uint64_t> sent(tiles);
        for (const auto& c : exe_.exchanges[step.index].copies) {
          if (c.src_tile == c.dst_tile) continue;  // a local copy costs no exchange
          per_tile[c.dst_tile] += c.bytes;
          sent[c.src_tile] += c.bytes;
        }
        uint64_t worst = std::max(busiest(), *std::max_element(sent.begin(), sent.end()));
        estimate_.exchange += (worst + t.exchange_bytes_per_cycle - 1) / t.exchange_bytes_per_cycle;
        break;
      }
      case exec::StepKind::Compute: {
        const auto& cs = exe_.compute_sets[step.index];
        for (const auto& v : cs.vertices) per_tile[v.tile] += vertexCycles(v, t);
        uint64_t cycles = busiest();
        estimate_.compute += cycles;
        cs_cycles_.push_back({cs.name, cycles, cs.vertices.size()});
        break;
      }
    }
    estimate_.sync += t.sync_cycles;
  }
}

}  // namespace poprt::sim
