// The checks before the runtime reads a caller's array in place (an input) or writes into it (an
// output), for bindings that hand over arrays they describe the way numpy does (the Python
// package). Kept apart from the binding so that it is tested and fuzzed on its own. Not part of
// the installed API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "poprt/runtime/tensor_memory.h"

namespace poprt::runtime {

// An array as numpy's array interface describes it.
struct HostArray {
  std::string dtype;  // numpy's name of the element type: float32, bool, >f4, object, ...
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // bytes, one per dim
  int64_t itemsize = 0;
  int64_t nbytes = 0;
  bool writeable = true;
};

// Why `a` cannot be the memory of anchor `d` ("" when it can): the anchor must be a fixed-size
// tensor, the array of its dtype and shape, C-contiguous (its elements at 0, itemsize, 2 itemsize,
// ... in row-major order) and, for an output, writeable. `what` is "input" or "output".
std::string arrayMismatch(const HostArray& a, const DataDesc& d, const std::string& what);

}  // namespace poprt::runtime
