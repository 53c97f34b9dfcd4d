// Reduce op family of the reference evaluator (see registry.h): Reduce*, ArgMax/ArgMin,
// Softmax/LogSoftmax/Hardmax, CumSum and TopK. Floats compute in double; integer sums and
// products wrap modulo 2^64 before the cast back (no signed-overflow UB).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/ops/elementwise_util.h"
#include "lib/ops/registry.h"

namespace poprt::ops {
namespace {

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

struct ReduceEntry {
  const char* op_type;
  Red kind;
  // The opset from which axes is an input (and noop_with_empty_axes exists): 13 for ReduceSum,
  // 18 for the others (beyond the supported range, kept so the rule is in one place).
  int64_t axes_input_since;
};
constexpr ReduceEntry kReduce[] = {
    {"ReduceSum", Red::Sum, 13},
    {"ReduceMean", Red::Mean, 18},
    {"ReduceMax", Red::Max, 18},
    {"ReduceMin", Red::Min, 18},
    {"ReduceProd", Red::Prod, 18},
    {"ReduceL1", Red::L1, 18},
    {"ReduceL2", Red::L2, 18},
    {"ReduceLogSum", Red::LogSum, 18},
    {"ReduceLogSumExp", Red::LogSumExp, 18},
    {"ReduceSumSquare", Red::SumSquare, 18},
};

// Element strides of the (keepdims) output for each input dim; 0 along reduced dims. Walking the
// input with these gives each element's output offset.
std::vector<int64_t> reducedStrides(const Shape& in, const std::vector<bool>& reduce) {
  Shape kept = in;
  for (size_t d = 0; d < in.size(); ++d)
    if (reduce[d]) kept[d] = 1;
  std::vector<int64_t> s = contiguousStrides(kept);
  for (size_t d = 0; d < in.size(); ++d)
    if (reduce[d]) s[d] = 0;
  return s;
}

// Calls f(input offset, output offset) for every input element.
template <class F>
void forEachReduced(const Shape& in, const std::vector<int64_t>& ostrides, F&& f) {
  const size_t rank = in.size();
  int64_t total = 1;
  for (int64_t d : in) total *= d;
  std::vector<int64_t> index(rank, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(i, o);
    for (size_t d = rank; d-- > 0;) {
      o += ostrides[d];
      if (++index[d] < in[d]) break;
      o -= ostrides[d] * in[d];
      index[d] = 0;
    }
  }
}

template <class T>
void reduceTyped(Red kind, const Tensor& x, const std::vector<int64_t>& ostrides, int64_t count, Tensor& y) {
  using C = typename ComputeType<T>::type;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  using Acc = std::conditional_t<kFloat, double, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
  auto src = x.data<T>();
  auto dst = y.data<T>();
  const size_t n = dst.size();
  auto value = [&](int64_t i) { return static_cast<Acc>(toCompute(src[i])); };

  if (kind == Red::LogSumExp) {  // log(sum(exp(x - max))) + max, in double
    std::vector<double> mx(n, -std::numeric_limits<double>::infinity()), sum(n, 0.0);
    forEachReduced(x.shape(), ostrides, [&](int64_t i, int64_t o) {
      double v = static_cast<double>(toCompute(src[i]));
      if (std::isnan(v) || v > mx[o]) mx[o] = std::isnan(mx[o]) ? mx[o] : v;
    });
    forEachReduced(x.shape(), ostrides, [&](int64_t i, int64_t o) {
      if (std::isfinite(mx[o])) sum[o] += std::exp(static_cast<double>(toCompute(src[i])) - mx[o]);
    });
    for (size_t o = 0; o < n; ++o) dst[o] = castFromDouble<T>(std::isfinite(mx[o]) ? std::log(sum[o]) + mx[o] : mx[o]);
    return;
  }

  Acc init = 0;
  if (kind == Red::Prod) init = 1;
  if (kind == Red::Max) init = kFloat ? -std::numeric_limits<Acc>::infinity() : std::numeric_limits<Acc>::lowest();
  if (kind == Red::Min) init = kFloat ? std::numeric_limits<Acc>::infinity() : std::numeric_limits<Acc>::max();
  if constexpr (!kFloat) {  // integer max/min start from the input type's limits
    if (kind == Red::Max) init = static_cast<Acc>(std::numeric_limits<T>::lowest());
    if (kind == Red::Min) init = static_cast<Acc>(std::numeric_limits<T>::max());
  }
  std::vector<Acc> acc(n, init);
  forEachReduced(x.shape(), ostrides, [&](int64_t i, int64_t o) {
    Acc v = value(i);
    Acc& a = acc[o];
    switch (kind) {
      case Red::Sum:
      case Red::Mean:
      case Red::LogSum: a = ew::wrapAdd(a, v); break;
      case Red::Prod: a = ew::wrapMul(a, v); break;
      case Red::L1: a = ew::wrapAdd(a, v < Acc(0) ? ew::wrapMul(v, static_cast<Acc>(-1)) : v); break;
      case Red::L2:
      case Red::SumSquare: a = ew::wrapAdd(a, ew::wrapMul(v, v)); break;
      case Red::Max:
        if (!ew::isNaNValue(a) && (ew::isNaNValue(v) || v > a)) a = v;
        break;
      case Red::Min:
        if (!ew::isNaNValue(a) && (ew::isNaNValue(v) || v < a)) a = v;
        break;
      case Red::LogSumExp: break;
    }
  });
  for (size_t o = 0; o < n; ++o) {
    Acc a = acc[o];
    if (kind == Red::L2) {
      dst[o] = castFromDouble<T>(std::sqrt(static_cast<double>(a)));
    } else if (kind == Red::LogSum) {
      dst[o] = castFromDouble<T>(std::log(static_cast<double>(a)));
    } else if (kind == Red::Mean) {
      if constexpr (kFloat)
        dst[o] = castFromDouble<T>(a / static_cast<double>(count));  // 0/0 = NaN when empty
      else
        dst[o] = count == 0 ? T(0) : static_cast<T>(a / static_cast<Acc>(count));
    } else if constexpr (kFloat) {
      dst[o] = castFromDouble<T>(a);
    } else {
      dst[o] = static_cast<T>(a);
    }
  }
}

// Normalised, de-duplicated axes as a mask over the dims; an error on a bad or repeated axis.
Expected<std::vector<bool>> axesMask(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    POPRT_ASSIGN_OR_RETURN(int64_t d, normalizeAxis(a, rank));
    if (mask[d]) return Error("axis " + std::to_string(a) + " is repeated");
    mask[d] = true;
  }
  return mask;
}

Expected<std::vector<Tensor>> evalReduce(const ReduceEntry& e, const ir::Node& node, const std::vector<const Tensor*>& in,
                                         EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  POPRT_TRY(checkStorage(x));
  if (!ew::isNumeric(x.dtype())) return Error(ew::typeError(x.dtype()));
  const bool axes_input = ctx.opset() >= e.axes_input_since;
  std::vector<int64_t> axes;
  if (axes_input) {
    if (node.hasAttr("axes")) return Error("axes is an input at this opset, not an attribute");
    if (in.size() > 1 && in[1]) {
      if (in[1]->shape().size() > 1) return Error("axes must be 1-D, got shape " + shapeToString(in[1]->shape()));
      POPRT_ASSIGN_OR_RETURN(axes, toInt64s(*in[1]));
    }
  } else {
    if (in.size() > 1 && in[1]) return Error("axes is an attribute at this opset, not an input");
    axes = node.attrInts("axes");
  }
  if (axes.empty() && axes_input && node.attrInt("noop_with_empty_axes", 0) != 0) return single(x);
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  POPRT_ASSIGN_OR_RETURN(std::vector<bool> mask, axesMask(axes, rank));
  const bool keepdims = node.attrInt("keepdims", 1) != 0;
  Shape out;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (mask[d]) {
      count *= x.shape()[d];
      if (keepdims) out.push_back(1);
    } else {
      out.push_back(x.shape()[d]);
    }
  }
  Tensor y(x.dtype(), out);
  std::vector<int64_t> ostrides = reducedStrides(x.shape(), mask);
  POPRT_TRY(dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) reduceTyped<T>(e.kind, x, ostrides, count, y);
  }));
  return single(std::move(y));
}

