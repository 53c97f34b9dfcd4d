// Custom-op plugins: shared libraries that add ops through the C ABI of poprt/custom_op.h. A loaded
// plugin stays for the life of the process; its ops go into the op registry (lib/ops) and ONNX
// shape inference (lib/onnx), so every stage treats them as it treats ONNX ops (they run on the
// host). A PopEF records the plugins its ops come from (`pluginRecord`), and a reader checks that
// they are loaded (`checkPluginRecord`).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/support/status.h"

namespace poprt::plugin {

struct Plugin {
  std::string path;  // as loaded (canonical)
  std::string name;  // the plugin's own name and version
  std::string version;
  std::vector<std::pair<std::string, std::string>> ops;  // (domain, op_type)
};

// Loads a plugin library and registers its ops. Loading the same file again returns the plugin
// already loaded. Errors name the file: not found, not loadable, no entry point, another ABI
// version, a malformed op table, an op another plugin (or ONNX, or poprt) already defines.
Expected<const Plugin*> loadPlugin(const std::string& path);
Status loadPlugins(const std::vector<std::string>& paths);

// The loaded plugin that registered (domain, op_type); nullptr for poprt's own ops.
const Plugin* pluginOf(const std::string& domain, const std::string& op_type);

// The plugins the model's nodes (subgraphs included) use, as a PopEF records them:
// [{"name", "version", "ops": ["domain::op_type", ...]}], or null when it uses none.
nlohmann::json pluginRecord(const ir::Model& model);
// A record read from a file (untrusted): well formed, and every op in it registered now; else an
// error naming the plugin to load.
Status checkPluginRecord(const nlohmann::json& record);

}  // namespace poprt::plugin
