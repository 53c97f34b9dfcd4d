#include "converter/options.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>

#include "lib/support/file_io.h"

namespace poprt::converter {
namespace {

std::string nonNegative(double v) { return std::isfinite(v) && v >= 0 ? "" : "must be a finite number >= 0"; }

// NaN passes a "<= 0 || > 1" test; this one it does not.
std::string proportion(double v) { return v > 0 && v <= 1 ? "" : "must be a number in (0, 1]"; }
std::string countRange(double v) { return v >= 1 && v <= 1024 ? "" : "must be from 1 to 1024"; }

std::string opsetRange(double v) { return v >= 7 && v <= 17 ? "" : "must be a default-domain opset from 7 to 17"; }

}  // namespace

const std::vector<OptionSpec>& optionTable() {
  static const std::vector<OptionSpec> table = {
      {"input_model",
       "ONNX model to convert (required, here or in --config_yaml); repeat it to convert several, each into "
       "OUTPUT_DIR/<model stem>/",
       [](ConvertOptions& o) -> FieldRef { return &o.input_models; }},
      {"output_dir", "where outputs go (default: .)", [](ConvertOptions& o) -> FieldRef { return &o.output_dir; }},
      {"output_model", "file name of the converted ONNX (default: <input stem>.poprt.onnx)",
       [](ConvertOptions& o) -> FieldRef { return &o.output_model; }},
      {"export_popef", "also compile to DIR/executable.popef", [](ConvertOptions& o) -> FieldRef { return &o.export_popef; }},
      {"custom_library_so_paths",
       "a custom-op plugin library (poprt/custom_op.h) whose ops the model uses; repeatable. The PopEF records the "
       "plugins it needs, and popef-run, popef-serve and the runtime load them the same way",
       [](ConvertOptions& o) -> FieldRef { return &o.custom_library_so_paths; }},
      {"input_shape", "NAME=D0,D1,... fixes the dynamic dims of an input (repeatable)",
       [](ConvertOptions& o) -> FieldRef { return &o.input_shapes; }},
      {"precision", "fp32 or fp16 (default fp32)", [](ConvertOptions& o) -> FieldRef { return &o.precision; }},
      {"fp16_skip_op_types", "with --precision fp16: comma-separated op types that stay float32",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.fp16.skip_op_types; }, true},
      {"fp16_skip_node_names", "with --precision fp16: comma-separated node names that stay float32",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.fp16.skip_node_names; }, true},
      {"fp16_io", "with --precision fp16: float32 model inputs and outputs become float16 too (default: they keep float32)",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.fp16.io; }},
      {"enable_avoid_overflow_patterns",
       "with --precision fp16: keep overflow-prone paths (Exp/Pow/square -> sums, up to Log/Sqrt/Div) and nodes "
       "handling values beyond the float16 range on calibration inputs in float32 (default true; =false to turn off)",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.fp16.avoid_overflow_patterns; }},
      {"fp16_keep_vector_regions",
       "with --precision fp16: a connected region of vector ops only (no MatMul, Gemm, Conv or attention) that float16 "
       "would bound with Casts stays float32, as its Casts cost more on the device than it saves (default true; "
       "=false to convert it)",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.fp16.keep_vector_regions; }},
      {"fp16_calibration_input",
       "NAME=FILE.npy|.pb: an input of the float16 range check (which keeps nodes handling values beyond the float16 "
       "range in float32; default: generated inputs, as --check's) (repeatable)",
       [](ConvertOptions& o) -> FieldRef { return &o.fp16_calibration_inputs; }},
      {"fp16_min_cosine",
       "with --precision fp16: keep the converted nodes that add the most error in float32 until "
       "every float output's cosine similarity to the float32 model's reaches this, on the calibration inputs with the "
       "reference evaluator (default: no target)",
       [](ConvertOptions& o) -> FieldRef { return &o.fp16_min_cosine; }, false, proportion},
      {"precision_compare",
       "with --precision fp16: run the float32 and the float16 model with the reference evaluator and report the "
       "error and cosine similarity of each output",
       [](ConvertOptions& o) -> FieldRef { return &o.precision_compare; }},
      {"precision_compare_per_layer", "with --precision_compare: also compare every intermediate value",
       [](ConvertOptions& o) -> FieldRef { return &o.precision_compare_per_layer; }},
      {"precision_compare_input", "NAME=FILE.npy|.pb: an input --precision_compare reads instead of generating (repeatable)",
       [](ConvertOptions& o) -> FieldRef { return &o.precision_compare_inputs; }},
      {"serialize_matmul",
       "NODE=FACTOR: split that Conv, MatMul or Gemm (constant weight) into FACTOR nodes over slices of its output "
       "channels, so that each needs about 1/FACTOR of the tile memory for temporaries; an out-of-memory error names "
       "the node to give (repeatable)",
       [](ConvertOptions& o) -> FieldRef { return &o.serialize_matmul; }},
      {"ipu_version", "ipu1, ipu2 or ipu21 (default ipu2)", [](ConvertOptions& o) -> FieldRef { return &o.ipu_version; }},
      {"num_ipus", "IPUs to shard the model over (default 1): see --execution_strategy, --manual_sharding_config",
       [](ConvertOptions& o) -> FieldRef { return &o.num_ipus; }, false, countRange},
      {"execution_strategy",
       "with --num_ipus > 1: sharded (the IPUs run one after another) or pipelined (each IPU a stage, overlapping on "
       "the batches of a step; default sharded)",
       [](ConvertOptions& o) -> FieldRef { return &o.execution_strategy; }},
      {"manual_sharding_config",
       "YAML list of {node, device, stage}: each node and its ancestors not placed before run on that IPU and stage "
       "(default: balanced automatically)",
       [](ConvertOptions& o) -> FieldRef { return &o.manual_sharding_config; }},
      {"replication_factor", "data-parallel replicas the runtime runs, each with its own inputs (default 1)",
       [](ConvertOptions& o) -> FieldRef { return &o.replication_factor; }, false, countRange},
      {"batches_per_step", "batches the runtime runs per host call (default 1)",
       [](ConvertOptions& o) -> FieldRef { return &o.batches_per_step; }, false, countRange},
      {"tiles_per_ipu", "use only this many tiles per IPU (small test targets)",
       [](ConvertOptions& o) -> FieldRef { return &o.tiles_per_ipu; }},
      {"available_memory_proportion", "share of tile memory a matmul plan may use (default 0.6)",
       [](ConvertOptions& o) -> FieldRef { return &o.available_memory_proportion; }, false, proportion},
      {"batch_size", "set the batch dim of every input whose batch dim is dynamic",
       [](ConvertOptions& o) -> FieldRef { return &o.batch_size; }},
      {"batch_axis", "which dim --batch_size sets (default 0)", [](ConvertOptions& o) -> FieldRef { return &o.batch_axis; }},
      {"passes", "comma-separated passes to run instead of the default pipeline",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.passes; }, true},
      {"skip_passes", "comma-separated passes to leave out",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.skip_passes; }, true},
      {"list_all_passes", "print every pass with a one-line description and exit",
       [](ConvertOptions& o) -> FieldRef { return &o.list_all_passes; }},
      {"print_ir_after", "print the IR after the named pass",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.print_ir_after; }},
      {"max_tensor_size", "bytes a constant-folded tensor may take (default 128 MiB)",
       [](ConvertOptions& o) -> FieldRef { return &o.pipeline.max_tensor_size; }, false, nonNegative},
      {"show", "print the model's inputs and outputs and exit (writes nothing)",
       [](ConvertOptions& o) -> FieldRef { return &o.show; }},
      {"check", "run the original and the optimised graph on the same generated inputs and compare the outputs",
       [](ConvertOptions& o) -> FieldRef { return &o.check; }},
      {"check_rtol", "relative tolerance of --check (default 1e-3)", [](ConvertOptions& o) -> FieldRef { return &o.check_rtol; },
       false, nonNegative},
      {"check_atol", "absolute tolerance of --check (default 1e-4)", [](ConvertOptions& o) -> FieldRef { return &o.check_atol; },
       false, nonNegative},
      {"summary_json", "write a JSON summary of the conversion to this file",
       [](ConvertOptions& o) -> FieldRef { return &o.summary_json; }},
      {"report", "with --export_popef: write a profile report, DIR/profile.json and DIR/report.html (also POPRT_REPORT_DIR)",
       [](ConvertOptions& o) -> FieldRef { return &o.report; }},
      {"convert_version", "convert the model to this default-domain opset (7-17) before the passes",
       [](ConvertOptions& o) -> FieldRef { return &o.convert_version; }, false, opsetRange},
      {"logging_level", "OFF, ERR, WARN, INFO, DEBUG or TRACE (also POPRT_LOG_LEVEL)",
       [](ConvertOptions& o) -> FieldRef { return &o.logging_level; }},
      {"cache_dir",
       "compile cache: a conversion whose model, options and compiler match an earlier one copies its outputs from "
       "this directory instead of compiling (default: POPRT_CACHE_DIR; none when unset)",
       [](ConvertOptions& o) -> FieldRef { return &o.cache_dir; }},
      {"cache_max_bytes", "evict the least recently used cache entries beyond this many bytes (default 0: no limit)",
       [](ConvertOptions& o) -> FieldRef { return &o.cache_max_bytes; }, false, nonNegative},
      {"remote_cache",
       "a compile cache shared over Bazel's HTTP remote-cache protocol (bazel-remote, nginx WebDAV, ...): "
       "http(s)://host[:port][/prefix]; read-only unless --remote_cache_upload (default: POPRT_REMOTE_CACHE)",
       [](ConvertOptions& o) -> FieldRef { return &o.remote_cache; }},
      {"remote_cache_upload", "upload what this run compiles to --remote_cache (default: read only)",
       [](ConvertOptions& o) -> FieldRef { return &o.remote_cache_upload; }},
      {"remote_cache_header_file",
       "a file of 'Name: value' lines (e.g. Authorization) sent with every remote cache request "
       "(default: POPRT_REMOTE_CACHE_HEADER_FILE)",
       [](ConvertOptions& o) -> FieldRef { return &o.remote_cache_header_file; }},
  };
  return table;
}

