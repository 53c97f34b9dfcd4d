#include "serve/repository.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <optional>
#include <tuple>

#include "lib/support/file_io.h"
#include "model_config.pb.h"
#include "serve/infer_request.h"

namespace poprt::serve {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxConfigBytes = 1 << 20;
constexpr uint64_t kMaxQueueDelayUs = 60'000'000;  // as --max_queue_delay_us

// Model names come from requests as well as directories: 1-200 of A-Z a-z 0-9 _ - . and not a
// path (".", "..").
bool validModelName(const std::string& name) {
  if (name.empty() || name.size() > 200 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; });
}

// The highest numbered version directory of `model_dir` holding a model.popef, or "".
std::string latestVersion(const fs::path& model_dir) {
  std::string best;
  uint64_t best_n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(model_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string v = it->path().filename().string();
    if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    const uint64_t n = std::stoull(v);
    std::error_code fe;
    if (n > 0 && (best.empty() || n > best_n) && fs::is_regular_file(it->path() / "model.popef", fe)) {
      best = v;
      best_n = n;
    }
  }
  return best;
}

// What changes when a model is replaced on disk: its PopEF's and config's size and time.
std::string signature(const fs::path& model_dir, const std::string& version) {
  std::string s = version;
  for (const fs::path& p : {model_dir / version / "model.popef", model_dir / "config.pbtxt"}) {
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    const auto time = fs::last_write_time(p, ec);
    s += ec ? "|-" : "|" + std::to_string(size) + "@" + std::to_string(time.time_since_epoch().count());
  }
  return s;
}

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (error.empty()) error = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int, int, const std::string&) override {}
  std::string error;
};

Expected<std::optional<ModelConfig>> readConfig(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::optional<ModelConfig>();
  POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, readFileBytes(file, kMaxConfigBytes));
  ModelConfig config;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(bytes.begin(), bytes.end()), &config))
    return Error(file.string() + ": " + errors.error);
  return std::optional<ModelConfig>(std::move(config));
}

// What the config asks of the model, checked against what the PopEF is.
Status checkConfig(const ModelConfig& c, const std::string& name, const ServedModel& m, const std::string& file) {
  const ModelLayout& l = m.layout();
  if (!c.name().empty() && c.name() != name) return Error(file + ": name '" + c.name() + "', the directory is '" + name + "'");
  if (!c.platform().empty() && c.platform() != "poprt_popef")
    return Error(file + ": platform '" + c.platform() + "': popef-serve serves poprt_popef");
  if (!c.backend().empty() && c.backend() != "poprt")
    return Error(file + ": backend '" + c.backend() + "': popef-serve is poprt");
  const int64_t batch = l.batchable ? l.batch : 0;
  if (c.max_batch_size() > 0 && c.max_batch_size() != batch)
    return Error(file + ": max_batch_size " + std::to_string(c.max_batch_size()) + ", the PopEF is compiled for " +
                 (batch ? "batches of " + std::to_string(batch) : std::string("fixed shapes (max_batch_size 0)")));
  for (const auto& g : c.instance_group())
    if (g.count() != 0 && static_cast<unsigned>(g.count()) != m.replicas())
      return Error(file + ": instance_group count " + std::to_string(g.count()) + ", the PopEF runs " +
                   std::to_string(m.replicas()) + " replica(s) (poprt-convert --replication_factor)");
  auto checkTensors = [&](const auto& tensors, const std::vector<AnchorLayout>& anchors, const std::string& what) -> Status {
    for (const auto& t : tensors) {
      auto a = std::find_if(anchors.begin(), anchors.end(), [&](const AnchorLayout& x) { return x.desc.name == t.name(); });
      if (a == anchors.end()) return Error(file + ": " + what + " '" + t.name() + "': the PopEF has no such " + what);
      const std::string want = "TYPE_" + datatypeOf(*a);
      if (t.data_type() != DataType::TYPE_INVALID && DataType_Name(t.data_type()) != want)
        return Error(file + ": " + what + " '" + t.name() + "': " + DataType_Name(t.data_type()) + ", the PopEF's is " + want);
      Shape dims = a->desc.shape;
      if (l.batchable) dims.erase(dims.begin() + l.axis);
      if (t.dims_size() > 0 && Shape(t.dims().begin(), t.dims().end()) != dims)
        return Error(file + ": " + what + " '" + t.name() + "': dims " + shapeToString(Shape(t.dims().begin(), t.dims().end())) +
                     ", the PopEF's are " + shapeToString(dims));
    }
    return okStatus();
  };
  POPRT_TRY(checkTensors(c.input(), l.inputs, "input"));
  POPRT_TRY(checkTensors(c.output(), l.outputs, "output"));
  return okStatus();
}

}  // namespace

