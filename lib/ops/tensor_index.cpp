// Indexing ops of the tensor family. Every index read from a tensor is range-checked: negative
// indices wrap once (as ONNX allows), anything else out of range is an error.
#include "lib/ops/tensor_index.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "lib/ops/tensor_util.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace {

using namespace tensor_detail;

int64_t dimOf(const Tensor& t, int64_t d) { return t.shape()[static_cast<size_t>(d)]; }

// ---- Gather family -----------------------------------------------------------------------

Outputs evalGather(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* data, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ind, requireInput(in, 1));
  const int64_t r = rankOf(*data);
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), r));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> idx, toInt64s(*ind, "indices"));
  const int64_t dim = dimOf(*data, axis);
  for (auto& i : idx) { POPRT_ASSIGN_OR_RETURN(i, wrapIndex(i, dim)); }
  Shape shape(data->shape().begin(), data->shape().begin() + axis);
  shape.insert(shape.end(), ind->shape().begin(), ind->shape().end());
  shape.insert(shape.end(), data->shape().begin() + axis + 1, data->shape().end());
  POPRT_TRY(checkedElementCount(shape));
  const int64_t outer = shapeProduct(data->shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = shapeProduct(data->shape(), static_cast<size_t>(axis) + 1, data->shape().size());
  const int64_t n = static_cast<int64_t>(idx.size());
  Tensor y(data->dtype(), shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      copyBlock(*data, (o * dim + idx[static_cast<size_t>(j)]) * inner, y, (o * n + j) * inner, inner);
  return single(std::move(y));
}

// Checks indices/updates against data for GatherElements/ScatterElements: same rank, and no
// dim larger than data's off the axis (so every position maps inside data).
Status checkElementsShapes(const Tensor& data, const Tensor& ind, int64_t axis) {
  if (rankOf(ind) != rankOf(data))
    return Error("indices rank " + std::to_string(rankOf(ind)) + " differs from data rank " + std::to_string(rankOf(data)));
  for (int64_t d = 0; d < rankOf(data); ++d)
    if (d != axis && dimOf(ind, d) > dimOf(data, d))
      return Error("indices shape " + shapeToString(ind.shape()) + " exceeds data shape " + shapeToString(data.shape()) +
                   " off the axis");
  return okStatus();
}

// For each element of `ind` (shape of indices), the flat offset in data it designates.
Expected<std::vector<int64_t>> elementOffsets(const Tensor& data, const Tensor& ind, int64_t axis) {
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> idx, toInt64s(ind, "indices"));
  const std::vector<int64_t> data_strides = contiguousStrides(data.shape()), ind_strides = contiguousStrides(ind.shape());
  const int64_t dim = dimOf(data, axis);
  std::vector<int64_t> pos;
  for (size_t i = 0; i < idx.size(); ++i) {
    unravel(static_cast<int64_t>(i), ind_strides, pos);
    POPRT_ASSIGN_OR_RETURN(pos[static_cast<size_t>(axis)], wrapIndex(idx[i], dim));
    int64_t off = 0;
    for (size_t d = 0; d < pos.size(); ++d) off += pos[d] * data_strides[d];
    idx[i] = off;
  }
  return idx;
}

Outputs evalGatherElements(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* data, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ind, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), rankOf(*data)));
  POPRT_TRY(checkElementsShapes(*data, *ind, axis));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> src, elementOffsets(*data, *ind, axis));
  return single(takeElements(*data, ind->shape(), src));
}

// The flat offsets of the slices GatherND/ScatterND address: for each index tuple (the last dim
// of `ind`), the offset of the first element of its slice of `slice` elements.
struct NdPlan {
  std::vector<int64_t> offsets;
  int64_t slice = 1;
  Shape out_shape;  // indices.shape[:-1] + data.shape[batch + k:]
};

