// The conversion's options: one table of keys serves the command line (--KEY, tools/convert_flags),
// --config_yaml FILE (KEY: value) and the Python package's keyword arguments (KEY=value), so all
// three always accept the same names. Flags given on the command line win over the config file.
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "lib/support/status.h"
#include "passes/pass_manager.h"

namespace poprt::converter {

struct ConvertOptions {
  std::string config_yaml;
  std::vector<std::string> input_models;  // --input_model (repeatable) or input_model: in the config
  // The model this conversion converts: one of input_models, set by planConversions (convert_batch.h).
  std::string input_model;
  // The config's `models:` list: one entry per model, each with every option resolved (flags,
  // then the entry's keys, then the file's top-level keys). Empty unless the config has one.
  std::vector<ConvertOptions> models;
  std::string output_dir = ".";
  std::string output_model;
  bool export_popef = false;
  std::vector<std::string> input_shapes;
  std::string precision = "fp32";  // fp16: the fp16 options live in pipeline.fp16
  bool precision_compare = false;
  bool precision_compare_per_layer = false;
  std::vector<std::string> precision_compare_inputs;  // NAME=FILE
  std::vector<std::string> fp16_calibration_inputs;   // NAME=FILE
  double fp16_min_cosine = 0;                         // 0: no accuracy target (mixed_precision.h)
  std::vector<std::string> serialize_matmul;          // NODE=FACTOR (passes/serialize_matmul.cpp)
  std::string ipu_version = "ipu2";
  uint32_t num_ipus = 1;
  std::string execution_strategy = "sharded";  // with num_ipus > 1: sharded or pipelined
  std::string manual_sharding_config;          // YAML list of {node, device, stage}
  uint32_t replication_factor = 1;             // recorded in the PopEF: the runtime runs that many replicas
  uint32_t batches_per_step = 1;               // recorded in the PopEF: batches per host call
  uint32_t tiles_per_ipu = 0;
  double available_memory_proportion = 0.6;
  std::string logging_level;
  int64_t batch_size = 0;
  int64_t batch_axis = 0;
  passes::PipelineOptions pipeline;
  bool list_all_passes = false;
  bool show = false;
  bool check = false;
  double check_rtol = 1e-3;
  double check_atol = 1e-4;
  std::string summary_json;
  std::string report;           // --report DIR (or POPRT_REPORT_DIR): profile.json and report.html
  int64_t convert_version = 0;  // 0: keep the model's opset
  std::string cache_dir;        // --cache_dir, else POPRT_CACHE_DIR; "" = no cache
  int64_t cache_max_bytes = 0;  // 0 = unlimited
  std::string remote_cache;     // --remote_cache URL, else POPRT_REMOTE_CACHE; "" = none
  bool remote_cache_upload = false;
  std::string remote_cache_header_file;              // else POPRT_REMOTE_CACHE_HEADER_FILE
  std::vector<std::string> custom_library_so_paths;  // custom-op plugins (lib/plugin), loaded first
  // Not options of the table, for callers of the library (the Python package):
  bool write_files = true;  // off: the results stay in memory (ConvertResult), nothing is written
  std::string model_bytes;  // non-empty: the model to convert, instead of reading input_model
                            // (which then only names it in messages; external data is read
                            // relative to the working directory)
};

using FieldRef = std::variant<std::string*, std::vector<std::string>*, bool*, int64_t*, uint32_t*, double*>;

// One option: its key (the long flag without dashes, the config-file key, the keyword argument),
// where it lives in ConvertOptions and, for numbers, a range check.
struct OptionSpec {
  const char* key;
  const char* help;
  std::function<FieldRef(ConvertOptions&)> field;
  bool comma_list = false;  // a list given as "a,b,c" (--passes); otherwise a repeatable flag
  // For numbers: "" when the value is fine, else what is wrong with it ("must be >= 0").
  std::function<std::string(double)> check = nullptr;
};

// The table, in --help order.
const std::vector<OptionSpec>& optionTable();

// Reads o.config_yaml, when set, and applies every key not in `given` (the keys the command line
// gave). Unknown keys, type errors and out-of-range values are errors naming the key and the
// file. A `models:` list (one map of keys per model, or a model path) fills o.models.
Status applyConfigYaml(const std::set<std::string>& given, ConvertOptions& o);

// Applies a JSON object of options (the Python package's keyword arguments) with the config
// file's rules; errors name `where` and the key.
Status applyOptionsJson(const std::string& where, const std::string& json_object, ConvertOptions& o);

// A YAML file (at most 16 MiB), or an error naming the file and, for bad YAML, the line and column.
Expected<YAML::Node> loadYamlFile(const std::string& file);

// Every option of the table by key, with its value as JSON (the compile cache's key).
std::vector<std::pair<std::string, nlohmann::json>> optionValues(const ConvertOptions& o);

}  // namespace poprt::converter
