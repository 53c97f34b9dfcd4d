#include "lib/plugin/plugin.h"

#include <dlfcn.h>

#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "lib/onnx/inference_guard.h"
#include "lib/onnx/type_map.h"
#include "lib/plugin/plugin_op.h"
#include "lib/support/text.h"

namespace poprt::plugin {
namespace {

constexpr size_t kMaxNameBytes = 256;
constexpr int32_t kMaxOps = 1024;
constexpr int32_t kMaxArity = 64;

struct Loaded {
  std::mutex mutex;
  std::deque<Plugin> plugins;  // never moves: callers keep pointers
  std::map<std::string, const Plugin*> by_path;
  std::map<std::pair<std::string, std::string>, const Plugin*> by_op;  // (domain, op_type)
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

// A C string from the plugin: present, non-empty, at most kMaxNameBytes, UTF-8.
Expected<std::string> pluginString(const char* s, const std::string& what) {
  if (!s) return Error(what + " is NULL");
  const size_t n = strnlen(s, kMaxNameBytes + 1);
  if (n == 0 || n > kMaxNameBytes) return Error(what + " is empty or longer than " + std::to_string(kMaxNameBytes) + " bytes");
  std::string text(s, n);
  if (!isValidUtf8(text) || escapeControlBytes(text, false) != text) return Error(what + " is not printable UTF-8");
  return text;
}

using OpKey = std::pair<std::string, std::string>;  // (domain, op_type)

// One op of the table, checked against the ABI's rules and what is registered already.
Status checkOp(const poprt_custom_op& op, size_t index, const std::map<OpKey, const Plugin*>& by_op, std::set<OpKey>& seen) {
  const std::string at = "op " + std::to_string(index);
  POPRT_ASSIGN_OR_RETURN(std::string domain, pluginString(op.domain, at + ": its domain"));
  POPRT_ASSIGN_OR_RETURN(std::string op_type, pluginString(op.op_type, at + ": its op type"));
  const std::string name = domain + "::" + op_type;
  if (ops::isReservedDomain(domain)) return Error(name + ": the domain belongs to ONNX or poprt");
  if (op.min_inputs < 0 || op.max_inputs < op.min_inputs || op.max_inputs > kMaxArity)
    return Error(name + ": inputs " + std::to_string(op.min_inputs) + " to " + std::to_string(op.max_inputs) +
                 " (must be within 0 to " + std::to_string(kMaxArity) + ")");
  if (op.num_outputs < 1 || op.num_outputs > kMaxArity)
    return Error(name + ": " + std::to_string(op.num_outputs) + " outputs (must be 1 to " + std::to_string(kMaxArity) + ")");
  if (op.flags & ~uint32_t{POPRT_OP_FLOAT16}) return Error(name + ": unknown flags " + std::to_string(op.flags));
  if (!op.infer || !op.compute) return Error(name + ": no inference or no compute function");
  if (!seen.insert({domain, op_type}).second) return Error(name + " is in the table twice");
  if (auto it = by_op.find({domain, op_type}); it != by_op.end())
    return Error(name + " is already defined by plugin '" + it->second->name + "' (" + it->second->path + ")");
  if (ops::findOp(domain, op_type)) return Error(name + " is already defined by poprt");
  return okStatus();
}

// Checks the plugin's table and builds each op's schema, then registers every op: a table that
// fails registers nothing (and the library may be unloaded).
Expected<Plugin> registerPlugin(const poprt_plugin& p, const std::string& path, const std::map<OpKey, const Plugin*>& by_op) {
  if (p.abi_version != POPRT_CUSTOM_OP_ABI_VERSION)
    return Error("built for plugin ABI version " + std::to_string(p.abi_version) + ", this poprt has version " +
                 std::to_string(POPRT_CUSTOM_OP_ABI_VERSION));
  Plugin plugin;
  plugin.path = path;
  POPRT_ASSIGN_OR_RETURN(plugin.name, pluginString(p.name, "its name"));
  POPRT_ASSIGN_OR_RETURN(plugin.version, pluginString(p.version, "its version"));
  if (p.num_ops < 1 || p.num_ops > kMaxOps || !p.ops)
    return Error("its op table has " + std::to_string(p.num_ops) + " ops (must be 1 to " + std::to_string(kMaxOps) + ")");
  std::set<OpKey> seen;
  std::vector<onnx::OpSchema> schemas;
  for (int32_t i = 0; i < p.num_ops; ++i) {
    const poprt_custom_op& op = p.ops[i];
    POPRT_TRY(checkOp(op, static_cast<size_t>(i), by_op, seen));
    try {
      schemas.push_back(makeSchema(op, plugin.name));
    } catch (const std::exception& e) {
      return Error(std::string(op.domain) + "::" + op.op_type + ": " + onnxio::oneLine(e.what()));
    }
  }
  for (int32_t i = 0; i < p.num_ops; ++i) {
    const poprt_custom_op& op = p.ops[i];
    // Cannot fail after checkOp (the registries change only under the loader's lock).
    POPRT_CHECK(onnxio::addCustomSchema(std::move(schemas[static_cast<size_t>(i)])), "a plugin op's schema is registered twice");
    POPRT_CHECK(ops::registerCustomOp(makeOpDef(op, plugin.name)).ok(), "a plugin op is registered twice");
    plugin.ops.emplace_back(op.domain, op.op_type);
  }
  return plugin;
}

void collectOps(const ir::Graph& g, std::set<std::pair<std::string, std::string>>& out) {
  for (const auto& n : g.nodes()) {
    if (pluginOf(n->domain(), n->opType())) out.insert({n->domain(), n->opType()});
    for (const ir::Graph* sub : n->subgraphs()) collectOps(*sub, out);
  }
}

}  // namespace

Expected<const Plugin*> loadPlugin(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec) return Error(path + ": " + ec.message());
  auto& l = loaded();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (auto it = l.by_path.find(canonical.string()); it != l.by_path.end()) return it->second;
  void* handle = dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return Error(path + ": not a loadable shared library (" + onnxio::oneLine(why ? why : "dlopen failed") + ")");
  }
  auto entry = reinterpret_cast<poprt_plugin_entry_fn>(dlsym(handle, POPRT_PLUGIN_ENTRY));
  if (!entry) {
    dlclose(handle);
    return Error(path + ": not a poprt plugin (it has no " POPRT_PLUGIN_ENTRY " function, see poprt/custom_op.h)");
  }
  const poprt_plugin* table = entry(&hostApi());
  if (!table) {
    dlclose(handle);
    return Error(path + ": the plugin declined to load (its " POPRT_PLUGIN_ENTRY " returned NULL)");
  }
  auto plugin = registerPlugin(*table, canonical.string(), l.by_op);
  if (!plugin.ok()) {
    dlclose(handle);
    return plugin.error().withContext(path);
  }
  const Plugin* p = &l.plugins.emplace_back(std::move(plugin).value());
  l.by_path[p->path] = p;
  for (const auto& op : p->ops) l.by_op[op] = p;
  return p;
}

