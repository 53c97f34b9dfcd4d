// The PopEF poprt-convert writes for a compiled model: metadata (anchors for the executable's input
// and output streams, program flow, replication factor, batches per step, compile options), the
// executable, a tensor data blob per weight, and as an opaque blob the compiler's memory profile
// (lib/exec/memory_profile.h). The weights are stored once: the optimised ONNX is written beside
// the PopEF (*.poprt.onnx), not into it, and host programs carry their own nodes in the executable.
#pragma once

#include <string>
#include <vector>

#include "codegen/compiler.h"
#include "converter/options.h"
#include "popef/popef.h"

namespace poprt::converter {

// `model` is the optimised model that was compiled (the plugins its ops come from are recorded).
// `kept_fp32`: nodes --fp16_min_cosine kept in float32; with the skip lists' nodes, their float32
// weights are stored as they are (see weightBlob).
popef::PopefFile makePopef(const codegen::CompileResult& compiled, const ir::Model& model, const ConvertOptions& o,
                           const std::vector<std::string>& kept_fp32 = {});

}  // namespace poprt::converter
