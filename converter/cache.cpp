#include "converter/cache.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <tuple>
#include <vector>

#include "lib/support/file_io.h"
#include "lib/support/log.h"

namespace poprt::converter {
namespace fs = std::filesystem;
namespace {

constexpr const char* kKey = "key.txt";
// Temporary and evicted entries start with a dot, so listings of entries skip them; ones older than
// this were left by a process that died and are removed.
constexpr auto kStaleAge = std::chrono::hours(1);

// A name no other process picks: processes in different containers sharing a cache may have the
// same pid.
std::string uniqueSuffix() {
  // One generator per thread: a shared one, drawn from by concurrent stores, is a data race that
  // can hand two threads the same name (a flaky ConcurrentStoresOfOneKeyLeaveOneWholeEntry).
  thread_local std::mt19937_64 rng{(uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

bool isEntryName(const std::string& name) {
  return name.size() == 64 &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

uint64_t directoryBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    uint64_t size = it->is_regular_file(size_ec) ? it->file_size(size_ec) : 0;
    if (!size_ec) total += size;
  }
  return total;
}

}  // namespace

std::string effectiveCacheDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("POPRT_CACHE_DIR");
  return env ? env : "";
}

Expected<CompileCache> CompileCache::open(const fs::path& dir, uint64_t max_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) return Error("--cache_dir " + dir.string() + ": cannot create the directory");
  return CompileCache(dir, max_bytes);
}

std::optional<CacheEntry> CompileCache::restore(const CacheKey& key, const ConvertFiles& dest, bool write) {
  const fs::path entry = entryDir(key);
  std::error_code ec;
  if (!fs::is_directory(entry, ec)) return std::nullopt;
  auto summary = readFileBytes(entry / kEntrySummary, uint64_t{64} << 20);
  if (!summary.ok()) return std::nullopt;
  CacheEntry restored;
  restored.summary.assign(summary->begin(), summary->end());
  // All the files renamed into place together, or none (a failed restore is a miss: it compiles).
  OutputFiles files;
  for (const auto& [name, to, bytes] :
       {std::tuple{kEntryOnnx, dest.onnx, &restored.onnx}, std::tuple{kEntryPopef, dest.popef, &restored.popef}}) {
    if (to.empty()) continue;
    auto read = readFileBytes(entry / name);
    Status st = !read.ok() ? Status(read.error()) : write ? files.add(to, *read) : okStatus();
    if (!st.ok()) {
      POPRT_LOG(Info, "cache: entry " << entry.string() << " unusable (" << st.error().message() << "): compiling");
      return std::nullopt;
    }
    bytes->assign(read->begin(), read->end());
  }
  if (Status st = files.commit(); !st.ok()) {
    POPRT_LOG(Info, "cache: cannot restore " << entry.string() << " (" << st.error().message() << "): compiling");
    return std::nullopt;
  }
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);  // last use, for eviction
  evict(key.hex);
  return restored;
}

Status CompileCache::store(const CacheKey& key, const CacheEntry& entry) {
  const fs::path tmp = dir_ / (".tmp-" + key.hex.substr(0, 16) + "-" + uniqueSuffix());
  std::error_code ec;
  auto fail = [&](const std::string& what) -> Status {
    fs::remove_all(tmp, ec);
    return Error("cache " + dir_.string() + ": " + what);
  };
  if (!fs::create_directory(tmp, ec)) return fail("cannot create a temporary entry: " + ec.message());
  for (const auto& [bytes, name] :
       {std::pair{&entry.onnx, kEntryOnnx}, std::pair{&entry.popef, kEntryPopef}, std::pair{&entry.summary, kEntrySummary}}) {
    if (bytes->empty() && name == kEntryPopef) continue;
    if (auto st = writeFileAtomic(tmp / name, *bytes); !st.ok()) return fail(st.error().message());
  }
  if (auto st = writeFileAtomic(tmp / kKey, key.material); !st.ok()) return fail(st.error().message());
  fs::rename(tmp, entryDir(key), ec);
  if (ec) {
    // Another process stored this key in the meantime (rename onto a non-empty directory fails):
    // its entry is the same compile.
    bool stored = fs::is_directory(entryDir(key));
    if (!stored) return fail("cannot rename the entry into place: " + ec.message());
    fs::remove_all(tmp, ec);
  }
  evict(key.hex);
  return okStatus();
}

uint64_t CompileCache::totalBytes() const {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
    if (isEntryName(it->path().filename().string())) total += directoryBytes(it->path());
  return total;
}

void CompileCache::evict(const std::string& keep) const {
  struct Entry {
    fs::file_time_type used;
    std::string name;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  const auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code time_ec;
    const auto used = fs::last_write_time(it->path(), time_ec);
    if (time_ec) continue;  // evicted by another process meanwhile
    if (name.rfind(".tmp-", 0) == 0 || name.rfind(".evict-", 0) == 0) {
      if (now - used > kStaleAge) fs::remove_all(it->path(), time_ec);
      continue;
    }
    if (!isEntryName(name)) continue;
    entries.push_back({used, name, directoryBytes(it->path())});
    total += entries.back().bytes;
  }
  if (max_bytes_ == 0 || total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used != b.used ? a.used < b.used : a.name < b.name; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (e.name == keep) continue;
    // Renamed away first, so no reader finds a half-deleted entry under its key.
    const fs::path gone = dir_ / (".evict-" + e.name.substr(0, 16) + "-" + uniqueSuffix());
    std::error_code rename_ec;
    fs::rename(dir_ / e.name, gone, rename_ec);
    if (rename_ec) continue;  // another process evicted it
    fs::remove_all(gone, rename_ec);
    total -= e.bytes;
    POPRT_LOG(Info, "cache: evicted " << e.name << " (" << e.bytes << " bytes)");
  }
}

}  // namespace poprt::converter
