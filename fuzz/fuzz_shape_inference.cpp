// libFuzzer target: the shape-inference entry. A ModelProto goes through the importer as
// poprt-convert runs it (checker, then ONNX shape inference with data propagation), and the
// model it returns through onnxio::inferShapes, the re-inference the passes run after each
// rewrite. Properties: never a crash or a hang; every refusal names the model; inference keeps
// the IR valid.
#include <onnx/onnx_pb.h>

#include "fuzz/fuzz_util.h"
#include "lib/onnx/onnx_io.h"

using namespace poprt;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;  // the importer's own target covers this
  auto model = onnxio::importModelProto(proto, "", "fuzz.onnx", {/*run_checker=*/true, /*infer_shapes=*/true});
  if (!model.ok()) {
    fuzz::requireNamedError(model.error(), "fuzz.onnx");
    return 0;
  }
  auto again = onnxio::inferShapes(*model);
  (void)again;  // may refuse (a node inference rejects once types are known); must not crash
  auto valid = ir::verify(*model->graph);
  fuzz::require(valid.ok(), "shape inference left an IR that does not verify: " + (valid.ok() ? "" : valid.error().message()));
  return 0;
}