Expected<NdPlan> planNd(const Tensor& data, const Tensor& ind, int64_t batch) {
  const int64_t r = rankOf(data), q = rankOf(ind);
  if (r < 1 || q < 1) return Error("data and indices must have rank >= 1");
  if (batch < 0 || batch >= std::min(r, q)) return Error("batch_dims " + std::to_string(batch) + " is out of range");
  const int64_t k = dimOf(ind, q - 1);
  if (k < 1 || k > r - batch)
    return Error("indices' last dim " + std::to_string(k) + " must be in [1, " + std::to_string(r - batch) + "]");
  for (int64_t d = 0; d < batch; ++d)
    if (dimOf(ind, d) != dimOf(data, d)) return Error("batch dims of data and indices differ");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> idx, toInt64s(ind, "indices"));
  NdPlan plan;
  plan.out_shape.assign(ind.shape().begin(), ind.shape().end() - 1);
  plan.out_shape.insert(plan.out_shape.end(), data.shape().begin() + batch + k, data.shape().end());
  plan.slice = shapeProduct(data.shape(), static_cast<size_t>(batch + k), data.shape().size());
  const std::vector<int64_t> strides = contiguousStrides(data.shape());
  const int64_t tuples = k ? static_cast<int64_t>(idx.size()) / k : 0;
  const int64_t per_batch = shapeProduct(ind.shape(), static_cast<size_t>(batch), static_cast<size_t>(q - 1));
  const int64_t batch_size = shapeProduct(data.shape(), static_cast<size_t>(batch), data.shape().size());
  plan.offsets.resize(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = per_batch ? (t / per_batch) * batch_size : 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t d = batch + j;
      POPRT_ASSIGN_OR_RETURN(int64_t i, wrapIndex(idx[static_cast<size_t>(t * k + j)], dimOf(data, d)));
      off += i * strides[static_cast<size_t>(d)];
    }
    plan.offsets[static_cast<size_t>(t)] = off;
  }
  return plan;
}

Outputs evalGatherND(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* data, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ind, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(NdPlan plan, planNd(*data, *ind, node.attrInt("batch_dims", 0)));
  POPRT_TRY(checkedElementCount(plan.out_shape));
  Tensor y(data->dtype(), plan.out_shape);
  for (size_t t = 0; t < plan.offsets.size(); ++t)
    copyBlock(*data, plan.offsets[t], y, static_cast<int64_t>(t) * plan.slice, plan.slice);
  return single(std::move(y));
}

// ---- Scatter family ----------------------------------------------------------------------

enum class Reduction { None, Add, Mul, Max, Min };

Expected<Reduction> reductionOf(const ir::Node& node) {
  const std::string r = node.attrString("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  return Error("reduction '" + r + "' is not supported");
}

// y[dst[i] + j] (op)= updates[i * block + j] for every i and j < block.
Status applyUpdates(Tensor& y, const Tensor& updates, const std::vector<int64_t>& dst, int64_t block, Reduction red) {
  if (updates.dtype() != y.dtype()) return Error("updates and data have different dtypes");
  if (red == Reduction::None) {
    for (size_t i = 0; i < dst.size(); ++i) copyBlock(updates, static_cast<int64_t>(i) * block, y, dst[i], block);
    return okStatus();
  }
  if (y.dtype() == DType::String) return Error("reductions are not defined for strings");
  return dispatchNumeric(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto py = y.data<T>();
    auto pu = updates.data<T>();
    for (size_t i = 0; i < dst.size(); ++i)
      for (int64_t j = 0; j < block; ++j) {
        T& a = py[static_cast<size_t>(dst[i] + j)];
        const T b = pu[static_cast<size_t>(static_cast<int64_t>(i) * block + j)];
        if constexpr (std::is_same_v<T, bool>) {
          a = (red == Reduction::Add || red == Reduction::Max) ? (a || b) : (a && b);
        } else {
          const auto ca = toCompute(a), cb = toCompute(b);
          using C = typename ComputeType<T>::type;
          C v = ca;
          switch (red) {
            case Reduction::Add: v = static_cast<C>(ca + cb); break;
            case Reduction::Mul: v = static_cast<C>(ca * cb); break;
            case Reduction::Max: v = std::max(ca, cb); break;
            case Reduction::Min: v = std::min(ca, cb); break;
            case Reduction::None: break;
          }
          a = fromCompute<T>(v);
        }
      }
  });
}

Outputs evalScatterElements(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* data, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ind, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(const Tensor* upd, requireInput(in, 2));
  POPRT_ASSIGN_OR_RETURN(Reduction red, reductionOf(node));
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), rankOf(*data)));
  if (ind->shape() != upd->shape())
    return Error("indices shape " + shapeToString(ind->shape()) + " differs from updates shape " + shapeToString(upd->shape()));
  POPRT_TRY(checkElementsShapes(*data, *ind, axis));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> dst, elementOffsets(*data, *ind, axis));
  Tensor y = *data;
  POPRT_TRY(applyUpdates(y, *upd, dst, 1, red));
  return single(std::move(y));
}

