#include "poprt/runtime/session.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "poprt/runtime/errors.h"
#include "runtime/host_value.h"
#include "sim/engine.h"
#include "sim/verify_popef.h"

namespace poprt::runtime {

namespace {

using Role = exec::HostStream::Role;

constexpr uint64_t kDefaultMemoryLimit = uint64_t{16} << 30;

uint64_t memoryLimit(uint64_t configured) {
  if (configured) return configured;
  const char* env = std::getenv("POPRT_SIM_MEMORY_LIMIT");
  if (!env || !*env) return kDefaultMemoryLimit;
  char* end = nullptr;
  unsigned long long v = std::strtoull(env, &end, 10);
  if (end == env || *end != '\0' || v == 0)
    throw ApplicationError("POPRT_SIM_MEMORY_LIMIT: expected a number of bytes, got '" + std::string(env) + "'");
  return v;
}

DeviceRequirements requirementsOf(const popef::Metadata& md) {
  return {md.ipu_version, static_cast<unsigned>(md.num_ipus), static_cast<unsigned>(md.replication_factor)};
}

sim::VerifiedPopef readModel(const std::string& path) {
  auto model = sim::readVerifiedPopef(path);
  if (!model.ok()) throw ApplicationError(model.error().message());
  return std::move(model).value();
}

// One replica: its own simulated IPUs (an Engine with its own tile memories).
struct Replica {
  std::mutex mutex;  // one batch, save or fault injection at a time
  std::unique_ptr<sim::Engine> engine;
  std::atomic<bool> online{true};
  std::optional<FaultKind> fault;  // met at the next batch
  uint64_t faults = 0;
};

}  // namespace

struct Session::Impl {
  std::string path;
  std::shared_ptr<Device> device;
  SessionConfig config;
  sim::VerifiedPopef model;                     // its executable moves to `exe`
  std::shared_ptr<const exec::Executable> exe;  // shared by the replicas' engines
  std::string target_name;
  std::vector<DataDesc> inputs, outputs;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::unique_ptr<QueueManager> queues;
  mutable std::mutex timings_mutex;
  RunTimings timings;

  void init(std::shared_ptr<Device> dev) {
    const popef::Metadata& md = model.metadata;
    if (!dev) throw ApplicationError(path + ": no device given");
    const DeviceRequirements req = requirementsOf(md);
    const DeviceInfo& info = dev->info();
    if (info.ipu_version != req.ipu_version || info.num_ipus < req.totalIpus())
      throw ApplicationError(path + ": needs " + std::to_string(req.totalIpus()) + " " + req.ipu_version + " IPU(s), device " +
                             std::to_string(info.id) + " has " + std::to_string(info.num_ipus) + " " + info.ipu_version);
    device = std::move(dev);
    exe = std::make_shared<const exec::Executable>(std::move(model.executable));
    target_name = exe->target.name;
    for (const auto& s : exe->streams) {
      if (s.role == Role::Input) inputs.push_back(describeStream(s));
      if (s.role == Role::Output) outputs.push_back(describeStream(s));
    }
    if (outputs.empty()) throw ApplicationError(path + ": the model has no outputs");
    // Every replica has its own tile memories and host programs: bound them before anything is
    // allocated (the executable itself is shared).
    uint64_t per_replica = 0;
    for (uint64_t b : exe->tile_bytes) per_replica += b;
    for (const auto& hp : exe->host_programs) per_replica += hp.onnx.size();
    const uint64_t limit = memoryLimit(config.memory_limit_bytes);
    if (per_replica > limit / static_cast<uint64_t>(md.replication_factor))
      throw ApplicationError(path + ": " + std::to_string(md.replication_factor) + " replica(s) need " +
                             std::to_string(per_replica / (1 << 20)) +
                             " MiB of simulated device memory each (tiles and host programs), more than the " +
                             std::to_string(limit >> 20) + " MiB limit (POPRT_SIM_MEMORY_LIMIT)");
  }

  Replica& replica(unsigned r) {
    if (replicas.empty()) throw ApplicationError(path + ": run the load programs first");
    if (r >= replicas.size())
      throw ApplicationError("replica " + std::to_string(r) + " does not exist (the model has " +
                             std::to_string(replicas.size()) + ")");
    return *replicas[r];
  }

