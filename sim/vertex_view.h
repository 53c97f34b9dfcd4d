// A vertex as the codelets run and check it: its tile, kind, dtype and fields, the fields viewed
// where they are kept. The execution plan keeps a compute set's fields in one array and its
// vertices as views of it (sim/execution_plan.h), 32 bytes a vertex where an exec::Vertex copy
// takes 72 and a heap block for its fields; an exec::Vertex converts to a view of itself.
#pragma once

#include <cstdint>
#include <span>

#include "lib/exec/executable.h"

namespace poprt::sim {

struct VertexView {
  uint32_t tile = 0;
  exec::Codelet codelet = exec::Codelet::Unary;
  DType dtype = DType::Float;
  std::span<const exec::Field> fields;  // fields[0] is the one every codelet writes
  // A vertex that reads its input fields[1] as rows (inputRowFloats, sim/codelets.h): row q at
  // arena offset input_rows[q] instead, where the exchange's sources hold it
  // (sim/scratch_inputs.h). Null: the rows are in fields[1].
  const uint64_t* input_rows = nullptr;

  VertexView() = default;
  VertexView(uint32_t tile, exec::Codelet codelet, DType dtype, std::span<const exec::Field> fields)
      : tile(tile), codelet(codelet), dtype(dtype), fields(fields) {}
  VertexView(const exec::Vertex& v) : VertexView(v.tile, v.codelet, v.dtype, v.fields) {}  // NOLINT: a view of it
};

}  // namespace poprt::sim
