// NumPy .npy files: read format versions 1.0, 2.0 and 3.0; write 1.0 (2.0 when the header does
// not fit in 1.0's 16-bit length). Files are untrusted input: every malformed or oversized file is
// a one-line poprt::Error naming the file, never a crash or an unbounded allocation.
//
// Supported dtypes: float16/32/64, int8..int64, uint8..uint64, bool, complex64, complex128, in
// either byte order ('>' is byte-swapped on read) and either memory order (fortran_order data is
// transposed into C order on read). bfloat16 and string tensors have no .npy form here: bfloat16
// is never produced on read and refused on write.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt {

// Parses the bytes of a whole .npy file; `name_for_errors` starts every error message.
Expected<Tensor> parseNpy(std::span<const uint8_t> bytes, const std::string& name_for_errors);
Expected<Tensor> readNpy(const std::filesystem::path& path);

// The bytes of a .npy file holding `tensor` (C order, little-endian). Fails for bfloat16,
// string and undefined tensors.
Expected<std::vector<uint8_t>> serializeNpy(const Tensor& tensor);
// Writes through a temporary file and a rename, so a failure leaves no partial file behind.
Status writeNpy(const std::filesystem::path& path, const Tensor& tensor);

}  // namespace poprt
