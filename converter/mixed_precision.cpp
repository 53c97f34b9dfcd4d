#include "converter/mixed_precision.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "converter/precision.h"

namespace poprt::converter {
namespace {

// The worst model output's cosine (0 for an output that cannot be compared or has new NaN/Inf).
double worstCosine(const PrecisionReport& r) {
  double worst = 1;
  for (const PrecisionDiff& d : r.outputs) {
    if (d.dtype != "float16" && d.dtype != "float32" && d.dtype != "float64") continue;  // not a float output
    const bool bad = !d.mismatch.empty() || d.new_nonfinite > 0 || std::isnan(d.cosine);
    worst = std::min(worst, bad ? 0.0 : d.cosine);
  }
  return worst;
}

// The nodes float_to_half converted, the most error each adds (its output's loss of cosine
// beyond its worst input's: a weight's rounding, or the output's) first. Those that seem to add
// none come last but stay: a float32 node still reads what they round.
std::vector<std::string> rankCandidates(const ir::Graph& fp32, const PrecisionReport& per_layer) {
  std::map<std::string, const PrecisionDiff*> layer;
  for (const PrecisionDiff& d : per_layer.layers) layer[d.name] = &d;
  const auto loss = [&](const ir::Value* v) {
    auto it = v ? layer.find(v->name()) : layer.end();
    return it == layer.end() || !it->second->mismatch.empty() ? 0.0 : 1 - it->second->cosine;
  };
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& n : fp32.nodes()) {
    if (n->name().empty() || !n->output(0)) continue;
    auto out = layer.find(n->output(0)->name());
    if (out == layer.end() || out->second->dtype != "float16") continue;  // kept float32 already
    double inputs = 0;
    for (const ir::Value* v : n->inputs())
      if (v && !v->isInitializer()) inputs = std::max(inputs, loss(v));
    const double added = loss(n->output(0)) - inputs;
    ranked.emplace_back(added, n->name());
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> names;
  for (auto& [added, name] : ranked) names.push_back(std::move(name));
  return names;
}

}  // namespace

Expected<MixedPrecisionOutcome> meetFp16Cosine(const std::string& fp32_snapshot, ir::Model& fp16,
                                               const passes::PipelineOptions& fp16_passes, double min_cosine,
                                               const std::vector<std::string>& inputs, const std::string& flag) {
  MixedPrecisionOutcome outcome;
  std::vector<ops::RtValue> fp32_outputs;  // the float32 model runs once, not once per trial
  PrecisionCompareOptions compare{/*per_layer=*/true, inputs, 0, flag, &fp32_outputs};
  POPRT_ASSIGN_OR_RETURN(const PrecisionReport first, comparePrecision(fp32_snapshot, fp16, compare));
  ++outcome.evaluations;
  outcome.cosine_before = outcome.cosine_after = worstCosine(first);
  if (outcome.cosine_before >= min_cosine) return outcome;

  POPRT_ASSIGN_OR_RETURN(const ir::Model fp32, reimportModel(fp32_snapshot, "float32 model"));
  const std::vector<std::string> ranked = rankCandidates(*fp32.graph, first);
  outcome.candidates = ranked.size();
  compare.per_layer = false;
  // The model float_to_half makes with the k worst candidates kept float32, and its cosine.
  struct Trial {
    ir::Model model;
    double cosine = 0;
  };
  auto trial = [&](size_t k) -> Expected<Trial> {
    POPRT_ASSIGN_OR_RETURN(ir::Model m, reimportModel(fp32_snapshot, "float32 model"));
    passes::PipelineOptions options = fp16_passes;
    options.fp16.skip_node_names.insert(options.fp16.skip_node_names.end(), ranked.begin(), ranked.begin() + k);
    POPRT_TRY(passes::runPipeline(m, options));
    POPRT_ASSIGN_OR_RETURN(const PrecisionReport r, comparePrecision(fp32_snapshot, m, compare));
    ++outcome.evaluations;
    return Trial{std::move(m), worstCosine(r)};
  };
  if (ranked.empty()) {
    outcome.met = false;
    return outcome;
  }
  // Bisection for the fewest: every candidate float32 must reach the target, else nothing changes.
  POPRT_ASSIGN_OR_RETURN(Trial best, trial(ranked.size()));
  if (best.cosine < min_cosine) {
    outcome.met = false;
    outcome.cosine_after = best.cosine;  // the best it could do, for the warning
    return outcome;
  }
  size_t lo = 0, hi = ranked.size();  // lo misses the target, hi reaches it
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    POPRT_ASSIGN_OR_RETURN(Trial t, trial(mid));
    if (t.cosine >= min_cosine) {
      hi = mid;
      best = std::move(t);
    } else {
      lo = mid;
    }
  }
  outcome.cosine_after = best.cosine;
  outcome.kept_fp32.assign(ranked.begin(), ranked.begin() + hi);
  fp16 = std::move(best.model);
  return outcome;
}

}  // namespace poprt::converter
