// The shared op helpers of op_util.h that are not inline.
#include "lib/ops/op_util.h"

#include <cstring>

#include "lib/ops/broadcast.h"

namespace poprt::ops {

Expected<Tensor> makeOutput(DType dtype, const Shape& shape) {
  if (dtype != DType::String && dtypeSize(dtype) == 0)
    return Error("dtype " + std::string(dtypeName(dtype)) + " is not supported");
  POPRT_TRY(checkedElementCount(shape));
  return Tensor(dtype, shape);
}

Status checkStorage(const Tensor& t) {
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedNumElements(t.shape()));
  bool ok = t.dtype() == DType::String
                ? static_cast<int64_t>(t.strings().size()) == n
                : dtypeSize(t.dtype()) != 0 && t.byteSize() == static_cast<size_t>(n) * dtypeSize(t.dtype());
  if (!ok)
    return Error("tensor of shape " + shapeToString(t.shape()) + " and dtype " + std::string(dtypeName(t.dtype())) +
                 " has inconsistent storage");
  return okStatus();
}

Expected<std::vector<int64_t>> toInt64s(const Tensor& t, const std::string& what) {
  if (!isInteger(t.dtype()))
    return Error((what.empty() ? std::string("expected an integer tensor") : what + " must be an integer tensor") + ", got " +
                 std::string(dtypeName(t.dtype())));
  POPRT_TRY(checkStorage(t));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.numElements()));
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>)
      for (T v : t.data<T>()) out.push_back(static_cast<int64_t>(v));
  }));
  return out;
}

Expected<std::vector<double>> toDoubles(const Tensor& t) {
  POPRT_TRY(checkStorage(t));
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numElements()));
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.data<T>()) out.push_back(static_cast<double>(toCompute(v)));
  }));
  return out;
}

namespace {

Status checkScalar(const Tensor& t, const std::string& what) {
  if (t.numElements() != 1 || t.shape().size() > 1)
    return Error(what + " must be a scalar, got shape " + shapeToString(t.shape()));
  return okStatus();
}

}  // namespace

Expected<int64_t> scalarInt(const Tensor& t, const std::string& what) {
  if (!isInteger(t.dtype())) return Error(what + " must be an integer tensor, got " + std::string(dtypeName(t.dtype())));
  POPRT_TRY(checkScalar(t, what));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> v, toInt64s(t, what));
  return v[0];
}

Expected<double> scalarDouble(const Tensor& t, const std::string& what) {
  POPRT_TRY(checkScalar(t, what));
  auto v = toDoubles(t);
  if (!v.ok()) return Error(what + ": " + v.error().message());
  return (*v)[0];
}

Expected<Tensor> fromDoubles(DType dtype, const Shape& shape, const std::vector<double>& values, IntRounding rounding) {
  POPRT_ASSIGN_OR_RETURN(Tensor t, makeOutput(dtype, shape));
  if (static_cast<int64_t>(values.size()) != t.numElements()) return Error("internal: value count mismatch");
  POPRT_TRY(dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto d = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) d[i] = castFromDouble<T>(values[i], rounding);
  }));
  return t;
}

Expected<std::vector<int64_t>> intsAttr(const ir::Node& node, const std::string& name, size_t size, int64_t fill, int64_t lo,
                                        int64_t hi) {
  std::vector<int64_t> v = node.attrInts(name, std::vector<int64_t>(size, fill));
  if (v.size() != size)
    return Error("attribute '" + name + "' has " + std::to_string(v.size()) + " values, expected " + std::to_string(size));
  for (int64_t x : v)
    if (x < lo || x > hi)
      return Error("attribute '" + name + "' value " + std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]");
  return v;
}

void copyBlock(const Tensor& src, int64_t from, Tensor& dst, int64_t to, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DType::String) {
    std::copy_n(src.strings().begin() + from, count, dst.strings().begin() + to);
    return;
  }
  const size_t es = dtypeSize(src.dtype());
  std::memcpy(dst.bytes().data() + static_cast<size_t>(to) * es, src.bytes().data() + static_cast<size_t>(from) * es,
              static_cast<size_t>(count) * es);
}

Tensor sliceAxis(const Tensor& x, int64_t axis, int64_t start, int64_t len) {
  Shape shape = x.shape();
  const int64_t dim = shape[static_cast<size_t>(axis)];
  shape[static_cast<size_t>(axis)] = len;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  Tensor y(x.dtype(), shape);
  for (int64_t o = 0; o < outer; ++o) copyBlock(x, (o * dim + start) * inner, y, o * len * inner, len * inner);
  return y;
}

Expected<std::vector<double>> broadcastTo(const Tensor& t, const Shape& shape, const std::string& what) {
  auto b = broadcastShapes(t.shape(), shape);
  if (!b.ok() || *b != shape)
    return Error(what + " of shape " + shapeToString(t.shape()) + " does not broadcast to " + shapeToString(shape));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> v, toDoubles(t));
  std::vector<int64_t> strides = broadcastStrides(t.shape(), shape), contiguous = contiguousStrides(shape);
  const int64_t n = shapeProduct(shape, 0, shape.size());
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = v[static_cast<size_t>(broadcastOffset(i, contiguous, strides))];
  return out;
}

}  // namespace poprt::ops
