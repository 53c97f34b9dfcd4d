// The KServe v2 gRPC messages (kserve.proto) as popef-serve reads and answers them, independent of
// the gRPC library: an infer request's inputs (raw_input_contents, or each input's typed contents)
// checked against the model through infer_request.h; the reply with raw output contents; model
// metadata; and how the HTTP statuses the rest of the server speaks map to gRPC status codes.
#pragma once

#include <string>

#include "kserve.pb.h"
#include "lib/support/status.h"
#include "model_config.pb.h"
#include "serve/infer_request.h"
#include "serve/layout.h"
#include "serve/metrics.h"
#include "serve/model_id.h"

namespace poprt::serve {

// The gRPC status code (grpc::StatusCode's value) for an HTTP status: 400 INVALID_ARGUMENT,
// 404 NOT_FOUND, 503 UNAVAILABLE, 413 RESOURCE_EXHAUSTED, others INTERNAL.
int grpcCode(int http_status);

// A ModelInfer request checked against the model. Errors name the input or output.
Expected<InferCall> parseInferRequest(const inference::ModelInferRequest& request, const ModelLayout& layout);

// The reply to `call` (outputs as raw contents, in the order asked for); `result` must be a success.
void fillInferResponse(const ModelId& model, const InferCall& call, const ModelLayout& layout, const ServeResult& result,
                       inference::ModelInferResponse& response);

void fillModelStatistics(const ModelId& model, const Statistics& s, inference::ModelStatistics& out);

// The model's configuration in Triton's terms (as the HTTP /config): max_batch_size, inputs and
// outputs (dims without the batch axis), the replicas as an instance group, dynamic batching.
void fillModelConfig(const ModelId& model, const ModelLayout& layout, const BatcherOptions& options, unsigned replicas,
                     poprt::serve::ModelConfig& config);

void fillModelMetadata(const ModelId& model, const ModelLayout& layout, inference::ModelMetadataResponse& response);

}  // namespace poprt::serve
