// --show: the model's inputs and outputs (name, dtype, shape with symbolic dims) as a table.
// modelIo() is also what the --summary_json summary lists.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "lib/ir/graph.h"

namespace poprt::converter {

struct IoEntry {
  bool is_input = true;
  std::string name;
  std::string kind;   // tensor, sequence, optional, optional_sequence, or other (maps, ...)
  std::string dtype;  // of the tensor or of the sequence/optional's elements
  bool ranked = false;
  std::vector<std::string> dims;  // "3", "batch" or "?" (unknown); empty for a scalar
};

// The graph inputs (not initializers) then the graph outputs, in the model's order.
std::vector<IoEntry> modelIo(const ir::Model& model);
// "[1,batch,224,224]", "[]" for a scalar, "[*]" when even the rank is unknown.
std::string shapeText(const IoEntry& e);
void printModelIo(const ir::Model& model, const std::string& source, std::ostream& out);

}  // namespace poprt::converter
