// The codelet library: each vertex kind's check (its fields and params agree), its implementation
// on the tile's memory, and its cycle estimate on a target. Layouts: lib/exec/codelets.h.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "lib/exec/executable.h"
#include "sim/exchange_move.h"
#include "sim/vertex_view.h"

namespace poprt::sim {

// A vertex's params decoded into its kind's struct (alternative id - 1), its arrays viewing the
// vertex's params list: the engine decodes them once for each run of vertices that share them,
// when it plans the program (sim/execution_plan.h).
using VertexParams = std::variant<
#define POPRT_CODELET_PARAMS(name, id) exec::name##Params,
    POPRT_CODELETS(POPRT_CODELET_PARAMS)
#undef POPRT_CODELET_PARAMS
        std::monostate>;

// The params of a checked vertex (field sizes match them, they are in range), or why it is
// refused. Run before anything executes.
Expected<VertexParams> prepareVertex(const exec::Vertex& v);
inline Status checkVertex(const exec::Vertex& v) {
  auto prepared = prepareVertex(v);
  return prepared.ok() ? okStatus() : Status(prepared.error());
}
// The params of a vertex prepareVertex (the verifier) has passed, decoded without checking again.
VertexParams verifiedParams(const exec::Vertex& v);
// Runs a prepared vertex on its tile's memory.
void runVertex(const VertexView& v, const VertexParams& params, uint8_t* tile_memory);
// The floats of a row when a float32 vertex of these params may read its input (fields[1]) as
// rows wherever they are (VertexView::input_rows): a 1x1 conv block's channel planes, a Reduce's
// partial sums; 0 for every other vertex.
int64_t inputRowFloats(const VertexParams& params);
// Whether the vertices of a run with these params run faster given together to runVertices.
bool runsTogether(const VertexParams& params);

// Where a vertex that assembles its input (fields[1], float32) in a copy of its own puts each
// float of it: the input is channels x rows x cols floats, and float (c, y, x) lands at float
// c * plane + (y - first_row) * line + (x - first_col) of the copy when 0 <= y - first_row <
// lines and 0 <= x - first_col < line; the copy leaves the others out. A padded conv block's
// copy (unit strides): the exchange's moves can fill it directly (sim/scratch_inputs.h).
struct InputCopyPlaces {
  int64_t channels = 0, rows = 0, cols = 0, plane = 0, first_row = 0, first_col = 0, lines = 0, line = 0;
};
// For the vertices of a run with these params that runs together; nullopt for every other.
std::optional<InputCopyPlaces> inputCopyPlaces(const VertexParams& params);
// Moves that assemble vertex i's input in its copy (dst offsets in the copy), for runVertices.
struct InputMoves {
  const ExchangeMove* first = nullptr;
  const ExchangeMove* last = nullptr;
};

// Runs vertices of one run (the same kind and params; runsTogether) on the tile memory, each with
// the result runVertex gives it: a kind that gains from it works on them side by side. With
// input_moves (n of them), a vertex with moves takes its input from them (inputCopyPlaces), not
// from its field.
void runVertices(const VertexView* const* vs, size_t n, const VertexParams& params, uint8_t* tile_memory,
                 const InputMoves* input_moves = nullptr);
// Decodes and runs a checked vertex (tests and benchmarks; the engine runs prepared ones).
void runVertex(const exec::Vertex& v, uint8_t* tile_memory);
// Estimated tile cycles for a checked vertex on the target.
uint64_t vertexCycles(const exec::Vertex& v, const exec::Target& target);
// Floating-point operations the vertex does, for the profile reports (docs/REPORT.md): a
// multiply-accumulate counts 2 (MatMul, ConvPartial with every tap the cost model counts,
// Attention), elementwise work 1 per element and pass (BatchNorm 4, Softmax 4, Norm 5), a Pool 1
// per tap, a Reduce 1 per input element, a Fill none.
uint64_t vertexFlops(const exec::Vertex& v);

}  // namespace poprt::sim
