// Tensor op family of the reference evaluator (see registry.h): constants, shape manipulation,
// slicing, padding, tiling. Ops that make tensors from shapes (Shape, ConstantOfShape, Range, Trilu,
// EyeLike...) live in tensor_making_ops.cpp, indexing ops in tensor_index.cpp, Cast in tensor_cast.cpp.
// Data movement copies elements without looking at them, so every dtype (string too) works.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lib/ops/broadcast.h"
#include "lib/ops/registry.h"
#include "lib/ops/tensor_cast.h"
#include "lib/ops/tensor_index.h"
#include "lib/ops/tensor_util.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace {

using namespace tensor_detail;

// ---- Constant, Identity ------------------------------------------------------------------

Outputs evalConstant(const ir::Node& node, const Inputs&, EvalContext&) {
  if (node.hasAttr("sparse_value")) return Error("sparse_value is not supported");
  std::vector<Tensor> found;
  for (const auto& [name, attr] : node.attributes) {
    const auto& v = attr.value;
    if (name == "value") {
      if (auto* t = std::get_if<Tensor>(&v))
        found.push_back(*t);
      else
        return Error("attribute 'value' must be a tensor");
    } else if (name == "value_float") {
      auto* f = std::get_if<float>(&v);
      if (!f) return Error("attribute 'value_float' must be a float");
      Tensor t(DType::Float, {});
      t.data<float>()[0] = *f;
      found.push_back(std::move(t));
    } else if (name == "value_floats") {
      auto* f = std::get_if<std::vector<float>>(&v);
      if (!f) return Error("attribute 'value_floats' must be a list of floats");
      Tensor t(DType::Float, {static_cast<int64_t>(f->size())});
      std::copy(f->begin(), f->end(), t.data<float>().begin());
      found.push_back(std::move(t));
    } else if (name == "value_int") {
      auto* i = std::get_if<int64_t>(&v);
      if (!i) return Error("attribute 'value_int' must be an int");
      found.push_back(int64Tensor({*i}, {}));
    } else if (name == "value_ints") {
      auto* i = std::get_if<std::vector<int64_t>>(&v);
      if (!i) return Error("attribute 'value_ints' must be a list of ints");
      found.push_back(int64Tensor(*i, {static_cast<int64_t>(i->size())}));
    } else if (name == "value_string") {
      auto* s = std::get_if<std::string>(&v);
      if (!s) return Error("attribute 'value_string' must be a string");
      Tensor t(DType::String, {});
      t.strings()[0] = *s;
      found.push_back(std::move(t));
    } else if (name == "value_strings") {
      auto* s = std::get_if<std::vector<std::string>>(&v);
      if (!s) return Error("attribute 'value_strings' must be a list of strings");
      Tensor t(DType::String, {static_cast<int64_t>(s->size())});
      t.strings() = *s;
      found.push_back(std::move(t));
    }
  }
  if (found.size() != 1) return Error("exactly one value attribute must be set, got " + std::to_string(found.size()));
  return found;
}

Expected<std::vector<RtValue>> evalIdentity(const ir::Node&, const std::vector<const RtValue*>& in, EvalContext&) {
  if (in.empty() || !in[0]) return Error("input 0 is required");
  return std::vector<RtValue>{*in[0]};
}

// ---- Reshape family ----------------------------------------------------------------------

Outputs evalReshape(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* s, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, intList(*s, "shape"));
  const bool allowzero = node.attrInt("allowzero", 0) != 0;
  int64_t infer = -1;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= x->shape().size())
        return Error("shape entry " + std::to_string(i) + " is 0 but the input has rank " + std::to_string(x->shape().size()));
      shape[i] = x->shape()[i];
    } else if (shape[i] == -1) {
      if (infer >= 0) return Error("shape has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      return Error("shape entry " + std::to_string(shape[i]) + " is invalid");
    }
    if (shape[i] == 0) has_zero = true;
  }
  if (infer >= 0) {
    if (has_zero) return Error("shape " + shapeToString(shape) + " has both -1 and 0: the -1 cannot be inferred");
    Shape known = shape;
    known[static_cast<size_t>(infer)] = 1;
    POPRT_ASSIGN_OR_RETURN(int64_t k, checkedElementCount(known));
    if (x->numElements() % k != 0) return Error("cannot reshape " + shapeToString(x->shape()) + " to " + shapeToString(shape));
    shape[static_cast<size_t>(infer)] = x->numElements() / k;
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, reshaped(*x, shape));
  return single(std::move(y));
}

