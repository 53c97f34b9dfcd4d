#include "converter/cache_key.h"

#include <link.h>
#include <openssl/evp.h>

#include <fstream>
#include <set>

#include <onnx/onnx_pb.h>

#include "lib/support/file_io.h"
#include "lib/support/status.h"

#ifndef POPRT_VERSION
#error "POPRT_VERSION must be defined (converter/CMakeLists.txt)"
#endif

namespace poprt::converter {
namespace {

// Bump when the entry layout or the meaning of the key material changes.
constexpr const char* kKeyFormat = "poprt-convert compile cache, key format 1";

// Options whose value names files: NAME=FILE entries; the key holds the file's digest instead.
const std::set<std::string> kFileOptions = {"fp16_calibration_input", "precision_compare_input"};

// ------------------------------------------------------------------------------ external data

struct ExternalCollector {
  std::set<std::string> locations;

  void tensor(const onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    for (const auto& kv : t.external_data())
      if (kv.key() == "location") locations.insert(kv.value());
  }
  void sparse(const onnx::SparseTensorProto& s) {
    tensor(s.values());
    tensor(s.indices());
  }
  void attribute(const onnx::AttributeProto& a) {
    if (a.has_t()) tensor(a.t());
    for (const auto& t : a.tensors()) tensor(t);
    if (a.has_sparse_tensor()) sparse(a.sparse_tensor());
    for (const auto& s : a.sparse_tensors()) sparse(s);
    if (a.has_g()) graph(a.g());
    for (const auto& g : a.graphs()) graph(g);
  }
  void node(const onnx::NodeProto& n) {
    for (const auto& a : n.attribute()) attribute(a);
  }
  void graph(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) tensor(t);
    for (const auto& s : g.sparse_initializer()) sparse(s);
    for (const auto& n : g.node()) node(n);
  }
  void model(const onnx::ModelProto& m) {
    if (m.has_graph()) graph(m.graph());
    for (const auto& f : m.functions())
      for (const auto& n : f.node()) node(n);
    for (const auto& t : m.training_info()) {
      if (t.has_initialization()) graph(t.initialization());
      if (t.has_algorithm()) graph(t.algorithm());
    }
  }
};

// ------------------------------------------------------------------------------------ compiler

int collectLibrary(struct dl_phdr_info* info, size_t, void* data) {
  std::string name = info->dlpi_name ? info->dlpi_name : "";
  std::string base = std::filesystem::path(name).filename().string();
  if (base.rfind("libonnx", 0) == 0 || base.rfind("libprotobuf", 0) == 0) static_cast<std::set<std::string>*>(data)->insert(name);
  return 0;
}

// poprt's version and the digests of the code that compiles: this executable and the libonnx and
// libprotobuf shared libraries it has loaded (import, shape inference, version conversion and
// serialisation run there). Computed once per process.
const std::string& compilerMaterial() {
  static const std::string material = [] {
    std::string text = "compiler poprt " POPRT_VERSION "\n";
    auto exe = sha256File("/proc/self/exe");
    text += "executable sha256 " + (exe.ok() ? *exe : "unreadable:" + exe.error().message()) + "\n";
    std::set<std::string> libs;
    dl_iterate_phdr(collectLibrary, &libs);
    for (const std::string& lib : libs) {
      auto digest = sha256File(lib);
      text += "library " + std::filesystem::path(lib).filename().string() + " sha256 " + (digest.ok() ? *digest : "unreadable") +
              "\n";
    }
    return text;
  }();
  return material;
}

// A value's text in the key. JSON has no form for bytes that are not UTF-8 (an option's value, an
// external data path in the model): such a value is an error rather than a lossy key.
Expected<std::string> keyText(const nlohmann::json& value, const std::string& what) {
  try {
    return value.dump();
  } catch (const nlohmann::json::type_error&) { return Error(what + ": not valid UTF-8, which the compile cache's key needs"); }
}

}  // namespace

// ---------------------------------------------------------------------------------------- Sha256

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  POPRT_CHECK(ctx_ && EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) == 1,
              "OpenSSL SHA-256 init failed");
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(std::span<const uint8_t> bytes) {
  POPRT_CHECK(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size()) == 1, "OpenSSL SHA-256 update failed");
}

