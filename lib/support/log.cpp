#include "lib/support/log.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <iostream>

namespace poprt {
namespace {
std::atomic<LogLevel> g_level{LogLevel::Warn};
constexpr std::string_view kNames[] = {"OFF", "ERR", "WARN", "INFO", "DEBUG", "TRACE"};
}  // namespace

std::optional<LogLevel> parseLogLevel(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "ERROR") upper = "ERR";
  if (upper == "WARNING") upper = "WARN";
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (kNames[i] == upper) return static_cast<LogLevel>(i);
  return std::nullopt;
}

void setLogLevel(LogLevel level) { g_level = level; }
LogLevel logLevel() { return g_level; }

void initLogLevelFromEnv() {
  const char* env = std::getenv("POPRT_LOG_LEVEL");
  if (!env || !*env) return;
  if (auto level = parseLogLevel(env))
    setLogLevel(*level);
  else
    logMessage(LogLevel::Warn, std::string("ignoring unknown POPRT_LOG_LEVEL '") + env +
                                   "' (expected OFF, ERR, WARN, INFO, DEBUG or TRACE)");
}

void logMessage(LogLevel level, const std::string& message) {
  std::cerr << "[poprt " << kNames[static_cast<size_t>(level)] << "] " << message << "\n";
}

}  // namespace poprt