Outputs evalScatterND(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* data, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ind, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(const Tensor* upd, requireInput(in, 2));
  POPRT_ASSIGN_OR_RETURN(Reduction red, reductionOf(node));
  POPRT_ASSIGN_OR_RETURN(NdPlan plan, planNd(*data, *ind, 0));
  if (upd->shape() != plan.out_shape)
    return Error("updates shape " + shapeToString(upd->shape()) + " must be " + shapeToString(plan.out_shape));
  Tensor y = *data;
  POPRT_TRY(applyUpdates(y, *upd, plan.offsets, plan.slice, red));
  return single(std::move(y));
}

// ---- OneHot, NonZero, Compress -----------------------------------------------------------

Outputs evalOneHot(const ir::Node& node, const Inputs& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* ind, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* dt, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(const Tensor* values, requireInput(in, 2));
  if (values->numElements() != 2) return Error("values must have 2 elements (off, on)");
  if (dt->numElements() != 1) return Error("depth must be a scalar");
  POPRT_ASSIGN_OR_RETURN(std::vector<double> dv, toDoubles(*dt));
  if (!(dv[0] >= 1 && dv[0] <= static_cast<double>(kMaxElements))) return Error("depth must be a positive count");
  const int64_t depth = static_cast<int64_t>(dv[0]);
  const int64_t r = rankOf(*ind);
  POPRT_ASSIGN_OR_RETURN(const int64_t axis, normalizeAxis(node.attrInt("axis", -1), r + 1));  // an axis of the output
  POPRT_ASSIGN_OR_RETURN(std::vector<double> iv, toDoubles(*ind));
  Shape shape(ind->shape().begin(), ind->shape().begin() + axis);
  shape.push_back(depth);
  shape.insert(shape.end(), ind->shape().begin() + axis, ind->shape().end());
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedElementCount(shape));
  const int64_t outer = shapeProduct(ind->shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = shapeProduct(ind->shape(), static_cast<size_t>(axis), ind->shape().size());
  std::vector<int64_t> src(static_cast<size_t>(n), 0);  // values[0] = off, values[1] = on
  const bool wrap = ctx.opset() >= 11;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const double v = std::trunc(iv[static_cast<size_t>(o * inner + i)]);
      if (!(v >= -static_cast<double>(depth) && v < static_cast<double>(depth))) continue;  // all off (also NaN)
      int64_t k = static_cast<int64_t>(v);
      if (k < 0) {
        if (!wrap) continue;
        k += depth;
      }
      src[static_cast<size_t>((o * depth + k) * inner + i)] = 1;
    }
  Tensor flat_values = *values;
  return single(takeElements(flat_values, shape, src));
}

// Whether each element is non-zero (non-empty for strings).
Expected<std::vector<bool>> truthValues(const Tensor& t) {
  std::vector<bool> out(static_cast<size_t>(t.numElements()));
  if (t.dtype() == DType::String) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = !t.strings()[i].empty();
    return out;
  }
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = toCompute(p[i]) != toCompute(T{});
  }));
  return out;
}

Outputs evalNonZero(const ir::Node&, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(std::vector<bool> nz, truthValues(*x));
  Shape shape = x->shape().empty() ? Shape{1} : x->shape();  // a scalar counts as one element of a 1-D tensor
  const int64_t r = static_cast<int64_t>(shape.size());
  const int64_t count = std::count(nz.begin(), nz.end(), true);
  Tensor y(DType::Int64, {r, count});
  auto p = y.data<int64_t>();
  const std::vector<int64_t> strides = contiguousStrides(shape);
  std::vector<int64_t> idx;
  int64_t col = 0;
  for (size_t i = 0; i < nz.size(); ++i) {
    if (!nz[i]) continue;
    unravel(static_cast<int64_t>(i), strides, idx);
    for (int64_t d = 0; d < r; ++d) p[static_cast<size_t>(d * count + col)] = idx[static_cast<size_t>(d)];
    ++col;
  }
  return single(std::move(y));
}