ModelRepository::~ModelRepository() { clear(); }

Status ModelRepository::addFile(const std::string& name, const std::string& file) {
  if (!validModelName(name))
    return Error("--model " + name + "=" + file + ": the name must be 1-200 characters of A-Z, a-z, 0-9, '_', '-', '.'");
  if (entries_.count(name)) return Error("--model: '" + name + "' is given twice");
  auto m = ServedModel::load({name, "1"}, file, batching_, metrics_);
  if (!m.ok()) return m.error().withContext("--model " + name);
  Entry e;
  e.model = std::move(m).value();
  e.from_file = true;
  e.version = "1";
  e.state = "READY";
  std::lock_guard lock(mutex_);
  entries_[name] = std::move(e);
  return okStatus();
}

Status ModelRepository::setRepository(const fs::path& dir, ControlMode mode, const std::vector<std::string>& initial) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error("--model_repository " + dir.string() + ": not a directory");
  dir_ = dir;
  mode_ = mode;
  if (mode == ControlMode::Explicit) {
    for (const std::string& name : initial)
      if (Status st = load(name); !st.ok()) return st.error().withContext("--load_model " + name);
    return okStatus();
  }
  for (const std::string& name : onDisk()) (void)load(name);  // a failure is in the index
  return okStatus();
}

std::vector<std::string> ModelRepository::onDisk(bool* complete) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code de;
    const std::string name = it->path().filename().string();
    if (it->is_directory(de) && validModelName(name)) names.push_back(name);
  }
  if (complete) *complete = !ec;
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<ServedModel> ModelRepository::find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.model;
}

std::vector<std::shared_ptr<ServedModel>> ModelRepository::served() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<ServedModel>> all;
  for (const auto& [name, e] : entries_)
    if (e.model) all.push_back(e.model);
  return all;
}

bool ModelRepository::ready() const {
  for (const auto& m : served())
    if (!m->ready()) return false;
  return true;
}

std::vector<IndexEntry> ModelRepository::index() const {
  std::map<std::string, IndexEntry> out;
  if (!dir_.empty())
    for (const std::string& name : onDisk()) out[name] = {name, "", "", ""};
  std::lock_guard lock(mutex_);
  for (const auto& [name, e] : entries_) out[name] = {name, e.version, e.state, e.reason};
  std::vector<IndexEntry> list;
  for (auto& [name, e] : out) list.push_back(std::move(e));
  return list;
}

