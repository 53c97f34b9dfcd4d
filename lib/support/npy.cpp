#include "lib/support/npy.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>
#include <string_view>

#include "lib/support/file_io.h"
#include "lib/support/limits.h"

namespace poprt {
namespace {

// Tensor bytes are copied to and from the file as-is, which is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, ".npy I/O assumes a little-endian host");

constexpr std::array<uint8_t, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// numpy itself refuses headers above 10000 bytes by default; 1 MiB leaves room for very high
// ranks while keeping a hostile header from costing much.
constexpr uint64_t kMaxHeaderBytes = uint64_t{1} << 20;
// numpy pads the preamble + header to a multiple of 64 so the data is aligned.
constexpr size_t kAlign = 64;

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// Parses the header: a Python dict literal with exactly the keys 'descr' (a string),
// 'fortran_order' (True/False) and 'shape' (a tuple of non-negative ints). Only that subset of
// Python literal syntax is accepted; anything else is an error rather than a guess.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  Expected<Header> parse() {
    Header h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skipSpace();
    if (!consume('{')) return fail("expected '{'");
    skipSpace();
    if (!consume('}')) {
      for (;;) {
        POPRT_ASSIGN_OR_RETURN(std::string key, parseString("a quoted key"));
        skipSpace();
        if (!consume(':')) return fail("expected ':' after key '" + key + "'");
        skipSpace();
        bool* seen = nullptr;
        if (key == "descr") {
          // A list here is a structured (record) dtype, which has no tensor equivalent.
          if (peek() == '[') return Error("bad header: structured dtypes are not supported");
          POPRT_ASSIGN_OR_RETURN(h.descr, parseString("a quoted dtype string for 'descr'"));
          seen = &seen_descr;
        } else if (key == "fortran_order") {
          POPRT_ASSIGN_OR_RETURN(h.fortran_order, parseBool());
          seen = &seen_fortran;
        } else if (key == "shape") {
          POPRT_ASSIGN_OR_RETURN(h.shape, parseShape());
          seen = &seen_shape;
        } else {
          return fail("unexpected key '" + key + "'");
        }
        if (*seen) return fail("duplicate key '" + key + "'");
        *seen = true;
        skipSpace();
        if (consume('}')) break;
        if (!consume(',')) return fail("expected ',' or '}'");
        skipSpace();
        if (consume('}')) break;  // trailing comma, as numpy writes
      }
    }
    skipSpace();  // numpy pads with spaces and ends with '\n'
    if (pos_ != s_.size()) return fail("unexpected text after the dict");
    if (!seen_descr) return Error("bad header: missing key 'descr'");
    if (!seen_fortran) return Error("bad header: missing key 'fortran_order'");
    if (!seen_shape) return Error("bad header: missing key 'shape'");
    return h;
  }

