#include "serve/infer_request.h"

#include "serve/tensors.h"

namespace poprt::serve {

namespace {

// The anchor named `name`, or its index past the end.
size_t find(const std::vector<AnchorLayout>& anchors, const std::string& name) {
  size_t i = 0;
  while (i < anchors.size() && anchors[i].desc.name != name) ++i;
  return i;
}

// The rows a request's input of shape `s` carries, checked against the model's input `a`.
Expected<int64_t> rowsOf(const Shape& s, const AnchorLayout& a, const ModelLayout& layout, const std::string& where) {
  const Shape& compiled = a.desc.shape;
  const std::string takes =
      ", the model takes " + shapeToString(layout.batchable ? layout.shapeFor(a, -1) : compiled) +
      (layout.batchable ? " with 1.." + std::to_string(layout.batch) + " rows along axis " + std::to_string(layout.axis) : "");
  if (s.size() != compiled.size()) return Error(where + "shape " + shapeToString(s) + takes);
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != compiled[i] && !(layout.batchable && static_cast<int>(i) == layout.axis))
      return Error(where + "shape " + shapeToString(s) + takes);
  if (!layout.batchable) return 1;
  const int64_t rows = s[static_cast<size_t>(layout.axis)];
  if (rows < 1 || rows > layout.batch)
    return Error(where + "shape " + shapeToString(s) + " has " + std::to_string(rows) + " rows along axis " +
                 std::to_string(layout.axis) + "; the model is compiled for batches of " + std::to_string(layout.batch) +
                 " (1.." + std::to_string(layout.batch) + " rows per request)");
  return rows;
}

}  // namespace

std::string anchorNames(const std::vector<AnchorLayout>& anchors) {
  std::string s;
  for (const auto& a : anchors) s += (s.empty() ? "" : ", ") + a.desc.name;
  return s;
}

std::string datatypeOf(const AnchorLayout& a) { return std::string(*kserveDatatype(a.dtype)); }

Expected<InferRequestBuilder::Input> InferRequestBuilder::declare(const std::string& name, const std::string* datatype,
                                                                  const Shape* shape) {
  Input in;
  in.where = "input '" + name + "': ";
  in.index = find(layout_.inputs, name);
  if (in.index == layout_.inputs.size())
    return Error("unknown input '" + name + "' (the model takes: " + anchorNames(layout_.inputs) + ")");
  if (declared_[in.index]) return Error(in.where + "given twice");
  declared_[in.index] = true;
  const AnchorLayout& a = layout_.inputs[in.index];
  if (!datatype) return Error(in.where + "no \"datatype\" (the model takes " + datatypeOf(a) + ")");
  if (*datatype != datatypeOf(a)) return Error(in.where + "datatype " + *datatype + ", the model takes " + datatypeOf(a));
  if (!shape) return Error(in.where + "no \"shape\"");
  POPRT_ASSIGN_OR_RETURN(int64_t r, rowsOf(*shape, a, layout_, in.where));
  if (rows_ && *rows_ != r)
    return Error(in.where + std::to_string(r) + " rows along axis " + std::to_string(layout_.axis) + ", input '" + rows_from_ +
                 "' has " + std::to_string(*rows_));
  rows_ = r;
  rows_from_ = name;
  in.bytes = layout_.bytesFor(a, r);
  in.dtype = a.dtype;
  return in;
}

Status InferRequestBuilder::setData(const Input& in, std::vector<uint8_t> bytes) {
  if (bytes.size() != in.bytes)
    return Error(in.where + std::to_string(bytes.size()) + " bytes of data, its shape of " +
                 datatypeOf(layout_.inputs[in.index]) + " holds " + std::to_string(in.bytes));
  if (in.dtype == DType::Bool)
    for (size_t i = 0; i < bytes.size(); ++i)
      if (bytes[i] > 1)
        return Error(in.where + "BOOL byte " + std::to_string(i) + " is " + std::to_string(bytes[i]) + ", not 0 or 1");
  given_[in.index] = std::move(bytes);
  return okStatus();
}

Status InferRequestBuilder::chooseOutput(const std::string& name, bool binary) {
  const size_t index = find(layout_.outputs, name);
  if (index == layout_.outputs.size())
    return Error("unknown output '" + name + "' (the model gives: " + anchorNames(layout_.outputs) + ")");
  for (const OutputChoice& c : outputs_)
    if (c.index == index) return Error("output '" + name + "' is asked for twice");
  outputs_.push_back({index, binary});
  return okStatus();
}

Expected<InferCall> InferRequestBuilder::finish(std::string id, bool binary_default) {
  InferCall call;
  call.id = std::move(id);
  for (size_t i = 0; i < given_.size(); ++i)
    if (!given_[i]) return Error("input '" + layout_.inputs[i].desc.name + "' is missing");
  call.request.rows = layout_.batchable ? rows_.value_or(1) : 1;
  for (auto& g : given_) call.request.inputs.push_back(std::move(*g));
  call.outputs = std::move(outputs_);
  if (call.outputs.empty())
    for (size_t i = 0; i < layout_.outputs.size(); ++i) call.outputs.push_back({i, binary_default});
  return call;
}

}  // namespace poprt::serve
