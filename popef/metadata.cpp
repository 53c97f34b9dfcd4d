// The metadata blob: Metadata <-> CBOR with strict validation (docs/POPEF.md, "Metadata").
#include <set>
#include <string>

#include "lib/support/text.h"
#include "popef/popef.h"

namespace poprt::popef {

using json = nlohmann::json;

namespace {

std::string sq(const std::string& s) { return quoteForError(s); }

const char* kindName(Anchor::Kind k) { return k == Anchor::Kind::Input ? "input" : "output"; }

// ---- strict JSON accessors ---------------------------------------------------------------

std::string typeOf(const json& j) {
  if (j.is_number_integer()) return "integer";
  return j.type_name();
}

Status checkKeys(const json& obj, const std::string& where, const std::set<std::string>& required,
                 const std::set<std::string>& optional = {}) {
  if (!obj.is_object()) return Error(where + ": expected a map, got " + typeOf(obj));
  for (const auto& [key, value] : obj.items()) {
    (void)value;
    if (!required.count(key) && !optional.count(key))
      return Error(where + ": unknown key " + sq(key) + " (this reader refuses keys it does not know)");
  }
  for (const auto& key : required)
    if (!obj.contains(key)) return Error(where + ": missing required key " + sq(key));
  return okStatus();
}

Expected<std::string> getString(const json& j, const std::string& where) {
  if (!j.is_string()) return Error(where + ": expected a text string, got " + typeOf(j));
  return j.get<std::string>();
}

Expected<int64_t> getInt(const json& j, const std::string& where) {
  if (!j.is_number_integer()) return Error(where + ": expected an integer, got " + typeOf(j));
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return Error(where + ": integer " + std::to_string(j.get<uint64_t>()) + " is out of range");
  return j.get<int64_t>();
}

Expected<int> getCount(const json& j, const std::string& where) {
  POPRT_ASSIGN_OR_RETURN(int64_t v, getInt(j, where));
  if (v < 1 || v > kMaxCount) return Error(where + ": " + std::to_string(v) + " is outside 1.." + std::to_string(kMaxCount));
  return static_cast<int>(v);
}

Expected<bool> getBool(const json& j, const std::string& where) {
  if (!j.is_boolean()) return Error(where + ": expected a boolean, got " + typeOf(j));
  return j.get<bool>();
}

Expected<std::vector<std::string>> getStringList(const json& j, const std::string& where) {
  if (!j.is_array()) return Error(where + ": expected an array of text strings, got " + typeOf(j));
  std::vector<std::string> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    POPRT_ASSIGN_OR_RETURN(std::string s, getString(j[i], where + "[" + std::to_string(i) + "]"));
    out.push_back(std::move(s));
  }
  return out;
}

Expected<Anchor> anchorFromJson(const json& j, size_t index) {
  std::string where = "anchors[" + std::to_string(index) + "]";
  if (j.is_object() && j.contains("name") && j["name"].is_string()) where += " " + sq(j["name"].get<std::string>());
  POPRT_TRY(checkKeys(j, where, {"name", "handle", "dtype", "shape", "kind", "per_replica", "programs"}, {"value"}));
  Anchor a;
  POPRT_ASSIGN_OR_RETURN(a.name, getString(j["name"], where + ".name"));
  POPRT_ASSIGN_OR_RETURN(a.handle, getString(j["handle"], where + ".handle"));
  POPRT_ASSIGN_OR_RETURN(std::string dtype, getString(j["dtype"], where + ".dtype"));
  auto dt = dtypeFromName(dtype);
  if (!dt) return Error(where + ".dtype: unknown dtype " + sq(dtype) + " (expected e.g. float32, float16, int32)");
  a.dtype = *dt;
  const json& shape = j["shape"];
  if (!shape.is_array()) return Error(where + ".shape: expected an array of integers, got " + typeOf(shape));
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return Error(where + ".shape: rank " + std::to_string(shape.size()) + " exceeds the limit of " + std::to_string(kMaxRank));
  for (size_t i = 0; i < shape.size(); ++i) {
    POPRT_ASSIGN_OR_RETURN(int64_t d, getInt(shape[i], where + ".shape[" + std::to_string(i) + "]"));
    a.shape.push_back(d);
  }
  POPRT_ASSIGN_OR_RETURN(std::string kind, getString(j["kind"], where + ".kind"));
  if (kind == "input")
    a.kind = Anchor::Kind::Input;
  else if (kind == "output")
    a.kind = Anchor::Kind::Output;
  else
    return Error(where + ".kind: expected \"input\" or \"output\", got " + sq(kind));
  POPRT_ASSIGN_OR_RETURN(a.per_replica, getBool(j["per_replica"], where + ".per_replica"));
  POPRT_ASSIGN_OR_RETURN(a.programs, getStringList(j["programs"], where + ".programs"));
  if (j.contains("value")) {
    POPRT_ASSIGN_OR_RETURN(std::string value, getString(j["value"], where + ".value"));
    auto v = valueKindFromName(value);
    if (!v) return Error(where + ".value: expected tensor, sequence, optional or optional_sequence, got " + sq(value));
    a.value = *v;
  }
  return a;
}

Expected<Metadata> metadataFromJson(const json& j) {
  POPRT_TRY(checkKeys(j, "metadata",
                      {"anchors", "program_flow", "replication_factor", "num_ipus", "ipu_version", "batches_per_step",
                       "executable_name", "compile_options"},
                      {"extra"}));
  Metadata m;
  const json& anchors = j["anchors"];
  if (!anchors.is_array()) return Error("anchors: expected an array, got " + typeOf(anchors));
  for (size_t i = 0; i < anchors.size(); ++i) {
    POPRT_ASSIGN_OR_RETURN(Anchor a, anchorFromJson(anchors[i], i));
    m.anchors.push_back(std::move(a));
  }
  const json& flow = j["program_flow"];
  POPRT_TRY(checkKeys(flow, "program_flow", {"load", "main", "save"}));
  POPRT_ASSIGN_OR_RETURN(m.program_flow.load, getStringList(flow["load"], "program_flow.load"));
  POPRT_ASSIGN_OR_RETURN(m.program_flow.main, getStringList(flow["main"], "program_flow.main"));
  POPRT_ASSIGN_OR_RETURN(m.program_flow.save, getStringList(flow["save"], "program_flow.save"));
  POPRT_ASSIGN_OR_RETURN(m.replication_factor, getCount(j["replication_factor"], "replication_factor"));
  POPRT_ASSIGN_OR_RETURN(m.num_ipus, getCount(j["num_ipus"], "num_ipus"));
  POPRT_ASSIGN_OR_RETURN(m.batches_per_step, getCount(j["batches_per_step"], "batches_per_step"));
  POPRT_ASSIGN_OR_RETURN(m.ipu_version, getString(j["ipu_version"], "ipu_version"));
  POPRT_ASSIGN_OR_RETURN(m.executable_name, getString(j["executable_name"], "executable_name"));
  const json& opts = j["compile_options"];
  if (!opts.is_object()) return Error("compile_options: expected a map of text strings, got " + typeOf(opts));
  for (const auto& [key, value] : opts.items()) {
    POPRT_ASSIGN_OR_RETURN(std::string v, getString(value, "compile_options[" + sq(key) + "]"));
    m.compile_options.emplace(key, std::move(v));
  }
  if (j.contains("extra")) m.extra = j["extra"];
  return m;
}

}  // namespace

