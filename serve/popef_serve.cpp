// popef-serve: serves PopEF models over HTTP and gRPC with the KServe v2 / Triton inference
// protocol, so the clients, load balancers and benchmark tools written for those servers work unchanged. Each
// model runs on the IPU simulator through the runtime (ModelRunner, as popef-run uses it) behind
// a dynamic batcher; SIGTERM stops accepting, finishes the requests in flight and exits 0.
#include <httplib.h>
#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <thread>

#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "serve/grpc_server.h"
#include "serve/http_routes.h"
#include "tools/common/tool_common.h"

namespace poprt::serve {
namespace {

using tools::addCustomLibraryFlag;
using tools::addLoggingFlag;
using tools::loadCustomLibraries;
using tools::runTool;

struct ServeOptions {
  std::vector<std::string> models;  // NAME=FILE.popef
  std::string model_repository;     // Triton's layout: DIR/<name>/<version>/model.popef
  std::string control_mode = "none";
  std::vector<std::string> load_models;  // explicit mode: the models loaded at start-up
  int poll_seconds = 15;
  std::string host = "127.0.0.1";
  int port = 8000;
  int grpc_port = 8001;  // 0: a free port; -1: no gRPC endpoint
  int64_t max_queue_delay_us = 0;
  bool dynamic_batching = true;
  int http_threads = 64;
  std::string logging_level;
  std::vector<std::string> custom_libraries;  // --custom_library_so_paths
};

// Request bodies above this are refused (413): room for the JSON text of a few hundred MB of
// elements, while a runaway client cannot make the server hold without bound.
constexpr size_t kMaxBodyBytes = size_t{1} << 30;
// Idle keep-alive connections close after this; it also bounds how long shutdown waits for them.
constexpr time_t kKeepAliveSeconds = 5;

// What was loaded, a line per model, and the repository models that failed to.
void printModels(const ServeOptions& o, const ModelRepository& models) {
  for (const auto& m : models.served()) {
    const ModelLayout& l = m->layout();
    const std::string what = "popef-serve: model '" + m->name() + "' version " + m->id().version + " (" + m->popef() + "): ";
    if (l.batchable)
      std::printf(
          "%sbatches of %lld rows along axis %d, %s\n", what.c_str(), static_cast<long long>(l.batch), l.axis,
          m->options().dynamic_batching
              ? ("dynamic batching, max queue delay " + std::to_string(m->options().max_queue_delay.count()) + " us").c_str()
              : "each request runs alone");
    else
      std::printf("%srequests give the compiled shapes (%s)\n", what.c_str(), l.why_not_batchable.c_str());
  }
  for (const IndexEntry& e : models.index())
    if (e.state == "UNAVAILABLE") std::printf("popef-serve: model '%s' not loaded: %s\n", e.name.c_str(), e.reason.c_str());
  if (!o.model_repository.empty() && o.control_mode == "poll")
    std::printf("popef-serve: polling %s every %d s\n", o.model_repository.c_str(), o.poll_seconds);
}

Status loadModels(const ServeOptions& o, ModelRepository& models) {
  for (const std::string& text : o.models) {
    auto kv = splitAssignment(text, "--model");
    POPRT_TRY(models.addFile(kv.first, kv.second));
  }
  if (!o.load_models.empty() && o.control_mode != "explicit")
    throw UsageError("--load_model: only with --model_repository and --model_control_mode explicit");
  if (!o.model_repository.empty()) {
    const ControlMode mode = o.control_mode == "explicit" ? ControlMode::Explicit
                             : o.control_mode == "poll"   ? ControlMode::Poll
                                                          : ControlMode::None;
    POPRT_TRY(models.setRepository(o.model_repository, mode, o.load_models));
  } else if (o.control_mode != "none") {
    throw UsageError("--model_control_mode: only with --model_repository");
  }
  if (o.models.empty() && o.model_repository.empty()) throw UsageError("--model or --model_repository is required");
  return okStatus();
}

// SIGTERM and SIGINT are taken by one thread with sigwait: blocked before any thread starts, so
// every thread inherits the mask.
sigset_t blockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is an error on its socket, not the end
  return stop_signals;
}

// Threads, keep-alive, body limit; SO_REUSEADDR, not the library's default SO_REUSEPORT: a second
// server on a port in use must fail, not share the port. `listen_socket` keeps the socket, to
// raise the backlog once bound.
void configureHttp(httplib::Server& server, size_t threads, int& listen_socket) {
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_keep_alive_max_count(100000);
  server.set_keep_alive_timeout(kKeepAliveSeconds);
  server.set_payload_max_length(kMaxBodyBytes);
  server.set_tcp_nodelay(true);
  server.set_socket_options([&listen_socket](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_socket = sock;
  });
}

Status serve(const ServeOptions& o) {
  applyLogging(o.logging_level);
  POPRT_TRY(loadCustomLibraries(o.custom_libraries));
  const sigset_t stop_signals = blockStopSignals();

  ServerMetrics metrics;  // outlives the models, which record into it
  BatcherOptions batching;
  batching.dynamic_batching = o.dynamic_batching;
  batching.max_queue_delay = std::chrono::microseconds(o.max_queue_delay_us);
  ModelRepository models(metrics, batching);
  POPRT_TRY(loadModels(o, models));
  printModels(o, models);

  httplib::Server server;
  int listen_socket = -1;
  configureHttp(server, static_cast<size_t>(o.http_threads), listen_socket);
  addRoutes(server, models, metrics, kMaxBodyBytes);

  // Bound before the signal thread starts, so a SIGTERM at any time finds a server to stop.
  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  const std::string where = "--host " + o.host + " --port " + std::to_string(o.port);
  if (port <= 0) return Error(where + ": cannot listen there (in use, or not an address of this machine)");
  // Debian's library listens with a backlog of 5: a burst of connections overflows it and clients
  // are reset. Listening again on the bound socket raises it (Linux allows listen() twice).
  if (::listen(listen_socket, SOMAXCONN) != 0) return Error(where + ": cannot raise the listen backlog");
  std::unique_ptr<GrpcServer> grpc;
  if (o.grpc_port >= 0) {
    POPRT_ASSIGN_OR_RETURN(grpc, GrpcServer::start(o.host, o.grpc_port, models, o.http_threads, kMaxBodyBytes));
  }
  std::atomic<bool> signalled{false}, finished{false};
  // Poll mode: a scan of the repository every poll_seconds until the server stops.
  std::mutex poll_mutex;
  std::condition_variable poll_wake;
  bool stopping = false;
  std::thread poller;
  if (models.mode() == ControlMode::Poll)
    poller = std::thread([&] {
      std::unique_lock lock(poll_mutex);
      while (!poll_wake.wait_for(lock, std::chrono::seconds(o.poll_seconds), [&] { return stopping; })) {
        lock.unlock();
        try {
          models.poll();
        } catch (const std::exception& e) {  // a scan must not end the server: it says why and goes on
          POPRT_LOG(Warn, "model repository poll failed: " << e.what());
        }
        lock.lock();
      }
    });
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (finished) return;
    signalled = true;
    std::printf("popef-serve: %s: no new requests; finishing the ones in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    std::fflush(stdout);
    // stop() acts only once listening has begun: a signal that comes first waits for it.
    while (!server.is_running() && !finished) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server.stop();
    if (grpc) grpc->shutdown();
  });
  std::printf("popef-serve: listening on http://%s:%d (%d HTTP threads)\n", o.host.c_str(), port, o.http_threads);
  if (grpc) std::printf("popef-serve: listening on grpc://%s:%d\n", o.host.c_str(), grpc->port());
  std::fflush(stdout);
  const bool listened = server.listen_after_bind();  // returns once stopped and every handler has replied
  finished = true;
  if (!signalled) pthread_kill(watcher.native_handle(), SIGTERM);  // wake the watcher
  watcher.join();
  if (poller.joinable()) {
    {
      std::lock_guard lock(poll_mutex);
      stopping = true;
    }
    poll_wake.notify_all();
    poller.join();
  }
  if (grpc) grpc->shutdown();  // (after a failed listen, the watcher did not)
  models.clear();              // each batcher runs what it holds, then its runner detaches the device
  std::printf("popef-serve: stopped\n");
  std::fflush(stdout);
  if (!signalled && !listened)
    return Error("--host " + o.host + " --port " + std::to_string(port) + ": the server stopped listening");
  return okStatus();
}

}  // namespace
}  // namespace poprt::serve