 private:
  Error fail(const std::string& what) const { return Error("bad header: " + what + " at offset " + std::to_string(pos_)); }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ >= s_.size() || s_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  Expected<std::string> parseString(const std::string& what) {
    char quote = peek();
    if (quote != '\'' && quote != '"') return fail("expected " + what);
    size_t start = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      // numpy's keys and dtype strings never need escapes; refusing them keeps the parser exact.
      if (s_[pos_] == '\\') return fail("escape sequences in strings are not supported");
      if (s_[pos_] == '\n') return fail("unterminated string");
      ++pos_;
    }
    if (pos_ >= s_.size()) return fail("unterminated string");
    std::string value(s_.substr(start, pos_ - start));
    ++pos_;
    return value;
  }

  bool isIdentChar(char c) const {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  bool consumeWord(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    if (pos_ + word.size() < s_.size() && isIdentChar(s_[pos_ + word.size()])) return false;
    pos_ += word.size();
    return true;
  }

  Expected<bool> parseBool() {
    if (consumeWord("True")) return true;
    if (consumeWord("False")) return false;
    return fail("expected True or False for 'fortran_order'");
  }

  Expected<int64_t> parseDim() {
    bool negative = consume('-');
    if (peek() < '0' || peek() > '9') return fail("expected an integer in 'shape'");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (value > (INT64_MAX - digit) / 10) return fail("dimension does not fit in 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    consume('L');  // Python 2 numpy wrote longs as "3L"
    if (negative) return fail("negative dimension -" + std::to_string(value));
    return value;
  }

  Expected<Shape> parseShape() {
    if (!consume('(')) return fail("'shape' must be a tuple");
    Shape shape;
    skipSpace();
    if (consume(')')) return shape;
    for (;;) {
      POPRT_ASSIGN_OR_RETURN(int64_t dim, parseDim());
      shape.push_back(dim);
      skipSpace();
      if (consume(')')) {
        // In Python "(3)" is the int 3, not a tuple; numpy rejects it, so do we.
        if (shape.size() == 1) return fail("'shape' (n) is not a tuple, expected (n,)");
        return shape;
      }
      if (!consume(',')) return fail("expected ',' or ')' in 'shape'");
      skipSpace();
      if (consume(')')) return shape;
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

struct DescrInfo {
  DType dtype;
  bool big_endian;
};

struct DescrCode {
  std::string_view code;
  DType dtype;
};
constexpr std::array<DescrCode, 15> kDescrCodes = {{
    {"f2", DType::Float16},
    {"f4", DType::Float},
    {"f8", DType::Double},
    {"i1", DType::Int8},
    {"i2", DType::Int16},
    {"i4", DType::Int32},
    {"i8", DType::Int64},
    {"u1", DType::UInt8},
    {"u2", DType::UInt16},
    {"u4", DType::UInt32},
    {"u8", DType::UInt64},
    {"b1", DType::Bool},
    {"?", DType::Bool},
    {"c8", DType::Complex64},
    {"c16", DType::Complex128},
}};

// Maps a numpy dtype string ('<f4', '>i8', '|b1', '?') to a DType and byte order.
std::optional<DescrInfo> parseDescr(std::string_view descr) {
  char order = '=';  // no prefix means native order, as in np.dtype('f4')
  if (!descr.empty() && std::strchr("<>|=", descr[0]) != nullptr) {
    order = descr[0];
    descr.remove_prefix(1);
  }
  for (const auto& c : kDescrCodes) {
    if (c.code != descr) continue;
    if (dtypeSize(c.dtype) == 1) return DescrInfo{c.dtype, false};  // byte order is moot
    if (order == '|') return std::nullopt;                          // "not applicable" is wrong for multi-byte types
    return DescrInfo{c.dtype, order == '>'};
  }
  return std::nullopt;
}

uint64_t readLittleEndian(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// Copies Fortran-ordered (first index fastest) elements from `src` into C order in `dst`.
void fortranToC(const uint8_t* src, uint8_t* dst, const Shape& shape, size_t itemsize, int64_t n) {
  size_t rank = shape.size();
  std::vector<int64_t> idx(rank, 0), stride(rank);
  int64_t s = 1;
  for (size_t k = 0; k < rank; ++k) {
    stride[k] = s;
    s *= shape[k];
  }
  int64_t off = 0;  // Fortran element offset of `idx`
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + static_cast<size_t>(i) * itemsize, src + static_cast<size_t>(off) * itemsize, itemsize);
    // Step `idx` in C order (last index fastest), keeping `off` in sync.
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < shape[k]) {
        off += stride[k];
        break;
      }
      off -= stride[k] * (shape[k] - 1);
      idx[k] = 0;
    }
  }
}

// Reverses the bytes of each `unit`-byte scalar (complex numbers swap each component).
void byteSwap(std::span<uint8_t> bytes, size_t unit) {
  for (size_t i = 0; i + unit <= bytes.size(); i += unit)
    std::reverse(bytes.begin() + static_cast<ptrdiff_t>(i), bytes.begin() + static_cast<ptrdiff_t>(i + unit));
}

Expected<std::string> descrFor(DType t) {
  switch (t) {
    case DType::Float16: return std::string("<f2");
    case DType::Float: return std::string("<f4");
    case DType::Double: return std::string("<f8");
    case DType::Int8: return std::string("|i1");
    case DType::Int16: return std::string("<i2");
    case DType::Int32: return std::string("<i4");
    case DType::Int64: return std::string("<i8");
    case DType::UInt8: return std::string("|u1");
    case DType::UInt16: return std::string("<u2");
    case DType::UInt32: return std::string("<u4");
    case DType::UInt64: return std::string("<u8");
    case DType::Bool: return std::string("|b1");
    case DType::Complex64: return std::string("<c8");
    case DType::Complex128: return std::string("<c16");
    case DType::BFloat16: return Error("bfloat16 has no NumPy dtype; cast the tensor to float32 before writing .npy");
    default: return Error("cannot write a tensor of undefined dtype as .npy");
  }
}

// NumPy's fixed-width unicode strings ('<U5'): the width in code points, or nullopt.
std::optional<uint64_t> unicodeWidth(std::string_view descr) {
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=') || descr[1] != 'U') return std::nullopt;
  uint64_t width = 0;
  for (char c : descr.substr(2)) {
    if (c < '0' || c > '9' || width > (uint64_t{1} << 20)) return std::nullopt;
    width = width * 10 + static_cast<uint64_t>(c - '0');
  }
  return width;
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// UTF-8 to code points; invalid bytes become U+FFFD.
std::vector<uint32_t> codePoints(const std::string& s) {
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<uint8_t>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      cps.push_back(0xfffd);
      ++i;
      continue;
    }
    uint32_t cp = len == 1 ? b : b & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3f);
    cps.push_back(cp);
    i += len;
  }
  return cps;
}

