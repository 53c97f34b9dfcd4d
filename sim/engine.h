// The functional simulator: one memory per tile, the program interpreter (stream copies, exchange,
// compute sets in BSP order) and the static cost model summed per superstep.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/exec/executable.h"
#include "lib/ir/graph.h"
#include "lib/ops/value.h"

namespace poprt::sim {

struct CycleEstimate {
  uint64_t compute = 0;   // sum over compute sets of the busiest tile's cycles
  uint64_t exchange = 0;  // sum over exchange/stream steps of the busiest tile's transfer cycles
  uint64_t sync = 0;      // one sync per step
  uint64_t total() const { return compute + exchange + sync; }
};

struct ComputeSetCycles {
  std::string name;
  uint64_t cycles = 0;
  size_t vertices = 0;
};

// Why `value` cannot feed the input stream `s` ("" when it can).
std::string inputMismatch(const ops::RtValue& value, const exec::HostStream& s);

class ThreadPool;

class Engine {
 public:
  // Checks every vertex (the executable's bounds were checked when it was read) and prepares the
  // tile memories. `weights` holds the data of each Weight stream, by name. Supersteps with
  // enough work are split between `workers` threads (0: ThreadPool::defaultWorkers()).
  static Expected<std::unique_ptr<Engine>> create(exec::Executable exe,
                                                  const std::map<std::string, Tensor>& weights, unsigned workers = 0);
  ~Engine();

  const exec::Executable& executable() const { return exe_; }
  // Inputs in the order of the executable's Input streams; returns the Output streams in order.
  Expected<std::vector<ops::RtValue>> run(std::vector<ops::RtValue> inputs);
  // The same for models whose inputs and outputs are all tensors.
  Expected<std::vector<Tensor>> runTensors(const std::vector<const Tensor*>& inputs);

  // Estimated cycles of one main-program run on the target (the cost model is static).
  const CycleEstimate& estimate() const { return estimate_; }
  const std::vector<ComputeSetCycles>& computeSetCycles() const { return cs_cycles_; }
  std::vector<const exec::HostStream*> streams(exec::HostStream::Role role) const;

 private:
  explicit Engine(exec::Executable exe);
  Status runProgram(const exec::Program& program);
  Status runHostProgram(uint32_t index);
  void computeEstimate();
  void runExchange(uint32_t index);
  void runComputeSet(uint32_t index);

  exec::Executable exe_;
  std::vector<std::vector<uint8_t>> tiles_;
  std::vector<ops::RtValue> buffers_;          // one host buffer per stream
  std::vector<ir::Model> host_models_;         // the imported host programs
  std::vector<std::map<std::string, int64_t>> host_opsets_;
  CycleEstimate estimate_;
  std::vector<ComputeSetCycles> cs_cycles_;
  std::vector<bool> parallel_exchange_, parallel_compute_;  // worth splitting between workers
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace poprt::sim