Outputs evalFlatten(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  const int64_t r = rankOf(*x);
  int64_t axis = node.attrInt("axis", 1);
  if (axis < -r || axis > r) return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= x->shape()[static_cast<size_t>(d)];
  POPRT_ASSIGN_OR_RETURN(Tensor y, reshaped(*x, {outer, inner}));
  return single(std::move(y));
}

// Axes from the attribute (before `input_opset`) or from input 1 (from it); nullopt if absent.
Expected<std::optional<std::vector<int64_t>>> axesOf(const ir::Node& node, const Inputs& in, EvalContext& ctx,
                                                     int64_t input_opset, const char* attr = "axes", size_t input = 1) {
  if (ctx.opset() < input_opset) {
    if (!node.hasAttr(attr)) return std::optional<std::vector<int64_t>>();
    return std::optional<std::vector<int64_t>>(node.attrInts(attr));
  }
  const Tensor* t = optionalInput(in, input);
  if (!t) return std::optional<std::vector<int64_t>>();
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> v, intList(*t, attr));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

Outputs evalSqueeze(const ir::Node& node, const Inputs& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(auto axes, axesOf(node, in, ctx, 13));
  const int64_t r = rankOf(*x);
  std::vector<bool> drop(static_cast<size_t>(r), false);
  if (axes) {
    POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> ax, normalizeAxes(*axes, r));
    for (int64_t a : ax) {
      if (x->shape()[static_cast<size_t>(a)] != 1)
        return Error("cannot squeeze axis " + std::to_string(a) + " of size " +
                     std::to_string(x->shape()[static_cast<size_t>(a)]));
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (int64_t d = 0; d < r; ++d) drop[static_cast<size_t>(d)] = x->shape()[static_cast<size_t>(d)] == 1;
  }
  Shape shape;
  for (int64_t d = 0; d < r; ++d)
    if (!drop[static_cast<size_t>(d)]) shape.push_back(x->shape()[static_cast<size_t>(d)]);
  POPRT_ASSIGN_OR_RETURN(Tensor y, reshaped(*x, shape));
  return single(std::move(y));
}

Outputs evalUnsqueeze(const ir::Node& node, const Inputs& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(auto axes, axesOf(node, in, ctx, 13));
  if (!axes) return Error("axes are required");
  const int64_t out_rank = rankOf(*x) + static_cast<int64_t>(axes->size());
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> ax, normalizeAxes(*axes, out_rank));
  Shape shape(static_cast<size_t>(out_rank), -1);
  for (int64_t a : ax) shape[static_cast<size_t>(a)] = 1;
  size_t next = 0;
  for (auto& d : shape)
    if (d < 0) d = x->shape()[next++];
  POPRT_ASSIGN_OR_RETURN(Tensor y, reshaped(*x, shape));
  return single(std::move(y));
}

Outputs evalTranspose(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  std::vector<int64_t> perm;
  for (int64_t d = rankOf(*x); d-- > 0;) perm.push_back(d);
  if (node.hasAttr("perm")) perm = node.attrInts("perm");
  POPRT_ASSIGN_OR_RETURN(Tensor y, transposeTensor(*x, perm));
  return single(std::move(y));
}

// ---- Concat, Split, Slice ----------------------------------------------------------------

