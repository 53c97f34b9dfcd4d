#include "converter/cache_tiers.h"

#include "converter/profile_report.h"
#include "converter/summary.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"

namespace poprt::converter {

namespace {

// The nesting depth of JSON text (brackets outside strings). A cache's summary is parsed and
// written again, and nlohmann's writer recurses once per level: a summary from a cache someone
// else controls must not be a million levels deep.
bool shallowJson(const std::string& text, int max_depth = 64) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace

Expected<CacheTiers> CacheTiers::open(const ConvertOptions& o, bool& bypassed, std::vector<std::string>& warnings) {
  CacheTiers t;
  bypassed = false;
  const std::string dir = effectiveCacheDir(o.cache_dir);
  const RemoteCacheConfig remote = effectiveRemoteCache(o.remote_cache, o.remote_cache_upload, o.remote_cache_header_file);
  if ((dir.empty() && remote.url.empty()) || o.show) return t;
  // A remote cache poprt cannot talk to is the flag's error, whatever else this run does.
  std::optional<RemoteCache> remote_cache;
  if (!remote.url.empty()) {
    POPRT_ASSIGN_OR_RETURN(RemoteCache r, RemoteCache::open(remote));
    remote_cache = std::move(r);
  }
  if (o.precision_compare || !o.pipeline.print_ir_after.empty() || (o.export_popef && !reportDir(o.report).path.empty())) {
    POPRT_LOG(Info,
              "cache: not used with --precision_compare, --print_ir_after or a report (they show what only a compile sees)");
    bypassed = true;
    return t;
  }
  auto key = cacheKey(o);
  if (!key.ok()) {
    POPRT_LOG(Info, "cache: no key (" << key.error().message() << ")");
    return t;
  }
  if (!dir.empty()) {
    auto local = CompileCache::open(dir, static_cast<uint64_t>(o.cache_max_bytes));
    if (local.ok())
      t.local_ = std::move(local).value();
    else
      warnings.push_back(local.error().message() + "; compiling without the local cache");
  }
  t.remote_ = std::move(remote_cache);
  t.write_files_ = o.write_files;
  if (!t.local_ && !t.remote_) return t;
  t.key_ = std::move(key).value();
  if (t.local_) t.json_["dir"] = t.local_->dir().string();
  t.json_["key"] = t.key_->hex;
  t.json_["hit"] = false;
  return t;
}

std::optional<CacheEntry> CacheTiers::lookup(const ConvertFiles& dest, std::vector<std::string>& warnings) {
  if (!key_) return std::nullopt;
  if (local_) {
    // (A local entry may be on shared storage: its summary is held to the same bound.)
    if (auto stored = local_->restore(*key_, dest, write_files_); stored && shallowJson(stored->summary)) {
      json_["hit"] = true;
      json_["tier"] = "local";
      return stored;
    }
  }
  if (!remote_) {
    json_["why"] = "no entry";
    return std::nullopt;
  }
  RemoteLookup r = remote_->fetch(key_->hex);
  using Outcome = RemoteLookup::Outcome;
  if (r.outcome == Outcome::Hit && !dest.popef.empty() && !r.files.count(kEntryPopef)) {
    r.outcome = Outcome::Corrupted;
    r.why = "the entry has no PopEF";
  }
  if (r.outcome == Outcome::Hit && !shallowJson(r.files[kEntrySummary])) {
    r.outcome = Outcome::Corrupted;
    r.why = "the summary is nested too deep";
  }
  if (r.outcome == Outcome::Hit) {
    if (write_files_) {
      OutputFiles staged;  // all or none, as a compile writes them
      Status st = staged.add(dest.onnx, r.files[kEntryOnnx]);
      if (st.ok() && !dest.popef.empty()) st = staged.add(dest.popef, r.files[kEntryPopef]);
      if (st.ok()) st = staged.commit();
      if (!st.ok()) return std::nullopt;  // the compile that follows reports the output folder's problem
    }
    CacheEntry entry{std::move(r.files[kEntrySummary]), std::move(r.files[kEntryOnnx]),
                     dest.popef.empty() ? std::string() : std::move(r.files[kEntryPopef])};
    if (local_)
      if (Status stored = local_->store(*key_, entry); !stored.ok()) warnings.push_back(stored.error().message());
    json_["hit"] = true;
    json_["tier"] = "remote";
    return entry;
  }
  switch (r.outcome) {
    case Outcome::Miss: json_["why"] = r.why; break;
    case Outcome::Corrupted:
      json_["why"] = "corrupted entry: " + r.why;
      warnings.push_back("remote cache: corrupted entry (" + r.why + "): compiled instead");
      break;
    case Outcome::Unreachable:
      json_["why"] = "remote cache unreachable: " + r.why;
      warnings.push_back("remote cache unreachable (" + r.why + "): compiled instead");
      break;
    case Outcome::Hit: break;
  }
  return std::nullopt;
}

void CacheTiers::upload(const std::string& onnx, const std::string& popef, const std::string& summary,
                        std::vector<std::string>& warnings) {
  if (!key_ || !remote_) return;
  if (!remote_->uploads()) {
    json_["upload"] = "read-only (--remote_cache_upload to upload)";
    return;
  }
  EntryFiles files{{kEntryOnnx, onnx}, {kEntrySummary, summaryForEntry(summary)}};
  if (!popef.empty()) files[kEntryPopef] = popef;
  if (Status st = remote_->store(key_->hex, files); !st.ok()) {
    json_["upload"] = "failed: " + st.error().message();
    warnings.push_back(st.error().message());
    return;
  }
  json_["upload"] = "stored";
}

void CacheTiers::storeLocal(const std::string& onnx, const std::string& popef, const std::string& summary,
                            std::vector<std::string>& warnings) {
  if (!key_ || !local_) return;
  if (Status st = local_->store(*key_, {summaryForEntry(summary), onnx, popef}); !st.ok())
    warnings.push_back(st.error().message());
}

std::string CacheTiers::outcome() const {
  if (!key_) return "";
  if (!json_.value("hit", false)) return "miss";
  return json_.value("tier", "") == "remote" ? "remote hit" : "hit";
}

}  // namespace poprt::converter
