#include "lib/onnx/graph_walk.h"

#include "lib/support/dtype.h"

namespace poprt::onnxio {

namespace {

uint64_t tensorBytes(const onnx::TensorProto& t) {
  const auto dtype = dtypeFromOnnx(t.data_type());
  if (!dtype || *dtype == DType::String) return t.raw_data().size();
  uint64_t n = 1;
  for (int64_t d : t.dims()) n *= static_cast<uint64_t>(d < 0 ? 0 : d);  // the importer's checks bound them
  return n * dtypeSize(*dtype);
}

}  // namespace

uint64_t weightBytes(const onnx::GraphProto& g) {
  uint64_t bytes = 0;
  (void)forEachGraph(g, "", [&](const onnx::GraphProto& sub, const std::string&) {
    for (const auto& t : sub.initializer()) bytes += tensorBytes(t);
    for (const auto& n : sub.node())
      if (n.op_type() == "Constant")
        for (const auto& a : n.attribute())
          if (a.has_t()) bytes += tensorBytes(a.t());
    return okStatus();
  });
  return bytes;
}

}  // namespace poprt::onnxio
