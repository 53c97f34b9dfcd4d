// The PopEF poprt-convert writes for a compiled model: metadata (anchors for the executable's input
// and output streams, program flow, replication factor, batches per step, compile options), the
// executable, a tensor data blob per weight, and as an opaque blob the compiler's memory profile
// (lib/exec/memory_profile.h). The weights are stored once: the optimised ONNX is written beside
// the PopEF (*.poprt.onnx), not into it, and host programs carry their own nodes in the executable.
#pragma once

#include <string>

#include "codegen/compiler.h"
#include "converter/options.h"
#include "popef/popef.h"

namespace poprt::converter {

// `model` is the optimised model that was compiled (the plugins its ops come from are recorded).
popef::PopefFile makePopef(const codegen::CompileResult& compiled, const ir::Model& model, const ConvertOptions& o);

}  // namespace poprt::converter
