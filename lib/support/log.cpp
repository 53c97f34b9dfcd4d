#include "lib/support/log.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <mutex>

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
    logMessage(LogLevel::Warn,
               std::string("ignoring unknown POPRT_LOG_LEVEL '") + env + "' (expected OFF, ERR, WARN, INFO, DEBUG or TRACE)");
}

namespace {

std::mutex& sinkMutex() {
  static std::mutex m;
  return m;
}
LogSink& sink() {
  static LogSink s;
  return s;
}

}  // namespace

void setLogSink(LogSink s) {
  std::lock_guard<std::mutex> lock(sinkMutex());
  sink() = std::move(s);
}

void logMessage(LogLevel level, const std::string& message) {
  std::lock_guard<std::mutex> lock(sinkMutex());
  if (sink())
    sink()(level, message);
  else
    std::cerr << "[poprt " << kNames[static_cast<size_t>(level)] << "] " << message << "\n";
}

void applyLogging(const std::string& level) {
  initLogLevelFromEnv();
  if (level.empty()) return;
  auto parsed = parseLogLevel(level);
  if (!parsed) throw UsageError("--logging_level: unknown level '" + level + "' (expected OFF, ERR, WARN, INFO, DEBUG or TRACE)");
  setLogLevel(*parsed);
}

}  // namespace poprt