Outputs evalCompress(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* c, requireInput(in, 1));
  if (c->shape().size() != 1) return Error("condition must be 1-D, got shape " + shapeToString(c->shape()));
  if (c->dtype() == DType::String) return Error("condition must be bool");
  POPRT_ASSIGN_OR_RETURN(std::vector<bool> cond, truthValues(*c));
  Shape in_shape = x->shape();
  int64_t axis = 0;
  if (node.hasAttr("axis")) {
    POPRT_ASSIGN_OR_RETURN(axis, normalizeAxis(node.attrInt("axis", 0), rankOf(*x)));
  } else {
    in_shape = {x->numElements()};
  }
  const int64_t dim = in_shape[static_cast<size_t>(axis)];
  std::vector<int64_t> keep;
  for (size_t j = 0; j < cond.size(); ++j) {
    if (!cond[j]) continue;
    if (static_cast<int64_t>(j) >= dim)
      return Error("condition selects index " + std::to_string(j) + " of an axis of size " + std::to_string(dim));
    keep.push_back(static_cast<int64_t>(j));
  }
  const int64_t outer = shapeProduct(in_shape, 0, static_cast<size_t>(axis));
  const int64_t inner = shapeProduct(in_shape, static_cast<size_t>(axis) + 1, in_shape.size());
  Shape shape = in_shape;
  shape[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
  Tensor y(x->dtype(), shape);
  const int64_t kept = static_cast<int64_t>(keep.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < kept; ++j)
      copyBlock(*x, (o * dim + keep[static_cast<size_t>(j)]) * inner, y, (o * kept + j) * inner, inner);
  return single(std::move(y));
}

// ---- Unique ------------------------------------------------------------------------------

// -1, 0, 1 comparing elements a and b of t; NaN sorts last and equals NaN (numpy's unique).
std::function<int(int64_t, int64_t)> elementComparator(const Tensor& t) {
  if (t.dtype() == DType::String)
    return [&t](int64_t a, int64_t b) {
      const int c = t.strings()[static_cast<size_t>(a)].compare(t.strings()[static_cast<size_t>(b)]);
      return (c > 0) - (c < 0);
    };
  std::function<int(int64_t, int64_t)> cmp;
  (void)dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cmp = [&t](int64_t a, int64_t b) {
      const auto va = toCompute(t.data<T>()[static_cast<size_t>(a)]), vb = toCompute(t.data<T>()[static_cast<size_t>(b)]);
      if constexpr (std::is_floating_point_v<decltype(va)>) {
        const bool na = std::isnan(va), nb = std::isnan(vb);
        if (na || nb) return static_cast<int>(na) - static_cast<int>(nb);
      }
      return (va > vb) - (va < vb);
    };
  });
  return cmp;
}

Outputs evalUnique(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  if (x->dtype() != DType::String && !isInteger(x->dtype()) && !isFloatingPoint(x->dtype()) && x->dtype() != DType::Bool)
    return Error("dtype " + std::string(dtypeName(x->dtype())) + " is not supported");
  const bool sorted = node.attrInt("sorted", 1) != 0;
  Shape shape = x->shape();
  int64_t axis = 0;
  if (node.hasAttr("axis")) {
    POPRT_ASSIGN_OR_RETURN(axis, normalizeAxis(node.attrInt("axis", 0), rankOf(*x)));
  } else {
    shape = {x->numElements()};
  }
  const int64_t m = shape[static_cast<size_t>(axis)];
  const int64_t outer = shapeProduct(shape, 0, static_cast<size_t>(axis));
  const int64_t inner = shapeProduct(shape, static_cast<size_t>(axis) + 1, shape.size());
  auto elem = elementComparator(*x);
  // Slices a and b along the axis, compared element by element in row-major order.
  auto cmpSlices = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        if (int c = elem((o * m + a) * inner + i, (o * m + b) * inner + i)) return c;
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmpSlices(a, b) < 0; });
  // Groups of equal slices in sorted order; the first member of each is its first occurrence.
  std::vector<int64_t> first, counts, group_of(static_cast<size_t>(m));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || cmpSlices(order[i - 1], order[i]) != 0) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  const int64_t u = static_cast<int64_t>(first.size());
  std::vector<int64_t> rank(static_cast<size_t>(u));  // output position of each group
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(static_cast<size_t>(u));
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
    for (int64_t p = 0; p < u; ++p) rank[static_cast<size_t>(by_first[static_cast<size_t>(p)])] = p;
  }
  std::vector<int64_t> out_first(static_cast<size_t>(u)), out_counts(static_cast<size_t>(u)), inverse(static_cast<size_t>(m));
  for (int64_t g = 0; g < u; ++g) {
    out_first[static_cast<size_t>(rank[static_cast<size_t>(g)])] = first[static_cast<size_t>(g)];
    out_counts[static_cast<size_t>(rank[static_cast<size_t>(g)])] = counts[static_cast<size_t>(g)];
  }
  for (int64_t j = 0; j < m; ++j) inverse[static_cast<size_t>(j)] = rank[static_cast<size_t>(group_of[static_cast<size_t>(j)])];
  Shape y_shape = node.hasAttr("axis") ? x->shape() : Shape{u};
  y_shape[static_cast<size_t>(axis)] = u;
  Tensor y(x->dtype(), y_shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < u; ++p)
      copyBlock(*x, (o * m + out_first[static_cast<size_t>(p)]) * inner, y, (o * u + p) * inner, inner);
  std::vector<Tensor> outs;
  outs.push_back(std::move(y));
  outs.push_back(int64Tensor(out_first, {u}));
  outs.push_back(int64Tensor(inverse, {m}));
  outs.push_back(int64Tensor(out_counts, {u}));
  return outs;
}

