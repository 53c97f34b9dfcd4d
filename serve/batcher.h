// popef-serve's dynamic batcher. Requests for a model queue here; a worker per replica takes the
// oldest one and the ones after it while their rows fit in the compiled batch, waiting for more
// up to max_queue_delay after the oldest arrived, places their rows side by side (zero rows pad
// a short batch), runs the batch through ModelRunner and hands each request its own rows of the
// outputs. A request with the full batch runs alone, from its own memory.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "poprt/runtime/model_runner.h"
#include "serve/layout.h"
#include "serve/metrics.h"

namespace poprt::serve {

// One request's tensors as the model takes them.
struct ServeRequest {
  int64_t rows = 1;                          // along the batch axis (1 when the model is not batchable)
  std::vector<std::vector<uint8_t>> inputs;  // per model input, in model order: layout.bytesFor(input, rows)
};

struct ServeOutput {
  Shape shape;
  std::vector<uint8_t> bytes;
};

// A request's outputs (per model output, in model order), or its error and HTTP status.
struct ServeResult {
  int status = 200;
  std::string error;
  std::vector<ServeOutput> outputs;
};

struct BatcherOptions {
  bool dynamic_batching = true;                  // false: every request runs alone (padded)
  std::chrono::microseconds max_queue_delay{0};  // how long the oldest request waits for others
};

class Batcher {
 public:
  // Starts one worker per replica of `runner`. `runner`, `layout` and `metrics` outlive it.
  Batcher(runtime::ModelRunner& runner, const ModelLayout& layout, BatcherOptions options, ModelMetrics& metrics);
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // `request` must fit the layout (1..batch rows, every input's bytes): the HTTP layer checks.
  std::future<ServeResult> submit(ServeRequest request);
  // Runs every request already queued, then stops the workers; later submits fail with 503.
  void stop();

 private:
  struct Pending {
    ServeRequest request;
    std::chrono::steady_clock::time_point arrived;
    std::promise<ServeResult> done;
  };
  using Group = std::vector<std::unique_ptr<Pending>>;

  void work();
  Group nextGroup();
  void run(Group& group);

  runtime::ModelRunner& runner_;
  const ModelLayout& layout_;
  const BatcherOptions options_;
  ModelMetrics& metrics_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Pending>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace poprt::serve
