// libFuzzer target: the .npy reader (parseNpy). Properties: never a crash, a hang or an
// allocation beyond the cap; every refusal names the file; whatever it accepts survives a write
// and a second read unchanged.
#include "fuzz/fuzz_util.h"
#include "lib/support/npy.h"

using namespace poprt;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = parseNpy({data, size}, "fuzz.npy");
  if (!t.ok()) {
    fuzz::requireNamedError(t.error(), "fuzz.npy: ");
    return 0;
  }
  auto bytes = serializeNpy(*t);
  fuzz::require(bytes.ok(), "an accepted .npy cannot be written back: " + (bytes.ok() ? "" : bytes.error().message()));
  auto again = parseNpy(*bytes, "again.npy");
  fuzz::require(again.ok(), "a written .npy cannot be read back: " + (again.ok() ? "" : again.error().message()));
  fuzz::require(*again == *t, "a .npy changes through a write and a read");
  return 0;
}
