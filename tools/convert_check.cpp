#include "tools/convert_check.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "lib/onnx/onnx_io.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::tools {
namespace {

constexpr int64_t kMaxCheckElements = int64_t{1} << 26;  // per generated input

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

ops::Opsets opsetsOf(const ir::Model& model) {
  ops::Opsets o;
  for (const auto& op : model.opset_imports) o[op.domain == "ai.onnx" ? "" : op.domain] = op.version;
  return o;
}

Expected<std::vector<double>> toDoubles(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numElements()));
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (const T& v : t.data<T>()) {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
        out.push_back(static_cast<double>(static_cast<float>(v)));
      else
        out.push_back(static_cast<double>(v));
    }
  }));
  return out;
}

std::string fmt(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// How one output of the optimised graph compares with the original's.
struct OutputDiff {
  std::string name, type;
  double max_abs = 0, max_rel = 0;
  double worst_excess = -std::numeric_limits<double>::infinity();  // max of |d| - (atol + rtol |ref|)
  int64_t bad = 0, total = 0;
  std::string mismatch;  // set when the two are not even comparable (dtype, shape, kind)
  bool failed() const { return !mismatch.empty() || bad > 0; }
};

std::string typeOf(const Tensor& t) { return std::string(dtypeName(t.dtype())) + shapeToString(t.shape()); }

Status compareTensors(const Tensor& ref, const Tensor& got, const CheckOptions& o, OutputDiff& d) {
  if (ref.dtype() != got.dtype() || ref.shape() != got.shape()) {
    d.mismatch = "is " + typeOf(ref) + " in the original but " + typeOf(got) + " after the passes";
    return okStatus();
  }
  if (ref.dtype() == DType::String) {
    for (size_t i = 0; i < ref.strings().size(); ++i) {
      ++d.total;
      if (ref.strings()[i] != got.strings()[i]) {
        ++d.bad;
        d.max_abs = d.max_rel = d.worst_excess = std::numeric_limits<double>::infinity();
      }
    }
    return okStatus();
  }
  POPRT_ASSIGN_OR_RETURN(std::vector<double> a, toDoubles(ref));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> b, toDoubles(got));
  const double inf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < a.size(); ++i) {
    ++d.total;
    double abs_err, rel_err;
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      abs_err = rel_err = inf;
    } else if (a[i] == b[i]) {  // also equal infinities
      continue;
    } else {
      abs_err = std::fabs(a[i] - b[i]);
      rel_err = a[i] != 0 ? abs_err / std::fabs(a[i]) : inf;
    }
    d.max_abs = std::max(d.max_abs, abs_err);
    d.max_rel = std::max(d.max_rel, rel_err);
    double excess = std::isinf(abs_err) ? inf : abs_err - (o.atol + o.rtol * std::fabs(a[i]));
    d.worst_excess = std::max(d.worst_excess, excess);
    if (excess > 0) ++d.bad;
  }
  return okStatus();
}

Status compareValues(const ops::RtValue& ref, const ops::RtValue& got, const CheckOptions& o, OutputDiff& d) {
  if (ref.kind != got.kind) {
    d.mismatch = "changes kind (tensor, sequence or empty optional) after the passes";
    return okStatus();
  }
  if (ref.kind == ops::RtValue::Kind::Tensor) {
    d.type = typeOf(ref.tensor);
    return compareTensors(ref.tensor, got.tensor, o, d);
  }
  if (ref.kind == ops::RtValue::Kind::None) {
    d.type = "optional (empty)";
    return okStatus();
  }
  d.type = "sequence of " + std::to_string(ref.sequence.size());
  if (ref.sequence.size() != got.sequence.size()) {
    d.mismatch = "is a sequence of " + std::to_string(ref.sequence.size()) + " in the original but of " +
                 std::to_string(got.sequence.size()) + " after the passes";
    return okStatus();
  }
  for (size_t i = 0; i < ref.sequence.size() && d.mismatch.empty(); ++i)
    POPRT_TRY(compareTensors(ref.sequence[i], got.sequence[i], o, d));
  return okStatus();
}

// The graph inputs --check feeds, with the reason the first unusable one cannot be fed.
Status checkInputsUsable(const ir::Graph& g) {
  for (const ir::Value* in : g.inputs()) {
    if (in->isInitializer()) continue;
    const ir::TensorType& t = in->type;
    if (!t.isTensor() || t.kind != ValueKind::Tensor)
      return Error("--check: input '" + in->name() + "' is not a tensor; --check generates tensor inputs only");
    if (!t.hasStaticShape())
      return Error("--check: input '" + in->name() + "' has the dynamic shape " + t.toString() +
                   "; --check needs static input shapes (hint: --input_shape " + in->name() + "=D0,D1,...)");
    if (t.dtype == DType::String || t.dtype == DType::Undefined || t.dtype == DType::Complex64 ||
        t.dtype == DType::Complex128)
      return Error("--check: input '" + in->name() + "' is of dtype " + std::string(dtypeName(t.dtype)) +
                   "; --check generates numeric and bool inputs only");
  }
  return okStatus();
}

}  // namespace