// ---- ReverseSequence ---------------------------------------------------------------------

Outputs evalReverseSequence(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* lt, requireInput(in, 1));
  if (rankOf(*x) < 2) return Error("input must have rank >= 2");
  const int64_t time_axis = node.attrInt("time_axis", 0), batch_axis = node.attrInt("batch_axis", 1);
  if ((time_axis != 0 && time_axis != 1) || (batch_axis != 0 && batch_axis != 1) || time_axis == batch_axis)
    return Error("time_axis and batch_axis must be 0 and 1 in some order");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> lens, toInt64s(*lt, "sequence_lens"));
  const int64_t batch = dimOf(*x, batch_axis), steps = dimOf(*x, time_axis);
  if (lt->shape().size() != 1 || static_cast<int64_t>(lens.size()) != batch)
    return Error("sequence_lens must be 1-D with " + std::to_string(batch) + " entries");
  for (int64_t l : lens)
    if (l < 0 || l > steps)
      return Error("sequence length " + std::to_string(l) + " is out of range [0, " + std::to_string(steps) + "]");
  const std::vector<int64_t> strides = contiguousStrides(x->shape());
  const int64_t n = x->numElements();
  std::vector<int64_t> src(static_cast<size_t>(n)), idx;
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, strides, idx);
    const int64_t b = idx[static_cast<size_t>(batch_axis)], t = idx[static_cast<size_t>(time_axis)];
    const int64_t len = lens[static_cast<size_t>(b)];
    src[static_cast<size_t>(i)] = t < len ? i + (len - 1 - 2 * t) * strides[static_cast<size_t>(time_axis)] : i;
  }
  return single(takeElements(*x, x->shape(), src));
}

}  // namespace

void registerIndexOps(std::vector<OpDef>& ops) {
  auto add = [&](const char* name, Fp16Policy policy, EvalFn fn, LoweringFamily lowering = LoweringFamily::None) {
    ops.push_back({name, policy, lowering, std::move(fn)});
  };
  const auto agnostic = Fp16Policy::TypeAgnostic;
  // With constant indices these only move elements (see codegen/rearrange.h).
  add("Gather", agnostic, evalGather, LoweringFamily::Rearrange);
  add("GatherElements", agnostic, evalGatherElements, LoweringFamily::Rearrange);
  add("GatherND", agnostic, evalGatherND, LoweringFamily::Rearrange);
  add("Scatter", Fp16Policy::Convert, evalScatterElements);
  add("ScatterElements", Fp16Policy::Convert, evalScatterElements);
  add("ScatterND", Fp16Policy::Convert, evalScatterND);
  add("OneHot", agnostic, evalOneHot);
  add("NonZero", agnostic, evalNonZero);
  add("Compress", agnostic, evalCompress);
  add("Unique", agnostic, evalUnique);
  add("ReverseSequence", agnostic, evalReverseSequence);
}

}  // namespace poprt::ops
