#include "poprt/runtime/queue_manager.h"

#include "poprt/runtime/errors.h"

namespace poprt::runtime {

namespace {

std::string sizeMismatch(const DataDesc& d, size_t size) {
  return "anchor '" + d.name + "' takes " + std::to_string(d.size_in_bytes) + " bytes, got " + std::to_string(size);
}

}  // namespace

TensorQueue::TensorQueue(DataDesc desc, unsigned replica, size_t capacity)
    : desc_(std::move(desc)), replica_(replica), ring_(capacity) {}

bool InputQueue::enqueue(const void* data, size_t size, Completion done, std::chrono::nanoseconds timeout) {
  if (desc().fixedSize() && size != desc().size_in_bytes) throw ApplicationError("input " + sizeMismatch(desc(), size));
  if (!data && size > 0) throw ApplicationError("input '" + desc().name + "': null data");
  QueueItem item;
  item.input = data;
  item.size = size;
  item.done = std::move(done);
  return push(item, timeout);
}

bool OutputQueue::enqueue(void* data, size_t size, Completion done, std::chrono::nanoseconds timeout) {
  if (!desc().fixedSize())
    throw ApplicationError("output '" + desc().name +
                           "' has no fixed size (its shape is known only at run time, or it is a sequence, an "
                           "optional or a string tensor): let the runtime allocate it");
  if (size != desc().size_in_bytes) throw ApplicationError("output " + sizeMismatch(desc(), size));
  if (!data && size > 0) throw ApplicationError("output '" + desc().name + "': null data");
  QueueItem item;
  item.output = data;
  item.size = size;
  item.done = std::move(done);
  return push(item, timeout);
}

bool OutputQueue::enqueue(TensorMemory* into, Completion done, std::chrono::nanoseconds timeout) {
  if (!into) throw ApplicationError("output '" + desc().name + "': null TensorMemory");
  QueueItem item;
  item.allocate = into;
  item.done = std::move(done);
  return push(item, timeout);
}

QueueManager::QueueManager(const std::vector<DataDesc>& inputs, const std::vector<DataDesc>& outputs, unsigned replicas,
                           size_t ring_size)
    : num_inputs_(inputs.size()), num_outputs_(outputs.size()), replicas_(replicas), ring_size_(ring_size) {
  if (ring_size == 0 || ring_size > 4096)
    throw ApplicationError("ring buffer size must be in 1..4096, got " + std::to_string(ring_size));
  for (unsigned r = 0; r < replicas; ++r) {
    for (const auto& d : inputs) inputs_.push_back(std::make_unique<InputQueue>(d, r, ring_size));
    for (const auto& d : outputs) outputs_.push_back(std::make_unique<OutputQueue>(d, r, ring_size));
  }
}

QueueManager::~QueueManager() = default;

namespace {

template <class Queue>
Queue& find(std::vector<std::unique_ptr<Queue>>& queues, size_t per_replica, unsigned replicas, const std::string& anchor,
            unsigned replica, const char* what) {
  if (replica >= replicas)
    throw ApplicationError("replica " + std::to_string(replica) + " does not exist (the model has " + std::to_string(replicas) +
                           ")");
  std::string names;
  for (size_t i = 0; i < per_replica; ++i) {
    Queue& q = *queues[replica * per_replica + i];
    if (q.desc().name == anchor) return q;
    names += (names.empty() ? "" : ", ") + q.desc().name;
  }
  throw ApplicationError(std::string("the model has no ") + what + " named '" + anchor + "' (" + what + "s: " + names + ")");
}

}  // namespace

InputQueue& QueueManager::inputQueue(const std::string& anchor, unsigned replica) {
  return find(inputs_, num_inputs_, replicas_, anchor, replica, "input");
}

OutputQueue& QueueManager::outputQueue(const std::string& anchor, unsigned replica) {
  return find(outputs_, num_outputs_, replicas_, anchor, replica, "output");
}

bool QueueManager::waitForRoom(unsigned replica, std::chrono::nanoseconds timeout) {
  // Room only grows while the (single) producer waits, so one pass over the queues suffices.
  const bool forever = timeout == kWaitForever;
  const auto deadline = forever ? std::chrono::steady_clock::time_point::max() : std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return forever ? kWaitForever
                   : std::max(std::chrono::nanoseconds::zero(),
                              std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now()));
  };
  for (size_t i = 0; i < num_inputs_; ++i)
    if (!inputQueue(i, replica).waitForRoom(left())) return false;
  for (size_t i = 0; i < num_outputs_; ++i)
    if (!outputQueue(i, replica).waitForRoom(left())) return false;
  return true;
}

void QueueManager::close() {
  for (auto& q : inputs_) q->ring_.close();
  for (auto& q : outputs_) q->ring_.close();
}

}  // namespace poprt::runtime