int main(int argc, char** argv) {
  using namespace poprt::serve;
  using namespace poprt::tools;
  ServeOptions o;
  CLI::App app{"popef-serve: serve PopEF models over HTTP and gRPC with the KServe v2 (Triton) inference protocol"};
  app.add_option("--model", o.models, "NAME=FILE.popef: serve FILE as model NAME, version 1 (repeatable)");
  app.add_option("--model_repository", o.model_repository,
                 "a model repository as Triton lays it out: DIR/<name>/<version>/model.popef (the highest version "
                 "served), DIR/<name>/config.pbtxt optional");
  app.add_option("--model_control_mode", o.control_mode,
                 "none: load the repository at start-up (default); explicit: load and unload on request (and "
                 "--load_model at start-up); poll: follow the repository's changes")
      ->check(CLI::IsMember({"none", "explicit", "poll"}));
  app.add_option("--load_model", o.load_models, "with --model_control_mode explicit: a model to load at start-up (repeatable)");
  app.add_option("--repository_poll_secs", o.poll_seconds, "with --model_control_mode poll: seconds between scans (default 15)")
      ->check(CLI::Range(1, 86400));
  app.add_option("--host", o.host, "address to listen on (default 127.0.0.1)");
  app.add_option("--port,--http_port", o.port, "HTTP port to listen on; 0 picks a free one (default 8000)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--grpc_port", o.grpc_port, "gRPC port to listen on; 0 picks a free one, -1 serves no gRPC (default 8001)")
      ->check(CLI::Range(-1, 65535));
  app.add_option("--max_queue_delay_us", o.max_queue_delay_us,
                 "how long the oldest queued request waits for others to fill its batch (default 0: batch what is queued)")
      ->check(CLI::Range(int64_t{0}, int64_t{60'000'000}));
  app.add_flag("--dynamic_batching", o.dynamic_batching,
               "batch requests of a model together (default true; =false runs each request alone)");
  app.add_option("--http_threads", o.http_threads,
                 "threads serving HTTP connections, and gRPC's most threads: the most requests handled at once (default 64)")
      ->check(CLI::Range(1, 4096));
  addCustomLibraryFlag(app, o.custom_libraries);
  addLoggingFlag(app, o.logging_level);
  return runTool("popef-serve", app, argc, argv, [&] { return serve(o); });
}
