// A PopEF loaded onto a simulated device: one simulated IPU group per replica, each with its own
// tile memories. The load program runs once per replica (weights to tiles), the main program once
// per batch (inputs from the queues, outputs into them), the save program on demand (the weights
// as the device holds them). Replicas are independent and may run on different threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device_manager.h"
#include "export.h"
#include "queue_manager.h"
#include "tensor_memory.h"

namespace poprt::runtime {

struct SessionConfig {
  // With batches_per_step > 1: how long a step waits for each further batch before it ends with
  // the batches it has (a real IPU would run the rest of the step on padding).
  std::chrono::nanoseconds step_fill_timeout = std::chrono::milliseconds(5);
  // Bound on the simulated tile memory of all replicas together; 0: POPRT_SIM_MEMORY_LIMIT bytes,
  // or 16 GiB when unset. A PopEF that needs more is an ApplicationError, not an allocation.
  uint64_t memory_limit_bytes = 0;
};

// The static cost model's estimate of one run of the main program on a real IPU (one batch),
// and of a step of batches_per_step batches (a pipelined program's stages overlap on them).
struct IpuEstimate {
  uint64_t cycles = 0, compute_cycles = 0, exchange_cycles = 0, sync_cycles = 0;
  double clock_hz = 0;
  uint64_t step_cycles = 0;
  unsigned batches_per_step = 1;
  unsigned num_ipus = 1;  // per replica
  unsigned stages = 1;    // segments of a program sharded over IPUs, one after another or pipelined
  bool pipelined = false;
  double seconds() const { return clock_hz > 0 ? static_cast<double>(cycles) / clock_hz : 0; }
  double stepSeconds() const { return clock_hz > 0 ? static_cast<double>(step_cycles) / clock_hz : 0; }
};

// Host wall time spent running batches, summed over the batches since the last reset.
struct RunTimings {
  uint64_t batches = 0;     // main-program runs that completed
  uint64_t failed = 0;      // batches whose request failed
  double stream_in_s = 0;   // host-to-device stream copies
  double compute_s = 0;     // exchanges, compute sets, host calls
  double stream_out_s = 0;  // device-to-host stream copies
};

// The result of one step.
struct StepResult {
  unsigned batches = 0;  // batches run (failed ones included)
  bool closed = false;   // the queues are closed and drained: the replica has nothing left to do
};

enum class FaultKind {
  Recoverable,    // the replica's memory is lost: its next batch fails (RecoveryAction::ReplicaReset)
                  // and the replica reloads its weights before it serves again
  Unrecoverable,  // the replica is lost: its next batch and every later one fail
};

class POPRT_RUNTIME_API Session {
 public:
  // Reads and checks the PopEF (untrusted input: every refusal is an ApplicationError naming the
  // file) and that `device` satisfies it. Nothing runs yet.
  Session(const std::string& popef_path, std::shared_ptr<Device> device, SessionConfig config = {});
  // The same with a device attached from `devices` for the PopEF's requirements (see
  // DeviceManager::getDevice for `wait` and the errors).
  Session(const std::string& popef_path, DeviceManager& devices, std::chrono::nanoseconds wait = {}, SessionConfig config = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The PopEF's requirements, to ask a DeviceManager for a device before making a Session.
  static DeviceRequirements requirements(const std::string& popef_path);

  const std::vector<DataDesc>& inputs() const;
  const std::vector<DataDesc>& outputs() const;
  unsigned replicationFactor() const;
  unsigned batchesPerStep() const;
  unsigned numIpus() const;  // per replica
  const std::string& ipuVersion() const;
  const std::string& targetName() const;
  // The options the PopEF records it was compiled with (precision, ipu_version, batch_size, ...).
  const std::map<std::string, std::string>& compileOptions() const;
  const Device& device() const;

  // Prepares every replica's tile memories and runs the load program on each. Once.
  void runLoadPrograms();
  // The queues the main programs read and write (ring_size slots per anchor and replica). Once.
  QueueManager& createQueueManager(size_t ring_size = 4);
  QueueManager& queueManager();

  // One step on `replica`: up to batches_per_step runs of the main program, each taking the next
  // item of every queue of the replica. Waits up to `wait` for the first batch's data; a request
  // that fails calls its items' completions with the error, and the step goes on.
  StepResult runMainPrograms(unsigned replica, std::chrono::nanoseconds wait = kWaitForever);
  // The save program: every weight as the replica's tiles hold it now.
  OutputMemory runSavePrograms(unsigned replica);

  // Simulates a device fault that `replica` meets at its next batch (the simulator has no
  // hardware faults of its own; this lets callers test their handling of runtime errors).
  void injectFault(unsigned replica, FaultKind kind);
  bool replicaOnline(unsigned replica) const;

  IpuEstimate estimate() const;
  RunTimings timings() const;
  void resetTimings();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poprt::runtime
