#include "poprt/runtime/model_runner.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "lib/support/copy_bytes.h"
#include "poprt/runtime/errors.h"

namespace poprt::runtime {

namespace {

// One submitted request: its completions count down to zero, then the future is fulfilled. A
// request split into several batches (batching_dim) completes when the last of them does.
struct Request {
  std::atomic<size_t> pending{0};  // items still queued or running
  std::mutex mutex;
  std::exception_ptr error;                   // the first error of any of its batches
  std::vector<std::function<void()>> finish;  // copies of padded batches' rows back to the caller
  std::vector<std::vector<uint8_t>> scratch;  // padded batches
  OutputMemory outputs;                       // outputs the runner allocated
  bool owns_outputs = false;
  std::promise<void> done;
  std::promise<OutputMemory> done_with_outputs;

  void complete(std::exception_ptr e, size_t items = 1) {
    if (e) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = e;
    }
    if (pending.fetch_sub(items) != items) return;
    if (!error) {
      for (auto& f : finish) f();
    }
    if (owns_outputs) {
      if (error)
        done_with_outputs.set_exception(error);
      else
        done_with_outputs.set_value(std::move(outputs));
    } else {
      if (error)
        done.set_exception(error);
      else
        done.set_value();
    }
  }
};

// One batch of a request on one replica: where each anchor's data is.
struct Batch {
  std::vector<ConstTensorView> inputs;
  std::vector<std::pair<void*, TensorMemory*>> outputs;  // memory, or a TensorMemory to allocate into
};

}  // namespace

struct ModelRunner::Impl {
  ModelRunnerConfig config;
  std::unique_ptr<Session> session;
  QueueManager* queues = nullptr;
  std::vector<DataDesc> inputs, outputs;
  std::vector<std::thread> device_threads;
  std::vector<std::unique_ptr<std::mutex>> producer_mutex;  // per replica
  std::atomic<unsigned> next_replica{0};
  // batching_dim >= 0: rows per compiled batch and bytes per row of each anchor.
  int64_t batch_rows = 1;
  std::vector<size_t> in_row_bytes, out_row_bytes;

  unsigned replicas() const { return session->replicationFactor(); }

  void checkBatching() {
    const int dim = config.batching_dim;
    if (dim < 0) return;
    batch_rows = -1;
    auto check = [&](const DataDesc& d, std::vector<size_t>& row_bytes) {
      const std::string where = "batching_dim " + std::to_string(dim) + ": anchor '" + d.name + "'";
      if (!d.fixedSize()) throw ApplicationError(where + " has no fixed size");
      if (static_cast<int>(d.shape.size()) <= dim)
        throw ApplicationError(where + " has only " + std::to_string(d.shape.size()) + " dims");
      for (int i = 0; i < dim; ++i)
        if (d.shape[i] != 1) throw ApplicationError(where + ": the dims before it must be 1 so batches are contiguous");
      if (batch_rows < 0) batch_rows = d.shape[dim];
      if (d.shape[dim] != batch_rows || batch_rows == 0)
        throw ApplicationError(where + " has " + std::to_string(d.shape[dim]) + " rows along it, another anchor " +
                               std::to_string(batch_rows));
      row_bytes.push_back(d.size_in_bytes / static_cast<size_t>(batch_rows));
    };
    for (const auto& d : inputs) check(d, in_row_bytes);
    for (const auto& d : outputs) check(d, out_row_bytes);
    if (inputs.empty()) throw ApplicationError("batching_dim needs a model with inputs");
  }

  // The data of each input, by position; ApplicationError naming what is wrong.
  std::vector<ConstTensorView> inputViews(const InputMemoryView& view) const {
    std::vector<ConstTensorView> out;
    for (const auto& d : inputs) {
      auto it = view.find(d.name);
      if (it == view.end()) throw ApplicationError("input '" + d.name + "' was not given");
      if (!it->second.data && it->second.size > 0) throw ApplicationError("input '" + d.name + "': null data");
      out.push_back(it->second);
    }
    if (config.validate_io && view.size() != inputs.size()) {
      for (const auto& entry : view) {  // not a structured binding: clang 14 cannot capture those
        const std::string& name = entry.first;
        if (std::none_of(inputs.begin(), inputs.end(), [&](const DataDesc& d) { return d.name == name; }))
          throw ApplicationError("the model has no input named '" + name + "' (inputs: " + names(inputs) + ")");
      }
    }
    return out;
  }