namespace {

std::string formatNumber(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// ---------------------------------------------------------------------------------------- YAML

std::string describeNode(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "an undefined value";
  }
}

class YamlReader {
 public:
  YamlReader(std::string file, std::string key) : file_(std::move(file)), key_(std::move(key)) {}

  Error typeError(const std::string& expected, const YAML::Node& got) const {
    return Error(where() + ": expected " + expected + ", got " + describeNode(got));
  }
  std::string where() const { return file_ + ": key '" + key_ + "'"; }

  Expected<std::string> scalar(const YAML::Node& n, const std::string& expected) const {
    if (!n.IsScalar()) return typeError(expected, n);
    return n.Scalar();
  }

  template <class T>
  Expected<T> number(const YAML::Node& n, const std::string& expected) const {
    if (!n.IsScalar()) return typeError(expected, n);
    T v{};
    if (!YAML::convert<T>::decode(n, v)) return typeError(expected, n);
    return v;
  }

  Expected<bool> boolean(const YAML::Node& n) const {
    if (!n.IsScalar()) return typeError("true or false", n);
    bool v = false;
    if (!YAML::convert<bool>::decode(n, v)) return typeError("true or false", n);
    return v;
  }

  // "NAME=D0,D1,..." from a shape given as a list of integers or as the text "D0,D1,...".
  Expected<std::string> shapeEntry(const std::string& name, const YAML::Node& dims) const {
    if (dims.IsScalar()) return name + "=" + dims.Scalar();
    if (!dims.IsSequence()) return typeError("a list of dims for input '" + name + "'", dims);
    std::string text = name + "=";
    for (size_t i = 0; i < dims.size(); ++i) {
      POPRT_ASSIGN_OR_RETURN(int64_t d, number<int64_t>(dims[i], "an integer dim of input '" + name + "'"));
      text += (i ? "," : "") + std::to_string(d);
    }
    return text;
  }