// Reads '<U' data: `width` UTF-32LE code points per element, NUL-padded.
Expected<Tensor> parseUnicode(const uint8_t* src, uint64_t available, const Shape& shape, bool fortran, uint64_t width,
                              const std::string& name) {
  // Zero-width strings would take no bytes each, so the file size would not bound their count;
  // numpy never writes them (it widens '<U0' to '<U1').
  if (width == 0) return Error(name + ": dtype '<U0' (zero-width strings) is not supported");
  auto count = checkedNumElements(shape, kMaxFileElements);
  if (!count.ok()) return count.error().withContext(name);
  const int64_t n = *count;
  const uint64_t itemsize = width * 4;
  if (itemsize != 0 && static_cast<uint64_t>(n) > available / itemsize)
    return Error(name + ": truncated: header says " + std::to_string(n) + " strings of " + std::to_string(width) +
                 " characters, file has " + std::to_string(available) + " bytes of data");
  if (static_cast<uint64_t>(n) * itemsize != available)
    return Error(name + ": " + std::to_string(available - static_cast<uint64_t>(n) * itemsize) +
                 " unexpected bytes after the data");
  std::vector<uint8_t> c_order(src, src + available);
  if (fortran && shape.size() > 1) fortranToC(src, c_order.data(), shape, itemsize, n);
  Tensor t(DType::String, shape);
  for (int64_t i = 0; i < n; ++i) {
    std::string s;
    for (uint64_t k = 0; k < width; ++k) {
      auto cp = static_cast<uint32_t>(readLittleEndian(c_order.data() + static_cast<uint64_t>(i) * itemsize + 4 * k, 4));
      if (cp == 0) break;
      appendUtf8(s, cp > 0x10ffff ? 0xfffd : cp);
    }
    t.strings()[static_cast<size_t>(i)] = std::move(s);
  }
  return t;
}

