// libFuzzer target: the PopEF reader and verifier, as popef-run and popef-dump use them
// (parsePopef: headers, sizes, checksums, metadata, tensor payloads; verifyPopef: everything that
// ties the blobs together, the executable, host programs), then a run of what they accept when
// it is small. Each input is tried twice: as it is, and with every blob's CRC recomputed, so
// that mutated payloads get past the checksum into the decoders behind it.
#include <algorithm>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "fuzz/run_small.h"
#include "popef/popef.h"
#include "sim/verify_popef.h"

using namespace poprt;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

namespace {

uint64_t le(const std::vector<uint8_t>& b, size_t off, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[off + static_cast<size_t>(i)];
  return v;
}

// Walks the blob headers as far as they are in bounds and rewrites each payload CRC
// (docs/POPEF.md: CRC at blob offset 16, name length at 20, payload after 24 + name).
std::vector<uint8_t> withFixedCrcs(const uint8_t* data, size_t size) {
  std::vector<uint8_t> b(data, data + size);
  size_t pos = popef::kFileHeaderSize;
  while (pos + popef::kBlobHeaderFixedSize <= b.size()) {
    const uint64_t payload = le(b, pos + 8, 8), name = le(b, pos + 20, 4);
    const size_t start = pos + popef::kBlobHeaderFixedSize;
    if (name > b.size() - start || payload > b.size() - start - name) break;
    const uint32_t crc = popef::crc32({b.data() + start + name, static_cast<size_t>(payload)});
    for (int i = 0; i < 4; ++i) b[pos + 16 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (8 * i));
    pos = start + name + payload;
  }
  return b;
}

void check(std::span<const uint8_t> bytes) {
  auto file = popef::parsePopef(bytes, "fuzz.popef");
  if (!file.ok()) {
    fuzz::requireNamedError(file.error(), "fuzz.popef: ");
    return;
  }
  auto verified = sim::verifyPopef(*file, "fuzz.popef");
  if (!verified.ok()) {
    fuzz::requireNamedError(verified.error(), "fuzz.popef: ");
    return;
  }
  fuzz::runSmall(verified->executable, &verified->weights);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check({data, size});
  std::vector<uint8_t> fixed = withFixedCrcs(data, size);
  if (!std::equal(fixed.begin(), fixed.end(), data, data + size)) check(fixed);
  return 0;
}
