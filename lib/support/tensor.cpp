#include "lib/support/tensor.h"

namespace poprt {

Expected<int64_t> checkedNumElements(const Shape& shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return Error("negative dimension " + std::to_string(d) + " in shape " + shapeToString(shape));
    if (d != 0 && n > limit / d)
      return Error("shape " + shapeToString(shape) + " has more than " + std::to_string(limit) + " elements");
    n *= d;
  }
  return n;
}

std::string shapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  int64_t n = numElements();
  if (dtype_ == DType::String)
    strings_.resize(static_cast<size_t>(n));
  else
    bytes_.resize(static_cast<size_t>(n) * dtypeSize(dtype_));
}

Tensor::Tensor(DType dtype, Shape shape, std::vector<uint8_t> bytes)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {
  POPRT_CHECK(dtype_ != DType::String && bytes_.size() == static_cast<size_t>(numElements()) * dtypeSize(dtype_),
              "Tensor: the bytes given are not the size of its elements");
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

}  // namespace poprt
