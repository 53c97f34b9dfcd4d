#include "lib/support/limits.h"

#include <charconv>
#include <cstdlib>
#include <string>
#include <system_error>

namespace poprt {
namespace {

// The variable's value as a positive byte count, `fallback` when unset; a malformed value is an
// error naming the variable rather than a silent fallback, as for a bad flag.
Expected<uint64_t> byteLimitFromEnv(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  std::string s(text);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value == 0)
    return Error(std::string(name) + ": expected a positive number of bytes, got '" + s + "'");
  return value;
}

}  // namespace

Expected<uint64_t> maxTensorBytes() { return byteLimitFromEnv("POPRT_MAX_TENSOR_BYTES", kDefaultMaxTensorBytes); }
Expected<uint64_t> maxDeviceBytes() { return byteLimitFromEnv("POPRT_MAX_DEVICE_BYTES", kDefaultMaxDeviceBytes); }

}  // namespace poprt
