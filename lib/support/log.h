// Logging with levels OFF < ERR < WARN < INFO < DEBUG < TRACE, set by --logging_level or the
// POPRT_LOG_LEVEL environment variable. Messages go to stderr, one line each.
#pragma once

#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "lib/support/status.h"

namespace poprt {

enum class LogLevel { Off = 0, Err, Warn, Info, Debug, Trace };

std::optional<LogLevel> parseLogLevel(std::string_view name);  // case-insensitive
void setLogLevel(LogLevel level);
LogLevel logLevel();
// Reads POPRT_LOG_LEVEL; an unknown value is ignored with a warning.
void initLogLevelFromEnv();
void logMessage(LogLevel level, const std::string& message);
// Applies POPRT_LOG_LEVEL, then `level` (--logging_level, logging_level=) if not empty; an
// unknown level throws UsageError naming --logging_level.
void applyLogging(const std::string& level);
// Where messages go: `sink` (the Python package's logger, say) instead of stderr; nullptr
// restores stderr. Called from any thread that logs.
using LogSink = std::function<void(LogLevel, const std::string&)>;
void setLogSink(LogSink sink);

}  // namespace poprt

#define POPRT_LOG(level, expr)                                                \
  do {                                                                        \
    if (::poprt::logLevel() >= ::poprt::LogLevel::level) {                    \
      std::ostringstream poprt_log_stream_;                                   \
      poprt_log_stream_ << expr;                                              \
      ::poprt::logMessage(::poprt::LogLevel::level, poprt_log_stream_.str()); \
    }                                                                         \
  } while (0)
