// A model popef-serve serves: its ModelRunner (device attached, weights loaded), how its anchors
// batch, its batcher and its metrics.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "poprt/runtime/model_runner.h"
#include "serve/batcher.h"
#include "serve/layout.h"
#include "serve/metrics.h"
#include "serve/model_id.h"

namespace poprt::serve {

class ServedModel {
 public:
  // Loads `popef` as `id`. The batch axis is the PopEF's compile option batch_axis (what
  // poprt-convert --batch_axis set), 0 when it has none. Errors start with the file name.
  static Expected<std::unique_ptr<ServedModel>> load(const ModelId& id, const std::string& popef, const BatcherOptions& options,
                                                     ServerMetrics& metrics);
  ~ServedModel();

  const std::string& name() const { return id_.name; }
  const ModelId& id() const { return id_; }
  const std::string& popef() const { return popef_; }
  const ModelLayout& layout() const { return layout_; }
  const BatcherOptions& options() const { return options_; }
  ModelMetrics& metrics() { return *metrics_; }
  Batcher& batcher() { return *batcher_; }
  // Every replica is in service.
  bool ready() const;
  unsigned replicas() const;

  // Runs a checked request through the batcher, waiting for its rows, and records it in the
  // metrics (success or failure, the time since `received`). Every transport infers through this.
  ServeResult infer(ServeRequest request, std::chrono::steady_clock::time_point received);
  // A request refused before it ran (it did not fit the model): a failure in the metrics.
  void refused(std::chrono::steady_clock::time_point received) {
    metrics_->requestRefused(std::chrono::steady_clock::now() - received);
  }

 private:
  ServedModel() = default;

  ModelId id_;
  std::string popef_;
  BatcherOptions options_;
  std::unique_ptr<runtime::ModelRunner> runner_;
  ModelLayout layout_;
  ModelMetrics* metrics_ = nullptr;
  std::unique_ptr<Batcher> batcher_;  // declared last: stops (and drains) before the runner goes
};

}  // namespace poprt::serve
