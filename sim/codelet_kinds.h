// What the simulator knows of each vertex kind, side by side in the kind's sim/ file: its check
// (fields and params agree, params in range: run before anything executes), its run on the tile's
// memory, its cycles under the target's cost model and its floating-point operations, each over the kind's
// decoded params (lib/exec/codelets.h). The declarations and the table (sim/codelets.cpp) are
// generated from the one list of kinds, POPRT_CODELETS:
//
//   elementwise_codelets.cpp  Unary, Binary, ElementwiseChain, Activation, Fill, Cast
//   matmul_codelet.cpp        MatMul
//   window_codelets.cpp       ConvPartial, Pool
//   row_codelets.cpp          Reduce, Softmax, Norm, BatchNorm, Attention, CumSum
//
// A float16 vertex runs its kind's float32 functions on widened fields (sim/codelets.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "lib/exec/cost_model.h"
#include "lib/exec/executable.h"
#include "sim/codelets.h"
#include "sim/vertex_view.h"

namespace poprt::sim {

#define POPRT_DECLARE_CODELET(name, id)                                                                 \
  Status check##name(const exec::name##Params& p, const VertexView& v);                                 \
  void run##name(const exec::name##Params& p, const VertexView& v, uint8_t* mem);                       \
  uint64_t cycles##name(const exec::name##Params& p, const VertexView& v, const exec::CostModel& cost); \
  uint64_t flops##name(const exec::name##Params& p, const VertexView& v);
POPRT_CODELETS(POPRT_DECLARE_CODELET)
#undef POPRT_DECLARE_CODELET

// ConvPartial blocks small enough to run several at once (runVertices): a run's vertices share
// their set-up (the window, the padded copy's layout, zeros and rows), and an STFT's long filters
// over a few frames interleave their sums. Then a run of such float32 vertices, each with the
// result runConvPartial gives it (which runs one alone).
bool convPartialRunsTogether(const exec::ConvPartialParams& p);
// The floats of one channel plane of the input, when the vertex's product reads its input as
// whole planes (a 1x1 kernel at unit strides over the whole input); else 0 (inputRowFloats).
int64_t convInputPlaneFloats(const exec::ConvPartialParams& p);
// The floats of one row of a Reduce's input, when it sums rows ([outer][extent] rows of inner
// floats, kind Sum); else 0.
int64_t reduceInputRowFloats(const exec::ReduceParams& p);
// With input_moves, vertex i whose input_moves[i] holds moves gets its input from them, made into its
// padded copy (sim/scratch_inputs.h), not from its field.
void runConvPartialTogether(const exec::ConvPartialParams& p, const VertexView* const* vs, size_t n, uint8_t* mem,
                            const InputMoves* input_moves);
// Where a block of these params copies its input to (inputCopyPlaces, sim/codelets.h): a block of
// one group whose product reads a padded copy of its input at unit strides, not the input itself.
std::optional<InputCopyPlaces> convInputCopyPlaces(const exec::ConvPartialParams& p);

}  // namespace poprt::sim