// Python's repr of a tuple of ints: (), (3,), (3, 4).
std::string shapeTuple(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

Expected<Tensor> parseNpy(std::span<const uint8_t> bytes, const std::string& name) {
  auto err = [&](const std::string& msg) { return Error(name + ": " + msg); };
  if (bytes.empty()) return err("empty file, not a .npy file");
  if (bytes.size() < kMagic.size() || !std::equal(kMagic.begin(), kMagic.end(), bytes.begin()))
    return err("not a .npy file (missing \\x93NUMPY magic)");
  if (bytes.size() < 8) return err("truncated: file ends inside the .npy preamble");
  unsigned major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    return err("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
               " (supported: 1.0, 2.0, 3.0)");
  // 1.0 stores the header length in 2 bytes, 2.0 and 3.0 (3.0 = UTF-8 header) in 4.
  size_t len_size = major == 1 ? 2 : 4;
  size_t prefix = 8 + len_size;
  if (bytes.size() < prefix) return err("truncated: file ends inside the .npy preamble");
  uint64_t header_len = readLittleEndian(bytes.data() + 8, len_size);
  if (header_len > kMaxHeaderBytes)
    return err("header is " + std::to_string(header_len) + " bytes, above the limit of " + std::to_string(kMaxHeaderBytes));
  if (header_len > bytes.size() - prefix)
    return err("truncated: header says its text is " + std::to_string(header_len) + " bytes, file has " +
               std::to_string(bytes.size() - prefix));

  std::string_view text(reinterpret_cast<const char*>(bytes.data() + prefix), header_len);
  auto header = HeaderParser(text).parse();
  if (!header.ok()) return header.error().withContext(name);
  if (auto width = unicodeWidth(header->descr))
    return parseUnicode(bytes.data() + prefix + header_len, bytes.size() - prefix - header_len, header->shape,
                        header->fortran_order, *width, name);
  auto descr = parseDescr(header->descr);
  if (!descr)
    return err("unsupported dtype '" + header->descr +
               "' (supported: float16/32/64, int8..int64, uint8..uint64, bool, complex64/128)");

  auto n = checkedNumElements(header->shape, kMaxFileElements);
  if (!n.ok()) return n.error().withContext(name);
  size_t itemsize = dtypeSize(descr->dtype);
  uint64_t data_bytes = static_cast<uint64_t>(*n) * itemsize;  // < 2^38: cannot overflow
  uint64_t available = bytes.size() - prefix - header_len;
  if (data_bytes > available)
    return err("truncated: header says " + std::to_string(data_bytes) + " bytes of data, file has " + std::to_string(available));
  // The file holds the data (it was read whole, under kMaxFileBytes); the tensor copy of it must
  // also fit the configured cap.
  POPRT_ASSIGN_OR_RETURN(uint64_t cap, maxTensorBytes());
  if (data_bytes > cap)
    return err("header says " + std::to_string(data_bytes) + " bytes of data, above the limit of " + std::to_string(cap) +
               " (POPRT_MAX_TENSOR_BYTES)");
  if (data_bytes < available)
    return err(std::to_string(available - data_bytes) + " unexpected bytes after the data (header says " +
               std::to_string(data_bytes) + " bytes of data)");

  Tensor t(descr->dtype, header->shape);
  const uint8_t* src = bytes.data() + prefix + header_len;
  if (header->fortran_order && header->shape.size() > 1)
    fortranToC(src, t.bytes().data(), header->shape, itemsize, *n);
  else if (data_bytes > 0)
    std::memcpy(t.bytes().data(), src, data_bytes);
  if (descr->big_endian) {
    bool complex = descr->dtype == DType::Complex64 || descr->dtype == DType::Complex128;
    byteSwap(t.bytes(), complex ? itemsize / 2 : itemsize);
  }
  return t;
}

Expected<Tensor> readNpy(const std::filesystem::path& path) {
  POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, readFileBytes(path));
  return parseNpy(bytes, path.string());
}

Expected<std::vector<uint8_t>> serializeNpy(const Tensor& tensor) {
  // Strings are written as NumPy's fixed-width unicode ('<U<width>', UTF-32LE).
  std::vector<uint8_t> data;
  std::string descr;
  if (tensor.dtype() == DType::String) {
    std::vector<std::vector<uint32_t>> items;
    size_t width = 1;  // numpy never writes '<U0'
    for (const auto& s : tensor.strings()) {
      items.push_back(codePoints(s));
      width = std::max(width, items.back().size());
    }
    descr = "<U" + std::to_string(width);
    data.resize(items.size() * width * 4, 0);
    for (size_t i = 0; i < items.size(); ++i)
      for (size_t k = 0; k < items[i].size(); ++k)
        for (size_t b = 0; b < 4; ++b) data[(i * width + k) * 4 + b] = static_cast<uint8_t>(items[i][k] >> (8 * b));
  } else {
    POPRT_ASSIGN_OR_RETURN(descr, descrFor(tensor.dtype()));
  }
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeTuple(tensor.shape()) + ", }";
  // Version 1.0 unless the padded header overflows its 16-bit length field.
  uint8_t major = 1;
  size_t prefix = 10;
  size_t header_len = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign - prefix;
  if (header_len > 0xffff) {
    major = 2;
    prefix = 12;
    header_len = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign - prefix;
  }
  std::vector<uint8_t> out(kMagic.begin(), kMagic.end());
  out.push_back(major);
  out.push_back(0);
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<uint8_t>(header_len >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  if (tensor.dtype() == DType::String)
    out.insert(out.end(), data.begin(), data.end());
  else
    out.insert(out.end(), tensor.bytes().begin(), tensor.bytes().end());
  return out;
}

Status writeNpy(const std::filesystem::path& path, const Tensor& tensor) {
  auto bytes = serializeNpy(tensor);
  if (!bytes.ok()) return bytes.error().withContext(path.string());
  return writeFileAtomic(path, *bytes);
}

}  // namespace poprt
