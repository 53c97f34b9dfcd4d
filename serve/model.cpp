#include "serve/model.h"

#include <charconv>

#include "popef/popef.h"
#include "poprt/runtime/errors.h"

namespace poprt::serve {
namespace {

// The batch axis the PopEF records (compile option batch_axis), 0 when it has none.
Expected<int> batchAxis(const std::string& popef) {
  POPRT_ASSIGN_OR_RETURN(popef::PopefFile file, popef::readPopef(popef));
  auto it = file.metadata.compile_options.find("batch_axis");
  if (it == file.metadata.compile_options.end()) return 0;
  const std::string& text = it->second;
  int axis = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), axis);
  if (ec != std::errc() || end != text.data() + text.size() || axis < 0 || axis >= popef::kMaxRank)
    return Error(popef + ": compile option batch_axis '" + text + "' is not an axis");
  return axis;
}

}  // namespace

Expected<std::unique_ptr<ServedModel>> ServedModel::load(const ModelId& id, const std::string& popef,
                                                         const BatcherOptions& options, ServerMetrics& metrics) {
  std::unique_ptr<ServedModel> m(new ServedModel());
  m->id_ = id;
  m->popef_ = popef;
  m->options_ = options;
  runtime::ModelRunnerConfig config;
  config.thread_safe = true;  // one batcher worker per replica submits
  // The batcher has already waited for requests: a step of batches_per_step > 1 runs with the
  // batches queued rather than waiting for more (each worker submits one batch at a time).
  config.timeout_ns = 0;
  try {
    m->runner_ = std::make_unique<runtime::ModelRunner>(popef, config);
  } catch (const runtime::Error& e) { return Error(e.what()); }
  POPRT_ASSIGN_OR_RETURN(int axis, batchAxis(popef));
  auto layout = planLayout(m->runner_->getExecuteInputs(), m->runner_->getExecuteOutputs(), axis);
  if (!layout.ok()) return layout.error().withContext(popef);
  m->layout_ = std::move(layout).value();

  m->metrics_ = metrics.addModel(id.name);
  m->metrics_->replicas = m->runner_->replicationFactor();
  m->metrics_->batch = m->layout_.batch;
  const runtime::IpuEstimate est = m->runner_->estimate();
  m->metrics_->ipu_seconds_per_batch = est.stepSeconds() / est.batches_per_step;  // a pipeline overlaps the batches
  m->batcher_ = std::make_unique<Batcher>(*m->runner_, m->layout_, options, *m->metrics_);
  return m;
}

ServedModel::~ServedModel() = default;

unsigned ServedModel::replicas() const { return runner_->replicationFactor(); }

bool ServedModel::ready() const {
  for (unsigned r = 0; r < runner_->replicationFactor(); ++r)
    if (!runner_->replicaOnline(r)) return false;
  return true;
}

ServeResult ServedModel::infer(ServeRequest request, std::chrono::steady_clock::time_point received) {
  // The caller's thread waits for the batch: the transport's thread pool bounds the requests queued.
  ServeResult result = batcher_->submit(std::move(request)).get();
  metrics_->requestDone(result.status == 200, std::chrono::steady_clock::now() - received);
  return result;
}

}  // namespace poprt::serve