  // input_shape: "x=1,3", ["x=1,3", ...], {x: [1,3], ...} or [{x: [1,3]}, ...].
  Expected<std::vector<std::string>> inputShapes(const YAML::Node& n) const {
    std::vector<std::string> out;
    auto addMap = [&](const YAML::Node& map) -> Status {
      for (const auto& kv : map) {
        POPRT_ASSIGN_OR_RETURN(std::string name, scalar(kv.first, "an input name"));
        POPRT_ASSIGN_OR_RETURN(std::string entry, shapeEntry(name, kv.second));
        out.push_back(std::move(entry));
      }
      return okStatus();
    };
    const std::string expected = "NAME=D0,D1,..., a list of them or a map {NAME: [D0, D1, ...]}";
    if (n.IsScalar()) {
      out.push_back(n.Scalar());
    } else if (n.IsMap()) {
      POPRT_TRY(addMap(n));
    } else if (n.IsSequence()) {
      for (const auto& item : n) {
        if (item.IsScalar())
          out.push_back(item.Scalar());
        else if (item.IsMap())
          POPRT_TRY(addMap(item));
        else
          return typeError(expected, item);
      }
    } else {
      return typeError(expected, n);
    }
    return out;
  }

  // A list of strings; for comma lists also the text "a,b,c".
  Expected<std::vector<std::string>> stringList(const YAML::Node& n, bool comma_list) const {
    std::vector<std::string> out;
    if (n.IsScalar() && comma_list) {
      std::string text = n.Scalar();
      size_t start = 0;
      while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        if (comma > start) out.push_back(text.substr(start, comma - start));
        start = comma + 1;
      }
      return out;
    }
    if (n.IsScalar()) return std::vector<std::string>{n.Scalar()};  // one item of a repeatable flag
    if (!n.IsSequence()) return typeError(comma_list ? "a list of names or \"a,b,c\"" : "a string or a list of strings", n);
    for (const auto& item : n) {
      POPRT_ASSIGN_OR_RETURN(std::string s, scalar(item, "a list of strings"));
      out.push_back(std::move(s));
    }
    return out;
  }

