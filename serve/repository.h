// The models a server serves: given one by one (--model NAME=FILE, version 1) or found in a model
// repository laid out as Triton's (--model_repository DIR: DIR/<name>/<version>/model.popef, the
// highest numbered version served, DIR/<name>/config.pbtxt optional). Repository models are loaded
// at start-up (--model_control_mode none), on request (explicit: load and unload over HTTP and
// gRPC) or as the directory changes (poll). A load builds the new model before it replaces the old
// one, so a load that fails leaves what was served as it was and says why in the index; a model
// still being copied in fails its PopEF checks and is tried again at the next poll. Lookups hand
// out shared ownership: a model unloaded or replaced finishes the requests it holds.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/support/status.h"
#include "serve/batcher.h"
#include "serve/metrics.h"
#include "serve/model.h"

namespace poprt::serve {

enum class ControlMode { None, Explicit, Poll };

// A line of the repository index (Triton's): a model, the version served or last tried, its state
// (READY, UNAVAILABLE, or "" for a model in the repository never loaded) and why it is not ready.
struct IndexEntry {
  std::string name, version, state, reason;
};

class ModelRepository {
 public:
  ModelRepository(ServerMetrics& metrics, BatcherOptions batching) : metrics_(metrics), batching_(batching) {}
  ~ModelRepository();

  // --model NAME=FILE: served as version 1, never unloaded.
  Status addFile(const std::string& name, const std::string& file);
  // --model_repository DIR with its control mode. None and Poll load every model in it now (a model
  // that fails is reported in the index and is not served); Explicit loads `initial` only.
  Status setRepository(const std::filesystem::path& dir, ControlMode mode, const std::vector<std::string>& initial);

  ControlMode mode() const { return mode_; }
  bool hasRepository() const { return !dir_.empty(); }

  // The model served as `name`, or null.
  std::shared_ptr<ServedModel> find(const std::string& name) const;
  std::vector<std::shared_ptr<ServedModel>> served() const;
  // Every model in service is ready (true while none is: the server can take loads and requests).
  bool ready() const;
  std::vector<IndexEntry> index() const;

  // Loads (or reloads) the highest version of repository model `name`. Errors, as the index's
  // reason: no such model, no version with a model.popef, a config.pbtxt that does not fit.
  Status load(const std::string& name);
  // Stops serving repository model `name` (requests in flight finish).
  Status unload(const std::string& name);
  // Poll mode: loads what is new or changed on disk, unloads what was removed.
  void poll();
  // Drops every model: each batcher runs what it holds, then its runner detaches the device.
  void clear();

 private:
  struct Entry {
    std::shared_ptr<ServedModel> model;  // null: not served
    bool from_file = false;              // --model: not the repository's to unload
    std::string version, state, reason;
    std::string signature;         // the served version's file sizes and times, to see a changed model
    std::string failed_signature;  // those of the last load that failed
  };
  // The repository's model names: its subdirectories. `complete` (when given): the scan saw the
  // whole directory.
  std::vector<std::string> onDisk(bool* complete = nullptr) const;

  ServerMetrics& metrics_;
  BatcherOptions batching_;
  std::filesystem::path dir_;
  ControlMode mode_ = ControlMode::None;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::mutex load_mutex_;  // one load or unload at a time (a load runs outside mutex_)
};

}  // namespace poprt::serve