// ArgMax / ArgMin along one axis. NaN counts as the extreme (as numpy); ties pick the first
// index, or the last with select_last_index.
Expected<std::vector<Tensor>> evalArg(bool is_max, const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  POPRT_TRY(checkStorage(x));
  if (!ew::isNumeric(x.dtype())) return Error(ew::typeError(x.dtype()));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), rank));
  const bool keepdims = node.attrInt("keepdims", 1) != 0;
  const bool last = node.attrInt("select_last_index", 0) != 0;
  ew::AxisSplit s = ew::splitAt(x.shape(), axis);
  Shape out = x.shape();
  if (keepdims)
    out[axis] = 1;
  else
    out.erase(out.begin() + axis);
  if (s.len == 0 && s.outer * s.inner != 0)
    return Error("cannot take the arg" + std::string(is_max ? "max" : "min") + " of an empty axis");
  Tensor y(DType::Int64, out);
  auto dst = y.data<int64_t>();
  POPRT_TRY(dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    if constexpr (!std::is_same_v<T, bool>) {
      auto src = x.data<T>();
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          const int64_t base = o * s.len * s.inner + i;
          int64_t best = 0;
          C bv = toCompute(src[base]);
          for (int64_t k = 1; k < s.len; ++k) {
            C v = toCompute(src[base + k * s.inner]);
            bool v_nan = ew::isNaNValue(v), b_nan = ew::isNaNValue(bv);
            bool better = is_max ? v > bv : v < bv;
            bool take = last ? (v_nan || (!b_nan && (better || v == bv))) : (!b_nan && (v_nan || better));
            if (take) {
              best = k;
              bv = v;
            }
          }
          dst[o * s.inner + i] = best;
        }
    }
  }));
  return single(std::move(y));
}

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each row is normalised;
// from 13 the op works along the single `axis` (default -1).
Expected<std::vector<Tensor>> evalSoft(SoftKind kind, const ir::Node& node, const std::vector<const Tensor*>& in,
                                       EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  POPRT_TRY(checkStorage(x));
  if (!isFloatingPoint(x.dtype())) return Error(ew::typeError(x.dtype()));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  ew::AxisSplit s;
  if (ctx.opset() >= 13) {
    POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", -1), rank));
    s = ew::splitAt(x.shape(), axis);
  } else {
    int64_t axis = node.attrInt("axis", 1);
    if (axis < -rank || axis > rank)
      return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    s.outer = 1;
    s.len = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? s.outer : s.len) *= x.shape()[d];
    s.inner = 1;
  }
  Tensor y(x.dtype(), x.shape());
  POPRT_TRY(dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto src = x.data<T>();
    auto dst = y.data<T>();
    std::vector<double> row(static_cast<size_t>(s.len));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t base = o * s.len * s.inner + i;
        double mx = -std::numeric_limits<double>::infinity();
        int64_t arg = 0;
        for (int64_t k = 0; k < s.len; ++k) {
          row[k] = static_cast<double>(toCompute(src[base + k * s.inner]));
          if (!std::isnan(mx) && (std::isnan(row[k]) || row[k] > mx || k == 0)) {
            mx = row[k];
            arg = k;
          }
        }
        if (kind == SoftKind::Hardmax) {
          for (int64_t k = 0; k < s.len; ++k) dst[base + k * s.inner] = castFromDouble<T>(k == arg ? 1.0 : 0.0);
          continue;
        }
        double sum = 0;
        for (int64_t k = 0; k < s.len; ++k) sum += std::exp(row[k] - mx);
        for (int64_t k = 0; k < s.len; ++k) {
          double v = kind == SoftKind::Softmax ? std::exp(row[k] - mx) / sum : row[k] - mx - std::log(sum);
          dst[base + k * s.inner] = castFromDouble<T>(v);
        }
      }
  }));
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalCumSum(const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ap, requireInput(in, 1));
  const Tensor& x = *xp;
  POPRT_TRY(checkStorage(x));
  if (!ew::isNumeric(x.dtype())) return Error(ew::typeError(x.dtype()));
  POPRT_ASSIGN_OR_RETURN(int64_t axis_value, scalarInt(*ap, "axis"));
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(axis_value, static_cast<int64_t>(x.shape().size())));
  const bool exclusive = node.attrInt("exclusive", 0) != 0, reverse = node.attrInt("reverse", 0) != 0;
  ew::AxisSplit s = ew::splitAt(x.shape(), axis);
  Tensor y(x.dtype(), x.shape());
  POPRT_TRY(dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    using Acc = std::conditional_t<std::is_floating_point_v<C>, double, C>;
    if constexpr (!std::is_same_v<T, bool>) {
      auto src = x.data<T>();
      auto dst = y.data<T>();
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          Acc acc = 0;
          for (int64_t j = 0; j < s.len; ++j) {
            const int64_t k = reverse ? s.len - 1 - j : j;
            const int64_t at = (o * s.len + k) * s.inner + i;
            Acc v = static_cast<Acc>(toCompute(src[at]));
            if (!exclusive) acc = ew::wrapAdd(acc, v);
            if constexpr (std::is_floating_point_v<Acc>)
              dst[at] = castFromDouble<T>(acc);
            else
              dst[at] = static_cast<T>(acc);
            if (exclusive) acc = ew::wrapAdd(acc, v);
          }
        }
    }
  }));
  return single(std::move(y));
}

