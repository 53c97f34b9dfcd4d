#include "tools/convert/convert_batch.h"
#include "lib/support/log.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "lib/support/file_io.h"
#include "tools/common/error_format.h"
#include "tools/common/tool_common.h"

namespace poprt::tools {
namespace fs = std::filesystem;

std::vector<ConvertOptions> planConversions(const ConvertOptions& o, bool& batch) {
  std::vector<ConvertOptions> plan;
  if (!o.models.empty()) {
    plan = o.models;
  } else {
    for (const std::string& model : o.input_models) {
      ConvertOptions one = o;
      one.input_models = {model};
      plan.push_back(std::move(one));
    }
  }
  if (plan.empty())
    throw UsageError("--input_model is required (on the command line or as input_model or models in --config_yaml)");
  batch = !o.models.empty() || plan.size() > 1;
  std::map<fs::path, std::string> claimed;  // output dir -> the model writing there
  for (ConvertOptions& c : plan) {
    c.input_model = c.input_models.front();
    c.models.clear();
    if (!batch) break;
    const fs::path dir = fs::path(c.output_dir) / fs::path(c.input_model).stem();
    const fs::path where = fs::absolute(dir).lexically_normal();
    if (auto [it, fresh] = claimed.emplace(where, c.input_model); !fresh)
      throw UsageError("models " + it->second + " and " + c.input_model + " would both write to " + dir.string() +
                       " (each model converts into OUTPUT_DIR/<file name stem>/): rename one, or give it an "
                       "output_dir of its own in a models: list");
    c.output_dir = dir.string();
    c.summary_json = (dir / "summary.json").string();
  }
  return plan;
}

Status runBatch(const ConvertOptions& o, const std::vector<ConvertOptions>& plan, const ConvertFn& convert, std::ostream& out) {
  POPRT_TRY(checkOutputFile("--summary_json", o.summary_json));
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  std::vector<std::string> failed;
  for (const ConvertOptions& c : plan) {
    const auto t0 = std::chrono::steady_clock::now();
    ConvertOutcome outcome;
    ErrorReport error{"poprt-convert", ErrorKind::Error, "", 0, c.input_model};
    try {
      Status st = convert(c, outcome);
      if (!st.ok()) error.message = st.error().message(), error.code = kExitError;
    } catch (const UsageError& e) {
      error.kind = ErrorKind::Usage, error.message = e.what(), error.code = kExitUsage;
    } catch (const std::bad_alloc&) {
      error.message = "out of memory", error.code = kExitError;
    } catch (const std::exception& e) {
      error.kind = ErrorKind::Internal, error.message = internalErrorMessage(e), error.code = kExitError;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.flush();
    if (error.code != 0) {
      printError(std::cerr, error);
      failed.push_back(c.input_model);
    }
    nlohmann::ordered_json m;
    m["input_model"] = c.input_model;
    m["output_dir"] = c.output_dir;
    m["status"] = error.code == 0 ? "ok" : "failed";
    m["exit_code"] = error.code;
    m["error"] = error.code == 0 ? nlohmann::ordered_json(nullptr) : errorJson(error);
    m["summary_json"] = error.code == 0 ? nlohmann::ordered_json(c.summary_json) : nlohmann::ordered_json(nullptr);
    m["cache"] = outcome.cache.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(outcome.cache);
    m["seconds"] = seconds;
    models.push_back(std::move(m));
  }
  const size_t ok = plan.size() - failed.size();
  out << "poprt-convert: " << plan.size() << " models: " << ok << " converted, " << failed.size() << " failed";
  std::map<std::string, size_t> outcomes;  // how the compile cache served the models that used it
  for (const auto& m : models)
    if (m["cache"].is_string()) ++outcomes[m["cache"].get<std::string>()];
  const size_t local = outcomes["hit"], remote = outcomes["remote hit"], looked_up = local + remote + outcomes["miss"];
  if (looked_up) {
    out << "; cache: " << local + remote << " of " << looked_up << " hits (" << 100 * (local + remote) / looked_up << "%";
    if (remote) out << ", " << local << " local, " << remote << " remote";
    out << ")";
  }
  out << "\n";
  if (!o.summary_json.empty()) {
    nlohmann::ordered_json j;
    j["tool"] = "poprt-convert";
    j["models"] = std::move(models);
    j["converted"] = ok;
    j["failed"] = failed.size();
    j["cache_hits"] = {{"local", local}, {"remote", remote}, {"misses", outcomes["miss"]}};
    POPRT_TRY(writeOutputFile("--summary_json", o.summary_json,
                              j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"));
  }
  if (failed.empty()) return okStatus();
  std::string names;
  for (const std::string& f : failed) names += (names.empty() ? "" : ", ") + f;
  return Error(std::to_string(failed.size()) + " of " + std::to_string(plan.size()) + " models failed: " + names);
}

}  // namespace poprt::tools
