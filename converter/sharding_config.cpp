#include "converter/sharding_config.h"

#include <yaml-cpp/yaml.h>

#include "converter/options.h"

namespace poprt::converter {
namespace {

// A number from 0 to 1023 (devices and stages), or an error naming where it is.
Expected<int64_t> smallCount(const YAML::Node& n, const std::string& where) {
  int64_t v = -1;
  if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v) || v < 0 || v >= 1024)
    return Error(where + " must be an integer from 0 to 1023");
  return v;
}

}  // namespace

Expected<std::vector<codegen::ShardEntry>> readShardingConfig(const std::string& path) {
  POPRT_ASSIGN_OR_RETURN(YAML::Node root, loadYamlFile(path));
  if (!root.IsSequence() || root.size() == 0) return Error(path + ": expected a list of {node, device, stage} entries");
  std::vector<codegen::ShardEntry> entries;
  for (size_t i = 0; i < root.size(); ++i) {
    const YAML::Node& item = root[i];
    const std::string where = path + ": entry " + std::to_string(i + 1);
    if (!item.IsMap()) return Error(where + ": expected a map with node, device and stage");
    codegen::ShardEntry e;
    for (const auto& kv : item) {
      const std::string key = kv.first.Scalar();
      if (key == "node") {
        if (!kv.second.IsScalar() || kv.second.Scalar().empty()) return Error(where + ": 'node' must be a node name");
        e.node = kv.second.Scalar();
      } else if (key == "device") {
        POPRT_ASSIGN_OR_RETURN(int64_t d, smallCount(kv.second, where + ": 'device'"));
        e.device = static_cast<uint32_t>(d);
      } else if (key == "stage") {
        POPRT_ASSIGN_OR_RETURN(e.stage, smallCount(kv.second, where + ": 'stage'"));
      } else {
        return Error(where + ": unknown key '" + key + "' (expected node, device, stage)");
      }
    }
    if (e.node.empty() || !item["device"]) return Error(where + ": needs 'node' and 'device'");
    entries.push_back(std::move(e));
  }
  return entries;
}

Expected<codegen::ShardingOptions> shardingOptions(const std::string& strategy, const std::string& config_path) {
  codegen::ShardingOptions s;
  if (strategy == "pipelined")
    s.strategy = exec::Strategy::Pipelined;
  else if (strategy != "sharded")
    return Error("--execution_strategy must be sharded or pipelined, got '" + strategy + "'");
  if (!config_path.empty()) {
    POPRT_ASSIGN_OR_RETURN(s.manual, readShardingConfig(config_path));
    s.manual_source = config_path;
  }
  return s;
}

}  // namespace poprt::converter
