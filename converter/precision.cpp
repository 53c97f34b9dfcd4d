#include "converter/precision.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "converter/value_check.h"
#include "lib/onnx/onnx_io.h"
#include "lib/onnx/value_io.h"
#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/file_io.h"
#include "passes/fp16_ranges.h"

namespace poprt::converter {
namespace {

using ojson = nlohmann::ordered_json;

// How many of the worst layers the table shows (--summary_json has them all).
constexpr size_t kWorstLayersShown = 15;

using ops::opsetsOf;

PrecisionDiff diffOf(const std::string& name, const ops::RtValue& ref, const ops::RtValue& got) {
  PrecisionDiff d;
  d.name = name;
  if (!ref.isTensor() || !got.isTensor()) {
    d.mismatch = "not a tensor";
    return d;
  }
  d.dtype = std::string(dtypeName(got.tensor.dtype()));
  if (ref.tensor.shape() != got.tensor.shape()) {
    d.mismatch = "shape " + shapeToString(ref.tensor.shape()) + " in fp32, " + shapeToString(got.tensor.shape()) + " in fp16";
    return d;
  }
  auto a = ops::toDoubles(ref.tensor);
  auto b = ops::toDoubles(got.tensor);
  if (!a.ok() || !b.ok()) {
    d.mismatch = "not numeric";
    return d;
  }
  precisionDiff(*a, *b, d);
  return d;
}

void printTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

std::vector<std::string> row(const PrecisionDiff& d, bool layer) {
  std::vector<std::string> r = {d.name};
  if (layer) r.push_back(d.op_type);
  if (!d.mismatch.empty()) {
    r.insert(r.end(), {d.dtype, "-", "-", "-", "-", "not comparable: " + d.mismatch});
    return r;
  }
  r.insert(r.end(), {d.dtype, formatCosine(d.cosine), formatError(d.max_abs), formatError(d.max_rel), formatError(d.ref_max),
                     d.new_nonfinite ? std::to_string(d.new_nonfinite) + " new NaN/Inf" : "-"});
  return r;
}

ojson diffJson(const PrecisionDiff& d, bool layer) {
  ojson j{{"name", d.name}};
  if (layer) j["op_type"] = d.op_type;
  j["dtype"] = d.dtype;
  j["elements"] = d.elements;
  if (!d.mismatch.empty()) {
    j["mismatch"] = d.mismatch;
    return j;
  }
  auto num = [](double v) { return std::isfinite(v) ? ojson(v) : ojson(formatError(v)); };
  j["cosine"] = num(d.cosine);
  j["max_abs_error"] = num(d.max_abs);
  j["max_rel_error"] = num(d.max_rel);
  j["fp32_max_abs"] = num(d.ref_max);
  j["new_nonfinite"] = d.new_nonfinite;
  return j;
}

// The model inputs, read from `files` (NAME=FILE, flag `flag`) where given, else generated like
// --check's (seeded). Sets `dynamic` to the first input it cannot generate (no static shape).
Expected<std::vector<std::pair<std::string, ops::RtValue>>> readOrGenerate(
    const ir::Graph& graph, const std::vector<std::string>& file_args, const std::string& flag, uint64_t seed,
    std::vector<std::string>& from_files, std::vector<std::string>& generated, std::string& dynamic) {
  std::map<std::string, std::string> files;
  for (const std::string& text : file_args) {
    auto kv = splitAssignment(text, flag);
    if (!files.emplace(kv.first, kv.second).second) return Error(flag + ": '" + kv.first + "' is given twice");
  }
  std::vector<std::pair<std::string, ops::RtValue>> inputs;
  size_t index = 0;
  std::string names;
  for (const ir::Value* in : graph.inputs()) {
    if (in->isInitializer()) continue;
    names += (names.empty() ? "" : ", ") + in->name();
    const size_t i = index++;
    if (auto it = files.find(in->name()); it != files.end()) {
      auto v = onnxio::readValueFile(it->second, in->type.kind);
      if (!v.ok()) return v.error().withContext(flag + " " + in->name());
      inputs.emplace_back(in->name(), std::move(v).value());
      from_files.push_back(in->name());
      continue;
    }
    const ir::TensorType& t = in->type;
    if (!t.isTensor() || t.kind != ValueKind::Tensor || !t.hasStaticShape()) {
      if (dynamic.empty()) dynamic = in->name();
      continue;
    }
    auto g = generateInput(t.dtype, t.staticShape(), seed, i);
    if (!g.ok()) return g.error().withContext(flag + ": input '" + in->name() + "'");
    inputs.emplace_back(in->name(), ops::RtValue::of(std::move(g).value()));
    generated.push_back(in->name());
  }
  for (const auto& [name, file] : files) {
    const ir::Value* v = graph.findLocalValue(name);
    if (!v || !v->isGraphInput() || v->isInitializer())
      return Error(flag + ": the model has no input named '" + name + "' (inputs: " + names + ")");
  }
  return inputs;
}

}  // namespace

std::string formatCosine(double v) {
  if (std::isnan(v)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

Expected<ir::Model> reimportModel(const std::string& bytes, const std::string& what) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) throw InternalError("the " + what + " does not parse");
  auto m = onnxio::importModelProto(proto, "", what, {/*run_checker=*/false, /*infer_shapes=*/false});
  if (!m.ok()) return m.error().withContext("the " + what);
  return m;
}

Expected<std::vector<std::pair<std::string, ops::RtValue>>> calibrationInputs(const ir::Graph& graph,
                                                                              const std::vector<std::string>& files,
                                                                              std::string& skipped) {
  std::vector<std::string> from_files, generated;
  std::string dynamic;
  POPRT_ASSIGN_OR_RETURN(auto inputs,
                         readOrGenerate(graph, files, "--fp16_calibration_input", 0, from_files, generated, dynamic));
  if (!dynamic.empty()) {
    skipped = "no float16 range check: input '" + dynamic + "' has a dynamic shape (hint: --input_shape " + dynamic +
              "=D0,D1,... or --fp16_calibration_input " + dynamic + "=FILE.npy)";
    return std::vector<std::pair<std::string, ops::RtValue>>{};
  }
  return inputs;
}

void precisionDiff(const std::vector<double>& ref, const std::vector<double>& got, PrecisionDiff& d) {
  d.elements = static_cast<int64_t>(ref.size());
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    const double a = ref[i], b = got[i];
    if (std::isfinite(a)) d.ref_max = std::max(d.ref_max, std::fabs(a));
    if (!std::isfinite(a) || !std::isfinite(b)) {
      if (std::isfinite(a)) ++d.new_nonfinite;
      continue;
    }
    const double e = std::fabs(a - b);
    d.max_abs = std::max(d.max_abs, e);
    if (a != 0) d.max_rel = std::max(d.max_rel, e / std::fabs(a));  // (against a zero it means nothing)
  }
  d.cosine = cosineSimilarity(ref, got);
}

