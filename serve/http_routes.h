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

// Registers every route on `server`. `models` and `metrics` outlive the server's requests.
void addRoutes(httplib::Server& server, ModelRepository& models, ServerMetrics& metrics);

}  // namespace poprt::serve
