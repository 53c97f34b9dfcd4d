// ONNX import and export: a thin mapping between onnx::ModelProto and the IR. Import runs
// libonnx's checker and shape inference, resolves external data only inside the model's folder,
// and reports every unknown op at once, by node name and op type.
#pragma once

#include <filesystem>

#include "lib/ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace poprt::onnxio {

inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 17;

struct ImportOptions {
  bool run_checker = true;
  bool infer_shapes = true;
};

Expected<ir::Model> importModel(const std::filesystem::path& path, const ImportOptions& options = {});
// `source` names the model in errors; `model_dir` is where external data may live ("" = none).
Expected<ir::Model> importModelProto(onnx::ModelProto& proto, const std::filesystem::path& model_dir, const std::string& source,
                                     const ImportOptions& options = {});

// Converts the model to default-domain opset `opset` (kMinOpset..kMaxOpset) with libonnx's version
// converter and re-imports it; `source` names the model in errors (one line, e.g. an op the
// converter has no adapter for).
Expected<ir::Model> convertOpset(const ir::Model& model, int64_t opset, const std::string& source);

// What an export carries of the initializers: all of them, or (for shape inference) only those of
// at most kShapeDataElements elements, the rest as typed graph inputs: shapes are computed from
// small constants (a Reshape's target, Resize's scales), and copying a big model's weights into
// the proto for every inference took longer than the inference (ViT-B/16: 346 MB, 3 times).
// Or (for the converted ONNX a user keeps) every float32 weight of more than kShapeDataElements
// integers that int8 or int16 holds in that type, read through a Cast to float32: a quantized
// model's weights, which quantized_to_float made float32, take their own bytes again (the
// dynamically quantized ViT-B/16: 347 MB -> 88 MB, and writing the 347 was a fifth of its compile);
// not an initializer that is also a graph input, nor in a model that imports no default domain.
enum class WeightData { Full, ShapesOnly, IntegersNarrowed };
inline constexpr int64_t kShapeDataElements = 1024;
onnx::ModelProto exportModelProto(const ir::Model& model, WeightData weights = WeightData::Full);
// The model's ONNX bytes; models over protobuf's 2 GiB limit are refused with an error.
Expected<std::string> serializeModel(const ir::Model& model, WeightData weights = WeightData::Full);

// Runs ONNX shape inference (with data propagation) over the model and updates every value's
// type where inference knows more. Node-level inference errors name the node.
Status inferShapes(ir::Model& model);

}  // namespace poprt::onnxio