  template <class T>
  Status checked(T v, const OptionSpec& spec) const {
    if (!spec.check) return okStatus();
    std::string why = spec.check(static_cast<double>(v));
    if (!why.empty()) return Error(where() + ": " + why + ", got " + formatNumber(static_cast<double>(v)));
    return okStatus();
  }

  Status apply(const OptionSpec& spec, const YAML::Node& n, ConvertOptions& o) const {
    FieldRef field = spec.field(o);
    if (auto* s = std::get_if<std::string*>(&field)) {
      POPRT_ASSIGN_OR_RETURN(**s, scalar(n, "a string"));
    } else if (auto* list = std::get_if<std::vector<std::string>*>(&field)) {
      if (std::string(spec.key) == "input_shape") {
        POPRT_ASSIGN_OR_RETURN(**list, inputShapes(n));
      } else {
        POPRT_ASSIGN_OR_RETURN(**list, stringList(n, spec.comma_list));
      }
    } else if (auto* b = std::get_if<bool*>(&field)) {
      POPRT_ASSIGN_OR_RETURN(**b, boolean(n));
    } else if (auto* i = std::get_if<int64_t*>(&field)) {
      POPRT_ASSIGN_OR_RETURN(int64_t v, number<int64_t>(n, "an integer"));
      POPRT_TRY(checked(v, spec));
      **i = v;
    } else if (auto* u = std::get_if<uint32_t*>(&field)) {
      POPRT_ASSIGN_OR_RETURN(int64_t v, number<int64_t>(n, "a non-negative integer"));
      if (v < 0 || v > int64_t{std::numeric_limits<uint32_t>::max()}) return typeError("a non-negative integer", n);
      POPRT_TRY(checked(v, spec));
      **u = static_cast<uint32_t>(v);
    } else if (auto* d = std::get_if<double*>(&field)) {
      POPRT_ASSIGN_OR_RETURN(double v, number<double>(n, "a number"));
      POPRT_TRY(checked(v, spec));
      **d = v;
    }
    return okStatus();
  }

 private:
  std::string file_, key_;
};

}  // namespace

namespace {

// Applies the keys of `map` that the command line did not give. `where` names the map in errors
// (the file, or "FILE: models[i]"); `nested` for a models entry, whose keys may not be the
// file-wide ones.
Status applyMap(const std::set<std::string>& given, const std::string& where, const YAML::Node& map, bool nested,
                ConvertOptions& o) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) return Error(where + ": a key is " + describeNode(kv.first) + ", expected an option name");
    const std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) return Error(where + ": key '" + key + "' is given twice");
    if (key == "config_yaml") return Error(where + ": key 'config_yaml' cannot be used inside a config file");
    if (key == "models") {
      if (nested) return Error(where + ": key 'models' cannot be used inside a models entry");
      continue;  // read by applyConfigYaml once the top-level keys are in
    }
    if (nested && (key == "summary_json" || key == "cache_dir" || key == "cache_max_bytes" || key.rfind("remote_cache", 0) == 0))
      return Error(where + ": key '" + key + "' applies to the whole run: give it at the top level");
    const OptionSpec* spec = nullptr;
    for (const auto& s : optionTable())
      if (key == s.key) spec = &s;
    if (!spec)
      return Error(where + ": unknown key '" + key +
                   "' (the keys are poprt-convert's long flags without dashes; see poprt-convert --help)");
    if (given.count(key)) continue;  // the command line wins
    POPRT_TRY(YamlReader(where, key).apply(*spec, kv.second, o));
  }
  return okStatus();
}