Expected<PrecisionReport> comparePrecision(const std::string& fp32_snapshot, const ir::Model& fp16,
                                           const PrecisionCompareOptions& o) {
  POPRT_ASSIGN_OR_RETURN(ir::Model ref, reimportModel(fp32_snapshot, "float32 model"));
  POPRT_ASSIGN_OR_RETURN(std::string fp16_bytes, onnxio::serializeModel(fp16));
  POPRT_ASSIGN_OR_RETURN(ir::Model half, reimportModel(fp16_bytes, "float16 model"));
  const size_t model_outputs = ref.graph->outputs().size();
  if (half.graph->outputs().size() != model_outputs)
    throw InternalError("--precision_compare: float_to_half changed the number of outputs");
  if (o.per_layer) {
    passes::exposeFloatValues(*ref.graph);
    passes::exposeFloatValues(*half.graph);
  }

  PrecisionReport report;
  std::string dynamic;
  POPRT_ASSIGN_OR_RETURN(auto inputs, readOrGenerate(*ref.graph, o.inputs, o.input_flag, o.seed, report.file_inputs,
                                                     report.generated_inputs, dynamic));
  if (!dynamic.empty())
    return Error("--precision_compare: input '" + dynamic +
                 "' has a dynamic shape; generated inputs need a static one (hint: "
                 "--input_shape " +
                 dynamic + "=D0,D1,... or --precision_compare_input " + dynamic + "=FILE.npy)");

  // The fp16 model reads the same values; a model input --fp16_io made float16 gets them rounded.
  std::vector<std::pair<std::string, ops::RtValue>> half_inputs;
  for (const auto& [name, value] : inputs) {
    const ir::Value* v = half.graph->findLocalValue(name);
    if (!v || !v->isGraphInput() || v->isInitializer()) continue;
    ops::RtValue copy = value;
    if (copy.isTensor() && copy.tensor.dtype() != v->type.dtype && v->type.dtype == DType::Float16) {
      POPRT_ASSIGN_OR_RETURN(std::vector<double> d, ops::toDoubles(copy.tensor));
      POPRT_ASSIGN_OR_RETURN(copy.tensor, ops::fromDoubles(DType::Float16, copy.tensor.shape(), d));
    }
    half_inputs.emplace_back(name, std::move(copy));
  }

  std::vector<ops::RtValue> ran;
  const std::vector<ops::RtValue>* a = &ran;
  if (o.fp32_outputs && !o.fp32_outputs->empty() && !o.per_layer) {
    a = o.fp32_outputs;
  } else {
    ops::EvalContext ctx_ref(opsetsOf(ref), o.seed);
    auto run = ops::runGraph(*ref.graph, inputs, ctx_ref);
    if (!run.ok()) return run.error().withContext("--precision_compare: the float32 model fails");
    ran = std::move(run).value();
    if (o.fp32_outputs) o.fp32_outputs->assign(ran.begin(), ran.begin() + static_cast<std::ptrdiff_t>(model_outputs));
  }
  ops::EvalContext ctx_half(opsetsOf(half), o.seed);
  auto b = ops::runGraph(*half.graph, half_inputs, ctx_half);
  if (!b.ok()) return b.error().withContext("--precision_compare: the float16 model fails");

  for (size_t i = 0; i < model_outputs; ++i) report.outputs.push_back(diffOf(ref.graph->outputs()[i]->name(), (*a)[i], (*b)[i]));
  if (o.per_layer) {
    std::map<std::string, size_t> half_index;
    for (size_t i = model_outputs; i < half.graph->outputs().size(); ++i) half_index[half.graph->outputs()[i]->name()] = i;
    for (size_t i = model_outputs; i < ref.graph->outputs().size(); ++i) {
      const ir::Value* v = ref.graph->outputs()[i];
      auto it = half_index.find(v->name());
      if (it == half_index.end()) continue;  // folded away or merged after float_to_half
      PrecisionDiff d = diffOf(v->name(), (*a)[i], (*b)[it->second]);
      d.op_type = v->producer() ? v->producer()->opType() : "";
      report.layers.push_back(std::move(d));
    }
  }
  return report;
}

