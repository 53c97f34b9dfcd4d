// Streaming CBOR (RFC 8949) for large, fixed-schema documents such as the executable blob: the
// writer appends items straight to a byte buffer and the reader walks them in place, with no
// document tree in between (a tree of millions of vertex fields costs seconds and gigabytes).
// Only definite lengths. The writer emits the same bytes as nlohmann::json::to_cbor for the same
// data (shortest integer heads, floats as float32 when exact, NaN/Inf as float16), so files from
// either read alike. The reader is for untrusted input: every length is checked against the bytes
// left, and a wrong type or a truncated item is an error naming where it happened.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/support/status.h"

namespace poprt::cbor {

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void uint(uint64_t v) { head(0, v); }
  void sint(int64_t v) { v >= 0 ? head(0, static_cast<uint64_t>(v)) : head(1, static_cast<uint64_t>(-(v + 1))); }
  void real(double v);
  void text(std::string_view s);
  void bytes(std::span<const uint8_t> b);
  void array(uint64_t n) { head(4, n); }
  void map(uint64_t n) { head(5, n); }  // keys are written by the caller, sorted for determinism

 private:
  void head(uint8_t major, uint64_t v);
  std::vector<uint8_t>& out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  Expected<uint64_t> uint();
  Expected<int64_t> sint();
  Expected<double> real();  // any float width, or an integer
  Expected<std::string> text();
  Expected<std::vector<uint8_t>> bytes();
  // The element count of an array; each element needs at least a byte, so counts are bounded.
  Expected<uint64_t> array();
  // Reads a map whose keys are all in `keys`, each exactly once, calling on_key(key) to read its
  // value. Missing or unknown keys are errors.
  Status map(const std::vector<std::string_view>& keys, const std::function<Status(std::string_view)>& on_key);
  bool atEnd() const { return pos_ == in_.size(); }
  // Whether the next item is a byte string (a field stored two ways, by format version).
  bool nextIsBytes() const { return pos_ < in_.size() && (in_[pos_] >> 5) == 2; }
  size_t position() const { return pos_; }

 private:
  Expected<uint64_t> head(uint8_t expected_major, const char* what);
  Error fail(const std::string& what) const;
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

}  // namespace poprt::cbor
