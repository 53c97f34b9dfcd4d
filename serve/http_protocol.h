// The KServe v2 inference protocol as popef-serve speaks it (Triton's HTTP/REST flavour): an
// infer request's JSON (tensors as JSON data, or with the binary tensor extension as bytes after
// the JSON header) checked against the model and turned into a batcher request; the reply with
// each output as JSON data or binary; model metadata and configuration; errors as
// {"error": "..."}. Independent of the HTTP library.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/support/status.h"
#include "serve/batcher.h"
#include "serve/infer_request.h"
#include "serve/layout.h"
#include "serve/metrics.h"
#include "serve/model_id.h"

namespace poprt::serve {

// The protocol's header naming the length of the JSON part of a body with binary tensors.
inline constexpr const char* kHeaderLengthHeader = "Inference-Header-Content-Length";

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  size_t header_length = 0;  // > 0: binary outputs follow the first header_length bytes of JSON
};

HttpReply jsonReply(int status, const nlohmann::json& body);
HttpReply errorReply(int status, const std::string& message);  // {"error": message}

// A POST .../infer body checked against the model: names, datatypes, shapes (1..batch rows
// along the batch axis when the model batches, the compiled shape otherwise), element counts
// and binary sizes. `header_length` is the Inference-Header-Content-Length header ("" when
// absent). An error is the message of a 400 reply, naming the input or output.
Expected<InferCall> parseInfer(std::string_view body, const std::string& header_length, const ModelLayout& layout);

// The reply to `call`: {"model_name", "model_version", "id", "outputs": [...]} with binary outputs
// after the JSON, or the result's error.
HttpReply inferReply(const ModelId& model, const InferCall& call, const ModelLayout& layout, const ServeResult& result);

// One model's entry of GET /v2/models[/NAME]/stats (Triton's statistics extension): name, version,
// last_inference, inference_count, execution_count, inference_stats and batch_stats, each duration
// as {count, ns}.
nlohmann::json modelStatistics(const ModelId& model, const Statistics& s);

// GET /v2/models/NAME: name, versions, platform, inputs and outputs (datatype, shape; -1 for the
// batch axis of a batching model and for dims known only at run time).
nlohmann::json modelMetadata(const ModelId& model, const ModelLayout& layout);
// GET /v2/models/NAME/config, in Triton's terms: max_batch_size (0 when the model does not batch),
// input and output (name, data_type TYPE_FP32..., dims without the batch axis), instance_group
// (count: the replicas), dynamic_batching; also batch_axis and replicas.
nlohmann::json modelConfig(const ModelId& model, const ModelLayout& layout, const BatcherOptions& options, unsigned replicas);

}  // namespace poprt::serve