Outputs evalConcat(const ir::Node& node, const Inputs& in, EvalContext&) {
  if (in.empty()) return Error("expects at least one input");
  for (size_t i = 0; i < in.size(); ++i) POPRT_TRY(requireInput(in, i));
  if (!node.hasAttr("axis")) return Error("attribute 'axis' is required");
  const Tensor& first = *in[0];
  const int64_t r = rankOf(first);
  if (r == 0) return Error("cannot concatenate rank-0 tensors");
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), r));
  Shape shape = first.shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (const Tensor* t : in) {
    if (t->dtype() != first.dtype()) return Error("inputs have different dtypes");
    if (rankOf(*t) != r) return Error("inputs have different ranks");
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && t->shape()[static_cast<size_t>(d)] != first.shape()[static_cast<size_t>(d)])
        return Error("input shapes " + shapeToString(first.shape()) + " and " + shapeToString(t->shape()) +
                     " differ outside axis " + std::to_string(axis));
    shape[static_cast<size_t>(axis)] += t->shape()[static_cast<size_t>(axis)];
  }
  POPRT_TRY(checkedElementCount(shape));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < r; ++d) inner *= shape[static_cast<size_t>(d)];
  Tensor y(first.dtype(), shape);
  const int64_t out_block = shape[static_cast<size_t>(axis)] * inner;
  int64_t offset = 0;
  for (const Tensor* t : in) {
    const int64_t block = t->shape()[static_cast<size_t>(axis)] * inner;
    for (int64_t o = 0; o < outer; ++o) copyBlock(*t, o * block, y, o * out_block + offset, block);
    offset += block;
  }
  return single(std::move(y));
}

Outputs evalSplit(const ir::Node& node, const Inputs& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  const int64_t r = rankOf(*x);
  if (r == 0) return Error("cannot split a rank-0 tensor");
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), r));
  POPRT_ASSIGN_OR_RETURN(auto split, axesOf(node, in, ctx, 13, "split"));
  const int64_t n = static_cast<int64_t>(node.outputs().size());
  if (n == 0) return Error("expects at least one output");
  const int64_t dim = x->shape()[static_cast<size_t>(axis)];
  std::vector<int64_t> parts;
  if (split) {
    parts = *split;
    if (static_cast<int64_t>(parts.size()) != n)
      return Error("split has " + std::to_string(parts.size()) + " entries for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t p : parts) {
      if (p < 0 || p > dim) return Error("split entry " + std::to_string(p) + " is invalid");
      sum += p;
    }
    if (sum != dim) return Error("split sums to " + std::to_string(sum) + ", not the axis size " + std::to_string(dim));
  } else {
    if (dim % n != 0)
      return Error("axis size " + std::to_string(dim) + " does not split into " + std::to_string(n) + " equal parts");
    parts.assign(static_cast<size_t>(n), dim / n);
  }
  std::vector<Tensor> outs;
  int64_t start = 0;
  for (int64_t p : parts) {
    outs.push_back(sliceAxis(*x, axis, start, p));
    start += p;
  }
  return outs;
}

// How many of start, start+step, ... lie before end (exclusive), for step != 0.
int64_t stepCount(int64_t start, int64_t end, int64_t step) {
  __int128 s = start, e = end, st = step;
  if (st > 0) return s < e ? static_cast<int64_t>((e - s + st - 1) / st) : 0;
  return s > e ? static_cast<int64_t>((s - e - st - 1) / -st) : 0;
}

