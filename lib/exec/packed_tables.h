// The executable's two longest tables as it stores them from format version 4: an exchange's tile
// copies and a layout's regions, each one CBOR byte string instead of an array of small arrays.
// A row's fields mostly follow the row before (the next slice of the same partial sums, to the
// next offset of the same tile; the next region of a tensor), so each is stored as its difference
// from the previous row's, zigzag-encoded LEB128: light_resnet50's 1.18 million copies take
// 17.7 MB as arrays. Layout: docs/POPEF.md (Executable payload, `exchanges` and `layouts`).
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

// The same for a layout's regions (a region takes at least 4 bytes).
std::vector<uint8_t> packRegions(std::span<const LayoutRegion> regions);
Status unpackRegions(std::span<const uint8_t> bytes, std::vector<LayoutRegion>& out);

}  // namespace poprt::exec
