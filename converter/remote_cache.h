// The compile cache shared by many machines (--remote_cache URL, or POPRT_REMOTE_CACHE), over
// Bazel's HTTP remote-cache protocol, which bazel-remote, nginx's WebDAV module and object-store
// gateways serve: the entry of a compile key is an ActionResult under /ac/<key> (remote_cache.proto)
// naming content-addressed blobs under /cas/<sha256> (the converted ONNX, the PopEF, the summary).
//
// Nothing the server sends is trusted: the entry is parsed with bounded sizes, and each blob is
// checked against its SHA-256 and size before it is used; a wrong one is reported and the model
// compiled. Uploads only when asked for (read-only by default, as on a runner building untrusted
// pull requests), blobs first so an entry never names a missing blob. A server that cannot be
// reached costs one bounded attempt, a warning, and is not asked again by this process. Messages
// name neither the host nor credentials.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "lib/support/status.h"

namespace poprt::converter {

struct RemoteCacheConfig {
  std::string url;          // http(s)://[user:password@]host[:port][/prefix]
  bool upload = false;      // --remote_cache_upload
  std::string header_file;  // --remote_cache_header_file: "Name: value" lines sent with every request
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds io_timeout{30000};
  int attempts = 2;  // per request, for connection errors and 5xx replies
};

// The cache's configuration from the flags, else the environment: --remote_cache, else
// POPRT_REMOTE_CACHE; --remote_cache_header_file, else POPRT_REMOTE_CACHE_HEADER_FILE. An empty
// url: no remote cache.
RemoteCacheConfig effectiveRemoteCache(const std::string& url_flag, bool upload, const std::string& header_file_flag);

// An entry's files by their name in it: "model.onnx", "executable.popef" (with --export_popef),
// "summary.json".
using EntryFiles = std::map<std::string, std::string>;

struct RemoteLookup {
  enum class Outcome { Hit, Miss, Corrupted, Unreachable };
  Outcome outcome = Outcome::Miss;
  std::string why;   // Miss, Corrupted, Unreachable: one line for the summary and the warning
  EntryFiles files;  // Hit: every file checked against its digest
};

class RemoteCache {
 public:
  // A URL poprt cannot use throws UsageError; an unreadable or malformed header file is an Error.
  // Both name the flag, not the URL's host or credentials.
  static Expected<RemoteCache> open(const RemoteCacheConfig& config);
  RemoteCache(RemoteCache&&) noexcept;
  RemoteCache& operator=(RemoteCache&&) noexcept;
  ~RemoteCache();

  bool uploads() const;
  // The entry of `key` (64 hex digits) with every file it names.
  RemoteLookup fetch(const std::string& key);
  // Uploads `files` as the entry of `key`: each blob the server lacks (HEAD), then the entry.
  Status store(const std::string& key, const EntryFiles& files);

 private:
  struct Impl;
  explicit RemoteCache(std::unique_ptr<Impl> impl);
  RemoteLookup fetchEntry(const std::string& key);
  std::unique_ptr<Impl> impl_;
};

}  // namespace poprt::converter
