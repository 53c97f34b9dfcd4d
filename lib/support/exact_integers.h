// Float32 tensors of small integers (a quantized model's weights, centered by quantized_to_float;
// masks, counts) stored in int8 or int16: a quarter or half of the bytes, widened back with the
// same bits. The PopEF's weight blobs and the converted ONNX's weights are stored this way.
#pragma once

#include <optional>

#include "lib/support/tensor.h"

namespace poprt {

// Int8 or Int16 when every value of the float32 tensor `w` is an integer that type holds and
// converts back to the same bits; nullopt otherwise (a fraction, -0.0, NaN, beyond +-32767, not
// float32, empty).
std::optional<DType> exactIntegerStorage(const Tensor& w);

// `w`'s values in `dtype` (Int8 or Int16), for a tensor exactIntegerStorage gave that type.
Tensor narrowedTo(const Tensor& w, DType dtype);

}  // namespace poprt