  // Takes the next request's items (every input, then every output) of replica r's queues.
  // nullopt when nothing came within `wait`; `closed` is set once the queues are closed and drained.
  std::optional<std::vector<QueueItem>> popRequest(unsigned r, std::chrono::nanoseconds wait, bool& closed) {
    std::vector<TensorQueue*> order;
    for (size_t i = 0; i < inputs.size(); ++i) order.push_back(&queues->inputQueue(i, r));
    for (size_t i = 0; i < outputs.size(); ++i) order.push_back(&queues->outputQueue(i, r));
    std::vector<QueueItem> items;
    for (size_t i = 0; i < order.size(); ++i) {
      // The first item decides whether a request is there; the others follow it closely.
      std::optional<QueueItem> item = order[i]->ring_.pop(i == 0 ? wait : kWaitForever);
      if (item) {
        items.push_back(std::move(*item));
        continue;
      }
      closed = order[i]->ring_.closed() && order[i]->ring_.empty();
      if (i == 0) return std::nullopt;
      // Closed half-way through a request: it can never complete.
      auto error = std::make_exception_ptr(
          ApplicationError("request incomplete: anchor '" + order[i]->desc().name + "' had no data when the queues closed"));
      for (auto& it : items)
        if (it.done) it.done(error);
      return std::nullopt;
    }
    return items;
  }

  // One batch's bindings to its request's items, and the host values behind them.
  struct BatchBindings {
    std::vector<sim::InputBinding> in;
    std::vector<sim::OutputBinding> out;
    std::vector<ops::RtValue> in_values, out_values;
  };

  // Runs a step's batches (one, unless the program is pipelined) on the replica's engine; the
  // requests' error, or null.
  std::exception_ptr execute(unsigned r, Replica& rep, std::vector<std::vector<QueueItem>*>& step, sim::RunTimes& times) {
    std::vector<BatchBindings> bound(step.size());
    std::vector<sim::Engine::Batch> batches;
    for (size_t b = 0; b < step.size(); ++b) {
      if (auto error = bind(*step[b], bound[b])) return error;
      batches.push_back({bound[b].in, bound[b].out});
    }
    Status st = rep.engine->runBatches(batches, &times);
    if (!st.ok()) return std::make_exception_ptr(ApplicationError("replica " + std::to_string(r) + ": " + st.error().message()));
    for (size_t b = 0; b < step.size(); ++b)
      if (auto error = collect(r, *step[b], bound[b])) return error;
    return nullptr;
  }

  std::exception_ptr bind(std::vector<QueueItem>& items, BatchBindings& bound) {
    const size_t ni = inputs.size(), no = outputs.size();
    std::vector<sim::InputBinding>& in = bound.in;
    std::vector<ops::RtValue>& in_values = bound.in_values;
    in.resize(ni);
    in_values.resize(ni);
    bound.out_values.resize(no);
    for (size_t i = 0; i < ni; ++i) {
      const QueueItem& item = items[i];
      std::span<const uint8_t> bytes(static_cast<const uint8_t*>(item.input), item.size);
      if (inputs[i].format == DataFormat::Raw) {
        in[i].bytes = bytes;
        continue;
      }
      auto v = decodeValue(inputs[i], bytes, "input '" + inputs[i].name + "'");
      if (!v.ok()) return std::make_exception_ptr(ApplicationError(v.error().message()));
      in_values[i] = std::move(v).value();
      in[i].value = &in_values[i];
    }
    std::vector<sim::OutputBinding>& out = bound.out;
    out.resize(no);
    for (size_t o = 0; o < no; ++o) {
      QueueItem& item = items[ni + o];
      if (!item.allocate) {
        out[o].bytes = {static_cast<uint8_t*>(item.output), item.size};
      } else if (outputs[o].fixedSize()) {  // allocated now, written in place by the stream copies
        item.allocate->desc = outputs[o];
        item.allocate->data.resize(outputs[o].size_in_bytes);
        out[o].bytes = item.allocate->data;
      } else {
        out[o].value = &bound.out_values[o];
      }
    }
    return nullptr;
  }

  // Outputs that came back as host values, encoded into the memory the runtime allocated.
  std::exception_ptr collect(unsigned r, std::vector<QueueItem>& items, BatchBindings& bound) {
    const size_t ni = inputs.size(), no = outputs.size();
    const std::vector<sim::OutputBinding>& out = bound.out;
    std::vector<ops::RtValue>& out_values = bound.out_values;
    for (size_t o = 0; o < no; ++o) {
      if (!out[o].value) continue;
      TensorMemory& m = *items[ni + o].allocate;
      m.desc = outputs[o];
      if (out_values[o].isTensor()) m.desc.shape = out_values[o].tensor.shape();
      auto bytes = encodeValue(m.desc, out_values[o]);
      if (!bytes.ok())
        return std::make_exception_ptr(ApplicationError("replica " + std::to_string(r) + ": " + bytes.error().message()));
      m.data = std::move(bytes).value();
      m.desc.size_in_bytes = m.data.size();
    }
    return nullptr;
  }

