#include "converter/remote_cache.h"

#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include "converter/cache.h"
#include "converter/cache_key.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "remote_cache.pb.h"

namespace poprt::converter {

namespace {

constexpr size_t kMaxEntryBytes = 1 << 20;       // an ActionResult naming three files is ~300 bytes
constexpr uint64_t kMaxSummaryBytes = 16 << 20;  // a summary is kilobytes
constexpr size_t kMaxHeaderFileBytes = 64 << 10;

bool isSha256Hex(const std::string& s) { return std::regex_match(s, std::regex("[0-9a-f]{64}")); }

std::string sha256Of(const std::string& bytes) {
  Sha256 sha;
  sha.update(bytes);
  return sha.hexDigest();
}

// "Name: value" lines; blank lines and lines starting with # are skipped.
Expected<httplib::Headers> readHeaderFile(const std::string& file) {
  POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, readFileBytes(file, kMaxHeaderFileBytes));
  httplib::Headers headers;
  std::string text(bytes.begin(), bytes.end());
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    static const std::regex header("([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([^\r\n]*)");
    std::smatch m;
    // The line itself is never quoted: it holds a credential.
    if (!std::regex_match(line, m, header))
      return Error("--remote_cache_header_file " + file + ": line " + std::to_string(line_no) + " is not 'Name: value'");
    headers.emplace(m[1].str(), m[2].str());
  }
  return headers;
}

}  // namespace

RemoteCacheConfig effectiveRemoteCache(const std::string& url_flag, bool upload, const std::string& header_file_flag) {
  RemoteCacheConfig c;
  c.upload = upload;
  const char* env_url = std::getenv("POPRT_REMOTE_CACHE");
  c.url = !url_flag.empty() ? url_flag : env_url ? env_url : "";
  const char* env_headers = std::getenv("POPRT_REMOTE_CACHE_HEADER_FILE");
  c.header_file = !header_file_flag.empty() ? header_file_flag : env_headers ? env_headers : "";
  return c;
}

struct RemoteCache::Impl {
  RemoteCacheConfig config;
  std::string prefix;  // the URL's path, without a trailing slash
  std::unique_ptr<httplib::Client> client;
  bool down = false;  // the server could not be reached: not asked again

  // A request with bounded retries. nullopt: unreachable (the reason in `why`).
  template <typename F>
  std::optional<httplib::Result> call(F&& request, std::string& why) {
    if (down) {
      why = "unreachable earlier in this run";
      return std::nullopt;
    }
    for (int attempt = 1;; ++attempt) {
      httplib::Result r = request();
      // Canceled: our receiver stopped a body over its size, which asking again does not change.
      const bool retry = r ? r->status >= 500 : r.error() != httplib::Error::Canceled;
      if (!retry) return r;
      why = r ? "HTTP " + std::to_string(r->status) : httplib::to_string(r.error());
      if (attempt >= config.attempts) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200 * attempt));
    }
    down = true;
    return std::nullopt;
  }

  // GET path into `body`, at most `limit` bytes. Returns the HTTP status, 0 when unreachable (or the
  // body was over the limit: `why` says which).
  // With `sha256`, the body's SHA-256 too, hashed as it arrives (while its bytes are in cache).
  // The whole body must arrive within the read timeout plus a second per MiB (the read timeout
  // alone is per read: a server trickling bytes would stall the conversion).
  int get(const std::string& path, size_t limit, std::string& body, std::string& why, std::string* sha256 = nullptr) {
    bool too_big = false, too_slow = false;
    std::unique_ptr<Sha256> sha;
    std::chrono::steady_clock::time_point deadline;
    auto r = call(
        [&] {
          body.clear();
          too_big = too_slow = false;
          sha = std::make_unique<Sha256>();
          deadline = std::chrono::steady_clock::now() + config.io_timeout + std::chrono::seconds(limit >> 20);
          return client->Get(
              path,
              [&](const httplib::Response& response) {  // one allocation for the body, when its size is declared
                const std::string length = response.get_header_value("Content-Length");
                const uint64_t n = std::strtoull(length.c_str(), nullptr, 10);
                if (n > 0 && n <= limit) body.reserve(n);
                return true;
              },
              [&](const char* data, size_t n) {
                if (n > limit - body.size()) return !(too_big = true);
                if (std::chrono::steady_clock::now() > deadline) return !(too_slow = true);
                body.append(data, n);
                if (sha256) sha->update({reinterpret_cast<const uint8_t*>(data), n});
                return true;
              });
        },
        why);
    if (too_big || too_slow) {
      why = too_big ? "a blob larger than its entry says (" + std::to_string(limit) + " bytes)"
                    : "the server sent it too slowly (under 1 MiB/s)";
      return 0;
    }
    if (!r || !*r) return 0;
    if (sha256) *sha256 = sha->hexDigest();
    return (*r)->status;
  }
};

