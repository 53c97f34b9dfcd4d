// An exchange's tile copies as the executable stores them from format version 4: one CBOR byte
// string instead of an array of 5-item arrays. A copy's fields mostly follow the one before (the
// next slice of the same partial sums, to the next offset of the same tile), so each is stored as
// its difference from the previous copy's, zigzag-encoded LEB128: light_resnet50's 1.18 million
// copies take 17.7 MB as arrays. Layout: docs/POPEF.md (Executable payload, `exchanges`).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lib/exec/executable.h"
#include "lib/support/status.h"

namespace poprt::exec {

std::vector<uint8_t> packCopies(std::span<const TileCopy> copies);
// Untrusted bytes: the count is bounded by the bytes there are (a copy takes at least 5), every
// varint by 10 bytes, tiles by 32 bits; the values themselves are checked by validate().
Status unpackCopies(std::span<const uint8_t> bytes, std::vector<TileCopy>& out);

}  // namespace poprt::exec