// TopK: k is an attribute before opset 10 and an input from 10; largest/sorted exist from 11.
// Equal values keep their index order (lower index first); NaN sorts above every number.
Expected<std::vector<Tensor>> evalTopK(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  POPRT_TRY(checkStorage(x));
  if (!ew::isNumeric(x.dtype())) return Error(ew::typeError(x.dtype()));
  int64_t k = 0;
  if (ctx.opset() >= 10) {
    POPRT_ASSIGN_OR_RETURN(const Tensor* kp, requireInput(in, 1));
    POPRT_ASSIGN_OR_RETURN(k, scalarInt(*kp, "k"));
  } else {
    if (!node.hasAttr("k")) return Error("attribute k is required");
    k = node.attrInt("k", 0);
  }
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", -1), rank));
  const bool largest = ctx.opset() < 11 || node.attrInt("largest", 1) != 0;
  ew::AxisSplit s = ew::splitAt(x.shape(), axis);
  if (k < 0 || k > s.len)
    return Error("k = " + std::to_string(k) + " is out of range for an axis of size " + std::to_string(s.len));
  Shape out = x.shape();
  out[axis] = k;
  Tensor values(x.dtype(), out), indices(DType::Int64, out);
  auto pi = indices.data<int64_t>();
  POPRT_TRY(dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    if constexpr (!std::is_same_v<T, bool>) {
      auto src = x.data<T>();
      auto pv = values.data<T>();
      std::vector<C> row(static_cast<size_t>(s.len));
      std::vector<int64_t> order(static_cast<size_t>(s.len));
      // A strict total order: by value (NaN above all), then by index.
      auto before = [&](int64_t a, int64_t b) {
        C va = row[a], vb = row[b];
        bool na = ew::isNaNValue(va), nb = ew::isNaNValue(vb);
        if (na != nb) return largest ? na : nb;
        if (!na && va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          const int64_t base = o * s.len * s.inner + i;
          for (int64_t j = 0; j < s.len; ++j) row[j] = toCompute(src[base + j * s.inner]);
          std::iota(order.begin(), order.end(), int64_t{0});
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            const int64_t at = (o * k + j) * s.inner + i;
            pv[at] = src[base + order[j] * s.inner];
            pi[at] = order[j];
          }
        }
    }
  }));
  std::vector<Tensor> outs;
  outs.push_back(std::move(values));
  outs.push_back(std::move(indices));
  return outs;
}

}  // namespace