Outputs evalSlice(const ir::Node& node, const Inputs& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  const int64_t r = rankOf(*x);
  std::vector<int64_t> starts, ends, axes, steps;
  bool has_axes = false, has_steps = false;
  if (ctx.opset() < 10) {
    if (!node.hasAttr("starts") || !node.hasAttr("ends")) return Error("attributes 'starts' and 'ends' are required");
    starts = node.attrInts("starts");
    ends = node.attrInts("ends");
    has_axes = node.hasAttr("axes");
    axes = node.attrInts("axes");
  } else {
    POPRT_ASSIGN_OR_RETURN(const Tensor* s, requireInput(in, 1));
    POPRT_ASSIGN_OR_RETURN(const Tensor* e, requireInput(in, 2));
    POPRT_ASSIGN_OR_RETURN(starts, intList(*s, "starts"));
    POPRT_ASSIGN_OR_RETURN(ends, intList(*e, "ends"));
    if (const Tensor* a = optionalInput(in, 3)) {
      has_axes = true;
      POPRT_ASSIGN_OR_RETURN(axes, intList(*a, "axes"));
    }
    if (const Tensor* st = optionalInput(in, 4)) {
      has_steps = true;
      POPRT_ASSIGN_OR_RETURN(steps, intList(*st, "steps"));
    }
  }
  if (starts.size() != ends.size()) return Error("starts and ends have different lengths");
  if (!has_axes)
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (!has_steps) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return Error("starts, ends, axes and steps must have the same length");
  POPRT_ASSIGN_OR_RETURN(axes, normalizeAxes(axes, r));
  Shape shape = x->shape();
  std::vector<int64_t> begin(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    const int64_t dim = x->shape()[a];
    int64_t s = starts[i], e = ends[i], st = steps[i];
    if (st == 0) return Error("slice step must not be 0");
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (dim == 0) {
      s = 0;
      shape[a] = 0;
    } else if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      shape[a] = stepCount(s, e, st);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      shape[a] = stepCount(s, e, st);
    }
    begin[a] = s;
    step[a] = st;
  }
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedElementCount(shape));
  const std::vector<int64_t> in_strides = contiguousStrides(x->shape());
  int64_t base = 0;
  std::vector<int64_t> strides(static_cast<size_t>(r));
  for (size_t d = 0; d < static_cast<size_t>(r); ++d) {
    base += begin[d] * in_strides[d];
    strides[d] = step[d] * in_strides[d];
  }
  return single(takeStrided(*x, std::move(shape), n == 0 ? 0 : base, strides));
}

// ---- Expand, Tile, Pad -------------------------------------------------------------------

Outputs evalExpand(const ir::Node&, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* s, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> target, intList(*s, "shape"));
  for (int64_t d : target)
    if (d < 0) return Error("shape " + shapeToString(target) + " has a negative dimension");
  POPRT_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(x->shape(), target));
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedElementCount(shape));
  const std::vector<int64_t> strides = broadcastStrides(x->shape(), shape), contiguous = contiguousStrides(shape);
  std::vector<int64_t> src(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) src[static_cast<size_t>(i)] = broadcastOffset(i, contiguous, strides);
  return single(takeElements(*x, shape, src));
}

Outputs evalTile(const ir::Node&, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* rt, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> reps, intList(*rt, "repeats"));
  const int64_t r = rankOf(*x);
  if (static_cast<int64_t>(reps.size()) != r)
    return Error("repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(r));
  Shape shape = x->shape();
  for (int64_t d = 0; d < r; ++d) {
    const int64_t rep = reps[static_cast<size_t>(d)], dim = shape[static_cast<size_t>(d)];
    if (rep < 0) return Error("repeats entry " + std::to_string(rep) + " is negative");
    if (dim != 0 && rep > kMaxElements / dim) return Error("tiled output is too large");
    shape[static_cast<size_t>(d)] = dim * rep;
  }
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedElementCount(shape));
  const std::vector<int64_t> in_strides = contiguousStrides(x->shape()), out_strides = contiguousStrides(shape);
  std::vector<int64_t> src(static_cast<size_t>(n)), idx;
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, out_strides, idx);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] % x->shape()[d]) * in_strides[d];
    src[static_cast<size_t>(i)] = off;
  }
  return single(takeElements(*x, shape, src));
}