Status validateMetadata(const Metadata& m) {
  auto countOk = [](int v) { return v >= 1 && v <= kMaxCount; };
  if (!countOk(m.replication_factor))
    return Error("replication_factor " + std::to_string(m.replication_factor) + " is outside 1..1024");
  if (!countOk(m.num_ipus)) return Error("num_ipus " + std::to_string(m.num_ipus) + " is outside 1..1024");
  if (!countOk(m.batches_per_step))
    return Error("batches_per_step " + std::to_string(m.batches_per_step) + " is outside 1..1024");

  std::set<std::string> programs;
  for (const auto* list : {&m.program_flow.load, &m.program_flow.main, &m.program_flow.save})
    for (const auto& p : *list) {
      if (p.empty()) return Error("program_flow: empty program name");
      programs.insert(p);
    }

  std::set<std::string> names;
  for (const Anchor& a : m.anchors) {
    std::string where = "anchor " + sq(a.name);
    if (a.name.empty()) return Error("anchor with an empty name (handle " + sq(a.handle) + ")");
    if (!names.insert(a.name).second) return Error(where + ": duplicate anchor name");
    if (a.dtype == DType::Undefined || !dtypeFromOnnx(static_cast<int64_t>(a.dtype)))
      return Error(where + ": invalid dtype " + std::to_string(static_cast<int>(a.dtype)));
    if (a.kind != Anchor::Kind::Input && a.kind != Anchor::Kind::Output) return Error(where + ": invalid kind");
    if (a.shape.size() > static_cast<size_t>(kMaxRank))
      return Error(where + ": rank " + std::to_string(a.shape.size()) + " exceeds the limit of 64");
    // -1 is a dim known only at run time (an output of a host op with a data-dependent shape).
    Shape known = a.shape;
    for (int64_t& d : known)
      if (d == -1) d = 1;
    auto n = checkedNumElements(known);
    if (!n.ok()) return n.error().withContext(where);
    for (const auto& p : a.programs)
      if (!programs.count(p)) return Error(where + ": program " + sq(p) + " is not in program_flow (load, main or save)");
  }
  return okStatus();
}

std::vector<uint8_t> encodeMetadata(const Metadata& m) {
  json anchors = json::array();
  for (const Anchor& a : m.anchors) {
    anchors.push_back({{"name", a.name},
                       {"handle", a.handle},
                       {"dtype", std::string(dtypeName(a.dtype))},
                       {"shape", a.shape},
                       {"kind", kindName(a.kind)},
                       {"per_replica", a.per_replica},
                       {"programs", a.programs}});
    if (a.value != ValueKind::Tensor) anchors.back()["value"] = std::string(valueKindName(a.value));
  }
  json opts = json::object();
  for (const auto& [k, v] : m.compile_options) opts[k] = v;
  json j = {{"anchors", anchors},
            {"program_flow", {{"load", m.program_flow.load}, {"main", m.program_flow.main}, {"save", m.program_flow.save}}},
            {"replication_factor", m.replication_factor},
            {"num_ipus", m.num_ipus},
            {"ipu_version", m.ipu_version},
            {"batches_per_step", m.batches_per_step},
            {"executable_name", m.executable_name},
            {"compile_options", opts}};
  if (!m.extra.is_null()) j["extra"] = m.extra;
  return json::to_cbor(j);
}

Expected<Metadata> decodeMetadata(std::span<const uint8_t> cbor) {
  POPRT_ASSIGN_OR_RETURN(json j, decodeCbor(cbor));
  POPRT_ASSIGN_OR_RETURN(Metadata m, metadataFromJson(j));
  POPRT_TRY(validateMetadata(m));
  return m;
}

}  // namespace poprt::popef
