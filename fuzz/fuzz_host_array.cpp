// libFuzzer target: the checks the Python package runs before the runtime reads a caller's array
// in place or writes into it (runtime/host_array.h), on arrays described every way numpy could
// and could not describe one (strides of any sign, zero and size-1 dims, descriptions that
// disagree with themselves). The property: an array that is taken is exactly the anchor's memory,
// every element at the byte offset a row-major walk puts it at, counted one by one here rather than
// by the check's own rule.
#include <cstring>

#include "fuzz/fuzz_util.h"
#include "runtime/host_array.h"

using namespace poprt;
using runtime::DataDesc;
using runtime::HostArray;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

namespace {

struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t next() {
    if (!n) return 0;
    --n;
    return *p++;
  }
  int64_t nextWide() {  // a small number most of the time, sometimes anything
    uint8_t b = next();
    if (b != 0xff) return static_cast<int8_t>(b);
    int64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | next();
    return v;
  }
};

struct Kind {
  const char* dtype;
  int64_t itemsize;
};
constexpr Kind kKinds[] = {{"float32", 4}, {"int64", 8}, {"bool", 1}, {"float16", 2}, {">f4", 4}};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  const Kind& anchor_kind = kKinds[in.next() % 4];  // an anchor's dtype is a native one
  DataDesc d;
  d.name = "x";
  d.dtype = anchor_kind.dtype;
  const size_t rank = in.next() % 5;
  int64_t elements = 1;
  for (size_t i = 0; i < rank; ++i) {
    d.shape.push_back(in.next() % 5);
    elements *= d.shape.back();
  }
  d.size_in_bytes = static_cast<size_t>(elements * anchor_kind.itemsize);
  const uint8_t form = in.next();
  if (form == 1) d.shape.push_back(-1);  // an anchor of run-time shape
  if (form == 2) d.format = runtime::DataFormat::OnnxProto;

  HostArray a;
  const Kind& array_kind = kKinds[in.next() % 5];
  a.dtype = array_kind.dtype;
  a.itemsize = (in.next() & 1) ? in.nextWide() : array_kind.itemsize;
  a.shape = d.shape;
  if (in.next() & 1) {  // a different shape
    a.shape.resize(in.next() % 5);
    for (int64_t& s : a.shape) s = in.nextWide();
  }
  // Strides: row-major ones, with some replaced.
  a.strides.resize(a.shape.size());
  int64_t step = a.itemsize;
  for (size_t i = a.shape.size(); i-- > 0;) {
    a.strides[i] = step;
    // Wrapping, as a bogus itemsize may be anything.
    step = static_cast<int64_t>(static_cast<uint64_t>(step) *
                                static_cast<uint64_t>(a.shape[i] > 0 && a.shape[i] < 64 ? a.shape[i] : 1));
  }
  const uint8_t changes = in.next() % 4;
  for (uint8_t c = 0; c < changes && !a.strides.empty(); ++c) a.strides[in.next() % a.strides.size()] = in.nextWide();
  if (in.next() & 1) a.strides.resize(in.next() % 5);
  a.nbytes = (in.next() & 1) ? in.nextWide() : static_cast<int64_t>(d.size_in_bytes);
  a.writeable = in.next() & 1;
  const std::string what = (in.next() & 1) ? "output" : "input";

  const std::string why = runtime::arrayMismatch(a, d, what);
  if (!why.empty()) {
    fuzz::require(why.rfind(what + " 'x'", 0) == 0, "a refusal that does not name the array: " + why);
    return 0;
  }
  fuzz::require(a.dtype == d.dtype && a.nbytes >= 0 && static_cast<size_t>(a.nbytes) == d.size_in_bytes,
                "took an array of another dtype or size");
  fuzz::require(what == "input" || a.writeable, "took a read-only array for an output");
  // Walk every element in row-major order: element k must sit at byte k * itemsize.
  std::vector<int64_t> index(a.shape.size(), 0);
  for (int64_t k = 0; k < elements; ++k) {
    int64_t offset = 0;
    for (size_t i = 0; i < index.size(); ++i) offset += index[i] * a.strides[i];
    fuzz::require(offset == k * anchor_kind.itemsize,
                  "element " + std::to_string(k) + " is at byte " + std::to_string(offset) + " of an array taken as contiguous");
    for (size_t i = index.size(); i-- > 0;) {
      if (++index[i] < a.shape[i]) break;
      index[i] = 0;
    }
  }
  return 0;
}
