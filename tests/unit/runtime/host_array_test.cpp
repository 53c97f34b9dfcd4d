// The array checks the Python package runs before the runtime reads or writes a caller's array:
// the cases are numpy's own (strides as numpy reports them for these arrays).
#include "runtime/host_array.h"

#include <gtest/gtest.h>

namespace poprt::runtime {
namespace {

DataDesc anchor(std::vector<int64_t> shape) {
  DataDesc d;
  d.name = "x";
  d.dtype = "float32";
  d.size_in_bytes = 4;
  for (int64_t s : shape) d.size_in_bytes *= static_cast<size_t>(s);
  d.shape = std::move(shape);
  return d;
}

HostArray array(std::vector<int64_t> shape, std::vector<int64_t> strides, std::string dtype = "float32") {
  HostArray a;
  a.dtype = std::move(dtype);
  a.itemsize = 4;
  a.nbytes = 4;
  for (int64_t s : shape) a.nbytes *= s;
  a.shape = std::move(shape);
  a.strides = std::move(strides);
  return a;
}

TEST(HostArray, TakesWhatNumpyCallsCContiguous) {
  EXPECT_EQ(arrayMismatch(array({2, 3}, {12, 4}), anchor({2, 3}), "input"), "");  // np.zeros((2, 3))
  // np.zeros((2, 1, 3))[:, ::5, :]: a dim of one element may have any stride.
  EXPECT_EQ(arrayMismatch(array({2, 1, 3}, {12, 60, 4}), anchor({2, 1, 3}), "input"), "");
  EXPECT_EQ(arrayMismatch(array({0, 3}, {4, 4}), anchor({0, 3}), "input"), "");  // no elements
  EXPECT_EQ(arrayMismatch(array({}, {}), anchor({}), "input"), "");              // a scalar
}

TEST(HostArray, RefusesOtherLayoutsDtypesAndShapes) {
  const std::string not_contiguous = "input 'x': the array is not C-contiguous (hint: numpy.ascontiguousarray)";
  EXPECT_EQ(arrayMismatch(array({2, 3}, {4, 8}), anchor({2, 3}), "input"), not_contiguous);   // np.zeros((3, 2)).T
  EXPECT_EQ(arrayMismatch(array({2, 3}, {0, 4}), anchor({2, 3}), "input"), not_contiguous);   // np.broadcast_to
  EXPECT_EQ(arrayMismatch(array({2, 3}, {24, 4}), anchor({2, 3}), "input"), not_contiguous);  // np.zeros((4, 3))[::2]
  EXPECT_EQ(arrayMismatch(array({2, 3}, {12, 4}, ">f4"), anchor({2, 3}), "input"), "input 'x': expected dtype float32, got >f4");
  EXPECT_EQ(arrayMismatch(array({3, 2}, {8, 4}), anchor({2, 3}), "input"), "input 'x': expected shape [2,3], got [3,2]");
  HostArray read_only = array({2, 3}, {12, 4});
  read_only.writeable = false;
  EXPECT_EQ(arrayMismatch(read_only, anchor({2, 3}), "input"), "");
  EXPECT_EQ(arrayMismatch(read_only, anchor({2, 3}), "output"), "output 'x': the array is read-only");
  HostArray wrong_size = array({2, 3}, {12, 4});
  wrong_size.itemsize = 2;  // a description that disagrees with itself
  EXPECT_NE(arrayMismatch(wrong_size, anchor({2, 3}), "input"), "");
  DataDesc runtime_shape = anchor({2, 3});
  runtime_shape.shape = {-1, 3};
  EXPECT_EQ(arrayMismatch(array({2, 3}, {12, 4}), runtime_shape, "output"),
            "output 'x' is of a run-time shape: only fixed-size tensors are taken as arrays");
}

}  // namespace
}  // namespace poprt::runtime
