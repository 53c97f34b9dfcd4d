#include "serve/grpc_server.h"

#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>

#include <chrono>

#include "kserve.grpc.pb.h"
#include "lib/support/log.h"
#include "serve/grpc_protocol.h"

#ifndef POPRT_VERSION
#define POPRT_VERSION "unknown"
#endif

namespace poprt::serve {

namespace {

// gRPC's own log lines (a failed bind prints a paragraph) go to poprt's log at debug level: the
// server reports what matters in its own one-line errors.
void grpcLog(gpr_log_func_args* args) { POPRT_LOG(Debug, "grpc: " << args->file << ":" << args->line << ": " << args->message); }

grpc::Status failure(int http_status, const std::string& message) {
  return grpc::Status(static_cast<grpc::StatusCode>(grpcCode(http_status)), message);
}

class InferenceService final : public inference::GRPCInferenceService::Service {
 public:
  explicit InferenceService(ModelRepository& models) : models_(models) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*, inference::ServerLiveResponse* r) override {
    r->set_live(true);
    return grpc::Status::OK;
  }

  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* r) override {
    r->set_ready(models_.ready());
    return grpc::Status::OK;
  }

  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* q,
                          inference::ModelReadyResponse* r) override {
    std::shared_ptr<ServedModel> m;
    if (grpc::Status st = lookup(q->name(), q->version(), m); !st.ok()) return st;
    r->set_ready(m->ready());
    return grpc::Status::OK;
  }

  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* r) override {
    r->set_name("popef-serve");
    r->set_version(POPRT_VERSION);
    r->add_extensions("model_configuration");
    r->add_extensions("statistics");
    r->add_extensions("model_repository");
    return grpc::Status::OK;
  }

  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* q,
                             inference::ModelMetadataResponse* r) override {
    std::shared_ptr<ServedModel> m;
    if (grpc::Status st = lookup(q->name(), q->version(), m); !st.ok()) return st;
    fillModelMetadata(m->id(), m->layout(), *r);
    return grpc::Status::OK;
  }

  grpc::Status ModelStatistics(grpc::ServerContext*, const inference::ModelStatisticsRequest* q,
                               inference::ModelStatisticsResponse* r) override {
    if (q->name().empty()) {
      if (!q->version().empty()) return failure(400, "a version without a model name");
      for (const auto& m : models_.served()) fillModelStatistics(m->id(), m->metrics().statistics(), *r->add_model_stats());
      return grpc::Status::OK;
    }
    std::shared_ptr<ServedModel> m;
    if (grpc::Status st = lookup(q->name(), q->version(), m); !st.ok()) return st;
    fillModelStatistics(m->id(), m->metrics().statistics(), *r->add_model_stats());
    return grpc::Status::OK;
  }

  grpc::Status ModelConfig(grpc::ServerContext*, const inference::ModelConfigRequest* q,
                           inference::ModelConfigResponse* r) override {
    std::shared_ptr<ServedModel> m;
    if (grpc::Status st = lookup(q->name(), q->version(), m); !st.ok()) return st;
    fillModelConfig(m->id(), m->layout(), m->options(), m->replicas(), *r->mutable_config());
    return grpc::Status::OK;
  }

  grpc::Status RepositoryIndex(grpc::ServerContext*, const inference::RepositoryIndexRequest* q,
                               inference::RepositoryIndexResponse* r) override {
    if (!q->repository_name().empty()) return failure(400, "repository_name: popef-serve has one repository (give \"\")");
    for (const IndexEntry& e : models_.index()) {
      if (q->ready() && e.state != "READY") continue;
      auto* m = r->add_models();
      m->set_name(e.name);
      m->set_version(e.version);
      m->set_state(e.state);
      m->set_reason(e.reason);
    }
    return grpc::Status::OK;
  }

  grpc::Status RepositoryModelLoad(grpc::ServerContext*, const inference::RepositoryModelLoadRequest* q,
                                   inference::RepositoryModelLoadResponse*) override {
    return loadOrUnload(q->repository_name(), q->model_name(), q->parameters_size(), true);
  }

  grpc::Status RepositoryModelUnload(grpc::ServerContext*, const inference::RepositoryModelUnloadRequest* q,
                                     inference::RepositoryModelUnloadResponse*) override {
    return loadOrUnload(q->repository_name(), q->model_name(), q->parameters_size(), false);
  }

  grpc::Status ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest* q,
                          inference::ModelInferResponse* r) override {
    return infer(*q, *r);
  }

  grpc::Status ModelStreamInfer(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<inference::ModelStreamInferResponse, inference::ModelInferRequest>* stream) override {
    inference::ModelInferRequest q;
    while (stream->Read(&q)) {
      inference::ModelStreamInferResponse reply;
      if (grpc::Status st = infer(q, *reply.mutable_infer_response()); !st.ok()) {
        reply.clear_infer_response();
        reply.set_error_message(st.error_message());
      }
      if (!stream->Write(reply)) break;  // the client went away
    }
    return grpc::Status::OK;
  }

 private:
  // The model a request names, or NOT_FOUND (an unknown model, or a version other than the one served).
  grpc::Status lookup(const std::string& name, const std::string& version, std::shared_ptr<ServedModel>& model) {
    model = models_.find(name);
    if (!model) return failure(404, "unknown model '" + name + "'");
    if (!version.empty() && version != model->id().version)
      return failure(404, "model '" + name + "' has no version '" + version + "' (versions: " + model->id().version + ")");
    return grpc::Status::OK;
  }

  grpc::Status loadOrUnload(const std::string& repository, const std::string& name, int parameters, bool load) {
    if (!models_.hasRepository() || models_.mode() != ControlMode::Explicit)
      return failure(400,
                     "models are loaded and unloaded on request only with --model_repository and "
                     "--model_control_mode explicit");
    if (!repository.empty()) return failure(400, "repository_name: popef-serve has one repository (give \"\")");
    if (parameters > 0) return failure(400, "load parameters (a config or files) are not supported");
    const Status st = load ? models_.load(name) : models_.unload(name);
    return st.ok() ? grpc::Status::OK : failure(400, st.error().message());
  }

  grpc::Status infer(const inference::ModelInferRequest& q, inference::ModelInferResponse& r) {
    const auto received = std::chrono::steady_clock::now();
    std::shared_ptr<ServedModel> m;
    if (grpc::Status st = lookup(q.model_name(), q.model_version(), m); !st.ok()) return st;
    auto call = parseInferRequest(q, m->layout());
    if (!call.ok()) {
      m->refused(received);
      return failure(400, call.error().message());
    }
    const ServeResult result = m->infer(std::move(call->request), received);
    if (result.status != 200) return failure(result.status, result.error);
    fillInferResponse(m->id(), *call, m->layout(), result, r);
    return grpc::Status::OK;
  }

  ModelRepository& models_;
};

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(ModelRepository& models) : service(models) {}
  InferenceService service;
  std::unique_ptr<grpc::Server> server;
};

