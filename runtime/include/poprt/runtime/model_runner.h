// ModelRunner: the high-level API. It attaches a simulated device for a PopEF, loads it, and runs
// one device thread per replica that keeps taking requests from the replica's queues, so while
// the device runs request N the caller prepares and enqueues request N+1. execute() blocks until
// the outputs are there; executeAsync() returns a future at once.
//
// Inputs always stay in the caller's memory until the request completes. Outputs go either to
// memory the caller provides (OutputMemoryView) or to memory the runner allocates (OutputMemory).
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "device_manager.h"
#include "export.h"
#include "session.h"
#include "tensor_memory.h"

namespace poprt::runtime {

struct ModelRunnerConfig {
  // With batches_per_step > 1: how long a step waits for each further request before it runs
  // with the requests it has.
  uint64_t timeout_ns = 5'000'000;
  // How long a request may wait for room in its replica's full queues before it fails with a
  // RecoverableRuntimeError (RecoveryAction::Retry); 0 waits as long as it takes.
  uint64_t request_timeout_ns = 0;
  // Several threads may call execute/executeAsync at once (their enqueues are serialised per
  // replica). Without it, the caller promises a single calling thread.
  bool thread_safe = true;
  // Check each request's anchor names and sizes and throw an ApplicationError naming the anchor.
  // Without it only the sizes are checked, tersely (so a wrong buffer never touches other memory).
  bool validate_io = true;
  // >= 0: every anchor has a batch along this dim (all dims before it are 1), and a request may
  // hold any number of rows along it: it is split into batches of the compiled size, spread over
  // the replicas, the last one padded with zeros. -1: a request is exactly one batch.
  int batching_dim = -1;
  // Slots of each anchor's ring buffer per replica: how many requests a replica holds queued.
  size_t ring_buffer_size = 4;
  // How long to wait for a free device; then RecoverableRuntimeError (Retry).
  uint64_t device_wait_ns = 0;
  // Null: the process-wide simulated system (DeviceManager::processDefault()).
  std::shared_ptr<DeviceManager> device_manager;
  // Bound on simulated tile memory (SessionConfig::memory_limit_bytes).
  uint64_t memory_limit_bytes = 0;
};

class POPRT_RUNTIME_API ModelRunner {
 public:
  // Reads the PopEF, attaches a device, runs the load programs and starts the device threads.
  explicit ModelRunner(const std::string& popef_path, ModelRunnerConfig config = {});
  // Finishes every request already submitted, then detaches the device.
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  const std::vector<DataDesc>& getExecuteInputs() const;
  const std::vector<DataDesc>& getExecuteOutputs() const;

  // `replica` < 0 picks the next replica in service (round robin). Every input must be given;
  // with an OutputMemoryView every output too. Errors of a request that could not even be
  // submitted (wrong names or sizes) are thrown as ApplicationError; errors while it runs come
  // out of the future (or are thrown by execute).
  void execute(const InputMemoryView& inputs, const OutputMemoryView& outputs, int replica = -1);
  OutputMemory execute(const InputMemoryView& inputs, int replica = -1);
  std::future<void> executeAsync(const InputMemoryView& inputs, const OutputMemoryView& outputs, int replica = -1);
  std::future<OutputMemory> executeAsync(const InputMemoryView& inputs, int replica = -1);

  unsigned replicationFactor() const;
  unsigned batchesPerStep() const;
  bool replicaOnline(unsigned replica) const;

  Session& session();
  const Session& session() const;
  IpuEstimate estimate() const;
  RunTimings timings() const;
  void resetTimings();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poprt::runtime
