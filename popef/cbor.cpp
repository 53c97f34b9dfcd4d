// CBOR decoding with a pre-scan: nlohmann's CBOR reader recurses once per nesting level, so a
// hostile payload of nested one-element arrays would exhaust the stack. scanCbor walks the item
// iteratively, checks every length against the bytes that remain and bounds the nesting depth
// before nlohmann sees a byte.
#include <string>
#include <vector>

#include "lib/support/text.h"
#include "popef/popef.h"

namespace poprt::popef {
namespace {

struct Frame {
  uint64_t remaining;  // items still expected (definite length)
  bool indefinite;     // ends with a 0xff break instead
  int string_major;    // for indefinite strings: the major type the chunks must have, else -1
};

Status scanCbor(std::span<const uint8_t> b) {
  size_t pos = 0;
  std::vector<Frame> stack;
  auto fail = [&](const std::string& what) { return Error("malformed CBOR at byte " + std::to_string(pos) + ": " + what); };
  bool done = false;
  while (!done) {
    if (pos >= b.size()) return fail("unexpected end of data");
    size_t item_start = pos;
    uint8_t ib = b[pos++];
    int major = ib >> 5;
    int ai = ib & 31;

    if (ib == 0xff) {  // break
      if (stack.empty() || !stack.back().indefinite) {
        pos = item_start;
        return fail("unexpected break byte");
      }
      stack.pop_back();
    } else {
      if (!stack.empty() && stack.back().string_major >= 0 && (major != stack.back().string_major || ai == 31)) {
        pos = item_start;
        return fail("indefinite-length string chunk of the wrong type");
      }
      uint64_t value = 0;
      bool indefinite = false;
      if (ai < 24) {
        value = static_cast<uint64_t>(ai);
      } else if (ai <= 27) {
        size_t n = size_t{1} << (ai - 24);
        if (b.size() - pos < n) return fail("unexpected end of data in an argument");
        for (size_t i = 0; i < n; ++i) value = (value << 8) | b[pos + i];
        pos += n;
      } else if (ai == 31 && major >= 2 && major <= 5) {
        indefinite = true;
      } else {
        pos = item_start;
        return fail("reserved additional-information value " + std::to_string(ai));
      }

      bool opened = false;
      switch (major) {
        case 0:
        case 1: break;
        case 2:
        case 3:
          if (indefinite) {
            if (static_cast<int>(stack.size()) >= kMaxCborDepth) return fail("nesting deeper than 64");
            stack.push_back({0, true, major});
            opened = true;
          } else {
            if (value > b.size() - pos) return fail("string length " + std::to_string(value) + " exceeds the data");
            if (major == 3 && !isValidUtf8({reinterpret_cast<const char*>(b.data()) + pos, static_cast<size_t>(value)}))
              return fail("text string is not valid UTF-8");
            pos += static_cast<size_t>(value);
          }
          break;
        case 4:
        case 5: {
          uint64_t items = value;
          if (!indefinite) {
            // Every item takes at least one byte: refuse counts the data cannot hold.
            uint64_t left = b.size() - pos;
            if (major == 5 ? (items > left / 2) : (items > left))
              return fail("container of " + std::to_string(value) + " entries exceeds the data");
            if (major == 5) items *= 2;
          }
          if (indefinite || items > 0) {
            if (static_cast<int>(stack.size()) >= kMaxCborDepth) return fail("nesting deeper than 64");
            stack.push_back({items, indefinite, -1});
            opened = true;
          }
          break;
        }
        case 6: pos = item_start; return fail("CBOR tags are not allowed");
        case 7:
          if (ai < 20 || ai == 24) {
            pos = item_start;
            return fail("unassigned simple value");
          }
          break;
      }
      if (opened) continue;  // the container's items follow; it completes later
    }

    // One item completed (a scalar, a string, an empty container or a closed container):
    // count it against the enclosing definite containers.
    while (true) {
      if (stack.empty()) {
        done = true;
        break;
      }
      Frame& top = stack.back();
      if (top.indefinite) break;
      if (--top.remaining > 0) break;
      stack.pop_back();
    }
  }
  if (pos != b.size()) return fail(std::to_string(b.size() - pos) + " trailing bytes after the item");
  return okStatus();
}

}  // namespace

Expected<nlohmann::json> decodeCbor(std::span<const uint8_t> bytes) {
  POPRT_TRY(scanCbor(bytes));
  try {
    return nlohmann::json::from_cbor(bytes.begin(), bytes.end(), /*strict=*/true,
                                     /*allow_exceptions=*/true, nlohmann::json::cbor_tag_handler_t::error);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    for (char& c : what)
      if (static_cast<uint8_t>(c) < 0x20 || c == 0x7f) c = ' ';  // keep the error on one line
    return Error("malformed CBOR: " + what);
  }
}

}  // namespace poprt::popef
