// --input_shape: fixes the dynamic dims of named graph inputs, then re-infers every shape.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/ir/graph.h"

namespace poprt::passes {

struct InputShape {
  std::string name;
  Shape dims;
};

// Parses "NAME=D0,D1,..." (an empty list means a scalar: "NAME=").
Expected<InputShape> parseInputShape(const std::string& text);

// Fills only dynamic dims; a clash with a static dim, a rank mismatch or an unknown input name is
// an error naming both. Re-runs shape inference afterwards.
Status applyInputShapes(ir::Model& model, const std::vector<InputShape>& shapes);

// --batch_size N --batch_axis A: sets dim A of every input where it is not static (before
// --input_shape, which may then fix the other dims). An error when no input then has N there (the
// model fixes its batch otherwise). Does not re-infer shapes.
Status applyBatchSize(ir::Model& model, int64_t batch_size, int64_t batch_axis);

// The first tensor (graph input first, then in node order) whose shape is not static, with the
// node that produces it; "" when all are static.
std::string firstDynamicTensor(const ir::Graph& graph);

}  // namespace poprt::passes
