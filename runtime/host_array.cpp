#include "runtime/host_array.h"

namespace poprt::runtime {

namespace {

std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

// numpy's C-contiguity: walking the dims from the last, each dim of more than one element has the
// stride of the elements after it; an array without elements is contiguous.
bool cContiguous(const HostArray& a) {
  if (a.strides.size() != a.shape.size()) return false;
  for (int64_t s : a.shape)
    if (s == 0) return true;
  int64_t expected = a.itemsize;
  for (size_t i = a.shape.size(); i-- > 0;) {
    if (a.shape[i] != 1 && a.strides[i] != expected) return false;
    if (__builtin_mul_overflow(expected, a.shape[i], &expected)) return false;
  }
  return true;
}

}  // namespace

std::string arrayMismatch(const HostArray& a, const DataDesc& d, const std::string& what) {
  const std::string where = what + " '" + d.name + "'";
  if (d.format != DataFormat::Raw) return where + " is not a tensor: only fixed-size tensors are taken as arrays";
  if (!d.fixedSize()) return where + " is of a run-time shape: only fixed-size tensors are taken as arrays";
  if (a.dtype != d.dtype) return where + ": expected dtype " + d.dtype + ", got " + a.dtype;
  if (a.shape != d.shape) return where + ": expected shape " + shapeText(d.shape) + ", got " + shapeText(a.shape);
  if (!cContiguous(a)) return where + ": the array is not C-contiguous (hint: numpy.ascontiguousarray)";
  // Same dtype and shape, so the same size, unless the binding's description disagrees with itself.
  int64_t bytes = a.itemsize;
  bool overflow = false;
  for (int64_t s : a.shape) overflow = overflow || __builtin_mul_overflow(bytes, s, &bytes);
  if (a.itemsize <= 0 || overflow || bytes != a.nbytes || static_cast<uint64_t>(a.nbytes) != d.size_in_bytes)
    return where + ": the array holds " + std::to_string(a.nbytes) + " bytes of " + std::to_string(a.itemsize) + " each, the " +
           what + " takes " + std::to_string(d.size_in_bytes);
  if (what == "output" && !a.writeable) return where + ": the array is read-only";
  return "";
}

}  // namespace poprt::runtime