  // One step of batches with its fault handling; completes the requests' items.
  void runStep(unsigned r, std::vector<std::vector<QueueItem>*> step) {
    Replica& rep = *replicas[r];
    const std::string who = "replica " + std::to_string(r);
    std::exception_ptr error;
    sim::RunTimes times;
    {
      std::lock_guard<std::mutex> lock(rep.mutex);
      try {
        if (!rep.online) {
          error = std::make_exception_ptr(UnrecoverableRuntimeError(who + " is out of service after an earlier fault"));
        } else if (rep.fault) {
          const FaultKind kind = *rep.fault;
          rep.fault.reset();
          if (kind == FaultKind::Recoverable) {
            // The memory is gone: clear it and load the weights again before the next batch.
            rep.engine->scramble(++rep.faults);
            Status st = rep.engine->reload(model.weights);
            if (!st.ok()) throw std::runtime_error("reloading the weights failed: " + st.error().message());
            error = std::make_exception_ptr(
                RecoverableRuntimeError(who + " lost its memory (simulated fault); it was cleared and its weights reloaded",
                                        RecoveryAction::ReplicaReset));
          } else {
            rep.online = false;
            error = std::make_exception_ptr(UnrecoverableRuntimeError(who + " failed (simulated fault) and is out of service"));
          }
        } else {
          error = execute(r, rep, step, times);
        }
      } catch (const std::bad_alloc&) {
        rep.online = false;
        error = std::make_exception_ptr(UnrecoverableRuntimeError(who + " ran out of host memory and is out of service"));
      } catch (const std::exception& e) {  // an internal error of the simulator: this replica cannot be trusted
        rep.online = false;
        error = std::make_exception_ptr(UnrecoverableRuntimeError(who + ": " + e.what() + "; the replica is out of service"));
      }
    }
    {
      std::lock_guard<std::mutex> lock(timings_mutex);
      timings.batches += step.size();
      timings.failed += error != nullptr ? step.size() : 0;
      timings.stream_in_s += times.stream_in;
      timings.compute_s += times.compute;
      timings.stream_out_s += times.stream_out;
    }
    // Completions run without the replica's lock, so they may call back into the session.
    for (auto* items : step)
      for (auto& item : *items) {
        if (!item.done) continue;
        try {
          item.done(error);
        } catch (...) {  // a caller's completion must not take the device thread down
        }
      }
  }
};

Session::Session(const std::string& popef_path, std::shared_ptr<Device> device, SessionConfig config)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = popef_path;
  impl_->config = config;
  impl_->model = readModel(popef_path);
  impl_->init(std::move(device));
}

Session::Session(const std::string& popef_path, DeviceManager& devices, std::chrono::nanoseconds wait, SessionConfig config)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = popef_path;
  impl_->config = config;
  impl_->model = readModel(popef_path);
  std::shared_ptr<Device> device;
  try {
    device = devices.getDevice(requirementsOf(impl_->model.metadata), wait);
  } catch (const ApplicationError& e) { throw ApplicationError(popef_path + ": " + e.what()); }
  impl_->init(std::move(device));
}

Session::~Session() {
  if (impl_ && impl_->queues) impl_->queues->close();
}

DeviceRequirements Session::requirements(const std::string& popef_path) { return requirementsOf(readModel(popef_path).metadata); }

const std::vector<DataDesc>& Session::inputs() const { return impl_->inputs; }
const std::vector<DataDesc>& Session::outputs() const { return impl_->outputs; }
unsigned Session::replicationFactor() const { return static_cast<unsigned>(impl_->model.metadata.replication_factor); }
unsigned Session::batchesPerStep() const { return static_cast<unsigned>(impl_->model.metadata.batches_per_step); }
unsigned Session::numIpus() const { return static_cast<unsigned>(impl_->model.metadata.num_ipus); }
const std::string& Session::ipuVersion() const { return impl_->model.metadata.ipu_version; }
const std::string& Session::targetName() const { return impl_->target_name; }
const std::map<std::string, std::string>& Session::compileOptions() const { return impl_->model.metadata.compile_options; }
const Device& Session::device() const { return *impl_->device; }

