#include "serve/http_routes.h"

#include <httplib.h>

#include <chrono>

#include "serve/http_protocol.h"

#ifndef POPRT_VERSION
#define POPRT_VERSION "unknown"
#endif

namespace poprt::serve {
namespace {

using json = nlohmann::json;

// Model routes: /v2/models/NAME or /v2/models/NAME/versions/VERSION, then the rest.
const std::string kModel = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";

void send(httplib::Response& res, const HttpReply& r) {
  res.status = r.status;
  if (r.header_length > 0) res.set_header(kHeaderLengthHeader, std::to_string(r.header_length));
  res.set_content(r.body, r.content_type);
}

// The model a route names, or null after replying 404 (an unknown model, or a version other than
// the one served).
std::shared_ptr<ServedModel> lookup(ModelRepository& models, const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  std::shared_ptr<ServedModel> m = models.find(name);
  if (!m) {
    send(res, errorReply(404, "unknown model '" + name + "'"));
    return nullptr;
  }
  const std::string version = req.matches.size() > 2 ? std::string(req.matches[2]) : "";
  if (!version.empty() && version != m->id().version) {
    send(res, errorReply(404, "model '" + name + "' has no version '" + version + "' (versions: " + m->id().version + ")"));
    return nullptr;
  }
  return m;
}

void infer(ServedModel& m, const httplib::Request& req, httplib::Response& res, const std::string& body) {
  const auto received = std::chrono::steady_clock::now();
  auto call = parseInfer(body, req.get_header_value(kHeaderLengthHeader), m.layout());
  if (!call.ok()) {
    m.refused(received);
    send(res, errorReply(400, call.error().message()));
    return;
  }
  const ServeResult result = m.infer(std::move(call->request), received);
  send(res, inferReply(m.id(), *call, m.layout(), result));
}

}  // namespace

void addRoutes(httplib::Server& server, ModelRepository& models, ServerMetrics& metrics, size_t max_body_bytes) {
  server.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
    send(res, jsonReply(200, {{"name", "popef-serve"},
                              {"version", POPRT_VERSION},
                              {"extensions", {"binary_tensor_data", "model_configuration", "statistics", "model_repository"}}}));
  });
  server.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  server.Get("/v2/health/ready",
             [&models](const httplib::Request&, httplib::Response& res) { res.status = models.ready() ? 200 : 503; });
  // (Before the model routes, whose pattern would take "stats" for a model's name.)
  server.Get("/v2/models/stats", [&models](const httplib::Request&, httplib::Response& res) {
    json all = json::array();
    for (const auto& m : models.served()) all.push_back(modelStatistics(m->id(), m->metrics().statistics()));
    send(res, jsonReply(200, {{"model_stats", std::move(all)}}));
  });
  server.Get(kModel + "/stats", [&models](const httplib::Request& req, httplib::Response& res) {
    if (auto m = lookup(models, req, res))
      send(res, jsonReply(200, {{"model_stats", {modelStatistics(m->id(), m->metrics().statistics())}}}));
  });
  server.Get(kModel, [&models](const httplib::Request& req, httplib::Response& res) {
    if (auto m = lookup(models, req, res)) send(res, jsonReply(200, modelMetadata(m->id(), m->layout())));
  });
  server.Get(kModel + "/ready", [&models](const httplib::Request& req, httplib::Response& res) {
    if (auto m = lookup(models, req, res)) res.status = m->ready() ? 200 : 503;
  });
  server.Get(kModel + "/config", [&models](const httplib::Request& req, httplib::Response& res) {
    if (auto m = lookup(models, req, res))
      send(res, jsonReply(200, modelConfig(m->id(), m->layout(), m->options(), m->replicas())));
  });
  // The body is read here, whatever its Content-Type: the library would parse a form-urlencoded one
  // (curl -d's default) as a form and refuse it past 8 KB. Bodies are bounded by the payload limit.
  server.Post(kModel + "/infer",
              [&models, max_body_bytes](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
                if (req.is_multipart_form_data()) {
                  send(res, errorReply(415, "a multipart body: send the request as JSON (binary tensors after it)"));
                  return;
                }
                // The library bounds a body by its Content-Length only: a chunked one is bounded here.
                std::string body;
                bool too_large = false;
                read([&body, &too_large, max_body_bytes](const char* data, size_t n) {
                  if (n > max_body_bytes - body.size()) return !(too_large = true);
                  body.append(data, n);
                  return true;
                });
                if (too_large) {
                  send(res, errorReply(413, "the request body is over " + std::to_string(max_body_bytes) + " bytes"));
                  return;
                }
                if (auto m = lookup(models, req, res)) infer(*m, req, res, body);
              });
  // The model repository extension: the index, and loads and unloads in explicit control mode.
  server.Post("/v2/repository/index", [&models](const httplib::Request&, httplib::Response& res) {
    json list = json::array();
    for (const IndexEntry& e : models.index()) {
      json entry = {{"name", e.name}};
      if (!e.version.empty()) entry["version"] = e.version;
      if (!e.state.empty()) entry["state"] = e.state;
      if (!e.reason.empty()) entry["reason"] = e.reason;
      list.push_back(std::move(entry));
    }
    send(res, jsonReply(200, list));
  });
  for (const char* action : {"load", "unload"}) {
    const bool load = std::string(action) == "load";
    server.Post(R"(/v2/repository/models/([^/]+)/)" + std::string(action),
                [&models, load](const httplib::Request& req, httplib::Response& res) {
                  if (!models.hasRepository() || models.mode() != ControlMode::Explicit) {
                    send(res, errorReply(400, std::string("models are loaded and unloaded on request only with "
                                                          "--model_repository and --model_control_mode explicit")));
                    return;
                  }
                  const std::string name = req.matches[1];
                  const Status st = load ? models.load(name) : models.unload(name);
                  send(res, st.ok() ? jsonReply(200, json::object()) : errorReply(400, st.error().message()));
                });
  }
  server.Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(), "text/plain; version=0.0.4");
  });

  // Every error reply is {"error": ...}: the library's own (no route, a body too large, a
  // malformed request) get one here.
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string what = res.status == 404   ? "no route for " + req.method + " " + req.path
                             : res.status == 413 ? "the request body is too large"
                                                 : "the request could not be read (HTTP " + std::to_string(res.status) + ")";
    res.set_content(errorReply(res.status, what).body, "application/json");
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) { what = e.what(); } catch (...) {
    }
    send(res, errorReply(500, "internal error: " + what));
  });
  server.set_logger([&metrics](const httplib::Request&, const httplib::Response& res) { metrics.countResponse(res.status); });
}

}  // namespace poprt::serve
