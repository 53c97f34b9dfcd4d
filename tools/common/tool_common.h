// What the three CLIs share: exit codes, the error/internal-error wrapper, logging flags and the
// file-naming conventions of ../shared/models.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Adds --logging_level to `app`, bound to `level`.
void addLoggingFlag(CLI::App& app, std::string& level);

// --custom_library_so_paths for the tools that run PopEFs (popef-run, popef-serve): custom-op
// plugins (lib/plugin) loaded before the PopEF, as poprt-convert loaded them to compile it.
void addCustomLibraryFlag(CLI::App& app, std::vector<std::string>& paths);
Status loadCustomLibraries(const std::vector<std::string>& paths);

// Parses argv (usage errors exit 2 with CLI11's message), then runs `body`; an Error prints
// "<tool>: error: ..." and exits 1; an internal error or exception prints "<tool>: internal error" and exits 1.
// (With --error_format json each of these is one JSON line instead.)
// Adds --error_format text|json (tools/error_format.h) to every tool.
int runTool(const std::string& tool, CLI::App& app, int argc, char** argv, const std::function<Status()>& body);
// For a tool that allocates and frees big buffers many times and then exits (poprt-convert):
// glibc hands blocks over 32 MB, and free space at the heap's top, back to the kernel at once,
// and every page touched again is a fresh page fault (a tenth of the quantized ViT-B/16's compile:
// 588K faults, 344K with this). Memory freed stays in the process for reuse instead. Not for
// processes that live on (popef-serve, Python): their peak would stay taken.
void keepFreedMemoryForReuse();
// An exception's message as an internal error's (without a leading "internal error: ").
std::string internalErrorMessage(const std::exception& e);

// output_<i>_<name><ext> with every character outside [A-Za-z0-9._-] replaced by '_'.
std::string outputFileName(size_t index, const std::string& name, const std::string& ext);

}  // namespace poprt::tools
