#include "converter/summary.h"

#include <nlohmann/json.hpp>

#include "converter/show.h"

namespace poprt::converter {
namespace {

using ojson = nlohmann::ordered_json;

ojson ioJson(const IoEntry& e) {
  ojson j;
  j["name"] = e.name;
  j["kind"] = e.kind;
  j["dtype"] = e.dtype;
  if (e.ranked) {
    ojson dims = ojson::array();
    for (const std::string& d : e.dims) {
      bool number = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
      if (number)
        dims.push_back(std::stoll(d));
      else
        dims.push_back(d);
    }
    j["shape"] = dims;
  } else {
    j["shape"] = nullptr;
  }
  return j;
}

ojson countsJson(const std::map<std::string, int64_t>& counts) {
  int64_t total = 0;
  ojson by_op = ojson::object();
  for (const auto& [op, n] : counts) {
    by_op[op] = n;
    total += n;
  }
  return ojson{{"total", total}, {"by_op_type", by_op}};
}

}  // namespace

std::map<std::string, int64_t> countOps(const ir::Graph& graph) {
  std::map<std::string, int64_t> counts;
  for (const auto& n : graph.nodes()) {
    const std::string& d = n->domain();
    ++counts[d.empty() ? n->opType() : d + ":" + n->opType()];
  }
  return counts;
}

std::string summaryJson(const ConvertSummary& s) {
  ojson j;
  j["tool"] = "poprt-convert";
  j["input_model"] = s.input_model;
  j["opset"] = ojson{{"imported", s.opset_before}, {"converted", s.opset_after}};
  ojson inputs = ojson::array(), outputs = ojson::array();
  if (s.model)
    for (const IoEntry& e : modelIo(*s.model)) (e.is_input ? inputs : outputs).push_back(ioJson(e));
  j["inputs"] = inputs;
  j["outputs"] = outputs;
  j["nodes_before"] = countsJson(s.nodes_before);
  j["nodes_after"] = countsJson(s.nodes_after);
  ojson passes = ojson::array();
  if (s.passes)
    for (const passes::PassReport& r : *s.passes) {
      ojson counters = ojson::object();
      for (const auto& [k, v] : r.stats.counters) counters[k] = v;
      passes.push_back(ojson{{"name", r.name},
                             {"seconds", r.seconds},
                             {"changed", r.changed},
                             {"counters", counters},
                             {"near_misses", r.stats.near_misses}});
    }
  j["passes"] = passes;
  j["warnings"] = s.warnings;
  if (s.compiled) {
    ojson host = ojson::array();
    for (size_t i = 0; i < s.compiled->host_nodes.size(); ++i)
      host.push_back(ojson{{"node", s.compiled->host_nodes[i]},
                           {"reason", i < s.compiled->host_reasons.size() ? s.compiled->host_reasons[i] : ""}});
    j["placement"] = ojson{{"target", s.target},
                           {"device_nodes", s.compiled->device_nodes},
                           {"host_nodes", host},
                           {"host_programs", s.compiled->executable.host_programs.size()}};
  } else {
    j["placement"] = nullptr;  // only known when compiling (--export_popef)
  }
  if (s.check)
    j["check"] = ojson{{"passed", true}, {"rtol", s.check->first}, {"atol", s.check->second}};
  else
    j["check"] = nullptr;
  j["precision"] = s.precision;
  j["precision_compare"] = s.precision_compare ? *s.precision_compare : ojson(nullptr);
  j["compile_seconds"] = s.seconds;
  j["codegen_seconds"] = s.codegen_seconds;
  j["files"] = ojson{{"onnx", s.onnx_path},
                     {"popef", s.popef_path.empty() ? ojson(nullptr) : ojson(s.popef_path)},
                     {"summary_json", s.summary_path}};
  j["cache"] = s.cache ? *s.cache : ojson(nullptr);
  return j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";  // paths need not be UTF-8
}

std::string summaryForEntry(const std::string& summary) {
  ojson j = ojson::parse(summary, nullptr, false);
  if (!j.is_object()) return summary;
  for (const char* run_field : {"input_model", "files", "cache"}) j.erase(run_field);
  return j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
}

std::string summaryForCacheHit(const std::string& stored, const std::string& input_model, const std::string& onnx_path,
                               const std::string& popef_path, const std::string& summary_path, const ojson& cache) {
  ojson j = ojson::parse(stored, nullptr, false);
  if (!j.is_object()) j = ojson::object();  // an entry from a damaged cache: the files are still right
  j["input_model"] = input_model;
  j["files"] = ojson{
      {"onnx", onnx_path}, {"popef", popef_path.empty() ? ojson(nullptr) : ojson(popef_path)}, {"summary_json", summary_path}};
  j["cache"] = cache;
  return j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";  // paths need not be UTF-8
}

}  // namespace poprt::converter
