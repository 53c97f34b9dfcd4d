// The executable's three longest tables as it stores them: an exchange's tile copies and a
// layout's regions (from format version 4), a compute set's vertices (from 5), each one CBOR byte
// string instead of an array of small arrays. A row mostly follows the row before (the next slice
// of the same partial sums, to the next offset of the same tile; the next region of a tensor; the
// same conv block on the next tile), so each number is stored as its difference from the previous
// row's, zigzag-encoded LEB128, and a vertex's params that repeat the previous vertex's take no
// bytes. As arrays, light_resnet50's 1.18 million copies took 17.7 MB and its 203,000 vertices
// 10.3 MB. Layout: docs/POPEF.md (Executable payload, `compute_sets`, `exchanges`, `layouts`).
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

// A compute set's vertices. A vertex costs at least 2 bytes plus one per field, and one whose
// params repeat the previous vertex's shares them (SharedList): what a file can make the reader
// hold stays proportional to its bytes.
std::vector<uint8_t> packVertices(std::span<const Vertex> vertices);
Status unpackVertices(std::span<const uint8_t> bytes, std::vector<Vertex>& out);

}  // namespace poprt::exec
