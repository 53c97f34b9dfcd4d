// The vertex layouts of each codelet: the contract between codegen (which emits vertices) and the
// simulator (which checks and runs them). Fields are tile-memory byte ranges; all data float32.
#pragma once

#include <cstdint>

namespace poprt::exec {

// Unary:  fields [out, in]                 params [fn (ops::UnaryFn), count]
// Binary: fields [out, a, b]               params [fn (ops::BinaryFn), count, a_mode, b_mode, begin, rank,
//                                                  out_dims[rank], a_strides[rank], b_strides[rank]]
//         mode kAligned: the buffer holds the `count` operand elements matching out[0..count);
//         mode kBroadcast: the buffer holds the whole operand, read at the element offset given by
//         its strides (0 on broadcast dims) from the output index begin + i.
// MatMul: fields [out, a, b, bias?]        params [rows, K, cols, trans_a, trans_b, bias_mode]
//                                           fparams [alpha, beta]
//         out = alpha * A x B + beta * bias, out is rows x cols; A is rows x K (K x rows if trans_a);
//         B is K x cols (cols x K if trans_b); bias by mode (kBias*). An optional 7th param is an
//         activation applied last (ops::graphcore::ActivationKind) with fparams [.., alpha, beta, min, max].
// Fill:   fields [out]                      params [count]  fparams [value]   (any dtype of 1, 2, 4
//         or 8 bytes; the value is converted to the vertex's dtype)
enum BinaryOperandMode : int64_t { kAligned = 0, kBroadcast = 1 };
enum BiasMode : int64_t { kBiasNone = 0, kBiasScalar = 1, kBiasRow = 2, kBiasColumn = 3, kBiasFull = 4 };

}  // namespace poprt::exec
