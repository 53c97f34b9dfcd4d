// What the serve tests share: typed views of byte buffers and anchor descriptions.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "lib/support/tensor.h"
#include "poprt/runtime/tensor_memory.h"

namespace poprt::serve::testing {

namespace rt = poprt::runtime;

template <class T>
inline std::vector<T> as(const std::vector<uint8_t>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

template <class T>
inline std::vector<uint8_t> bytesOf(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline rt::DataDesc desc(const std::string& name, const std::string& dtype, Shape shape, size_t element) {
  rt::DataDesc d;
  d.name = name;
  d.dtype = dtype;
  size_t n = 1;
  for (int64_t x : shape) n *= static_cast<size_t>(x);
  d.shape = std::move(shape);
  d.size_in_bytes = n * element;
  return d;
}

}  // namespace poprt::serve::testing
