#include "converter/show.h"

#include <algorithm>
#include <iomanip>

namespace poprt::converter {
namespace {

IoEntry entryOf(const ir::Value& v, bool is_input) {
  IoEntry e;
  e.is_input = is_input;
  e.name = v.name();
  const ir::TensorType& t = v.type;
  const bool known_kind = t.isTensor() || t.kind != ValueKind::Tensor;
  e.kind = known_kind ? std::string(valueKindName(t.kind)) : "other";
  e.dtype = t.dtype == DType::Undefined ? "?" : std::string(dtypeName(t.dtype));
  e.ranked = t.hasRank();
  if (t.dims)
    for (const ir::Dim& d : *t.dims)
      e.dims.push_back(d.isStatic() ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol));
  return e;
}

}  // namespace

std::vector<IoEntry> modelIo(const ir::Model& model) {
  std::vector<IoEntry> io;
  for (const ir::Value* in : model.graph->inputs())
    if (!in->isInitializer()) io.push_back(entryOf(*in, true));
  for (const ir::Value* out : model.graph->outputs()) io.push_back(entryOf(*out, false));
  return io;
}

std::string shapeText(const IoEntry& e) {
  if (!e.ranked) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < e.dims.size(); ++i) s += (i ? "," : "") + e.dims[i];
  return s + "]";
}

void printModelIo(const ir::Model& model, const std::string& source, std::ostream& out) {
  const std::vector<IoEntry> io = modelIo(model);
  std::vector<std::vector<std::string>> rows = {{"", "name", "dtype", "shape"}};
  for (const IoEntry& e : io) {
    std::string dtype = e.kind == "tensor" ? e.dtype : e.kind + "(" + e.dtype + ")";
    rows.push_back({e.is_input ? "input" : "output", e.name, dtype, shapeText(e)});
  }
  std::vector<size_t> width(4, 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < 4; ++c) width[c] = std::max(width[c], r[c].size());
  out << source << " (opset " << model.opsetVersion() << ")\n";
  for (const auto& r : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < 4; ++c) {
      line += r[c];
      if (c + 1 < 4) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

}  // namespace poprt::converter