Expected<Tensor> generateCheckInput(DType dtype, const Shape& shape, uint64_t seed, size_t input_index) {
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedNumElements(shape, kMaxCheckElements));
  Tensor t(dtype, shape);
  uint64_t state = seed * 0x2545F4914F6CDD1Dull + (static_cast<uint64_t>(input_index) + 1) * 0x9E3779B97F4A7C15ull;
  POPRT_TRY(dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto data = t.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      uint64_t r = splitmix64(state);
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = (r >> 63) != 0;
      } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        data[i] = T(static_cast<float>(static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0));
      } else if constexpr (std::is_floating_point_v<T>) {
        data[i] = static_cast<T>(static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0);
      } else {
        data[i] = static_cast<T>(r >> 62);  // 0..3
      }
    }
  }));
  return t;
}

Expected<std::string> snapshotForCheck(const ir::Model& original) {
  POPRT_TRY(checkInputsUsable(*original.graph));
  return onnxio::serializeModel(original);
}

Status runCheck(const std::string& original_snapshot, const ir::Model& optimised, const CheckOptions& o, std::ostream& out) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(original_snapshot)) throw InternalError("--check: the original model's snapshot does not parse");
  auto imported = onnxio::importModelProto(proto, "", "the original model", {/*run_checker=*/false, /*infer_shapes=*/false});
  if (!imported.ok()) return imported.error().withContext("--check");
  const ir::Model& original = *imported;

  std::vector<std::pair<std::string, ops::RtValue>> inputs;
  size_t index = 0;
  for (const ir::Value* in : original.graph->inputs()) {
    if (in->isInitializer()) continue;
    auto t = generateCheckInput(in->type.dtype, in->type.staticShape(), o.seed, index++);
    if (!t.ok()) return t.error().withContext("--check: input '" + in->name() + "'");
    inputs.emplace_back(in->name(), ops::RtValue::of(std::move(t).value()));
  }
  // Each graph gets the inputs it declares (a pass may drop an unused input).
  auto inputsOf = [&](const ir::Graph& g) {
    std::vector<std::pair<std::string, ops::RtValue>> mine;
    for (const auto& [name, value] : inputs)
      if (const ir::Value* v = g.findLocalValue(name); v && v->isGraphInput() && !v->isInitializer())
        mine.emplace_back(name, value);
    return mine;
  };
  ops::EvalContext ctx_ref(opsetsOf(original), o.seed);
  auto ref = ops::runGraph(*original.graph, inputsOf(*original.graph), ctx_ref);
  if (!ref.ok()) return ref.error().withContext("--check: the original model fails on the generated inputs");
  ops::EvalContext ctx_opt(opsetsOf(optimised), o.seed);
  auto got = ops::runGraph(*optimised.graph, inputsOf(*optimised.graph), ctx_opt);
  if (!got.ok()) return got.error().withContext("--check: the optimised model fails on the generated inputs");
  if (ref->size() != got->size())
    return Error("--check: the original model has " + std::to_string(ref->size()) + " outputs, the optimised one " +
                 std::to_string(got->size()));

  std::vector<OutputDiff> diffs;
  for (size_t i = 0; i < ref->size(); ++i) {
    OutputDiff d;
    d.name = original.graph->outputs()[i]->name();
    POPRT_TRY(compareValues((*ref)[i], (*got)[i], o, d));
    diffs.push_back(std::move(d));
  }

  // The table.
  std::vector<std::vector<std::string>> rows = {{"output", "type", "max abs err", "max rel err", "result"}};
  for (const OutputDiff& d : diffs) {
    std::string result = !d.mismatch.empty() ? "FAIL (" + d.mismatch + ")"
                         : d.bad > 0 ? "FAIL (" + std::to_string(d.bad) + " of " + std::to_string(d.total) + " elements)"
                                     : "ok";
    rows.push_back({d.name, d.type, fmt(d.max_abs), fmt(d.max_rel), result});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  out << "check: original vs optimised graph on generated inputs (seed " << o.seed << ", rtol " << fmt(o.rtol)
      << ", atol " << fmt(o.atol) << ")\n";
  for (const auto& r : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
  out.flush();

  // The worst output: a mismatch first, then the largest excess over the tolerance.
  const OutputDiff* worst = nullptr;
  for (const OutputDiff& d : diffs) {
    if (!d.failed()) continue;
    if (!worst || (!d.mismatch.empty() && worst->mismatch.empty()) ||
        (d.mismatch.empty() == worst->mismatch.empty() && d.worst_excess > worst->worst_excess))
      worst = &d;
  }
  if (!worst) return okStatus();
  size_t failing = 0;
  for (const OutputDiff& d : diffs) failing += d.failed();
  std::string others = failing > 1 ? " (" + std::to_string(failing) + " outputs fail)" : "";
  if (!worst->mismatch.empty()) return Error("--check: output '" + worst->name + "' " + worst->mismatch + others);
  return Error("--check: output '" + worst->name + "' differs beyond the tolerance: max abs error " + fmt(worst->max_abs) +
               ", max rel error " + fmt(worst->max_rel) + " (rtol " + fmt(o.rtol) + ", atol " + fmt(o.atol) + "); " +
               std::to_string(worst->bad) + " of " + std::to_string(worst->total) + " elements" + others);
}

}  // namespace poprt::tools
