// popef-run's inputs: from --input NAME=FILE, from --input_dir DIR (input_<i>*.npy or
// input_<i>.pb, i in the model's input order), or generated (--fill) for the ones not given; each
// checked against the model's anchor, naming the file or flag that is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/ops/value.h"
#include "poprt/runtime/tensor_memory.h"

namespace poprt::tools {

struct InputOptions {
  std::vector<std::string> inputs;  // NAME=FILE
  std::string input_dir;
  std::string fill;  // "", random, zeros, ones
  uint64_t seed = 0;
};

// One value per model input, in order. `popef` names the model in errors.
Expected<std::vector<ops::RtValue>> gatherInputs(const std::vector<runtime::DataDesc>& anchors, const InputOptions& o,
                                                 const std::string& popef);

// The memory views ModelRunner reads: a tensor's own bytes for Raw anchors, the ONNX proto (kept
// in `encoded`) for the others. `values` and `encoded` must outlive the views.
Expected<runtime::InputMemoryView> inputViews(const std::vector<runtime::DataDesc>& anchors,
                                              const std::vector<ops::RtValue>& values,
                                              std::vector<std::vector<uint8_t>>& encoded);

}  // namespace poprt::tools
