// A host tensor: dtype, static shape and owned bytes (strings out of line). Used for
// initializers, .npy/.pb I/O, the reference evaluator and the runtime's inputs and outputs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/support/dtype.h"
#include "lib/support/status.h"

namespace poprt {

using Shape = std::vector<int64_t>;

// Number of elements of a static shape, or an error if a dim is negative or the product
// exceeds `limit` (callers pass a cap so untrusted files cannot make us allocate without bound).
Expected<int64_t> checkedNumElements(const Shape& shape, int64_t limit = INT64_MAX);
// Largest element count a tensor read from a file (.npy header, TensorProto dims) may declare,
// checked before anything is allocated (< 2^38 bytes for any dtype, so count * itemsize cannot
// overflow). The reference evaluator's ops allocate under the tighter ops::kMaxElements.
inline constexpr int64_t kMaxFileElements = int64_t{1} << 34;
std::string shapeToString(const Shape& shape);  // "[1,3,224,224]"

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor; the caller has checked the size (see checkedNumElements).
  Tensor(DType dtype, Shape shape);
  // A tensor over `bytes`, taken as they are (no copy): exactly its elements' bytes, not String.
  Tensor(DType dtype, Shape shape, std::vector<uint8_t> bytes);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numElements() const;
  size_t byteSize() const { return bytes_.size(); }

  std::span<uint8_t> bytes() { return bytes_; }
  std::span<const uint8_t> bytes() const { return bytes_; }
  template <class T>
  std::span<T> data() {
    return {reinterpret_cast<T*>(bytes_.data()), bytes_.size() / sizeof(T)};
  }
  template <class T>
  std::span<const T> data() const {
    return {reinterpret_cast<const T*>(bytes_.data()), bytes_.size() / sizeof(T)};
  }
  std::vector<std::string>& strings() { return strings_; }
  const std::vector<std::string>& strings() const { return strings_; }

  // Same dtype, shape and bytes (strings for String tensors).
  bool operator==(const Tensor& other) const = default;

 private:
  DType dtype_ = DType::Undefined;
  Shape shape_;
  std::vector<uint8_t> bytes_;
  std::vector<std::string> strings_;
};

}  // namespace poprt
