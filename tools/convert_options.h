// poprt-convert's options: one table of keys serves both the command line (--KEY) and
// --config_yaml FILE (KEY: value), so the two always accept the same names. Flags given on the
// command line win over the config file.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/support/status.h"
#include "passes/pass_manager.h"

namespace poprt::tools {

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
  std::string ipu_version = "ipu2";
  uint32_t num_ipus = 1;
  std::string execution_strategy = "sharded";  // with num_ipus > 1: sharded or pipelined
  std::string manual_sharding_config;          // YAML list of {node, device, stage}
  uint32_t replication_factor = 1;  // recorded in the PopEF: the runtime runs that many replicas
  uint32_t batches_per_step = 1;    // recorded in the PopEF: batches per host call
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
  std::string report;  // --report DIR (or POPRT_REPORT_DIR): profile.json and report.html
  int64_t convert_version = 0;  // 0: keep the model's opset
  std::string cache_dir;        // --cache_dir, else POPRT_CACHE_DIR; "" = no cache
  int64_t cache_max_bytes = 0;  // 0 = unlimited
};

// Registers every option of the table (plus --config_yaml) on `app`, bound to `o`.
void addConvertFlags(CLI::App& app, ConvertOptions& o);

// Reads o.config_yaml, when set, and applies every key the command line did not give (`app` has
// parsed argv). Unknown keys, type errors and out-of-range values are errors naming the key and
// the file.
// A `models:` list (one map of keys per model, or a model path) fills o.models.
Status applyConfigYaml(const CLI::App& app, ConvertOptions& o);

// A YAML file (at most 16 MiB), or an error naming the file and, for bad YAML, the line and column.
Expected<YAML::Node> loadYamlFile(const std::string& file);

// Every option of the table by key, with its value as JSON (the compile cache's key).
std::vector<std::pair<std::string, nlohmann::json>> optionValues(const ConvertOptions& o);

}  // namespace poprt::tools
