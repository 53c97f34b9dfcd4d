// One op of a custom-op plugin (runtime/include/poprt/custom_op.h) made into what the rest of poprt
// knows: an OpDef for the registry (its host kernel as the evaluator) and an ONNX schema whose
// inference calls the plugin's. Everything the plugin returns is checked here, so a faulty plugin
// gives an error naming the node, not a wild write.
#pragma once

#include <onnx/defs/schema.h>

#include <string>

#include "lib/ops/registry.h"
#include "poprt/custom_op.h"

namespace poprt::plugin {

// The attribute readers handed to every plugin's entry point.
const poprt_host_api& hostApi();

// `library` names the plugin in errors.
ops::OpDef makeOpDef(const poprt_custom_op& op, const std::string& library);
onnx::OpSchema makeSchema(const poprt_custom_op& op, const std::string& library);

}  // namespace poprt::plugin