RemoteCache::RemoteCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RemoteCache::RemoteCache(RemoteCache&&) noexcept = default;
RemoteCache& RemoteCache::operator=(RemoteCache&&) noexcept = default;
RemoteCache::~RemoteCache() = default;

Expected<RemoteCache> RemoteCache::open(const RemoteCacheConfig& config) {
  // scheme://[userinfo@]host[:port][/path]; the URL is not quoted in errors (it may hold a password).
  static const std::regex url("(https?)://(?:([^@/]*)@)?([^/:@]+|\\[[0-9A-Fa-f:.]+\\])(?::([0-9]{1,5}))?(/[^?#]*)?");
  std::smatch m;
  if (!std::regex_match(config.url, m, url))
    throw UsageError("--remote_cache: expected http://host[:port][/prefix] or https://..., with no query or fragment");
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->prefix = m[5].str();
  while (!impl->prefix.empty() && impl->prefix.back() == '/') impl->prefix.pop_back();
  std::string origin = m[1].str() + "://" + m[3].str() + (m[4].matched ? ":" + m[4].str() : "");
  impl->client = std::make_unique<httplib::Client>(origin);
  if (!impl->client->is_valid()) throw UsageError("--remote_cache: cannot make a client for this URL");
  const auto connect = config.connect_timeout.count(), io = config.io_timeout.count();
  impl->client->set_connection_timeout(connect / 1000, (connect % 1000) * 1000);
  impl->client->set_read_timeout(io / 1000, (io % 1000) * 1000);
  impl->client->set_write_timeout(io / 1000, (io % 1000) * 1000);
  impl->client->set_keep_alive(true);
  impl->client->set_tcp_nodelay(true);  // small requests back to back: no Nagle delay
  if (m[2].matched) {
    const std::string userinfo = m[2].str();
    const size_t colon = userinfo.find(':');
    impl->client->set_basic_auth(userinfo.substr(0, colon), colon == std::string::npos ? "" : userinfo.substr(colon + 1));
  }
  if (!config.header_file.empty()) {
    POPRT_ASSIGN_OR_RETURN(httplib::Headers headers, readHeaderFile(config.header_file));
    impl->client->set_default_headers(std::move(headers));
  }
  return RemoteCache(std::move(impl));
}

bool RemoteCache::uploads() const { return impl_->config.upload; }

RemoteLookup RemoteCache::fetch(const std::string& key) {
  try {
    return fetchEntry(key);
  } catch (const std::exception& e) {  // bad_alloc and the like: whatever the server sent, compile
    return {RemoteLookup::Outcome::Corrupted, std::string("the entry could not be read (") + e.what() + ")", {}};
  }
}

