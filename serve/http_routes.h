// popef-serve's HTTP routes on cpp-httplib: the KServe v2 REST endpoints (server and model
// health and metadata, inference), Triton's extensions (config, statistics, the model repository)
// and GET /metrics.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "serve/metrics.h"
#include "serve/model.h"
#include "serve/repository.h"

namespace httplib {
class Server;
}

namespace poprt::serve {

// Registers every route on `server`. `models` and `metrics` outlive the server's requests; infer
// bodies over `max_body_bytes` are refused (413), chunked ones too.
void addRoutes(httplib::Server& server, ModelRepository& models, ServerMetrics& metrics, size_t max_body_bytes);

}  // namespace poprt::serve
