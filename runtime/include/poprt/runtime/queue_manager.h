// Queues of tensor data between the caller and the device: one single-producer single-consumer
// ring buffer per input and output anchor and per replica. An item is a pointer to memory the
// caller owns (the device reads an input from it, or writes an output into it, in place) and a
// completion called once the device is done with that memory. Each request takes the next item
// of every queue of its replica, so the caller enqueues one item per anchor, in the same order,
// for each request. One thread at a time may enqueue into a replica's queues.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "export.h"
#include "ring_buffer.h"
#include "tensor_memory.h"

namespace poprt::runtime {

// Called on the device's thread once the device no longer needs the item's memory; `error` is
// null on success, else the request's error (see errors.h). It must not throw or block for long.
using Completion = std::function<void(std::exception_ptr error)>;

struct QueueItem {
  const void* input = nullptr;       // an input's data
  void* output = nullptr;            // an output's destination
  size_t size = 0;                   // bytes at input / output
  TensorMemory* allocate = nullptr;  // an output the runtime allocates (any output kind)
  Completion done;
};

class Session;

// The queue of one anchor on one replica.
class POPRT_RUNTIME_API TensorQueue {
 public:
  TensorQueue(DataDesc desc, unsigned replica, size_t capacity);
  const DataDesc& desc() const { return desc_; }
  unsigned replica() const { return replica_; }
  size_t size() const { return ring_.size(); }
  size_t capacity() const { return ring_.capacity(); }
  bool closed() const { return ring_.closed(); }
  // Waits up to `timeout` for a free slot; false on timeout or once the queue is closed.
  bool waitForRoom(std::chrono::nanoseconds timeout) { return ring_.waitForRoom(timeout); }

 protected:
  bool push(QueueItem& item, std::chrono::nanoseconds timeout) { return ring_.push(item, timeout); }

 private:
  friend class Session;
  friend class QueueManager;
  DataDesc desc_;
  unsigned replica_;
  RingBuffer<QueueItem> ring_;
};

class POPRT_RUNTIME_API InputQueue : public TensorQueue {
 public:
  using TensorQueue::TensorQueue;
  // Queues `size` bytes at `data` (which must stay valid until `done` is called) for the next
  // request. False when the ring buffer stayed full for `timeout` (or the queue is closed);
  // ApplicationError when `size` does not fit the anchor.
  bool enqueue(const void* data, size_t size, Completion done = {}, std::chrono::nanoseconds timeout = kWaitForever);
};

class POPRT_RUNTIME_API OutputQueue : public TensorQueue {
 public:
  using TensorQueue::TensorQueue;
  // The device writes the next request's output into `size` bytes at `data` (a fixed-size anchor).
  bool enqueue(void* data, size_t size, Completion done = {}, std::chrono::nanoseconds timeout = kWaitForever);
  // The runtime allocates the next request's output into `*into` (any anchor; the only way for
  // outputs whose size is known only at run time).
  bool enqueue(TensorMemory* into, Completion done = {}, std::chrono::nanoseconds timeout = kWaitForever);
};

class POPRT_RUNTIME_API QueueManager {
 public:
  QueueManager(const std::vector<DataDesc>& inputs, const std::vector<DataDesc>& outputs, unsigned replicas, size_t ring_size);
  ~QueueManager();

  // ApplicationError for an unknown anchor name or replica (the message lists the valid ones).
  InputQueue& inputQueue(const std::string& anchor, unsigned replica = 0);
  OutputQueue& outputQueue(const std::string& anchor, unsigned replica = 0);
  // By position in the session's input / output lists.
  InputQueue& inputQueue(size_t index, unsigned replica) { return *inputs_[replica * num_inputs_ + index]; }
  OutputQueue& outputQueue(size_t index, unsigned replica) { return *outputs_[replica * num_outputs_ + index]; }
  size_t numInputs() const { return num_inputs_; }
  size_t numOutputs() const { return num_outputs_; }
  unsigned replicas() const { return replicas_; }
  size_t ringSize() const { return ring_size_; }

  // Waits up to `timeout` until every queue of `replica` has a free slot, so a whole request can
  // be enqueued without blocking half-way. False on timeout or once closed.
  bool waitForRoom(unsigned replica, std::chrono::nanoseconds timeout);
  // Closes every queue: waiting producers give up, later enqueues fail, and the device finishes
  // the requests already queued, then stops.
  void close();

 private:
  size_t num_inputs_, num_outputs_;
  unsigned replicas_;
  size_t ring_size_;
  std::vector<std::unique_ptr<InputQueue>> inputs_;  // replica-major
  std::vector<std::unique_ptr<OutputQueue>> outputs_;
};

}  // namespace poprt::runtime
