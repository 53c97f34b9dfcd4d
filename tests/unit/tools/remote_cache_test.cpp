// The remote compile cache's client against an in-process HTTP server that answers as a cache
// would, and as a broken or hostile one could: every answer it should not use is refused.
#include "converter/remote_cache.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "converter/cache.h"
#include "remote_cache.pb.h"

namespace poprt::converter {
namespace {

using Outcome = RemoteLookup::Outcome;

const std::string kKey(64, 'a');
// sha256("popef bytes"), computed with sha256sum.
const std::string kPopefSha = "16713642fada06750e99d0e098aa856cc3076e1964a6fadf3502af7e43bd5ef2";

// An HTTP cache in memory: PUT stores, GET/HEAD read; `override` answers some paths itself.
class FakeCache {
 public:
  FakeCache() {
    server_.Put(".*", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mutex_);
      store_[req.path] = req.body;
      res.status = 201;
    });
    server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
      ++gets_;
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = overrides_.find(req.path); it != overrides_.end()) {
        res.status = it->second.first;
        res.set_content(it->second.second, "application/octet-stream");
        return;
      }
      auto it = store_.find(req.path);
      if (it == store_.end()) {
        res.status = 404;
        return;
      }
      res.set_content(it->second, "application/octet-stream");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeCache() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/prefix"; }
  void answer(const std::string& path, int status, const std::string& body) {
    std::lock_guard<std::mutex> lock(mutex_);
    overrides_[path] = {status, body};
  }
  std::string stored(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    return store_.count(path) ? store_[path] : "";
  }
  int gets() const { return gets_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, std::string> store_;
  std::map<std::string, std::pair<int, std::string>> overrides_;
  std::atomic<int> gets_{0};
};

RemoteCache open(const FakeCache& server, bool upload = true) {
  RemoteCacheConfig c;
  c.url = server.url();
  c.upload = upload;
  c.connect_timeout = std::chrono::milliseconds(500);
  auto cache = RemoteCache::open(c);
  EXPECT_TRUE(cache.ok()) << cache.error().message();
  return std::move(cache).value();
}

// An entry naming one file with this digest.
std::string entryNaming(const std::string& path, const std::string& hash, int64_t size) {
  remote_cache::ActionResult r;
  auto* f = r.add_output_files();
  f->set_path(path);
  f->mutable_digest()->set_hash(hash);
  f->mutable_digest()->set_size_bytes(size);
  return r.SerializeAsString();
}

TEST(RemoteCache, StoresBlobsThenTheEntryAndFetchesThemBack) {
  FakeCache server;
  RemoteCache cache = open(server);
  EXPECT_EQ(cache.fetch(kKey).outcome, Outcome::Miss);
  const EntryFiles files{{kEntryOnnx, "onnx bytes"}, {kEntryPopef, "popef bytes"}, {kEntrySummary, "{}"}};
  ASSERT_TRUE(cache.store(kKey, files).ok());
  EXPECT_EQ(server.stored("/prefix/cas/" + kPopefSha), "popef bytes");
  RemoteLookup hit = cache.fetch(kKey);
  ASSERT_EQ(hit.outcome, Outcome::Hit) << hit.why;
  EXPECT_EQ(hit.files, files);
}

TEST(RemoteCache, RefusesEntriesAndBlobsItShouldNotUse) {
  FakeCache server;
  RemoteCache cache = open(server);
  ASSERT_TRUE(cache.store(kKey, {{kEntryOnnx, "onnx bytes"}, {kEntryPopef, "popef bytes"}, {kEntrySummary, "{}"}}).ok());
  const std::string ac = "/prefix/ac/" + kKey, blob = "/prefix/cas/" + kPopefSha;
  auto why = [&] {
    RemoteLookup r = cache.fetch(kKey);
    EXPECT_EQ(r.outcome, Outcome::Corrupted);
    return r.why;
  };
  server.answer(ac, 200, "\xff\xff\xff not a protobuf");
  EXPECT_EQ(why(), "the entry is not an ActionResult");
  server.answer(ac, 200, entryNaming("../../etc/passwd", kPopefSha, 11));
  EXPECT_EQ(why(), "the entry names a file poprt does not write");
  server.answer(ac, 200, entryNaming(kEntryPopef, "../x", 11));
  EXPECT_EQ(why(), "executable.popef: a malformed digest");
  server.answer(ac, 200, entryNaming(kEntryPopef, kPopefSha, int64_t{1} << 40));  // a size to exhaust memory
  EXPECT_EQ(why(), "executable.popef: a malformed digest");
  server.answer(ac, 200, entryNaming(kEntryPopef, kPopefSha, 4));  // the blob is longer than the entry says
  EXPECT_EQ(why(), "executable.popef: a blob larger than its entry says (4 bytes)");
  server.answer(ac, 200, entryNaming(kEntryPopef, kPopefSha, 11));
  EXPECT_EQ(why(), "the entry lacks the converted ONNX or the summary");
  server.answer(blob, 200, "popef bytez");  // same size, other bytes
  server.answer(ac, 200, entryNaming(kEntryPopef, kPopefSha, 11));
  EXPECT_EQ(why(), "executable.popef: the blob does not match its SHA-256 (11 of 11 bytes)");
}

TEST(RemoteCache, AServerThatFailsIsAskedAgainOnceThenNotAtAll) {
  FakeCache server;
  RemoteCache cache = open(server);
  server.answer("/prefix/ac/" + kKey, 503, "busy");
  RemoteLookup r = cache.fetch(kKey);
  EXPECT_EQ(r.outcome, Outcome::Unreachable);
  EXPECT_EQ(r.why, "entry: HTTP 503");
  EXPECT_EQ(server.gets(), 2);
  EXPECT_EQ(cache.fetch(kKey).outcome, Outcome::Unreachable);
  EXPECT_EQ(server.gets(), 2);
  EXPECT_FALSE(cache.store(kKey, {{kEntryOnnx, "x"}}).ok());
}

TEST(RemoteCache, UrlsItCannotUseAreRefusedWithoutEchoingThem) {
  for (const char* url : {"ftp://host/x", "http://", "http://host/x?token=s3cret", "host:8080"}) {
    RemoteCacheConfig c;
    c.url = url;
    try {
      (void)RemoteCache::open(c);
      ADD_FAILURE() << url << " was taken";
    } catch (const UsageError& e) {  // a flag's value: a usage error
      const std::string message = e.what();
      EXPECT_EQ(message.find("s3cret"), std::string::npos);
      EXPECT_EQ(message.rfind("--remote_cache: ", 0), 0u) << message;
    }
  }
}

}  // namespace
}  // namespace poprt::converter
