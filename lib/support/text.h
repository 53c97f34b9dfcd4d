// Text from untrusted files: whether it is UTF-8 (what ONNX, JSON and PopEF's names must be), and
// how to show it in a one-line error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace poprt {

// Well-formed UTF-8: no overlong forms, surrogates or code points above U+10FFFF.
bool isValidUtf8(std::string_view s);

// `s` on one line, safe for a terminal: newlines as \n, other control bytes as \xNN, and
// backslashes doubled when `backslashes` (so the escaping can be undone).
std::string escapeControlBytes(std::string_view s, bool backslashes);

// A string from a file, made safe to put in a one-line error: in single quotes, control bytes
// and backslashes escaped (\n, \xNN), cut after `max_bytes` with "...".
std::string quoteForError(std::string_view s, size_t max_bytes = 200);

}  // namespace poprt