void registerReduceOps(std::vector<OpDef>& ops) {
  for (const auto& r : kReduce)
    ops.push_back({r.op_type, Fp16Policy::AccumulateFp32, LoweringFamily::Reduce,
                   [e = &r](const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
                     return evalReduce(*e, node, in, ctx);
                   }});
  ops.push_back(
      {"ArgMax", Fp16Policy::Convert, LoweringFamily::None,
       [](const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) { return evalArg(true, node, in); }});
  ops.push_back(
      {"ArgMin", Fp16Policy::Convert, LoweringFamily::None,
       [](const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) { return evalArg(false, node, in); }});
  const std::pair<const char*, SoftKind> soft[] = {
      {"Softmax", SoftKind::Softmax}, {"LogSoftmax", SoftKind::LogSoftmax}, {"Hardmax", SoftKind::Hardmax}};
  for (const auto& [name, kind] : soft)
    ops.push_back({name, Fp16Policy::AccumulateFp32, kind == SoftKind::Hardmax ? LoweringFamily::None : LoweringFamily::Softmax,
                   [kind = kind](const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
                     return evalSoft(kind, node, in, ctx);
                   }});
  ops.push_back({"CumSum", Fp16Policy::AccumulateFp32, LoweringFamily::CumSum,
                 [](const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) { return evalCumSum(node, in); }});
  ops.push_back({"TopK", Fp16Policy::Convert, LoweringFamily::None, evalTopK});
}

}  // namespace poprt::ops
