// The bridge between the runtime's anchors and the host values of the rest of poprt
// (ops::RtValue), for the runtime itself and for tools that read and write model inputs and
// outputs as files (popef-run). Not part of the installed API.
#pragma once

#include <span>
#include <string>

#include "lib/exec/executable.h"
#include "lib/ops/value.h"
#include "poprt/runtime/tensor_memory.h"

namespace poprt::runtime {

// How the runtime presents a stream of the executable: Raw for tensors with a fixed byte layout
// (outputs of numeric dtype also when their shape is known only at run time), OnnxProto otherwise.
DataDesc describeStream(const exec::HostStream& s);
// Why `value` cannot feed the input `desc` ("" when it can), in the simulator's words.
std::string inputMismatch(const DataDesc& desc, const ops::RtValue& value);
// An anchor's value from its bytes (`desc.shape` is the actual shape). Errors start with `source`.
Expected<ops::RtValue> decodeValue(const DataDesc& desc, std::span<const uint8_t> bytes, const std::string& source);
// The bytes of `value` as the anchor `desc` takes them (Raw elements or the ONNX proto).
Expected<std::vector<uint8_t>> encodeValue(const DataDesc& desc, const ops::RtValue& value);

}  // namespace poprt::runtime
