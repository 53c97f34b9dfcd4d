#include "tools/common/error_format.h"

#include <atomic>
#include <filesystem>
#include <ostream>
#include <regex>

#include "lib/support/text.h"

namespace poprt::tools {
namespace {

std::atomic<bool> g_json{false};

const char* kindName(ErrorKind k) {
  switch (k) {
    case ErrorKind::Usage: return "usage";
    case ErrorKind::Internal: return "internal";
    default: return "error";
  }
}

// A segment of a message that names a file: it exists, or it has no spaces and a path's shape
// (a '/' or a file extension we read or write). "FILE:LINE:COLUMN" (YAML errors) counts as FILE.
bool looksLikePath(std::string& seg) {
  static const std::regex position(R"(^(.*?)(:\d+)+$)");
  std::smatch m;
  if (std::regex_match(seg, m, position)) seg = m[1];
  if (seg.empty()) return false;
  std::error_code ec;
  if (std::filesystem::exists(seg, ec)) return true;
  if (seg.find_first_of(" \t'\"") != std::string::npos) return false;
  if (seg.find('/') != std::string::npos) return true;
  static const std::regex extension(R"(.*\.(onnx|npy|pb|popef|yaml|yml|json|bin|data)$)");
  return std::regex_match(seg, extension);
}

// Messages quote names from untrusted files (node, tensor, blob names); escaping control
// characters keeps every error on its one line and keeps a file from writing to the terminal.
std::string oneLineMessage(const std::string& message) { return escapeControlBytes(message, false); }

}  // namespace

void setJsonErrors(bool json) { g_json = json; }
bool jsonErrors() { return g_json; }

nlohmann::ordered_json errorJson(const ErrorReport& e) {
  nlohmann::ordered_json j;
  j["tool"] = e.tool;
  j["kind"] = kindName(e.kind);
  j["code"] = e.code;
  j["error"] = e.message;
  std::string flag, file;
  // The leading "A: B: ..." segments that are flags ("--flag" or "--flag VALUE") or files.
  size_t start = 0;
  while (start < e.message.size()) {
    size_t end = e.message.find(": ", start);
    if (end == std::string::npos) break;  // the last segment is the message proper
    std::string seg = e.message.substr(start, end - start);
    if (seg.rfind("--", 0) == 0) {
      if (!flag.empty()) break;
      size_t space = seg.find(' ');
      flag = seg.substr(0, space);
      if (space != std::string::npos) {
        std::string value = seg.substr(space + 1);
        if (file.empty() && looksLikePath(value)) file = value;
      }
    } else if (file.empty() && looksLikePath(seg)) {
      file = seg;
    } else {
      break;
    }
    start = end + 2;
  }
  std::smatch m;
  if (flag.empty()) {
    // Usage errors name their flag anywhere ("The following argument was not expected: --x").
    static const std::regex any_flag(R"((--[A-Za-z][A-Za-z0-9_-]*))");
    if (e.kind == ErrorKind::Usage && std::regex_search(e.message, m, any_flag)) flag = m[1];
    // "--flag needs ..." / "--flag must ...": a message that starts with the flag.
    static const std::regex leading_flag(R"(^(--[A-Za-z][A-Za-z0-9_-]*)\b)");
    if (flag.empty() && std::regex_search(e.message, m, leading_flag)) flag = m[1];
  }
  if (!flag.empty()) j["flag"] = flag;
  if (!file.empty()) j["file"] = file;
  static const std::regex node(R"(node '([^']*)')");
  if (std::regex_search(e.message, m, node)) j["node"] = std::string(m[1]);
  if (!e.model.empty()) j["model"] = e.model;
  return j;
}

void printError(std::ostream& out, const ErrorReport& e) {
  if (jsonErrors()) {
    out << errorJson(e).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    out.flush();
    return;
  }
  const std::string message = oneLineMessage(e.message);
  switch (e.kind) {
    case ErrorKind::Usage: out << e.tool << ": usage error: " << message << " (see " << e.tool << " --help)\n"; break;
    case ErrorKind::Internal: out << e.tool << ": internal error: " << message << "\n"; break;
    default: out << e.tool << ": error: " << message << "\n";
  }
  out.flush();
}

}  // namespace poprt::tools
