// Logging with levels OFF < ERR < WARN < INFO < DEBUG < TRACE, set by --logging_level or the
// POPRT_LOG_LEVEL environment variable. Messages go to stderr, one line each.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace poprt {

enum class LogLevel { Off = 0, Err, Warn, Info, Debug, Trace };

std::optional<LogLevel> parseLogLevel(std::string_view name);  // case-insensitive
void setLogLevel(LogLevel level);
LogLevel logLevel();
// Reads POPRT_LOG_LEVEL; an unknown value is ignored with a warning.
void initLogLevelFromEnv();
void logMessage(LogLevel level, const std::string& message);

}  // namespace poprt

#define POPRT_LOG(level, expr)                                          \
  do {                                                                  \
    if (::poprt::logLevel() >= ::poprt::LogLevel::level) {              \
      std::ostringstream poprt_log_stream_;                             \
      poprt_log_stream_ << expr;                                        \
      ::poprt::logMessage(::poprt::LogLevel::level, poprt_log_stream_.str()); \
    }                                                                   \
  } while (0)
