// libFuzzer target: the ONNX importer as poprt-convert runs it (importModel on a file: protobuf
// parse, opset range and upgrade, unknown ops, libonnx's checker, initializers, external data in
// a scratch folder with symlinks pointing out of it, subgraphs, topological sort). Shape
// inference has its own target (fuzz_shape_inference). Properties: never a crash, a hang or an
// unbounded allocation; every refusal names the file; an accepted model is a valid IR graph
// whose external data came from inside the folder, and it exports again.
#include <onnx/onnx_pb.h>

#include "fuzz/fuzz_util.h"
#include "lib/onnx/onnx_io.h"

using namespace poprt;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  fuzz::scratchDir();
  return 0;
}

namespace {

void requireConfined(const onnx::GraphProto& g) {
  auto check = [](const onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    for (const auto& e : t.external_data())
      if (e.key() == "location")
        fuzz::require(fuzz::isInside(fuzz::scratchDir() / e.value(), fuzz::scratchDir()),
                      "external data read from outside the model folder: " + e.value());
  };
  for (const auto& t : g.initializer()) check(t);
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_t()) check(a.t());
      if (a.has_g()) requireConfined(a.g());
      for (const auto& sub : a.graphs()) requireConfined(sub);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path path = fuzz::scratchDir() / "model.onnx";
  fuzz::writeFile(path, data, size);
  auto model = onnxio::importModel(path, {/*run_checker=*/true, /*infer_shapes=*/false});
  if (!model.ok()) {
    fuzz::requireNamedError(model.error(), path.string() + ": ");
    return 0;
  }
  auto valid = ir::verify(*model->graph);
  fuzz::require(valid.ok(),
                "the importer accepted a model whose IR does not verify: " + (valid.ok() ? "" : valid.error().message()));
  onnx::ModelProto proto;
  if (proto.ParseFromArray(data, static_cast<int>(size))) requireConfined(proto.graph());
  (void)onnxio::exportModelProto(*model);
  return 0;
}
