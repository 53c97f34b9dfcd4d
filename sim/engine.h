// The functional simulator: one memory per tile, the program interpreter (stream copies, exchange,
// compute sets in BSP order) and the static cost model summed per superstep.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/exec/executable.h"
#include "lib/ir/graph.h"
#include "lib/ops/value.h"
#include "sim/execution_plan.h"
#include "sim/tile_arena.h"

namespace poprt::sim {

struct CycleEstimate {
  uint64_t compute = 0;   // sum over compute sets of the busiest tile's cycles
  uint64_t exchange = 0;  // sum over exchange/stream steps of the busiest tile's transfer cycles
  uint64_t sync = 0;      // one sync per step
  uint64_t total() const { return compute + exchange + sync; }
};

// The cost model's figures for one step of the main program (CycleEstimate sums them).
struct StepCycles {
  uint64_t compute = 0;     // a compute set: its busiest tile's cycles
  uint64_t exchange = 0;    // an exchange or stream copy: its busiest tile's transfer cycles
  uint64_t sync = 0;        // the sync ending a device step (host calls have none)
  uint64_t bytes = 0;       // bytes received from other tiles (exchange) or moved to/from the host (streams)
  uint64_t link_bytes = 0;  // of those, bytes that crossed the IPU-Links from another IPU
  uint64_t total() const { return compute + exchange + sync; }
};

// When a stage works on a batch of a step, in the cost model's schedule (Engine::schedule).
struct StageSpan {
  uint32_t stage = 0, batch = 0;
  bool copies = false;  // its IPU-Link copies to the next stage, not its own steps
  uint64_t start = 0, cycles = 0;
};

// The cost model's figures for one segment of a sharded program (exec::Segment).
struct SegmentCycles {
  uint32_t ipu = 0;
  uint64_t compute = 0;  // its steps on the IPU, all costs
  uint64_t copies = 0;   // its IPU-Link copies to the next segment's IPU
};

// Why `value` cannot feed the input stream `s` ("" when it can).
std::string inputMismatch(const ops::RtValue& value, const exec::HostStream& s);
// True when the stream's data has a fixed byte layout (a tensor of static shape and a dtype of
// fixed size), so it can move straight between the caller's memory and the tiles.
bool isFixedSize(const exec::HostStream& s);

// Where one run's inputs come from and its outputs go. A fixed-size tensor is bound to memory the
// caller owns (`bytes`, exactly the stream's size): the stream copies move it between that memory
// and the tiles, with no copy in between. Other values (sequences, optionals, string tensors,
// outputs whose shape is known only at run time) are bound to a host value (`value`).
struct InputBinding {
  std::span<const uint8_t> bytes;
  const ops::RtValue* value = nullptr;
};
struct OutputBinding {
  std::span<uint8_t> bytes;
  ops::RtValue* value = nullptr;
};

// Host wall time of one run of the main program, by phase.
struct RunTimes {
  double stream_in = 0;   // host-to-device stream copies
  double compute = 0;     // exchanges, compute sets and host calls
  double stream_out = 0;  // device-to-host stream copies
  // When set: the wall time of each main-program step, in program order (the profile's trace).
  std::vector<double>* step_seconds = nullptr;
};

class ThreadPool;

class Engine {
 public:
  // Runs verifyExecutable (sim/verify_popef.h) and prepares the tile memories. `weights` holds
  // the data of each Weight stream, by name. Supersteps with enough work are split between
  // `workers` threads (0: ThreadPool::defaultWorkers()).
  static Expected<std::unique_ptr<Engine>> create(exec::Executable exe, const std::map<std::string, Tensor>& weights,
                                                  unsigned workers = 0);
  // The same for an executable the verifier already accepted (a VerifiedPopef's), shared between
  // engines (the runtime's replicas): it is not verified again.
  // `plan`: another engine's plan() for the same executable object (the runtime's replicas share
  // it); when null the engine makes its own.
  static Expected<std::unique_ptr<Engine>> create(std::shared_ptr<const exec::Executable> exe,
                                                  const std::map<std::string, Tensor>& weights, unsigned workers = 0,
                                                  std::shared_ptr<const ExecutionPlan> plan = nullptr);
  ~Engine();

  const exec::Executable& executable() const { return exe_; }
  // The program as this engine runs it (sim/execution_plan.h).
  const std::shared_ptr<const ExecutionPlan>& plan() const { return plan_; }
  // Runs the main program once. `inputs` in the order of the executable's Input streams,
  // `outputs` in the order of its Output streams; the bound memory must stay valid during the call.
  Status run(std::span<const InputBinding> inputs, std::span<const OutputBinding> outputs, RunTimes* times = nullptr);
  // One batch's bindings, as run() takes them.
  struct Batch {
    std::span<const InputBinding> inputs;
    std::span<const OutputBinding> outputs;
  };
  // Runs the batches of one step. A pipelined program runs its stages at once, a thread per
  // stage (as many as the engine's workers): in phase t stage s runs batch t - s, then the
  // stages' IPU-Link copies run, the last stage's first, so that no batch overwrites the values
  // a later stage has not taken yet. Other programs run the batches one after another.
  Status runBatches(std::span<const Batch> batches, RunTimes* times = nullptr);
  // Inputs in the order of the executable's Input streams; returns the Output streams in order.
  Expected<std::vector<ops::RtValue>> run(std::vector<ops::RtValue> inputs);
  // The same for models whose inputs and outputs are all tensors.
  Expected<std::vector<Tensor>> runTensors(const std::vector<const Tensor*>& inputs);

