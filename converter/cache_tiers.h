// The compile cache as a conversion uses it: the local directory (--cache_dir, converter/cache.h)
// in front of the remote cache (--remote_cache, converter/remote_cache.h). A lookup tries the local
// tier, then the remote one; a remote hit writes the outputs and fills the local tier. After a
// compile the entry goes to the local tier and, with --remote_cache_upload, to the remote one.
// What happened is described for the summary's "cache" object: hit and tier, or miss and why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "converter/cache.h"
#include "converter/cache_key.h"
#include "converter/options.h"
#include "converter/remote_cache.h"
#include "lib/support/status.h"

namespace poprt::converter {

class CacheTiers {
 public:
  // The tiers `o` asks for. None is used (active() false) when neither is set, for --show, for a
  // conversion whose reports only a compile makes (`bypassed` set), or when the key's files cannot
  // be read (the import then reports why). A conversion in memory (write_files off) uses them too:
  // a hit writes nothing, a compile is stored from its bytes. Errors: a --remote_cache URL or
  // header file poprt cannot use. A local directory that cannot be made is a warning.
  static Expected<CacheTiers> open(const ConvertOptions& o, bool& bypassed, std::vector<std::string>& warnings);

  bool active() const { return key_.has_value(); }

  // On a hit the entry's files are written to `dest` (all or none; not in memory) and its
  // contents returned.
  // A remote entry that is corrupted or a server that cannot be reached adds a warning.
  std::optional<CacheEntry> lookup(const ConvertFiles& dest, std::vector<std::string>& warnings);

  // After a compile, before its files are written: uploads the entry (the converted ONNX, the
  // PopEF when there is one, the summary) with --remote_cache_upload.
  void upload(const std::string& onnx, const std::string& popef, const std::string& summary, std::vector<std::string>& warnings);
  // After a compile: stores its outputs in the local tier.
  void storeLocal(const std::string& onnx, const std::string& popef, const std::string& summary,
                  std::vector<std::string>& warnings);

  // The summary's "cache" object: {dir (local tier), key, hit, tier (hit) or why (miss), upload
  // (with a remote tier, after a compile), seconds (hit)}.
  nlohmann::ordered_json describe() const { return json_; }
  // "hit", "remote hit" or "miss".
  std::string outcome() const;

 private:
  std::optional<CompileCache> local_;
  std::optional<RemoteCache> remote_;
  std::optional<CacheKey> key_;
  bool write_files_ = true;
  nlohmann::ordered_json json_;
};

}  // namespace poprt::converter