void Session::runLoadPrograms() {
  if (!impl_->replicas.empty()) throw ApplicationError(impl_->path + ": the load programs have run already");
  std::vector<std::unique_ptr<Replica>> replicas;
  for (unsigned r = 0; r < replicationFactor(); ++r) {
    // The replicas run the same vertices: the first engine's resolution serves them all.
    auto engine =
        sim::Engine::create(impl_->exe, impl_->model.weights, 0, replicas.empty() ? nullptr : replicas.front()->engine->plan());
    if (!engine.ok()) throw ApplicationError(impl_->path + ": " + engine.error().message());
    replicas.push_back(std::make_unique<Replica>());
    replicas.back()->engine = std::move(engine).value();
  }
  impl_->replicas = std::move(replicas);
}

QueueManager& Session::createQueueManager(size_t ring_size) {
  if (impl_->queues) throw ApplicationError(impl_->path + ": the session has a queue manager already");
  impl_->queues = std::make_unique<QueueManager>(impl_->inputs, impl_->outputs, replicationFactor(), ring_size);
  return *impl_->queues;
}

QueueManager& Session::queueManager() {
  if (!impl_->queues) throw ApplicationError(impl_->path + ": create the queue manager first");
  return *impl_->queues;
}

StepResult Session::runMainPrograms(unsigned replica, std::chrono::nanoseconds wait) {
  impl_->replica(replica);
  queueManager();
  StepResult result;
  // A pipelined program takes the step's batches first and runs them through its stages at
  // once; otherwise each batch runs (and completes) as soon as it is taken.
  const bool pipelined = impl_->exe->strategy == exec::Strategy::Pipelined;
  std::vector<std::vector<QueueItem>> taken;
  taken.reserve(batchesPerStep());
  for (unsigned b = 0; b < batchesPerStep(); ++b) {
    auto items = impl_->popRequest(replica, b == 0 ? wait : impl_->config.step_fill_timeout, result.closed);
    if (!items) break;
    taken.push_back(std::move(*items));
    ++result.batches;
    if (!pipelined) {
      impl_->runStep(replica, {&taken.back()});
      taken.clear();
    }
  }
  if (!taken.empty()) {
    std::vector<std::vector<QueueItem>*> step;
    for (auto& items : taken) step.push_back(&items);
    impl_->runStep(replica, std::move(step));
  }
  return result;
}

OutputMemory Session::runSavePrograms(unsigned replica) {
  Replica& rep = impl_->replica(replica);
  std::lock_guard<std::mutex> lock(rep.mutex);
  OutputMemory saved;
  for (const auto& s : impl_->exe->streams) {
    if (s.role != Role::Weight) continue;
    auto t = rep.engine->readWeight(s.name);
    if (!t.ok()) throw ApplicationError(t.error().message());
    TensorMemory m;
    m.desc = describeStream(s);
    auto bytes = t->bytes();
    m.data.assign(bytes.begin(), bytes.end());
    saved.emplace(s.name, std::move(m));
  }
  return saved;
}

void Session::injectFault(unsigned replica, FaultKind kind) {
  Replica& rep = impl_->replica(replica);
  std::lock_guard<std::mutex> lock(rep.mutex);
  rep.fault = kind;
}

bool Session::replicaOnline(unsigned replica) const { return impl_->replica(replica).online; }

IpuEstimate Session::estimate() const {
  const sim::Engine& engine = *impl_->replica(0).engine;
  const sim::CycleEstimate& e = engine.estimate();
  const exec::Executable& exe = engine.executable();
  IpuEstimate est{e.total(), e.compute, e.exchange, e.sync, exe.target.clock_hz};
  est.batches_per_step = batchesPerStep();
  est.step_cycles = engine.cyclesForBatches(est.batches_per_step);
  est.num_ipus = exe.target.num_ipus;
  est.stages = std::max<unsigned>(1, static_cast<unsigned>(exe.segments.size()));
  est.pipelined = exe.strategy == exec::Strategy::Pipelined;
  return est;
}

RunTimings Session::timings() const {
  std::lock_guard<std::mutex> lock(impl_->timings_mutex);
  return impl_->timings;
}

void Session::resetTimings() {
  std::lock_guard<std::mutex> lock(impl_->timings_mutex);
  impl_->timings = {};
}

}  // namespace poprt::runtime