void Sha256::update(const std::string& text) {
  update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

std::string Sha256::hexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  POPRT_CHECK(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest, &size) == 1, "OpenSSL SHA-256 final failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

Expected<std::string> sha256File(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Error(path.string() + ": no such file (or not a regular file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(path.string() + ": cannot open");
  Sha256 sha;
  std::vector<uint8_t> buffer(size_t{1} << 20);
  while (in) {
    in.read(reinterpret_cast<char*>(buffer.data()), static_cast<std::streamsize>(buffer.size()));
    sha.update(std::span<const uint8_t>(buffer.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return Error(path.string() + ": read failed");
  return sha.hexDigest();
}

std::vector<std::filesystem::path> externalDataFiles(const std::string& model_bytes, const std::filesystem::path& model_dir) {
  // Every external tensor has a "location" entry: without that text there is nothing to parse for.
  if (model_bytes.find("location") == std::string::npos) return {};
  onnx::ModelProto proto;
  if (!proto.ParseFromString(model_bytes)) return {};  // not a model: the import reports it
  ExternalCollector c;
  c.model(proto);
  std::vector<std::filesystem::path> files;
  for (const std::string& location : c.locations) files.push_back(model_dir / location);
  return files;
}

bool optionAffectsOutput(const std::string& key) {
  static const std::set<std::string> outside = {
      "input_model",                                      // replaced by the model's bytes
      "output_dir",      "output_model", "summary_json",  // where the files go
      "logging_level",   "show",         "list_all_passes",     "cache_dir",
      "cache_max_bytes", "remote_cache", "remote_cache_upload", "remote_cache_header_file"};
  return !outside.count(key);
}

Expected<CacheKey> cacheKey(const ConvertOptions& o) {
  CacheKey key;
  std::string& m = key.material;
  m = std::string(kKeyFormat) + "\n" + compilerMaterial();

  // The model's bytes: the caller's (external data then relative to the working directory, as the
  // import reads it), or the file's.
  const std::filesystem::path model(o.input_model);
  std::string bytes = o.model_bytes;
  std::filesystem::path dir = ".";
  if (bytes.empty()) {
    POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> file, readFileBytes(model));
    bytes.assign(file.begin(), file.end());
    key.inputs.push_back(model);
    if (!model.parent_path().empty()) dir = model.parent_path();
  }
  Sha256 model_sha;
  model_sha.update(bytes);
  m += "model sha256 " + model_sha.hexDigest() + " bytes " + std::to_string(bytes.size()) + "\n";
  for (const auto& file : externalDataFiles(bytes, dir)) {
    POPRT_ASSIGN_OR_RETURN(std::string digest, sha256File(file));
    POPRT_ASSIGN_OR_RETURN(std::string location,
                           keyText(file.lexically_relative(dir).string(), o.input_model + ": external data location"));
    m += "external_data " + location + " sha256 " + digest + "\n";
    key.inputs.push_back(file);
  }

  for (auto& [name, value] : optionValues(o)) {
    if (!optionAffectsOutput(name)) continue;
    if (kFileOptions.count(name)) {
      nlohmann::json digests = nlohmann::json::array();
      for (const auto& entry : value) {
        const std::string text = entry.get<std::string>();
        const auto eq = text.rfind('=');
        if (eq == std::string::npos) return Error("--" + name + ": expected NAME=FILE, got '" + text + "'");
        POPRT_ASSIGN_OR_RETURN(std::string digest, sha256File(text.substr(eq + 1)));
        digests.push_back(text.substr(0, eq) + "=sha256:" + digest);
      }
      value = digests;
    }
    if (name == "custom_library_so_paths") {  // what the plugins are, not where
      nlohmann::json digests = nlohmann::json::array();
      for (const auto& path : value) {
        POPRT_ASSIGN_OR_RETURN(std::string digest, sha256File(path.get<std::string>()));
        digests.push_back("sha256:" + digest);
      }
      value = digests;
    }
    if (name == "manual_sharding_config" && !value.get<std::string>().empty()) {  // its content, not its path
      POPRT_ASSIGN_OR_RETURN(std::string digest, sha256File(value.get<std::string>()));
      value = "sha256:" + digest;
    }
    POPRT_ASSIGN_OR_RETURN(std::string text, keyText(value, "--" + name));
    m += "option " + name + " " + text + "\n";
  }
  Sha256 sha;
  sha.update(m);
  key.hex = sha.hexDigest();
  return key;
}

}  // namespace poprt::converter
