// The compile cache's key (poprt-convert --cache_dir): a SHA-256 (OpenSSL) over everything that
// decides what a conversion writes — the model's bytes and its external-data files, every option
// that affects the result (files named by options by their bytes, not their paths) and the
// compiler itself (poprt's version and the bytes of poprt-convert and of the libonnx and libprotobuf
// it runs with). Paths, output names and logging are left out, so the same model compiled from
// anywhere into anywhere has one key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "converter/options.h"
#include "lib/support/status.h"

namespace poprt::converter {

// Incremental SHA-256 (OpenSSL's EVP).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::span<const uint8_t> bytes);
  void update(const std::string& text);
  std::string hexDigest();  // finishes the hash: 64 lowercase hex digits

 private:
  void* ctx_;  // EVP_MD_CTX
};

// The SHA-256 of a file's bytes, read in pieces (models may be gigabytes).
Expected<std::string> sha256File(const std::filesystem::path& path);

// The external-data files a model's tensors name (ONNX location keys, anywhere in the model:
// initializers, Constant attributes, subgraphs, functions), resolved against the model's
// directory, sorted and without duplicates. Locations the importer would refuse (absolute, with
// '..') are returned as given: the key then fails to read them and the compile reports why.
std::vector<std::filesystem::path> externalDataFiles(const std::string& model_bytes, const std::filesystem::path& model_dir);

struct CacheKey {
  std::string hex;                            // SHA-256 of `material`
  std::string material;                       // the text that was hashed, one line per ingredient (kept in the entry)
  std::vector<std::filesystem::path> inputs;  // the files it read: the model and its external data
};

// The key of converting o.input_model with options `o`; an error when a file it needs cannot be
// read (the conversion itself then reports the problem).
Expected<CacheKey> cacheKey(const ConvertOptions& o);

// The options left out of the key: where outputs go and how messages look, never what is in them.
bool optionAffectsOutput(const std::string& key);

}  // namespace poprt::converter
