#include "serve/batcher.h"

#include "poprt/runtime/errors.h"

namespace poprt::serve {
namespace {

using Clock = std::chrono::steady_clock;

ServeResult failed(int status, std::string message) {
  ServeResult r;
  r.status = status;
  r.error = std::move(message);
  return r;
}

// A failed batch as HTTP: the request's data was refused (400), retry later (503), or the
// device failed (500).
ServeResult failedBatch() {
  try {
    throw;
  } catch (const runtime::ApplicationError& e) {
    return failed(400, e.what());
  } catch (const runtime::RecoverableRuntimeError& e) { return failed(503, e.what()); } catch (const std::bad_alloc&) {
    return failed(500, "out of memory");
  } catch (const std::exception& e) { return failed(500, e.what()); }
}

}  // namespace

Batcher::Batcher(runtime::ModelRunner& runner, const ModelLayout& layout, BatcherOptions options, ModelMetrics& metrics)
    : runner_(runner), layout_(layout), options_(options), metrics_(metrics) {
  for (unsigned i = 0; i < runner.replicationFactor(); ++i) workers_.emplace_back([this] { work(); });
}

Batcher::~Batcher() { stop(); }

std::future<ServeResult> Batcher::submit(ServeRequest request) {
  auto p = std::make_unique<Pending>();
  p->request = std::move(request);
  p->arrived = Clock::now();
  std::future<ServeResult> f = p->done.get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      p->done.set_value(failed(503, "the server is shutting down"));
      return f;
    }
    queue_.push_back(std::move(p));
    ++metrics_.pending;
  }
  cv_.notify_all();  // a worker gathering a batch, or an idle one
  return f;
}

void Batcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
}

void Batcher::work() {
  for (;;) {
    Group group = nextGroup();
    if (group.empty()) return;  // stopping, nothing left
    run(group);
  }
}

Batcher::Group Batcher::nextGroup() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
  if (queue_.empty()) return {};
  Group group;
  int64_t rows = 0;
  const Clock::time_point deadline = queue_.front()->arrived + options_.max_queue_delay;
  for (;;) {
    // In arrival order, while the rows fit: a request that does not opens the next batch.
    while (!queue_.empty() && rows + queue_.front()->request.rows <= layout_.batch &&
           (options_.dynamic_batching || group.empty())) {
      rows += queue_.front()->request.rows;
      group.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    const bool closed = rows == layout_.batch || !queue_.empty() || !options_.dynamic_batching;
    if (closed || stopping_ || Clock::now() >= deadline) break;
    cv_.wait_until(lock, deadline);
  }
  return group;
}

void Batcher::run(Group& group) {
  const Clock::time_point start = Clock::now();
  metrics_.pending -= static_cast<int64_t>(group.size());
  int64_t rows = 0;
  for (const auto& p : group) {
    metrics_.queued(start - p->arrived);
    rows += p->request.rows;
  }
  // A full batch from one request is read in place; otherwise the rows go side by side into
  // zeroed batch buffers, so the padding rows are zeros.
  const bool alone = group.size() == 1 && rows == layout_.batch;
  runtime::InputMemoryView views;
  std::vector<std::vector<uint8_t>> batch_inputs;
  batch_inputs.reserve(layout_.inputs.size());
  for (size_t i = 0; i < layout_.inputs.size(); ++i) {
    const AnchorLayout& a = layout_.inputs[i];
    if (alone) {
      const auto& bytes = group[0]->request.inputs[i];
      views[a.desc.name] = {bytes.data(), bytes.size()};
      continue;
    }
    auto& buffer = batch_inputs.emplace_back(layout_.bytesFor(a, layout_.batch), 0);
    int64_t at = 0;
    for (const auto& p : group) {
      copyRowsIn(a, layout_.batch, p->request.inputs[i], p->request.rows, at, buffer);
      at += p->request.rows;
    }
    views[a.desc.name] = {buffer.data(), buffer.size()};
  }

  const Clock::time_point copied_in = Clock::now();
  runtime::OutputMemory outputs;
  try {
    outputs = runner_.execute(views);
  } catch (...) {
    const ServeResult error = failedBatch();
    for (auto& p : group) p->done.set_value(error);
    return;
  }
  const Clock::time_point ran = Clock::now();

  // The replies are handed over once the batch is recorded, so a client that reads the
  // statistics after its reply sees its batch in them.
  std::vector<ServeResult> results;
  results.reserve(group.size());
  int64_t at = 0;
  for (auto& p : group) {
    ServeResult r;
    for (const AnchorLayout& o : layout_.outputs) {
      runtime::TensorMemory& m = outputs.at(o.desc.name);
      ServeOutput& out = r.outputs.emplace_back();
      if (alone) {  // the whole output, with its actual shape
        out.shape = m.desc.shape;
        out.bytes = std::move(m.data);
        continue;
      }
      out.shape = layout_.shapeFor(o, p->request.rows);
      out.bytes.resize(layout_.bytesFor(o, p->request.rows));
      copyRowsOut(o, layout_.batch, m.data, at, p->request.rows, out.bytes);
    }
    at += p->request.rows;
    results.push_back(std::move(r));
  }
  metrics_.batchRun(rows, copied_in - start, ran - copied_in, Clock::now() - ran);
  for (size_t i = 0; i < group.size(); ++i) group[i]->done.set_value(std::move(results[i]));
}

}  // namespace poprt::serve
