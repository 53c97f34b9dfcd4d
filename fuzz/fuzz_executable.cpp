// libFuzzer target: the executable blob on its own (exec::deserialize, then the verifier's
// executable checks: bounds, vertices against their codelets, gathers, programs and their
// dataflow), and then a run of what it accepts when that is small. Mutations of a whole PopEF
// rarely reach this blob intact; here every byte is the executable's.
#include "fuzz/fuzz_util.h"
#include "fuzz/run_small.h"
#include "sim/verify_popef.h"

using namespace poprt;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto exe = exec::deserialize({data, size}, "fuzz.exe");
  if (!exe.ok()) {
    fuzz::requireNamedError(exe.error(), "fuzz.exe: ");
    return 0;
  }
  if (!sim::verifyExecutable(*exe).ok()) return 0;
  // What was read is what gets written: the blob is deterministic.
  auto again = exec::deserialize(exec::serialize(*exe), "again");
  fuzz::require(again.ok() && exec::serialize(*again) == exec::serialize(*exe),
                "an executable changes through a write and a read");
  fuzz::runSmall(*exe, nullptr);
  return 0;
}
