// poprt-convert's compile cache (--cache_dir DIR or POPRT_CACHE_DIR): one directory per key
// (convert_cache_key.h) holding what the conversion wrote — the converted ONNX (model.onnx), the
// PopEF (executable.popef, with --export_popef) and its summary (summary.json) — plus the key's
// material (key.txt), so a miss can be explained by comparing two of them.
//
// Safe under concurrent compiles without locks: an entry is built in a temporary directory and
// renamed into place, and a rename onto an existing entry fails, so of several processes storing
// the same key one wins and the others drop their copy. Readers only ever see whole entries; an
// entry evicted while being read is a miss. Last use is the entry directory's mtime, which a hit
// refreshes; --cache_max_bytes evicts the least recently used entries past the limit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "converter/cache_key.h"
#include "lib/support/status.h"

namespace poprt::converter {

// The files of an entry, in the local directory and in the remote cache alike.
inline constexpr const char* kEntryOnnx = "model.onnx";
inline constexpr const char* kEntryPopef = "executable.popef";
inline constexpr const char* kEntrySummary = "summary.json";  // without this run's paths (summaryForEntry)

// --cache_dir when given, else POPRT_CACHE_DIR, else "" (no cache).
std::string effectiveCacheDir(const std::string& flag);

// The files a conversion writes (destinations on a hit, sources on a store).
struct ConvertFiles {
  std::filesystem::path onnx;   // the converted ONNX
  std::filesystem::path popef;  // empty without --export_popef
};

// An entry's contents, as a hit hands them to the conversion.
struct CacheEntry {
  std::string summary;
  std::string onnx;
  std::string popef;  // empty for an entry without a PopEF
};

class CompileCache {
 public:
  // Creates `dir` when missing.
  static Expected<CompileCache> open(const std::filesystem::path& dir, uint64_t max_bytes);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path entryDir(const CacheKey& key) const { return dir_ / key.hex; }

  // On a hit: marks the entry used and returns what it holds (the PopEF when `dest` has a path
  // for it), with `write` also copying its files to `dest` (all renamed into place together).
  // nullopt on a miss, including an entry that vanished or cannot be read (the caller compiles).
  std::optional<CacheEntry> restore(const CacheKey& key, const ConvertFiles& dest, bool write = true);

  // Stores `entry` as the entry of `key`; then evicts past the size limit. Another process storing
  // the same key first is not an error.
  Status store(const CacheKey& key, const CacheEntry& entry);

  // Bytes of the entries in the cache (the total --cache_max_bytes bounds).
  uint64_t totalBytes() const;

 private:
  CompileCache(std::filesystem::path dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  // Evicts least recently used entries, never `keep`, until the entries fit max_bytes_; removes
  // temporary directories crashed processes left behind.
  void evict(const std::string& keep) const;

  std::filesystem::path dir_;
  uint64_t max_bytes_ = 0;  // 0: no limit
};

}  // namespace poprt::converter