  // Estimated cycles of one main-program run on the target (the cost model is static).
  const CycleEstimate& estimate() const { return estimate_; }
  // The same per main-program step, in program order.
  const std::vector<StepCycles>& stepCycles() const { return step_cycles_; }
  // The same per segment of a sharded program (empty for one IPU).
  const std::vector<SegmentCycles>& segmentCycles() const { return segment_cycles_; }
  // The schedule of a step of `batches` batches, by start. One IPU or sharded: the batches run
  // one after another, each through every stage. Pipelined: the stages advance in lockstep, each
  // phase as long as the slowest stage's steps and then the slowest stage's copies; stage s works
  // on batch t - s in phase t, so the batches take batches + stages - 1 phases (the pipeline
  // fills and drains).
  std::vector<StageSpan> schedule(uint64_t batches) const;
  // Estimated cycles of a step of `batches` batches: where its schedule ends.
  uint64_t cyclesForBatches(uint64_t batches) const;
  std::vector<const exec::HostStream*> streams(exec::HostStream::Role role) const;

  // Clears every tile and runs the load program again (after a fault, or to start afresh).
  Status reload(const std::map<std::string, Tensor>& weights);
  // Reads a Weight stream back from its tiles (the save program of a PopEF: what the device holds).
  Expected<Tensor> readWeight(const std::string& name) const;
  // Overwrites every tile's memory with pseudo-random bytes: the runtime's simulated memory fault.
  void scramble(uint64_t seed);

 private:
  // One run's bindings and host buffers, by stream index (null when unbound), and which bound
  // outputs the main program has already streamed out into the caller's memory.
  struct RunState {
    std::vector<ops::RtValue> buffers;  // one host buffer per stream
    std::vector<const InputBinding*> in;
    std::vector<const OutputBinding*> out;
    std::vector<bool> streamed_out;
  };
  explicit Engine(std::shared_ptr<const exec::Executable> exe);
  Status bind(std::span<const InputBinding> inputs, std::span<const OutputBinding> outputs, RunState& state) const;
  // Outputs the host computed (never streamed out) go to their destinations.
  Status finish(RunState& state);
  Status runProgram(const exec::Program& program, RunState& state, RunTimes* times = nullptr);
  // Steps [begin, end) of the main program; `split`: supersteps may use the worker pool.
  Status runSteps(uint32_t begin, uint32_t end, RunState& state, bool split);
  Status runStep(const exec::Step& step, RunState& state, bool split);
  Status runPipelined(std::span<const Batch> batches, RunTimes* times);
  Status runHostProgram(uint32_t index, RunState& state);
  const ops::RtValue& hostValue(uint32_t stream, RunState& state);
  void computeEstimate();
  // A pipelined program's slowest stage steps and slowest link copies, in cycles.
  std::pair<uint64_t, uint64_t> slowestStage() const;
  void runExchange(uint32_t index, bool split);
  void runComputeSet(uint32_t index, bool split);
  // The bytes of one scratch input slot (sim/scratch_inputs.h); a worker has kTogether of them.
  uint64_t scratchSlotBytes() const { return (plan_->scratch_field_bytes + 63) / 64 * 64; }
  // Vertices of a run that runs together (VertexRun::together) given to runVertices at once: eight
  // of an STFT's two-output blocks keep 16 sums in flight, eight of resnet20_cifar's conv blocks
  // share one set-up.
  static constexpr size_t kTogether = 8;
  // How a superstep uses the workers. The estimate names the candidates (enough work on the
  // IPU); the first run of each candidate runs inline (Cold: its first touch of the tiles' pages
  // and cold caches say nothing of its cost; deciding there left fastestdet 0.93x and yolox_nano
  // 1.27x as fast on 2 threads, now 1.55x and 1.74x), the second inline and timed, and from then
  // on it splits only if that took at least kParallelNs: a hand-over to spinning workers costs
  // well under a microsecond, but the split of a few microseconds of work does not pay for the
  // cache misses.
  enum class Split : uint8_t { Inline, Cold, Untimed, Parallel };
  static constexpr uint64_t kParallelNs = 20000;
  template <class Work>
  void runSuperstep(Split& how, bool split, const Work& work);

  std::shared_ptr<const exec::Executable> shared_exe_;
  const exec::Executable& exe_;  // *shared_exe_
  TileArena tiles_;
  std::shared_ptr<const ExecutionPlan> plan_;
  std::vector<ir::Model> host_models_;  // the imported host programs
  std::vector<std::map<std::string, int64_t>> host_opsets_;
  CycleEstimate estimate_;
  std::vector<StepCycles> step_cycles_;
  std::vector<SegmentCycles> segment_cycles_;
  std::vector<Split> exchange_split_, compute_split_;  // by exchange and compute set
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace poprt::sim