  std::vector<TensorView> outputViews(const OutputMemoryView& view) const {
    std::vector<TensorView> out;
    for (const auto& d : outputs) {
      auto it = view.find(d.name);
      if (it == view.end()) throw ApplicationError("output '" + d.name + "' has no memory given");
      if (!d.fixedSize())
        throw ApplicationError("output '" + d.name + "' has no fixed size (" + d.dtype +
                               " with a shape known only at run time, or not a plain tensor): use execute without an "
                               "OutputMemoryView so the runner allocates it");
      if (!it->second.data && it->second.size > 0) throw ApplicationError("output '" + d.name + "': null data");
      out.push_back(it->second);
    }
    if (config.validate_io && view.size() != outputs.size()) {
      for (const auto& entry : view) {  // not a structured binding: clang 14 cannot capture those
        const std::string& name = entry.first;
        if (std::none_of(outputs.begin(), outputs.end(), [&](const DataDesc& d) { return d.name == name; }))
          throw ApplicationError("the model has no output named '" + name + "' (outputs: " + names(outputs) + ")");
      }
    }
    return out;
  }

  static std::string names(const std::vector<DataDesc>& descs) {
    std::string s;
    for (const auto& d : descs) s += (s.empty() ? "" : ", ") + d.name;
    return s;
  }