// models: [m.onnx, {input_model: n.onnx, input_shape: ...}, ...] -> o.models, each entry over a
// copy of the options so far (the flags and the file's top-level keys).
Status applyModels(const std::set<std::string>& given, const std::string& file, const YAML::Node& list, ConvertOptions& o) {
  if (!list.IsSequence() || list.size() == 0)
    return Error(file + ": key 'models': expected a non-empty list of model paths or maps of options, got " + describeNode(list));
  if (given.count("input_model")) return Error(file + ": key 'models' and --input_model both name the models: give them one way");
  if (!o.input_models.empty()) return Error(file + ": keys 'models' and 'input_model' both name the models: give them one way");
  // Each entry starts from the file's top-level options, without the entries before it (copying
  // those into each would grow as 2^n).
  ConvertOptions base = o;
  base.models.clear();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = file + ": models[" + std::to_string(i) + "]";
    ConvertOptions entry = base;
    if (list[i].IsScalar()) {
      entry.input_models = {list[i].Scalar()};
    } else if (list[i].IsMap()) {
      POPRT_TRY(applyMap(given, where, list[i], true, entry));
      if (entry.input_models.size() != 1)
        return Error(where + ": expected one input_model, got " + std::to_string(entry.input_models.size()));
    } else {
      return Error(where + ": expected a model path or a map of options, got " + describeNode(list[i]));
    }
    o.models.push_back(std::move(entry));
  }
  return okStatus();
}

}  // namespace

Expected<YAML::Node> loadYamlFile(const std::string& file) {
  POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, readFileBytes(file, uint64_t{16} << 20));
  try {
    return YAML::Load(std::string(bytes.begin(), bytes.end()));
  } catch (const YAML::Exception& e) {
    std::string where = file;
    if (!e.mark.is_null()) where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    return Error(where + ": not valid YAML: " + e.msg);
  }
}

Status applyConfigYaml(const std::set<std::string>& given, ConvertOptions& o) {
  if (o.config_yaml.empty()) return okStatus();
  const std::string& file = o.config_yaml;
  POPRT_ASSIGN_OR_RETURN(YAML::Node root, loadYamlFile(file));
  if (root.IsNull()) return okStatus();  // an empty file sets nothing
  if (!root.IsMap()) return Error(file + ": expected a map of option: value at the top level, got " + describeNode(root));
  try {
    POPRT_TRY(applyMap(given, file, root, false, o));
    if (root["models"]) POPRT_TRY(applyModels(given, file, root["models"], o));
  } catch (const YAML::Exception& e) { return Error(file + ": " + e.msg); }
  return okStatus();
}

Status applyOptionsJson(const std::string& where, const std::string& json_object, ConvertOptions& o) {
  YAML::Node root;
  try {
    root = YAML::Load(json_object);  // JSON is YAML: one reader, the same type rules as a config file
  } catch (const YAML::Exception& e) { return Error(where + ": not a JSON object: " + e.msg); }
  if (!root.IsMap()) return Error(where + ": expected a map of option: value, got " + describeNode(root));
  try {
    for (const auto& kv : root)
      if (kv.first.IsScalar() && (kv.first.Scalar() == "models" || kv.first.Scalar() == "config_yaml"))
        return Error(where + ": option '" + kv.first.Scalar() + "' is for poprt-convert's config files only");
    return applyMap({}, where, root, false, o);
  } catch (const YAML::Exception& e) { return Error(where + ": " + e.msg); }
}

std::vector<std::pair<std::string, nlohmann::json>> optionValues(const ConvertOptions& o) {
  ConvertOptions copy = o;  // the table's accessors give mutable fields (the parsers fill them)
  copy.models.clear();
  std::vector<std::pair<std::string, nlohmann::json>> values;
  for (const OptionSpec& spec : optionTable())
    std::visit([&](auto* field) { values.emplace_back(spec.key, nlohmann::json(*field)); }, spec.field(copy));
  return values;
}

}  // namespace poprt::converter
