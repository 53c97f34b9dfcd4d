#include "tools/tool_common.h"

#include <iostream>

#include "lib/support/file_io.h"
#include "lib/support/log.h"

namespace poprt::tools {

void addLoggingFlag(CLI::App& app, std::string& level) {
  app.add_option("--logging_level", level, "OFF, ERR, WARN, INFO, DEBUG or TRACE (also POPRT_LOG_LEVEL)");
}

Status applyLogging(const std::string& level) {
  initLogLevelFromEnv();
  if (level.empty()) return okStatus();
  auto parsed = parseLogLevel(level);
  if (!parsed) return Error("--logging_level: unknown level '" + level + "' (expected OFF, ERR, WARN, INFO, DEBUG or TRACE)");
  setLogLevel(*parsed);
  return okStatus();
}

namespace {

// Messages quote names from untrusted files (node, tensor, blob names); escaping control
// characters keeps every error on its one line and keeps a file from writing to the terminal.
std::string oneLineMessage(const std::string& message) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (char ch : message) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

int runTool(const std::string& tool, CLI::App& app, int argc, char** argv, const std::function<Status()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << tool << ": usage error: " << oneLineMessage(e.what()) << " (see " << tool << " --help)\n";
    return kExitUsage;
  }
  try {
    Status st = body();
    if (!st.ok()) {
      std::cerr << tool << ": error: " << oneLineMessage(st.error().message()) << "\n";
      return kExitError;
    }
    return kExitOk;
  } catch (const UsageError& e) {
    std::cerr << tool << ": usage error: " << oneLineMessage(e.what()) << " (see " << tool << " --help)\n";
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    std::cerr << tool << ": error: out of memory\n";
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.rfind("internal error", 0) != 0) what = "internal error: " + what;
    std::cerr << tool << ": " << oneLineMessage(what) << "\n";
  }
  return kExitError;
}

Expected<std::pair<std::string, std::string>> splitAssignment(const std::string& text, const std::string& flag) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return Error(flag + ": expected NAME=VALUE, got '" + text + "'");
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

std::string outputFileName(size_t index, const std::string& name, const std::string& ext) {
  std::string safe = name;
  for (char& c : safe)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return "output_" + std::to_string(index) + "_" + safe + ext;
}

Status checkOutputFile(const std::string& flag, const std::string& file) {
  if (file.empty()) return okStatus();
  std::filesystem::path p = std::filesystem::absolute(file);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) return Error(flag + " " + file + ": is a directory");
  for (std::filesystem::path dir = p.parent_path();; dir = dir.parent_path()) {
    if (std::filesystem::exists(dir, ec)) {
      if (!std::filesystem::is_directory(dir, ec)) return Error(flag + " " + file + ": '" + dir.string() + "' is not a directory");
      return okStatus();
    }
    if (dir == dir.parent_path()) return okStatus();
  }
}

Status writeOutputFile(const std::string& flag, const std::string& file, const std::string& text) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return Error(flag + " " + file + ": cannot create its directory: " + ec.message());
  return writeFileAtomic(file, text);
}

}  // namespace poprt::tools
