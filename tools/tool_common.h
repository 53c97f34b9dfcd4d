// What the three CLIs share: exit codes, the error/internal-error wrapper, logging flags and the
// file-naming conventions of ../shared/models.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Adds --logging_level to `app`, bound to `level`.
void addLoggingFlag(CLI::App& app, std::string& level);
// Applies POPRT_LOG_LEVEL, then --logging_level if given (an unknown level is a usage error).
Status applyLogging(const std::string& level);

// A usage error found after parsing (a missing required option, ...): runTool prints
// "<tool>: usage error: ..." and exits 2, as for CLI11's own parse errors.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses argv (usage errors exit 2 with CLI11's message), then runs `body`; an Error prints
// "<tool>: error: ..." and exits 1; an internal error or exception prints "<tool>: internal error" and exits 1.
// (With --error_format json each of these is one JSON line instead.)
// Adds --error_format text|json (tools/error_format.h) to every tool.
int runTool(const std::string& tool, CLI::App& app, int argc, char** argv, const std::function<Status()>& body);
// An exception's message as an internal error's (without a leading "internal error: ").
std::string internalErrorMessage(const std::exception& e);

// "NAME=VALUE" split at the last '=' (names may hold '='-free punctuation).
Expected<std::pair<std::string, std::string>> splitAssignment(const std::string& text, const std::string& flag);
// output_<i>_<name><ext> with every character outside [A-Za-z0-9._-] replaced by '_'.
std::string outputFileName(size_t index, const std::string& name, const std::string& ext);

// A file a flag names for writing (--summary_json, --json) must be writable where it is named:
// not a directory, no non-directory on its path (missing directories are created later, like
// --output_dir's). Checked before any work so a bad path fails before anything is written.
Status checkOutputFile(const std::string& flag, const std::string& file);
// Creates the file's missing parent directories, then writes it atomically.
Status writeOutputFile(const std::string& flag, const std::string& file, const std::string& text);

}  // namespace poprt::tools
