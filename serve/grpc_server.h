// popef-serve's gRPC endpoint: the KServe v2 GRPCInferenceService (serve/kserve.proto) on Debian's
// gRPC C++ (libgrpc++), over the same models, batchers and metrics as the HTTP routes. Each RPC
// runs on a thread of gRPC's synchronous server, which waits for its batch as an HTTP handler does;
// the thread count bounds the requests queued.
#pragma once

#include <memory>
#include <string>

#include "lib/support/status.h"
#include "serve/repository.h"

namespace poprt::serve {

class GrpcServer {
 public:
  // Listens on host:port (0: a free port) and starts serving. `models` outlive the server.
  static Expected<std::unique_ptr<GrpcServer>> start(const std::string& host, int port, ModelRepository& models, int threads,
                                                     size_t max_message_bytes);
  ~GrpcServer();

  int port() const { return port_; }
  // Stops taking RPCs and returns once every RPC in flight has replied.
  void shutdown();

 private:
  struct Impl;
  GrpcServer() = default;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace poprt::serve
