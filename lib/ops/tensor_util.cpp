#include "lib/ops/tensor_util.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::tensor_detail {

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
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
      return Error("perm is not a permutation of 0.." + std::to_string(rank - 1));
    seen[static_cast<size_t>(p)] = true;
  }
  Shape out_shape(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    out_shape[static_cast<size_t>(i)] = in.shape()[static_cast<size_t>(perm[static_cast<size_t>(i)])];
  const std::vector<int64_t> in_strides = contiguousStrides(in.shape());
  std::vector<int64_t> step(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) step[static_cast<size_t>(d)] = in_strides[static_cast<size_t>(perm[static_cast<size_t>(d)])];
  return takeStrided(in, std::move(out_shape), 0, step);
}

namespace {
// Calls visit(offset, i) for every output element i of `shape` in order, offset = base + sum of
// index[d] * step[d], with an odometer: one add per element and a carry now and then, not a
// division per dim (the compiler plans every device Transpose by running it on index tensors).
template <class Visit>
void walkStrided(const Shape& shape, int64_t base, const std::vector<int64_t>& step, int64_t n, const Visit& visit) {
  const size_t rank = shape.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t off = base;
  for (int64_t i = 0; i < n; ++i) {
    visit(off, i);
    for (size_t k = rank; k-- > 0;) {
      off += step[k];
      if (++idx[k] < shape[k]) break;
      off -= step[k] * shape[k];
      idx[k] = 0;
    }
  }
}

template <size_t kBytes>
void copyStrided(const uint8_t* in, uint8_t* out, const Shape& shape, int64_t base, const std::vector<int64_t>& step, int64_t n) {
  walkStrided(shape, base, step, n, [&](int64_t off, int64_t i) {
    std::memcpy(out + static_cast<size_t>(i) * kBytes, in + static_cast<size_t>(off) * kBytes, kBytes);
  });
}
}  // namespace

Tensor takeStrided(const Tensor& in, Shape out_shape, int64_t base, const std::vector<int64_t>& step) {
  const int64_t n = shapeProduct(out_shape, 0, out_shape.size());
  const size_t es = in.dtype() == DType::String ? 0 : dtypeSize(in.dtype());
  const bool unit_rows = !out_shape.empty() && step.back() == 1 && out_shape.back() > 0;
  if (es == 0 || (es != 1 && es != 2 && es != 4 && es != 8 && !unit_rows)) {
    std::vector<int64_t> src(static_cast<size_t>(n));
    walkStrided(out_shape, base, step, n, [&](int64_t off, int64_t i) { src[static_cast<size_t>(i)] = off; });
    return takeElements(in, std::move(out_shape), src);
  }
  Tensor out(in.dtype(), std::move(out_shape));
  const Shape& shape = out.shape();
  const uint8_t* s = in.bytes().data();
  uint8_t* o = out.bytes().data();
  if (unit_rows) {  // whole rows of the last dim: one copy each
    const int64_t row = shape.back();
    const Shape rows(shape.begin(), shape.end() - 1);
    const std::vector<int64_t> row_step(step.begin(), step.end() - 1);
    walkStrided(rows, base, row_step, n / row, [&](int64_t off, int64_t r) {
      std::memcpy(o + static_cast<size_t>(r * row) * es, s + static_cast<size_t>(off) * es, static_cast<size_t>(row) * es);
    });
    return out;
  }
  switch (es) {
    case 1: copyStrided<1>(s, o, shape, base, step, n); break;
    case 2: copyStrided<2>(s, o, shape, base, step, n); break;
    case 4: copyStrided<4>(s, o, shape, base, step, n); break;
    default: copyStrided<8>(s, o, shape, base, step, n); break;
  }
  return out;
}

Expected<Tensor> reshaped(const Tensor& in, Shape shape) {
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedElementCount(shape));
  if (n != in.numElements())
    return Error("cannot reshape " + shapeToString(in.shape()) + " to " + shapeToString(shape) + ": element counts differ");
  Tensor out(in.dtype(), std::move(shape));
  if (in.dtype() == DType::String)
    out.strings() = in.strings();
  else if (in.byteSize())
    std::memcpy(out.bytes().data(), in.bytes().data(), in.byteSize());
  return out;
}

Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    POPRT_ASSIGN_OR_RETURN(const int64_t a, normalizeAxis(axis, rank));
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
