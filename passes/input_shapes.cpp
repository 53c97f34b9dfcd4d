#include "passes/input_shapes.h"

#include <charconv>

#include "lib/onnx/onnx_io.h"

namespace poprt::passes {

Expected<InputShape> parseInputShape(const std::string& text) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) return Error("--input_shape: expected NAME=D0,D1,..., got '" + text + "'");
  InputShape s{text.substr(0, eq), {}};
  std::string dims = text.substr(eq + 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    if (comma == std::string::npos) comma = dims.size();
    std::string_view item(dims.data() + pos, comma - pos);
    int64_t value = -1;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || ptr != item.data() + item.size() || value < 0 || value > (int64_t{1} << 40))
      return Error("--input_shape " + text + ": '" + std::string(item) + "' is not a dimension (a non-negative integer)");
    s.dims.push_back(value);
    pos = comma + 1;
  }
  return s;
}

Status applyInputShapes(ir::Model& model, const std::vector<InputShape>& shapes) {
  ir::Graph& g = *model.graph;
  for (const InputShape& s : shapes) {
    ir::Value* v = g.findLocalValue(s.name);
    if (!v || !v->isGraphInput() || v->isInitializer()) {
      std::string names;
      for (const ir::Value* in : g.inputs())
        if (!in->isInitializer()) names += (names.empty() ? "" : ", ") + in->name();
      return Error("--input_shape: the model has no input named '" + s.name + "' (inputs: " + names + ")");
    }
    auto& type = v->type;
    if (type.dims && type.dims->size() != s.dims.size())
      return Error("--input_shape " + s.name + ": rank " + std::to_string(s.dims.size()) + " given, input '" + s.name +
                   "' has rank " + std::to_string(type.dims->size()) + " (" + type.toString() + ")");
    if (!type.dims) type.dims.emplace(s.dims.size());
    for (size_t i = 0; i < s.dims.size(); ++i) {
      ir::Dim& d = (*type.dims)[i];
      if (d.isStatic() && d.value != s.dims[i])
        return Error("--input_shape " + s.name + ": dim " + std::to_string(i) + " is given as " + std::to_string(s.dims[i]) +
                     " but input '" + s.name + "' fixes it to " + std::to_string(d.value) + " (" + type.toString() + ")");
      d = ir::Dim::fixed(s.dims[i]);
    }
  }
  return onnxio::inferShapes(model);
}

Status applyBatchSize(ir::Model& model, int64_t batch_size, int64_t batch_axis) {
  if (batch_size < 1) return Error("--batch_size must be at least 1, got " + std::to_string(batch_size));
  if (batch_axis < 0) return Error("--batch_axis must be non-negative, got " + std::to_string(batch_axis));
  // The batch goes to every input with a dynamic dim there. An input that fixes that dim to another
  // value is left as it is (it may broadcast along the batch), but if no input takes the batch the
  // flag would do nothing: that is an error, not a silent no-op.
  bool taken = false;
  std::string fixed;  // the first input that fixes the dim otherwise
  for (ir::Value* in : model.graph->inputs()) {
    if (in->isInitializer() || !in->type.isTensor() || !in->type.dims) continue;
    auto& dims = *in->type.dims;
    if (static_cast<int64_t>(dims.size()) <= batch_axis) continue;
    ir::Dim& d = dims[static_cast<size_t>(batch_axis)];
    if (!d.isStatic()) d = ir::Dim::fixed(batch_size);
    if (d.value == batch_size)
      taken = true;
    else if (fixed.empty())
      fixed = "input '" + in->name() + "' is " + in->type.toString();
  }
  if (!taken)
    return Error("--batch_size " + std::to_string(batch_size) + ": no input has a dynamic dim at axis " +
                 std::to_string(batch_axis) + (fixed.empty() ? "" : " (" + fixed + ")") +
                 "; the model fixes its batch (hint: --input_shape sets a static shape, when the model allows it)");
  return okStatus();
}

std::string firstDynamicTensor(const ir::Graph& g) {
  for (const ir::Value* in : g.inputs())
    if (!in->type.hasStaticShape()) return "input '" + in->name() + "' has shape " + in->type.toString();
  for (const auto& n : g.nodes())
    for (const ir::Value* out : n->outputs())
      if (out && !out->type.hasStaticShape())
        return "tensor '" + out->name() + "' made by " + n->describe() + " has shape " + out->type.toString();
  return "";
}

}  // namespace poprt::passes
