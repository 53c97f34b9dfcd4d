// --fp16_min_cosine: a float16 conversion held to an accuracy target. Some models lose more in
// float16 than any accumulation policy can give back: rounding yolox_nano's weights to float16
// alone (ONNX Runtime, float32 math) already gives an output cosine of 0.9969. So after
// float_to_half the float16 model runs beside the float32 one with the reference evaluator on the
// calibration inputs (--fp16_calibration_input, or generated as --check's), and while the worst
// output's cosine similarity is below the target, converted nodes stay float32, those that add the
// most error first (a weight's rounding or an output's: with every Conv of yolox_nano in float32
// its activations alone still cost 0.0016): float_to_half runs again with the k worst in
// --fp16_skip_node_names, k found by bisection (as ONNX Runtime's auto-mixed-precision tool
// searches).
#pragma once

#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/support/status.h"
#include "passes/pass_manager.h"

namespace poprt::converter {

struct MixedPrecisionOutcome {
  double cosine_before = 1, cosine_after = 1;  // the worst model output's
  std::vector<std::string> kept_fp32;          // nodes kept float32 beyond float_to_half's own choice
  size_t candidates = 0;                       // nodes float_to_half converted
  int evaluations = 0;                         // float16 models compared
  bool met = true;                             // the target is reached (else the model is left as it was)
};

// `fp32_snapshot`: the serialized model just before float_to_half; `fp16`: the model after the
// passes `fp16_passes` (float_to_half and those after it), replaced by the one kept. `inputs`:
// NAME=FILE entries of `flag`; the other inputs are generated.
Expected<MixedPrecisionOutcome> meetFp16Cosine(const std::string& fp32_snapshot, ir::Model& fp16,
                                               const passes::PipelineOptions& fp16_passes, double min_cosine,
                                               const std::vector<std::string>& inputs, const std::string& flag);

}  // namespace poprt::converter
