// An infer request as every transport checks it (HTTP JSON and binary bodies, gRPC messages): the
// inputs by name, each with the model's datatype and a shape the model takes (1..batch rows along
// the batch axis when the model batches, the compiled shape otherwise; the same rows in every
// input), then exactly the bytes that shape holds; the outputs asked for, each once. The result is
// the batcher's request and the outputs the reply holds. Errors are the message of a 400 (HTTP) or
// INVALID_ARGUMENT (gRPC) reply and name the input or output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/support/status.h"
#include "serve/batcher.h"
#include "serve/layout.h"

namespace poprt::serve {

// An output the request asked for: the model output's index, as binary data or JSON (HTTP).
struct OutputChoice {
  size_t index = 0;
  bool binary = false;
};

struct InferCall {
  std::string id;  // the request's id, echoed in the reply
  ServeRequest request;
  std::vector<OutputChoice> outputs;  // what the reply holds, in the request's order (every output by default)
};

// The model's anchors named in a message: "a, b".
std::string anchorNames(const std::vector<AnchorLayout>& anchors);
// The KServe datatype of an anchor (FP32, INT64, ...).
std::string datatypeOf(const AnchorLayout& a);

class InferRequestBuilder {
 public:
  explicit InferRequestBuilder(const ModelLayout& layout)
      : layout_(layout), given_(layout.inputs.size()), declared_(layout.inputs.size(), false) {}

  // An input the request declares.
  struct Input {
    size_t index = 0;  // the model input's
    size_t bytes = 0;  // what its data must hold
    DType dtype = DType::Undefined;
    std::string where;  // "input 'NAME': ", to start messages about it
  };
  // Checks `name`, `datatype` and `shape` (nullptr: the request has none) against the model and
  // the inputs declared before.
  Expected<Input> declare(const std::string& name, const std::string* datatype, const Shape* shape);
  // The data of a declared input: exactly in.bytes bytes; BOOL bytes are 0 or 1.
  Status setData(const Input& in, std::vector<uint8_t> bytes);

  // Asks for the output `name` (each once).
  Status chooseOutput(const std::string& name, bool binary);

  // The checked call: every input given. Without chosen outputs, every output (as `binary_default`).
  Expected<InferCall> finish(std::string id, bool binary_default);

 private:
  const ModelLayout& layout_;
  std::vector<std::optional<std::vector<uint8_t>>> given_;
  std::vector<bool> declared_;
  std::optional<int64_t> rows_;
  std::string rows_from_;
  std::vector<OutputChoice> outputs_;
};

}  // namespace poprt::serve
