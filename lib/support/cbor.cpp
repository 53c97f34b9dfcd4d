#include "lib/support/cbor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "lib/support/half.h"

namespace poprt::cbor {

void Writer::head(uint8_t major, uint64_t v) {
  const uint8_t m = static_cast<uint8_t>(major << 5);
  auto be = [&](uint64_t x, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<uint8_t>(x >> (8 * i)));
  };
  if (v < 24) {
    out_.push_back(static_cast<uint8_t>(m | v));
  } else if (v <= 0xff) {
    out_.push_back(m | 24);
    be(v, 1);
  } else if (v <= 0xffff) {
    out_.push_back(m | 25);
    be(v, 2);
  } else if (v <= 0xffffffffu) {
    out_.push_back(m | 26);
    be(v, 4);
  } else {
    out_.push_back(m | 27);
    be(v, 8);
  }
}

void Writer::real(double v) {
  auto be = [&](uint64_t x, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<uint8_t>(x >> (8 * i)));
  };
  if (std::isnan(v)) {
    out_.insert(out_.end(), {0xf9, 0x7e, 0x00});
  } else if (std::isinf(v)) {
    out_.insert(out_.end(), {0xf9, static_cast<uint8_t>(v > 0 ? 0x7c : 0xfc), 0x00});
  } else if (v >= std::numeric_limits<float>::lowest() && v <= std::numeric_limits<float>::max() &&
             static_cast<double>(static_cast<float>(v)) == v) {
    out_.push_back(0xfa);
    be(std::bit_cast<uint32_t>(static_cast<float>(v)), 4);
  } else {
    out_.push_back(0xfb);
    be(std::bit_cast<uint64_t>(v), 8);
  }
}

void Writer::text(std::string_view s) {
  head(3, s.size());
  out_.insert(out_.end(), s.begin(), s.end());
}

void Writer::bytes(std::span<const uint8_t> b) {
  head(2, b.size());
  out_.insert(out_.end(), b.begin(), b.end());
}

Error Reader::fail(const std::string& what) const { return Error("CBOR at byte " + std::to_string(pos_) + ": " + what); }

Expected<uint64_t> Reader::head(uint8_t expected_major, const char* what) {
  if (pos_ >= in_.size()) return fail(std::string("truncated; expected ") + what);
  const uint8_t first = in_[pos_];
  if ((first >> 5) != expected_major) return fail(std::string("expected ") + what);
  const uint8_t info = first & 0x1f;
  if (info < 24) {
    ++pos_;
    return uint64_t{info};
  }
  if (info > 27) return fail(std::string("indefinite or reserved length where ") + what + " was expected");
  const size_t n = size_t{1} << (info - 24);
  if (in_.size() - pos_ - 1 < n) return fail(std::string("truncated ") + what);
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | in_[pos_ + 1 + i];
  pos_ += 1 + n;
  return v;
}

Expected<uint64_t> Reader::uint() { return head(0, "an unsigned integer"); }

Expected<int64_t> Reader::sint() {
  if (pos_ < in_.size() && (in_[pos_] >> 5) == 1) {
    POPRT_ASSIGN_OR_RETURN(uint64_t v, head(1, "an integer"));
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return fail("integer out of range");
    return -1 - static_cast<int64_t>(v);
  }
  POPRT_ASSIGN_OR_RETURN(uint64_t v, head(0, "an integer"));
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return fail("integer out of range");
  return static_cast<int64_t>(v);
}

Expected<double> Reader::real() {
  if (pos_ >= in_.size()) return fail("truncated; expected a number");
  const uint8_t first = in_[pos_];
  if ((first >> 5) == 0 || (first >> 5) == 1) {
    POPRT_ASSIGN_OR_RETURN(int64_t v, sint());
    return static_cast<double>(v);
  }
  const size_t n = first == 0xf9 ? 2 : first == 0xfa ? 4 : first == 0xfb ? 8 : 0;
  if (n == 0) return fail("expected a number");
  if (in_.size() - pos_ - 1 < n) return fail("truncated number");
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) bits = (bits << 8) | in_[pos_ + 1 + i];
  pos_ += 1 + n;
  if (n == 2) return static_cast<double>(halfBitsToFloat(static_cast<uint16_t>(bits)));
  if (n == 4) return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  return std::bit_cast<double>(bits);
}

Expected<std::string> Reader::text() {
  POPRT_ASSIGN_OR_RETURN(uint64_t n, head(3, "a text string"));
  if (n > in_.size() - pos_) return fail("truncated text string");
  std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
  pos_ += n;
  return s;
}

Expected<std::vector<uint8_t>> Reader::bytes() {
  POPRT_ASSIGN_OR_RETURN(uint64_t n, head(2, "a byte string"));
  if (n > in_.size() - pos_) return fail("truncated byte string");
  std::vector<uint8_t> b(in_.begin() + static_cast<std::ptrdiff_t>(pos_), in_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
  pos_ += n;
  return b;
}

Expected<uint64_t> Reader::array() {
  POPRT_ASSIGN_OR_RETURN(uint64_t n, head(4, "an array"));
  if (n > in_.size() - pos_) return fail("array longer than the bytes left");
  return n;
}

Status Reader::map(const std::vector<std::string_view>& keys, const std::function<Status(std::string_view)>& on_key) {
  POPRT_ASSIGN_OR_RETURN(uint64_t n, head(5, "a map"));
  if (n != keys.size())
    return fail("a map with " + std::to_string(n) + " keys where " + std::to_string(keys.size()) + " were expected");
  std::vector<bool> seen(keys.size(), false);
  for (uint64_t i = 0; i < n; ++i) {
    POPRT_ASSIGN_OR_RETURN(std::string key, text());
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) return fail("unknown key '" + key + "'");
    const size_t k = static_cast<size_t>(it - keys.begin());
    if (seen[k]) return fail("key '" + key + "' repeated");
    seen[k] = true;
    if (auto st = on_key(key); !st.ok()) return st.error().withContext("'" + key + "'");
  }
  return okStatus();
}

}  // namespace poprt::cbor
