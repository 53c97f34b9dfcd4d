// Runs an executable the verifier accepted, when it is small enough to run in milliseconds, on
// zero weights and inputs. Any memory error the sanitizers see there is a gap in the verifier:
// it promised that every field, copy and stream stays inside tile memory.
#pragma once

#include <map>
#include <string>

#include "fuzz/fuzz_util.h"
#include "sim/engine.h"

namespace poprt::fuzz {

inline constexpr uint64_t kRunDeviceBytes = 256 * 1024;  // all tiles together
inline constexpr uint64_t kRunStreamBytes = 64 * 1024;   // each input or weight

inline bool smallTensor(const exec::HostStream& s) {
  if (s.kind != ValueKind::Tensor || s.dtype == DType::String || dtypeSize(s.dtype) == 0) return false;
  auto n = checkedNumElements(s.shape, static_cast<int64_t>(kRunStreamBytes));
  return n.ok() && static_cast<uint64_t>(*n) * dtypeSize(s.dtype) <= kRunStreamBytes;
}

// `weights` by name; nullptr: zero tensors of each weight stream's type.
inline void runSmall(const exec::Executable& exe, const std::map<std::string, Tensor>* weights) {
  // Host programs run the reference evaluator, which is not what these targets are after.
  if (!exe.host_programs.empty()) return;
  uint64_t device = 0;
  for (uint64_t b : exe.tile_bytes) device += b;
  if (device > kRunDeviceBytes) return;
  std::map<std::string, Tensor> zeros;
  std::vector<Tensor> inputs;
  for (const auto& s : exe.streams) {
    if (s.role == exec::HostStream::Role::Weight && !weights) {
      if (!smallTensor(s)) return;
      zeros.emplace(s.name, Tensor(s.dtype, s.shape));
    }
    if (s.role == exec::HostStream::Role::Input) {
      if (!smallTensor(s)) return;
      inputs.emplace_back(s.dtype, s.shape);
    }
  }
  auto engine = sim::Engine::create(exe, weights ? *weights : zeros, 1);
  require(engine.ok(),
          "Engine::create refused an executable the verifier accepted: " + (engine.ok() ? "" : engine.error().message()));
  std::vector<const Tensor*> args;
  for (const Tensor& t : inputs) args.push_back(&t);
  auto out = (*engine)->runTensors(args);
  require(out.ok(), "a verified executable failed to run: " + (out.ok() ? "" : out.error().message()));
}

}  // namespace poprt::fuzz
