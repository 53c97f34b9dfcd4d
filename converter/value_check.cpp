#include "converter/value_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "lib/support/dtype_dispatch.h"

namespace poprt::converter {
namespace {

constexpr int64_t kMaxGeneratedElements = int64_t{1} << 26;  // per generated input

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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

std::string typeOf(const Tensor& t) { return std::string(dtypeName(t.dtype())) + shapeToString(t.shape()); }

Status compareTensors(const Tensor& ref, const Tensor& got, const Tolerance& o, const DiffLabels& l, ValueDiff& d) {
  if (ref.dtype() != got.dtype() || ref.shape() != got.shape()) {
    d.mismatch = "is " + typeOf(ref) + " " + l.ref_where + " but " + typeOf(got) + " " + l.got_where;
    return okStatus();
  }
  const double inf = std::numeric_limits<double>::infinity();
  if (ref.dtype() == DType::String) {
    for (size_t i = 0; i < ref.strings().size(); ++i) {
      ++d.total;
      if (ref.strings()[i] != got.strings()[i]) {
        ++d.bad;
        d.max_abs = d.max_rel = d.worst_excess = inf;
      }
    }
    return okStatus();
  }
  POPRT_ASSIGN_OR_RETURN(std::vector<double> a, toDoubles(ref));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> b, toDoubles(got));
  for (size_t i = 0; i < a.size(); ++i) {
    ++d.total;
    double abs_err;
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      abs_err = inf;
    } else if (a[i] == b[i]) {  // also equal infinities
      continue;
    } else {
      abs_err = std::fabs(a[i] - b[i]);
    }
    d.max_abs = std::max(d.max_abs, abs_err);
    if (a[i] != 0 && std::isfinite(a[i])) d.max_rel = std::max(d.max_rel, abs_err / std::fabs(a[i]));
    double excess = std::isinf(abs_err) ? inf : abs_err - (o.atol + o.rtol * std::fabs(a[i]));
    d.worst_excess = std::max(d.worst_excess, excess);
    if (excess > 0) ++d.bad;
  }
  d.cosine = std::min(d.cosine, cosineSimilarity(a, b));
  // Rows along the last axis: the index of each row's largest element, in both.
  const size_t row = ref.shape().empty() ? a.size() : static_cast<size_t>(std::max<int64_t>(ref.shape().back(), 1));
  size_t rows = 0, same = 0;
  for (size_t start = 0; row > 0 && start + row <= a.size(); start += row, ++rows)
    same += std::max_element(a.begin() + start, a.begin() + start + row) - a.begin() ==
            std::max_element(b.begin() + start, b.begin() + start + row) - b.begin();
  if (rows > 0) d.top1 = std::min(d.top1, static_cast<double>(same) / static_cast<double>(rows));
  d.over = d.over || (o.compare == "cosine" ? d.cosine < o.min_cosine : o.compare == "top1" ? d.top1 < 1 : d.bad > 0);
  return okStatus();
}

const char* kindName(const ops::RtValue& v) {
  switch (v.kind) {
    case ops::RtValue::Kind::Tensor: return "tensor";
    case ops::RtValue::Kind::Sequence: return "sequence";
    case ops::RtValue::Kind::None: return "empty optional";
  }
  return "value";
}

}  // namespace

Expected<Tensor> generateInput(DType dtype, const Shape& shape, uint64_t seed, size_t input_index) {
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedNumElements(shape, kMaxGeneratedElements));
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

Status compareValues(const ops::RtValue& ref, const ops::RtValue& got, const Tolerance& tol, const DiffLabels& l, ValueDiff& d) {
  if (ref.kind != got.kind) {
    d.mismatch = std::string("is a ") + kindName(ref) + " " + l.ref_where + " but a " + kindName(got) + " " + l.got_where;
    return okStatus();
  }
  if (ref.kind == ops::RtValue::Kind::Tensor) {
    d.type = typeOf(ref.tensor);
    return compareTensors(ref.tensor, got.tensor, tol, l, d);
  }
  if (ref.kind == ops::RtValue::Kind::None) {
    d.type = "optional (empty)";
    return okStatus();
  }
  d.type = "sequence of " + std::to_string(ref.sequence.size());
  if (ref.sequence.size() != got.sequence.size()) {
    d.mismatch = "is a sequence of " + std::to_string(ref.sequence.size()) + " " + l.ref_where + " but of " +
                 std::to_string(got.sequence.size()) + " " + l.got_where;
    return okStatus();
  }
  for (size_t i = 0; i < ref.sequence.size() && d.mismatch.empty(); ++i)
    POPRT_TRY(compareTensors(ref.sequence[i], got.sequence[i], tol, l, d));
  return okStatus();
}

double cosineSimilarity(const std::vector<double>& a, const std::vector<double>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  if (na == 0 && nb == 0) return 1;
  if (na == 0 || nb == 0) return 0;
  return dot / (std::sqrt(na) * std::sqrt(nb));
}

std::string formatError(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::vector<std::string> diffTable(const std::vector<ValueDiff>& diffs, const std::string& indent) {
  std::vector<std::vector<std::string>> rows = {{"output", "type", "max abs err", "max rel err", "cosine", "top1", "result"}};
  for (const ValueDiff& d : diffs) {
    std::string result = !d.mismatch.empty() ? "FAIL (" + d.mismatch + ")"
                         : !d.over           ? "ok"
                         : d.bad > 0         ? "FAIL (" + std::to_string(d.bad) + " of " + std::to_string(d.total) + " elements)"
                                             : "FAIL";
    char cosine[32], top1[32];
    std::snprintf(cosine, sizeof cosine, "%.6f", d.cosine);
    std::snprintf(top1, sizeof top1, "%.0f%%", 100 * d.top1);
    rows.push_back({d.name, d.type, formatError(d.max_abs), formatError(d.max_rel), cosine, top1, result});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::vector<std::string> lines;
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

Status worstDiff(const std::vector<ValueDiff>& diffs, const std::string& what, const Tolerance& tol) {
  // A mismatch first, then the largest excess over the tolerance.
  const ValueDiff* worst = nullptr;
  for (const ValueDiff& d : diffs) {
    if (!d.failed()) continue;
    if (!worst || (!d.mismatch.empty() && worst->mismatch.empty()) ||
        (d.mismatch.empty() == worst->mismatch.empty() && d.worst_excess > worst->worst_excess))
      worst = &d;
  }
  if (!worst) return okStatus();
  size_t failing = 0;
  for (const ValueDiff& d : diffs) failing += d.failed();
  std::string others = failing > 1 ? " (" + std::to_string(failing) + " outputs fail)" : "";
  if (!worst->mismatch.empty()) return Error(what + ": output '" + worst->name + "' " + worst->mismatch + others);
  if (tol.compare == "cosine")
    return Error(what + ": output '" + worst->name + "' has cosine similarity " + std::to_string(worst->cosine) + ", below " +
                 formatError(tol.min_cosine) + others);
  if (tol.compare == "top1")
    return Error(what + ": output '" + worst->name + "': the largest element is elsewhere in " +
                 formatError(100 * (1 - worst->top1)) + "% of the rows" + others);
  return Error(what + ": output '" + worst->name + "' differs beyond the tolerance: max abs error " +
               formatError(worst->max_abs) + ", max rel error " + formatError(worst->max_rel) + " (rtol " +
               formatError(tol.rtol) + ", atol " + formatError(tol.atol) + "); " + std::to_string(worst->bad) + " of " +
               std::to_string(worst->total) + " elements" + others);
}

}  // namespace poprt::converter