  static void checkSize(const char* what, const DataDesc& d, size_t got, size_t want) {
    if (got != want)
      throw ApplicationError(std::string(what) + " '" + d.name + "' (" + d.dtype + shapeText(d.shape) + ") takes " +
                             std::to_string(want) + " bytes, got " + std::to_string(got));
  }
  static std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
  }

  // Rows of a batched request (batching_dim), from its inputs; ApplicationError if they disagree.
  int64_t requestRows(const std::vector<ConstTensorView>& in) const {
    int64_t rows = -1;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const size_t rb = in_row_bytes[i];
      if (rb == 0 || in[i].size % rb != 0 || in[i].size == 0)
        throw ApplicationError("input '" + inputs[i].name + "': " + std::to_string(in[i].size) +
                               " bytes are not a positive number of rows of " + std::to_string(rb) +
                               " bytes along batching_dim " + std::to_string(config.batching_dim));
      const int64_t r = static_cast<int64_t>(in[i].size / rb);
      if (rows >= 0 && r != rows)
        throw ApplicationError("input '" + inputs[i].name + "' has " + std::to_string(r) + " rows, input '" + inputs[0].name +
                               "' " + std::to_string(rows));
      rows = r;
    }
    return rows;
  }

  // Splits a request into the batches the device runs (one without batching_dim).
  std::vector<Batch> plan(Request& req, const std::vector<ConstTensorView>& in, std::vector<TensorView>& out) {
    const size_t ni = inputs.size(), no = outputs.size();
    if (config.batching_dim < 0) {
      Batch b;
      for (size_t i = 0; i < ni; ++i) {
        if (inputs[i].format == DataFormat::Raw) checkSize("input", inputs[i], in[i].size, inputs[i].size_in_bytes);
        b.inputs.push_back(in[i]);
      }
      for (size_t o = 0; o < no; ++o) {
        if (req.owns_outputs && !outputs[o].fixedSize()) {
          b.outputs.emplace_back(nullptr, &req.outputs[outputs[o].name]);
          continue;
        }
        checkSize("output", outputs[o], out[o].size, outputs[o].size_in_bytes);
        b.outputs.emplace_back(out[o].data, nullptr);
      }
      return {b};
    }
    const int64_t rows = requestRows(in);
    for (size_t o = 0; o < no; ++o) checkSize("output", outputs[o], out[o].size, out_row_bytes[o] * static_cast<size_t>(rows));
    std::vector<Batch> batches;
    for (int64_t first = 0; first < rows; first += batch_rows) {
      const int64_t n = std::min(batch_rows, rows - first);
      Batch b;
      for (size_t i = 0; i < ni; ++i) {
        const auto* src = static_cast<const uint8_t*>(in[i].data) + first * in_row_bytes[i];
        if (n == batch_rows) {
          b.inputs.push_back({src, inputs[i].size_in_bytes});  // a whole batch: read in place
          continue;
        }
        auto& pad = req.scratch.emplace_back(inputs[i].size_in_bytes, 0);  // the last batch, padded with zeros
        copyBytes(pad.data(), src, static_cast<size_t>(n) * in_row_bytes[i]);
        b.inputs.push_back({pad.data(), pad.size()});
      }
      for (size_t o = 0; o < no; ++o) {
        auto* dst = static_cast<uint8_t*>(out[o].data) + first * out_row_bytes[o];
        if (n == batch_rows) {
          b.outputs.emplace_back(dst, nullptr);
          continue;
        }
        auto& pad = req.scratch.emplace_back(outputs[o].size_in_bytes, 0);
        const size_t bytes = static_cast<size_t>(n) * out_row_bytes[o];
        req.finish.push_back([dst, src = pad.data(), bytes] { copyBytes(dst, src, bytes); });
        b.outputs.emplace_back(pad.data(), nullptr);
      }
      batches.push_back(std::move(b));
    }
    return batches;
  }

  // The replica for the next batch: the one asked for, or the next one in service.
  unsigned pickReplica(int replica) {
    const unsigned n = replicas();
    if (replica >= 0) return static_cast<unsigned>(replica);
    for (unsigned tries = 0; tries < n; ++tries) {
      const unsigned r = next_replica.fetch_add(1) % n;
      if (session->replicaOnline(r)) return r;
    }
    return next_replica.fetch_add(1) % n;  // none in service: its device thread fails the batch
  }

  void enqueue(const std::shared_ptr<Request>& req, const Batch& b, unsigned r) {
    const size_t items = b.inputs.size() + b.outputs.size();
    auto done = [req](std::exception_ptr e) { req->complete(e); };
    std::unique_lock<std::mutex> lock(*producer_mutex[r], std::defer_lock);
    if (config.thread_safe) lock.lock();
    const auto timeout = config.request_timeout_ns ? std::chrono::nanoseconds(config.request_timeout_ns) : kWaitForever;
    // Room in every queue first, so a request is never left half-enqueued.
    if (!queues->waitForRoom(r, timeout)) {
      std::exception_ptr e =
          queues->outputQueue(0, r).closed()
              ? std::make_exception_ptr(ApplicationError("the model runner is stopping; the request was not run"))
              : std::make_exception_ptr(
                    RecoverableRuntimeError("the request waited " + std::to_string(config.request_timeout_ns / 1000000.0) +
                                                " ms for room in replica " + std::to_string(r) + "'s queues (ring_buffer_size " +
                                                std::to_string(config.ring_buffer_size) + "); submit it again",
                                            RecoveryAction::Retry));
      req->complete(e, items);
      return;
    }
    // Room is there, so these do not wait; only a close() racing with them can refuse an item.
    size_t refused = 0;
    for (size_t i = 0; i < b.inputs.size(); ++i)
      refused += !queues->inputQueue(i, r).enqueue(b.inputs[i].data, b.inputs[i].size, done);
    for (size_t o = 0; o < b.outputs.size(); ++o) {
      auto [mem, into] = b.outputs[o];
      refused += into ? !queues->outputQueue(o, r).enqueue(into, done)
                      : !queues->outputQueue(o, r).enqueue(mem, outputs[o].size_in_bytes, done);
    }
    if (refused)
      req->complete(std::make_exception_ptr(ApplicationError("the model runner is stopping; the request was not run")), refused);
  }

  // Validates and enqueues a request (whose future the caller took already).
  void submit(const std::shared_ptr<Request>& req, const InputMemoryView& in_view, const OutputMemoryView* out_view,
              int replica) {
    if (replica >= static_cast<int>(replicas()))
      throw ApplicationError("replica " + std::to_string(replica) + " does not exist (the model has " +
                             std::to_string(replicas()) + ")");
    std::vector<ConstTensorView> in = inputViews(in_view);
    std::vector<TensorView> out;
    if (out_view) {
      out = outputViews(*out_view);
    } else {
      // The runner allocates the outputs it can size now; the device allocates the others.
      const int64_t rows = config.batching_dim >= 0 ? requestRows(in) : batch_rows;
      for (const auto& d : outputs) {
        TensorMemory& m = req->outputs[d.name];
        m.desc = d;
        if (!d.fixedSize()) {
          out.push_back({});
          continue;
        }
        if (config.batching_dim >= 0) m.desc.shape[config.batching_dim] = rows;
        m.desc.size_in_bytes = d.size_in_bytes / static_cast<size_t>(batch_rows) * static_cast<size_t>(rows);
        m.data.resize(m.desc.size_in_bytes);
        out.push_back({m.data.data(), m.data.size()});
      }
    }
    std::vector<Batch> batches = plan(*req, in, out);
    req->pending = batches.size() * (inputs.size() + outputs.size());
    for (const Batch& b : batches) enqueue(req, b, pickReplica(replica));
  }
};

