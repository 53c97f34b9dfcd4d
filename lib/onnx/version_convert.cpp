#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include "lib/onnx/import_checks.h"
#include "lib/onnx/onnx_io.h"
#include "lib/onnx/type_map.h"

namespace poprt::onnxio {

Expected<ir::Model> convertOpset(const ir::Model& model, int64_t opset, const std::string& source) {
  const std::string range = std::to_string(kMinOpset) + "-" + std::to_string(kMaxOpset);
  if (opset < kMinOpset || opset > kMaxOpset)
    return Error(source + ": cannot convert to opset " + std::to_string(opset) + ": poprt supports opsets " + range);
  const int64_t from = model.opsetVersion();
  if (from == 0) return Error(source + ": the model imports no default-domain opset to convert");
  onnx::ModelProto proto = exportModelProto(model);
  POPRT_TRY(checkForVersionConverter(proto.graph(), source));
  try {
    proto = onnx::version_conversion::ConvertVersion(proto, static_cast<int>(opset));
  } catch (const std::exception& e) {
    return Error(source + ": the ONNX version converter cannot convert opset " + std::to_string(from) + " to " +
                 std::to_string(opset) + ": " + libraryFailure(e));
  }
  return importModelProto(proto, "", source + " (converted to opset " + std::to_string(opset) + ")");
}

}  // namespace poprt::onnxio