Expected<std::unique_ptr<GrpcServer>> GrpcServer::start(const std::string& host, int port, ModelRepository& models, int threads,
                                                        size_t max_message_bytes) {
  gpr_set_log_function(grpcLog);
  std::unique_ptr<GrpcServer> s(new GrpcServer());
  s->impl_ = std::make_unique<Impl>(models);
  grpc::ServerBuilder builder;
  const std::string address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &s->port_);
  builder.RegisterService(&s->impl_->service);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(max_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(-1);
  // The sync server holds a thread per RPC in flight plus its pollers, and answers
  // RESOURCE_EXHAUSTED past the quota: room for `threads` requests waiting on their batches.
  grpc::ResourceQuota quota("popef-serve");
  quota.SetMaxThreads(2 * threads + 8);
  builder.SetResourceQuota(quota);
  // A second server on a port in use must fail, not share the port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  s->impl_->server = builder.BuildAndStart();
  if (!s->impl_->server || s->port_ <= 0)
    return Error("--host " + host + " --grpc_port " + std::to_string(port) +
                 ": cannot listen there (in use, or not an address of this machine)");
  return s;
}

GrpcServer::~GrpcServer() { shutdown(); }

void GrpcServer::shutdown() {
  if (impl_ && impl_->server) {
    // Waits for the RPCs in flight; a stream a client keeps open is cancelled after the grace time.
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    impl_->server->Wait();
    impl_->server.reset();
  }
}

}  // namespace poprt::serve