Status ModelRepository::load(const std::string& name) {
  std::lock_guard serial(load_mutex_);
  if (dir_.empty()) return Error("no --model_repository to load from");
  if (!validModelName(name)) return Error("'" + name + "' is not a model name");
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end() && it->second.from_file)
      return Error("model '" + name + "' was given with --model: it is not the repository's to load");
  }
  const fs::path model_dir = dir_ / name;
  std::error_code ec;
  // Records a failure in the index; a model already served stays served.
  auto fail = [&](const std::string& version, const std::string& why) -> Status {
    std::lock_guard lock(mutex_);
    Entry& e = entries_[name];
    if (!e.model) {
      e.version = version;
      e.state = "UNAVAILABLE";
    }
    e.reason = (e.model ? "version " + version + " failed to load: " : "") + why;
    e.failed_signature = signature(model_dir, version);  // poll does not retry the same files
    return Error("model '" + name + "': " + why);
  };
  // (A name that is not in the repository gets no index entry: requests cannot grow the index.)
  if (!fs::is_directory(model_dir, ec)) return Error("model '" + name + "': no such model in the repository");
  const std::string version = latestVersion(model_dir);
  if (version.empty()) return fail("", "no version directory (1, 2, ...) with a model.popef");
  const std::string sig = signature(model_dir, version);
  const fs::path config_file = model_dir / "config.pbtxt";
  auto config = readConfig(config_file);
  if (!config.ok()) return fail(version, config.error().message());
  BatcherOptions batching = batching_;
  if (*config && (*config)->has_dynamic_batching()) {
    const uint64_t delay = (*config)->dynamic_batching().max_queue_delay_microseconds();
    if (delay > kMaxQueueDelayUs)
      return fail(version, config_file.string() + ": max_queue_delay_microseconds " + std::to_string(delay) +
                               " is over a minute (" + std::to_string(kMaxQueueDelayUs) + ")");
    batching.dynamic_batching = true;
    batching.max_queue_delay = std::chrono::microseconds(delay);
  }
  Expected<std::unique_ptr<ServedModel>> m = Error("");
  try {
    m = ServedModel::load({name, version}, (model_dir / version / "model.popef").string(), batching, metrics_);
  } catch (const std::exception& e) {  // a file that makes the runtime throw what it does not map
    m = Error(std::string("cannot load: ") + e.what());
  }
  if (!m.ok()) return fail(version, m.error().message());
  if (*config)
    if (Status st = checkConfig(**config, name, **m, config_file.string()); !st.ok()) return fail(version, st.error().message());
  std::shared_ptr<ServedModel> old;
  {
    std::lock_guard lock(mutex_);
    Entry& e = entries_[name];
    old = std::move(e.model);
    e.model = std::move(m).value();
    e.version = version;
    e.state = "READY";
    e.reason.clear();
    e.signature = sig;
  }
  return okStatus();  // `old` goes here, or with the last request that holds it
}

Status ModelRepository::unload(const std::string& name) {
  std::lock_guard serial(load_mutex_);
  std::shared_ptr<ServedModel> old;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end() || !it->second.model) return Error("model '" + name + "' is not loaded");
    if (it->second.from_file) return Error("model '" + name + "' was given with --model: it is not the repository's to unload");
    old = std::move(it->second.model);
    it->second.state = "UNAVAILABLE";
    it->second.reason = "unloaded";
    it->second.signature.clear();  // poll loads it again if it comes back unchanged
  }
  return okStatus();
}

void ModelRepository::poll() {
  if (dir_.empty()) return;
  bool complete = false;
  const std::vector<std::string> names = onDisk(&complete);
  for (const std::string& name : names) {
    const std::string version = latestVersion(dir_ / name);
    std::string served_signature, failed_signature;
    bool from_file = false;
    {
      std::lock_guard lock(mutex_);
      auto it = entries_.find(name);
      if (it != entries_.end()) {
        served_signature = it->second.signature;
        failed_signature = it->second.failed_signature;
        from_file = it->second.from_file;
      }
    }
    if (from_file || version.empty()) continue;
    const std::string sig = signature(dir_ / name, version);
    if (sig != served_signature && sig != failed_signature) (void)load(name);  // a failure is in the index
  }
  // A scan that failed (the directory moved away, no file descriptors left) is not a repository
  // without models: nothing is unloaded on it.
  if (!complete) return;
  std::vector<std::string> gone;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, e] : entries_)
      if (e.model && !e.from_file && !std::binary_search(names.begin(), names.end(), name)) gone.push_back(name);
  }
  for (const std::string& name : gone) (void)unload(name);
}

void ModelRepository::clear() {
  std::map<std::string, Entry> all;
  {
    std::lock_guard lock(mutex_);
    all.swap(entries_);
  }
  all.clear();  // outside the lock: each model drains its batcher
}

}  // namespace poprt::serve
