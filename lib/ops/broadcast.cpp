#include "lib/ops/broadcast.h"

#include <algorithm>

namespace poprt::ops {

Expected<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return Error("shapes " + shapeToString(a) + " and " + shapeToString(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> contiguousStrides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

int64_t broadcastOffset(int64_t index, const std::vector<int64_t>& contiguous, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t d = 0; d < contiguous.size(); ++d) {
    offset += (index / contiguous[d]) * strides[d];
    index %= contiguous[d];
  }
  return offset;
}

std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> in_strides = contiguousStrides(in);
  std::vector<int64_t> s(out.size(), 0);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[offset + i] = in[i] == 1 ? 0 : in_strides[i];
  return s;
}

}  // namespace poprt::ops
