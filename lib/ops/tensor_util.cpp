#include "lib/ops/tensor_util.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::tensor_detail {

Expected<int64_t> checkedOutputSize(const Shape& shape) {
  auto n = checkedNumElements(shape, kMaxElements);
  if (!n.ok()) return Error("output " + n.error().message());
  return n;
}

void copyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  if (src.dtype() == DType::String) {
    dst.strings()[static_cast<size_t>(to)] = src.strings()[static_cast<size_t>(from)];
    return;
  }
  const size_t es = dtypeSize(src.dtype());
  std::memcpy(dst.bytes().data() + static_cast<size_t>(to) * es, src.bytes().data() + static_cast<size_t>(from) * es, es);
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

Tensor takeElements(const Tensor& in, Shape out_shape, const std::vector<int64_t>& src, const Tensor* fill) {
  Tensor out(in.dtype(), std::move(out_shape));
  const bool has_fill = fill && fill->dtype() == in.dtype() && fill->numElements() > 0;
  if (in.dtype() == DType::String) {
    auto& o = out.strings();
    const auto& s = in.strings();
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] >= 0)
        o[i] = s[static_cast<size_t>(src[i])];
      else if (has_fill)
        o[i] = fill->strings()[0];
    }
    return out;
  }
  const size_t es = dtypeSize(in.dtype());
  const uint8_t* s = in.bytes().data();
  uint8_t* o = out.bytes().data();
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] >= 0)
      std::memcpy(o + i * es, s + static_cast<size_t>(src[i]) * es, es);
    else if (has_fill)
      std::memcpy(o + i * es, fill->bytes().data(), es);
  }
  return out;
}

std::vector<int64_t> stridesOf(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

void unravel(int64_t flat, const std::vector<int64_t>& strides, std::vector<int64_t>& index) {
  index.resize(strides.size());
  for (size_t d = 0; d < strides.size(); ++d) {
    index[d] = strides[d] ? flat / strides[d] : 0;
    flat -= index[d] * strides[d];
  }
}

Expected<Tensor> transposeTensor(const Tensor& in, const std::vector<int64_t>& perm) {
  const int64_t rank = static_cast<int64_t>(in.shape().size());
  if (static_cast<int64_t>(perm.size()) != rank)
    return Error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) return Error("perm is not a permutation of 0.." + std::to_string(rank - 1));
    seen[static_cast<size_t>(p)] = true;
  }
  Shape out_shape(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) out_shape[static_cast<size_t>(i)] = in.shape()[static_cast<size_t>(perm[static_cast<size_t>(i)])];
  const std::vector<int64_t> in_strides = stridesOf(in.shape());
  const std::vector<int64_t> out_strides = stridesOf(out_shape);
  const int64_t n = in.numElements();
  std::vector<int64_t> src(static_cast<size_t>(n));
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, out_strides, idx);
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) off += idx[static_cast<size_t>(d)] * in_strides[static_cast<size_t>(perm[static_cast<size_t>(d)])];
    src[static_cast<size_t>(i)] = off;
  }
  return takeElements(in, out_shape, src);
}

Expected<Tensor> reshaped(const Tensor& in, Shape shape) {
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedOutputSize(shape));
  if (n != in.numElements())
    return Error("cannot reshape " + shapeToString(in.shape()) + " to " + shapeToString(shape) + ": element counts differ");
  Tensor out(in.dtype(), std::move(shape));
  if (in.dtype() == DType::String)
    out.strings() = in.strings();
  else if (in.byteSize())
    std::memcpy(out.bytes().data(), in.bytes().data(), in.byteSize());
  return out;
}

Expected<std::vector<double>> doubleValues(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numElements()));
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.data<T>()) out.push_back(static_cast<double>(toCompute(v)));
  }));
  return out;
}

Expected<Tensor> tensorFromDoubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numElements()) return Error("internal: value count mismatch");
  POPRT_TRY(dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    auto d = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) d[i] = fromCompute<T>(static_cast<C>(values[i]));
  }));
  return t;
}

Expected<std::vector<int64_t>> intValues(const Tensor& t) {
  std::vector<int64_t> out;
  if (!isInteger(t.dtype()) && t.dtype() != DType::Bool)
    return Error("expected an integer tensor, got " + std::string(dtypeName(t.dtype())));
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      out.reserve(static_cast<size_t>(t.numElements()));
      for (T v : t.data<T>()) out.push_back(static_cast<int64_t>(v));
    }
  }));
  return out;
}

Expected<int64_t> scalarInt(const Tensor& t, const std::string& what) {
  if (t.numElements() != 1) return Error(what + " must have one element, got shape " + shapeToString(t.shape()));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> v, intValues(t));
  return v[0];
}

Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return Error("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    if (a < 0) a += rank;
    if (seen[static_cast<size_t>(a)]) return Error("axis " + std::to_string(a) + " is repeated");
    seen[static_cast<size_t>(a)] = true;
    out.push_back(a);
  }
  return out;
}

Expected<int64_t> wrapIndex(int64_t index, int64_t dim) {
  if (index < -dim || index >= dim)
    return Error("index " + std::to_string(index) + " is out of range for a dimension of size " + std::to_string(dim));
  return index < 0 ? index + dim : index;
}

}  // namespace poprt::ops::tensor_detail
