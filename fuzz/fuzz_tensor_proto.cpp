// libFuzzer target: ONNX TensorProto, SequenceProto and OptionalProto files as popef-run reads
// its inputs (readValueFile; the first byte picks the kind, the rest is the file), with external
// data resolved in a scratch folder that holds a data file and symlinks pointing out of it.
// Properties: never a crash; every refusal names the file; accepted external data never comes
// from outside the folder; accepted tensors survive tensorToProto and a second read unchanged.
#include <onnx/onnx_pb.h>

#include "fuzz/fuzz_util.h"
#include "lib/onnx/value_io.h"
#include "lib/support/tensor_proto.h"

using namespace poprt;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  fuzz::scratchDir();
  return 0;
}

namespace {

// Every external location an accepted proto names resolves inside the scratch folder.
void requireConfined(const onnx::TensorProto& p) {
  if (p.data_location() != onnx::TensorProto::EXTERNAL) return;
  for (const auto& e : p.external_data())
    if (e.key() == "location")
      fuzz::require(fuzz::isInside(fuzz::scratchDir() / e.value(), fuzz::scratchDir()),
                    "external data read from outside the model folder: " + e.value());
}

void roundTrip(const Tensor& t) {
  onnx::TensorProto again;
  tensorToProto(t, "again", &again);
  auto back = tensorFromProto(again, fuzz::scratchDir());
  fuzz::require(back.ok(), "tensorToProto wrote a proto that cannot be read back: " + (back.ok() ? "" : back.error().message()));
  fuzz::require(*back == t, "a tensor changes through tensorToProto and a read");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const ValueKind kind = static_cast<ValueKind>(data[0] % 4);
  const std::filesystem::path path = fuzz::scratchDir() / "input.pb";
  fuzz::writeFile(path, data + 1, size - 1);
  auto v = onnxio::readValueFile(path, kind);
  if (!v.ok()) {
    fuzz::requireNamedError(v.error(), path.string() + ": ");
    return 0;
  }
  if (kind == ValueKind::Tensor) {
    onnx::TensorProto p;
    fuzz::require(p.ParseFromArray(data + 1, static_cast<int>(size - 1)), "accepted a .pb protobuf cannot parse");
    requireConfined(p);
    roundTrip(v->tensor);
  } else {
    for (const Tensor& t : v->sequence) roundTrip(t);
  }
  return 0;
}