RemoteLookup RemoteCache::fetchEntry(const std::string& key) {
  using Outcome = RemoteLookup::Outcome;
  RemoteLookup out;
  std::string body, why;
  const int status = impl_->get(impl_->prefix + "/ac/" + key, kMaxEntryBytes, body, why);
  if (status == 0) return {impl_->down ? Outcome::Unreachable : Outcome::Corrupted, "entry: " + why, {}};
  if (status == 404) return {Outcome::Miss, "no entry", {}};
  if (status == 401 || status == 403)
    return {Outcome::Unreachable, "access refused (HTTP " + std::to_string(status) + "; see --remote_cache_header_file)", {}};
  if (status != 200) return {Outcome::Miss, "entry: HTTP " + std::to_string(status), {}};
  remote_cache::ActionResult entry;
  if (!entry.ParseFromString(body)) return {Outcome::Corrupted, "the entry is not an ActionResult", {}};
  if (entry.exit_code() != 0 || entry.output_files_size() == 0 || entry.output_files_size() > 3)
    return {Outcome::Corrupted, "the entry is not one poprt writes", {}};
  // Sizes are checked for the whole entry before a byte of any blob is fetched.
  uint64_t total = 0;
  for (const auto& f : entry.output_files()) {
    const std::string& name = f.path();
    if (name != kEntryOnnx && name != kEntryPopef && name != kEntrySummary)
      return {Outcome::Corrupted, "the entry names a file poprt does not write", {}};
    const auto size = f.digest().size_bytes();
    if (!isSha256Hex(f.digest().hash()) || size < 0 || static_cast<uint64_t>(size) > kMaxFileBytes ||
        (name == kEntrySummary && static_cast<uint64_t>(size) > kMaxSummaryBytes))
      return {Outcome::Corrupted, name + ": a malformed digest", {}};
    total += static_cast<uint64_t>(size);
  }
  if (total > kMaxFileBytes)
    return {Outcome::Corrupted, "the entry's files are over " + std::to_string(kMaxFileBytes) + " bytes", {}};
  for (const auto& f : entry.output_files()) {
    const std::string& name = f.path();
    if (out.files.count(name)) return {Outcome::Corrupted, name + ": named twice", {}};
    const auto size = f.digest().size_bytes();
    std::string blob, digest;
    const int s = impl_->get(impl_->prefix + "/cas/" + f.digest().hash(), static_cast<size_t>(size), blob, why, &digest);
    if (s == 0) return {impl_->down ? Outcome::Unreachable : Outcome::Corrupted, name + ": " + why, {}};
    if (s == 404) return {Outcome::Corrupted, name + ": the entry's blob is missing", {}};
    if (s != 200) return {Outcome::Corrupted, name + ": HTTP " + std::to_string(s), {}};
    if (blob.size() != static_cast<size_t>(size) || digest != f.digest().hash())
      return {Outcome::Corrupted,
              name + ": the blob does not match its SHA-256 (" + std::to_string(blob.size()) + " of " + std::to_string(size) +
                  " bytes)",
              {}};
    out.files[name] = std::move(blob);
  }
  if (!out.files.count(kEntryOnnx) || !out.files.count(kEntrySummary))
    return {Outcome::Corrupted, "the entry lacks the converted ONNX or the summary", {}};
  out.outcome = Outcome::Hit;
  return out;
}

Status RemoteCache::store(const std::string& key, const EntryFiles& files) {
  remote_cache::ActionResult entry;
  std::string why;
  for (const auto& file : files) {
    const std::string& name = file.first;  // (not a structured binding: the lambdas below capture it)
    const std::string& bytes = file.second;
    const std::string hash = sha256Of(bytes);
    auto* f = entry.add_output_files();
    f->set_path(name);
    f->mutable_digest()->set_hash(hash);
    f->mutable_digest()->set_size_bytes(static_cast<int64_t>(bytes.size()));
    const std::string path = impl_->prefix + "/cas/" + hash;
    auto head = impl_->call([&] { return impl_->client->Head(path); }, why);
    if (!head || !*head) return Error("remote cache: upload: " + why);
    if ((*head)->status == 200) continue;  // content-addressed: already there
    auto put = impl_->call([&] { return impl_->client->Put(path, bytes.data(), bytes.size(), "application/octet-stream"); }, why);
    if (!put || !*put) return Error("remote cache: upload: " + why);
    if ((*put)->status / 100 != 2) return Error("remote cache: upload of " + name + ": HTTP " + std::to_string((*put)->status));
  }
  const std::string body = entry.SerializeAsString();
  auto put = impl_->call(
      [&] { return impl_->client->Put(impl_->prefix + "/ac/" + key, body.data(), body.size(), "application/octet-stream"); },
      why);
  if (!put || !*put) return Error("remote cache: upload: " + why);
  if ((*put)->status / 100 != 2) return Error("remote cache: upload of the entry: HTTP " + std::to_string((*put)->status));
  return okStatus();
}

}  // namespace poprt::converter
