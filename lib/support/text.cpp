#include "lib/support/text.h"

#include <span>

namespace poprt {

bool isValidUtf8(std::string_view text) {
  auto s = std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  size_t i = 0;
  while (i < s.size()) {
    uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      n = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i - 1 < n) return false;
    for (size_t k = 1; k <= n; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

std::string escapeControlBytes(std::string_view s, bool backslashes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<uint8_t>(ch);
    if (c == '\\' && backslashes) {
      out += "\\\\";
    } else if (c == '\n') {
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

std::string quoteForError(std::string_view s, size_t max_bytes) {
  size_t n = s.size();
  const bool cut = n > max_bytes;
  if (cut) {
    n = max_bytes;
    while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xc0) == 0x80) --n;  // keep UTF-8 whole
  }
  return "'" + escapeControlBytes(s.substr(0, n), true) + (cut ? "'..." : "'");
}

}  // namespace poprt