Status loadPlugins(const std::vector<std::string>& paths) {
  for (const auto& path : paths)
    if (auto plugin = loadPlugin(path); !plugin.ok()) return plugin.error();
  return okStatus();
}

const Plugin* pluginOf(const std::string& domain, const std::string& op_type) {
  auto& l = loaded();
  std::lock_guard<std::mutex> lock(l.mutex);
  auto it = l.by_op.find({domain, op_type});
  return it == l.by_op.end() ? nullptr : it->second;
}

nlohmann::json pluginRecord(const ir::Model& model) {
  std::set<std::pair<std::string, std::string>> used;
  collectOps(*model.graph, used);
  std::map<const Plugin*, std::vector<std::string>> by_plugin;
  for (const auto& [domain, op_type] : used) by_plugin[pluginOf(domain, op_type)].push_back(domain + "::" + op_type);
  nlohmann::json record = nullptr;
  for (const auto& [p, op_names] : by_plugin) record.push_back({{"name", p->name}, {"version", p->version}, {"ops", op_names}});
  return record;
}

Status checkPluginRecord(const nlohmann::json& record) {
  if (record.is_null()) return okStatus();
  const Error malformed("its plugin record is malformed");
  if (!record.is_array() || record.size() > static_cast<size_t>(kMaxOps)) return malformed;
  for (const auto& entry : record) {
    if (!entry.is_object() || entry.size() != 3 || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("version") || !entry["version"].is_string() || !entry.contains("ops") || !entry["ops"].is_array() ||
        entry["ops"].size() > static_cast<size_t>(kMaxOps))
      return malformed;
    const std::string name = entry["name"].get<std::string>();
    for (const auto& op : entry["ops"]) {
      if (!op.is_string()) return malformed;
      const std::string full = op.get<std::string>();
      const size_t at = full.rfind("::");
      if (at == std::string::npos) return malformed;
      if (!ops::findOp(full.substr(0, at), full.substr(at + 2)))
        return Error("it needs custom op " + quoteForError(full) + " of plugin " + quoteForError(name) +
                     ", which is not loaded (pass the plugin's library with --custom_library_so_paths)");
    }
  }
  return okStatus();
}

}  // namespace poprt::plugin