Outputs evalPad(const ir::Node& node, const Inputs& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  const int64_t r = rankOf(*x);
  const std::string mode = node.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") return Error("mode '" + mode + "' is not supported");
  std::vector<int64_t> pads;
  Tensor fill;
  if (ctx.opset() < 11) {
    if (!node.hasAttr("pads")) return Error("attribute 'pads' is required");
    pads = node.attrInts("pads");
    Tensor v(DType::Float, {});
    v.data<float>()[0] = node.attrFloat("value", 0.0f);
    POPRT_ASSIGN_OR_RETURN(fill, castTensor(v, x->dtype()));
  } else {
    POPRT_ASSIGN_OR_RETURN(const Tensor* p, requireInput(in, 1));
    POPRT_ASSIGN_OR_RETURN(pads, intList(*p, "pads"));
    if (optionalInput(in, 3)) return Error("the axes input (opset 18) is not supported");
    if (const Tensor* c = optionalInput(in, 2)) {
      if (c->dtype() != x->dtype()) return Error("constant_value has a different dtype than the data");
      if (c->numElements() > 1) return Error("constant_value must be a scalar");
      fill = *c;
    }
  }
  if (static_cast<int64_t>(pads.size()) != 2 * r)
    return Error("pads has " + std::to_string(pads.size()) + " entries for rank " + std::to_string(r));
  Shape shape = x->shape();
  for (int64_t d = 0; d < r; ++d) {
    const int64_t dim = shape[static_cast<size_t>(d)], b = pads[static_cast<size_t>(d)], e = pads[static_cast<size_t>(d + r)];
    if (b < -kMaxElements || b > kMaxElements || e < -kMaxElements || e > kMaxElements) return Error("pads are too large");
    const int64_t out = dim + b + e;
    if (out < 0) return Error("pads remove more than axis " + std::to_string(d) + " holds");
    if (dim == 0 && out > 0 && mode != "constant") return Error("cannot pad an empty axis in " + mode + " mode");
    shape[static_cast<size_t>(d)] = out;
  }
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedElementCount(shape));
  const std::vector<int64_t> in_strides = contiguousStrides(x->shape()), out_strides = contiguousStrides(shape);
  std::vector<int64_t> src(static_cast<size_t>(n)), idx;
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, out_strides, idx);
    int64_t off = 0;
    for (int64_t d = 0; d < r && off >= 0; ++d) {
      const int64_t dim = x->shape()[static_cast<size_t>(d)];
      int64_t j = idx[static_cast<size_t>(d)] - pads[static_cast<size_t>(d)];
      if (j < 0 || j >= dim) {
        if (mode == "constant") {
          off = -1;
          break;
        } else if (mode == "edge") {
          j = std::clamp<int64_t>(j, 0, dim - 1);
        } else if (dim == 1) {
          j = 0;
        } else {  // reflect (numpy): periodic with period 2 * (dim - 1)
          const int64_t period = 2 * (dim - 1);
          j = ((j % period) + period) % period;
          if (j >= dim) j = period - j;
        }
      }
      off += j * in_strides[static_cast<size_t>(d)];
    }
    src[static_cast<size_t>(i)] = off;
  }
  return single(takeElements(*x, shape, src, &fill));
}

}  // namespace

void registerTensorOps(std::vector<OpDef>& ops) {
  auto add = [&](const char* name, Fp16Policy policy, EvalFn fn, LoweringFamily lowering = LoweringFamily::None) {
    ops.push_back({name, policy, lowering, std::move(fn)});
  };
  const auto agnostic = Fp16Policy::TypeAgnostic;
  const auto view = LoweringFamily::View, rearrange = LoweringFamily::Rearrange;
  add("Constant", agnostic, evalConstant);
  ops.push_back({"Identity", agnostic, view, nullptr, evalIdentity});
  add("Reshape", agnostic, evalReshape, view);
  add("Flatten", agnostic, evalFlatten, view);
  add("Squeeze", agnostic, evalSqueeze, view);
  add("Unsqueeze", agnostic, evalUnsqueeze, view);
  add("Transpose", agnostic, evalTranspose, rearrange);
  add("Concat", agnostic, evalConcat, rearrange);
  add("Split", agnostic, evalSplit, rearrange);
  add("Slice", agnostic, evalSlice, rearrange);
  add("Expand", agnostic, evalExpand, rearrange);
  add("Tile", agnostic, evalTile, rearrange);
  add("Pad", agnostic, evalPad, rearrange);
  registerTensorMakingOps(ops);
  registerCastOps(ops);
  registerIndexOps(ops);
}

}  // namespace poprt::ops
