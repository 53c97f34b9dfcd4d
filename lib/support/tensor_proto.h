// Conversion between onnx::TensorProto and poprt::Tensor. Protos come from untrusted model files:
// every inconsistency (value count vs shape, wrong field for the type, external data escaping the
// model folder) is a one-line poprt::Error, checked before anything large is allocated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt {

// Reads any data_type 1..16 from the typed field the ONNX spec assigns to it (float_data,
// int32_data, int64_data, double_data, uint64_data, string_data), from raw_data (little-endian),
// or from external data. External data (data_location == EXTERNAL) is read from the file named
// by the 'location' key, resolved relative to `model_dir`; the path must be relative, contain no
// '..', and resolve (following symlinks) inside `model_dir`. 'offset' and 'length' are honoured,
// 'checksum' is ignored. An empty `model_dir` makes external data an error.
Expected<Tensor> tensorFromProto(const onnx::TensorProto& proto, const std::filesystem::path& model_dir);

// What tensorFromProto checks before reading anything: a known data_type, no segment, dims not
// negative, the element count and byte size under the caps (kMaxFileElements, maxTensorBytes()).
// The importer runs it on every initializer before libonnx's checker and shape inference see them.
Status checkTensorDeclaration(const onnx::TensorProto& proto);

// The file the external data of `proto` lives in: its 'location' resolved in `model_dir` with the
// rules above (relative, no '..', no NUL byte, inside `model_dir` after following symlinks, a
// regular file). Reads nothing: the importer checks every external tensor with it before
// libonnx's checker opens any file.
Expected<std::filesystem::path> externalDataFile(const onnx::TensorProto& proto, const std::filesystem::path& model_dir);

// Fills `proto` (cleared first): name, data_type, dims, and raw_data for numeric and bool types
// or string_data for strings.
void tensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

struct NamedTensor {
  std::string name;  // the proto's name field, "" if unset
  Tensor tensor;
};

// Reads a file holding one serialized TensorProto, such as the ONNX backend test data's
// input_0.pb. External data, if any, is resolved relative to the file's directory.
Expected<NamedTensor> readTensorProtoFile(const std::filesystem::path& path);

}  // namespace poprt
