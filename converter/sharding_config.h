// --manual_sharding_config FILE: PopRT's YAML list of {node, device, stage} entries.
#pragma once

#include <string>
#include <vector>

#include "codegen/sharding.h"
#include "lib/support/status.h"

namespace poprt::converter {

// Reads the entries in order. A missing file, bad YAML, an entry without `node` or `device`, an
// unknown key or a negative number is an error naming the file and the entry.
Expected<std::vector<codegen::ShardEntry>> readShardingConfig(const std::string& path);

// The compile options' sharding part from --execution_strategy and --manual_sharding_config.
Expected<codegen::ShardingOptions> shardingOptions(const std::string& strategy, const std::string& config_path);

}  // namespace poprt::converter
