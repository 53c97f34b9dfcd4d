#include "lib/ops/control_flow_util.h"

#include <atomic>

#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::cf {
namespace {

std::atomic<int64_t> g_max_iterations{kMaxIterations};

}  // namespace

int64_t maxIterations() { return g_max_iterations.load(std::memory_order_relaxed); }
IterationCapForTesting::IterationCapForTesting(int64_t cap) : saved_(g_max_iterations.exchange(cap)) {}
IterationCapForTesting::~IterationCapForTesting() { g_max_iterations.store(saved_); }

Expected<Tensor> sliceAxis(const Tensor& t, int64_t axis, int64_t index) {
  const Shape& s = t.shape();
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return Error("internal: slice axis out of range");
  if (index < 0 || index >= s[axis]) return Error("internal: slice index out of range");
  Shape out_shape = s;
  out_shape.erase(out_shape.begin() + axis);
  POPRT_ASSIGN_OR_RETURN(Tensor out, makeOutput(t.dtype(), out_shape));
  const int64_t outer = shapeProduct(s, 0, axis), inner = shapeProduct(s, axis + 1, s.size());
  for (int64_t o = 0; o < outer; ++o) copyBlock(t, (o * s[axis] + index) * inner, out, o * inner, inner);
  return out;
}

Expected<Tensor> rangeAxis(const Tensor& t, int64_t axis, int64_t begin, int64_t count) {
  const Shape& s = t.shape();
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return Error("internal: range axis out of range");
  if (begin < 0 || count < 0 || begin > s[axis] || count > s[axis] - begin) return Error("internal: range out of bounds");
  Shape out_shape = s;
  out_shape[axis] = count;
  POPRT_ASSIGN_OR_RETURN(Tensor out, makeOutput(t.dtype(), out_shape));
  const int64_t outer = shapeProduct(s, 0, axis), inner = shapeProduct(s, axis + 1, s.size());
  for (int64_t o = 0; o < outer; ++o) copyBlock(t, (o * s[axis] + begin) * inner, out, o * count * inner, count * inner);
  return out;
}

Expected<Tensor> stackAxis(const std::vector<Tensor>& items, int64_t axis) {
  if (items.empty()) return Error("internal: nothing to stack");
  const Tensor& first = items[0];
  const Shape& s = first.shape();
  if (axis < 0 || axis > static_cast<int64_t>(s.size())) return Error("internal: stack axis out of range");
  for (const Tensor& t : items) {
    if (t.dtype() != first.dtype())
      return Error("items to stack differ in dtype: " + std::string(dtypeName(first.dtype())) + " and " +
                   std::string(dtypeName(t.dtype())));
    if (t.shape() != s) return Error("items to stack differ in shape: " + shapeToString(s) + " and " + shapeToString(t.shape()));
  }
  Shape out_shape = s;
  out_shape.insert(out_shape.begin() + axis, static_cast<int64_t>(items.size()));
  POPRT_ASSIGN_OR_RETURN(Tensor out, makeOutput(first.dtype(), out_shape));
  const int64_t outer = shapeProduct(s, 0, axis), inner = shapeProduct(s, axis, s.size());
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i) copyBlock(items[i], o * inner, out, (o * n + i) * inner, inner);
  return out;
}

Expected<Tensor> concatAxis(const std::vector<Tensor>& items, int64_t axis) {
  if (items.empty()) return Error("internal: nothing to concatenate");
  const Tensor& first = items[0];
  const Shape& s = first.shape();
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return Error("internal: concat axis out of range");
  int64_t total = 0;
  for (const Tensor& t : items) {
    if (t.dtype() != first.dtype())
      return Error("items to concatenate differ in dtype: " + std::string(dtypeName(first.dtype())) + " and " +
                   std::string(dtypeName(t.dtype())));
    bool ok = t.shape().size() == s.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int64_t>(d) == axis || t.shape()[d] == s[d];
    if (!ok)
      return Error("items to concatenate differ in shape off axis " + std::to_string(axis) + ": " + shapeToString(s) + " and " +
                   shapeToString(t.shape()));
    total += t.shape()[axis];
    if (total > kMaxElements) return Error("concatenation is too large");
  }
  Shape out_shape = s;
  out_shape[axis] = total;
  POPRT_ASSIGN_OR_RETURN(Tensor out, makeOutput(first.dtype(), out_shape));
  const int64_t outer = shapeProduct(s, 0, axis), inner = shapeProduct(s, axis + 1, s.size());
  int64_t offset = 0;  // along the axis
  for (const Tensor& t : items) {
    const int64_t len = t.shape()[axis];
    for (int64_t o = 0; o < outer; ++o) copyBlock(t, o * len * inner, out, (o * total + offset) * inner, len * inner);
    offset += len;
  }
  return out;
}

Expected<const ir::Graph*> graphAttr(const ir::Node& node, const std::string& name) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end()) return Error("graph attribute '" + name + "' is missing");
  auto* g = std::get_if<ir::GraphPtr>(&it->second.value);
  if (!g || !*g) return Error("attribute '" + name + "' is not a graph");
  return static_cast<const ir::Graph*>(g->get());
}

Expected<bool> scalarBool(const Tensor& t, const std::string& what) {
  if (t.numElements() != 1) return Error(what + " must have one element, got shape " + shapeToString(t.shape()));
  if (t.dtype() == DType::Bool) return t.data<uint8_t>()[0] != 0;
  if (!isInteger(t.dtype()) && !isFloatingPoint(t.dtype()))
    return Error(what + " must be bool, got " + std::string(dtypeName(t.dtype())));
  bool nonzero = false;
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) nonzero = static_cast<double>(toCompute(t.data<T>()[0])) != 0.0;
  }));
  return nonzero;
}

Tensor boolScalar(bool v) {
  Tensor t(DType::Bool, {});
  t.data<uint8_t>()[0] = v ? 1 : 0;
  return t;
}

std::string kindName(const RtValue& v) {
  switch (v.kind) {
    case RtValue::Kind::Tensor: return "tensor";
    case RtValue::Kind::Sequence: return "sequence";
    case RtValue::Kind::None: return "empty optional";
  }
  return "value";
}

}  // namespace poprt::ops::cf