ModelRunner::ModelRunner(const std::string& popef_path, ModelRunnerConfig config) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.config = std::move(config);
  if (m.config.ring_buffer_size == 0) throw ApplicationError("ring_buffer_size must be at least 1");
  std::shared_ptr<DeviceManager> devices = m.config.device_manager ? m.config.device_manager : DeviceManager::processDefault();
  SessionConfig sc;
  sc.step_fill_timeout = std::chrono::nanoseconds(m.config.timeout_ns);
  sc.memory_limit_bytes = m.config.memory_limit_bytes;
  m.session = std::make_unique<Session>(popef_path, *devices, std::chrono::nanoseconds(m.config.device_wait_ns), sc);
  m.inputs = m.session->inputs();
  m.outputs = m.session->outputs();
  m.checkBatching();
  m.session->runLoadPrograms();
  m.queues = &m.session->createQueueManager(m.config.ring_buffer_size);
  for (unsigned r = 0; r < m.replicas(); ++r) m.producer_mutex.push_back(std::make_unique<std::mutex>());
  // One device thread per replica: replicas run in parallel, as separate IPUs would.
  for (unsigned r = 0; r < m.replicas(); ++r)
    m.device_threads.emplace_back([session = m.session.get(), r] {
      while (!session->runMainPrograms(r).closed) {}
    });
}

ModelRunner::~ModelRunner() {
  impl_->queues->close();  // the device threads finish what is queued, then stop
  for (auto& t : impl_->device_threads) t.join();
}

const std::vector<DataDesc>& ModelRunner::getExecuteInputs() const { return impl_->inputs; }
const std::vector<DataDesc>& ModelRunner::getExecuteOutputs() const { return impl_->outputs; }

// The future is taken before the request is queued: the device may complete it at once.
std::future<void> ModelRunner::executeAsync(const InputMemoryView& inputs, const OutputMemoryView& outputs, int replica) {
  auto req = std::make_shared<Request>();
  std::future<void> future = req->done.get_future();
  impl_->submit(req, inputs, &outputs, replica);
  return future;
}

std::future<OutputMemory> ModelRunner::executeAsync(const InputMemoryView& inputs, int replica) {
  auto req = std::make_shared<Request>();
  req->owns_outputs = true;
  std::future<OutputMemory> future = req->done_with_outputs.get_future();
  impl_->submit(req, inputs, nullptr, replica);
  return future;
}

void ModelRunner::execute(const InputMemoryView& inputs, const OutputMemoryView& outputs, int replica) {
  executeAsync(inputs, outputs, replica).get();
}

OutputMemory ModelRunner::execute(const InputMemoryView& inputs, int replica) { return executeAsync(inputs, replica).get(); }

unsigned ModelRunner::replicationFactor() const { return impl_->replicas(); }
unsigned ModelRunner::batchesPerStep() const { return impl_->session->batchesPerStep(); }
bool ModelRunner::replicaOnline(unsigned replica) const { return impl_->session->replicaOnline(replica); }
Session& ModelRunner::session() { return *impl_->session; }
const Session& ModelRunner::session() const { return *impl_->session; }
IpuEstimate ModelRunner::estimate() const { return impl_->session->estimate(); }
RunTimings ModelRunner::timings() const { return impl_->session->timings(); }
void ModelRunner::resetTimings() { impl_->session->resetTimings(); }

}  // namespace poprt::runtime