void printPrecisionReport(const PrecisionReport& r, std::ostream& out) {
  out << "precision_compare: float16 vs float32 model, reference evaluator";
  if (!r.generated_inputs.empty()) out << ", generated inputs (floats in [-1, 1), integers 0..3)";
  if (!r.file_inputs.empty()) out << ", " << r.file_inputs.size() << " input(s) from files";
  out << "\n";
  std::vector<std::vector<std::string>> rows = {
      {"output", "fp16 dtype", "cosine", "max abs err", "max rel err", "fp32 max|x|", "NaN/Inf"}};
  for (const PrecisionDiff& d : r.outputs) rows.push_back(row(d, false));
  printTable(rows, out);
  if (!r.layers.empty()) {
    std::vector<const PrecisionDiff*> sorted;
    for (const PrecisionDiff& d : r.layers) sorted.push_back(&d);
    auto badness = [](const PrecisionDiff* d) {
      return !d->mismatch.empty() || d->new_nonfinite ? -2.0 : std::isnan(d->cosine) ? -1.0 : d->cosine;
    };
    std::stable_sort(sorted.begin(), sorted.end(), [&](auto* x, auto* y) { return badness(x) < badness(y); });
    const size_t shown = std::min(sorted.size(), kWorstLayersShown);
    // Where it starts going wrong: the first value (in graph order) with new NaN/Inf.
    for (const PrecisionDiff& d : r.layers)
      if (d.new_nonfinite > 0) {
        out << "  first NaN/Inf the float32 model does not have: '" << d.name << "' (" << d.op_type << "), fp32 max|x| "
            << formatError(d.ref_max) << "\n";
        break;
      }
    out << "  per layer: " << r.layers.size() << " values compared; the " << shown << " with the lowest cosine:\n";
    std::vector<std::vector<std::string>> lrows = {
        {"value", "op", "fp16 dtype", "cosine", "max abs err", "max rel err", "fp32 max|x|", "NaN/Inf"}};
    for (size_t i = 0; i < shown; ++i) lrows.push_back(row(*sorted[i], true));
    printTable(lrows, out);
  }
  out.flush();
}

nlohmann::ordered_json precisionReportJson(const PrecisionReport& r) {
  ojson outputs = ojson::array(), layers = ojson::array();
  for (const PrecisionDiff& d : r.outputs) outputs.push_back(diffJson(d, false));
  for (const PrecisionDiff& d : r.layers) layers.push_back(diffJson(d, true));
  ojson j{{"generated_inputs", r.generated_inputs}, {"file_inputs", r.file_inputs}, {"outputs", outputs}};
  j["layers"] = r.layers.empty() ? ojson(nullptr) : layers;
  return j;
}

}  // namespace poprt::converter
