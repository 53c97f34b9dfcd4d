// PopEF reader and writer (docs/POPEF.md). Every integer is written and read byte by byte,
// little-endian; the reader checks each size against the bytes that remain before using it.
#include "popef/popef.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <utility>

#include <zlib.h>

#include "lib/support/file_io.h"
#include "lib/support/text.h"

namespace poprt::popef {

static_assert(std::endian::native == std::endian::little,
              "tensor data payloads copy host bytes; a big-endian host needs byte swapping here");

namespace {

constexpr uint8_t kFileMagic[6] = {'P', 'O', 'P', 'E', 'F', 0};

// ---- little-endian byte writer / reader ---------------------------------------------------

// Into a byte vector, or a string (poprt-convert's result holds the PopEF as one).
template <class Out>
class ByteWriter {
 public:
  explicit ByteWriter(Out& out) : out_(out) {}
  void u16(uint16_t v) { le(v, 2); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void bytes(std::span<const uint8_t> b) { append(b.data(), b.size()); }
  void bytes(std::string_view s) { append(s.data(), s.size()); }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<typename Out::value_type>(v >> (8 * i)));
  }
  // resize + memcpy rather than vector::insert, which trips a GCC 12 -Wstringop-overflow false
  // positive when inlined.
  void append(const void* data, size_t n) {
    if (n == 0) return;
    size_t old = out_.size();
    out_.resize(old + n);
    std::memcpy(out_.data() + old, data, n);
  }
  Out& out_;
};

// Callers check the size before reading; these read from a span known to be long enough.
uint64_t readLE(std::span<const uint8_t> b, size_t off, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[off + static_cast<size_t>(i)];
  return v;
}
uint16_t rd16(std::span<const uint8_t> b, size_t off) { return static_cast<uint16_t>(readLE(b, off, 2)); }
uint32_t rd32(std::span<const uint8_t> b, size_t off) { return static_cast<uint32_t>(readLE(b, off, 4)); }
uint64_t rd64(std::span<const uint8_t> b, size_t off) { return readLE(b, off, 8); }

std::string hex(uint64_t v, int digits) {
  static const char* kDigits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = digits - 1; i >= 0; --i) s += kDigits[(v >> (4 * i)) & 0xf];
  return s;
}

std::string blobLabel(BlobType type, const std::string& name) {
  std::string s(blobTypeName(type));
  if (!name.empty()) s += " " + quoteForError(name);
  return s;
}

Status checkBlobName(const std::string& name) {
  if (name.size() > kMaxBlobNameBytes)
    return Error("blob name of " + std::to_string(name.size()) + " bytes exceeds the limit of " +
                 std::to_string(kMaxBlobNameBytes));
  if (name.find('\0') != std::string::npos) return Error("blob name contains a NUL byte");
  if (!isValidUtf8(name)) return Error("blob name is not valid UTF-8");
  return okStatus();
}

struct TensorHeader {
  DType dtype;
  Shape shape;
  std::span<const uint8_t> data;
};

// Parses and checks a tensor data payload without copying the data. Errors have no prefix.
Expected<TensorHeader> parseTensorPayload(std::span<const uint8_t> p) {
  if (p.size() < 8) return Error("payload of " + std::to_string(p.size()) + " bytes is shorter than its 8-byte header length");
  uint64_t hlen = rd64(p, 0);
  if (hlen > kMaxTensorHeaderBytes)
    return Error("header length " + std::to_string(hlen) + " exceeds the limit of " + std::to_string(kMaxTensorHeaderBytes));
  if (hlen > p.size() - 8)
    return Error("header length " + std::to_string(hlen) + " exceeds the " + std::to_string(p.size() - 8) +
                 " bytes that follow it");
  auto decoded = decodeCbor(p.subspan(8, static_cast<size_t>(hlen)));
  if (!decoded.ok()) return decoded.error().withContext("header");
  const nlohmann::json& h = *decoded;
  if (!h.is_object() || h.size() != 2 || !h.contains("dtype") || !h.contains("shape"))
    return Error("header must be a CBOR map with exactly the keys \"dtype\" and \"shape\"");
  if (!h["dtype"].is_string()) return Error("header: dtype must be a text string");
  std::string dname = h["dtype"].get<std::string>();
  auto dtype = dtypeFromName(dname);
  if (!dtype) return Error("header: unknown dtype " + quoteForError(dname));
  if (!tensorDataSupports(*dtype))
    return Error("header: dtype '" + dname + "' is not supported in tensor data (numeric dtypes only)");
  const nlohmann::json& js = h["shape"];
  if (!js.is_array()) return Error("header: shape must be an array of integers");
  if (js.size() > static_cast<size_t>(kMaxRank))
    return Error("header: rank " + std::to_string(js.size()) + " exceeds the limit of 64");
  Shape shape;
  for (const auto& d : js) {
    if (!d.is_number_integer()) return Error("header: shape must be an array of integers");
    if (d.is_number_unsigned() && d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return Error("header: dimension " + std::to_string(d.get<uint64_t>()) + " is out of range");
    shape.push_back(d.get<int64_t>());
  }
  std::span<const uint8_t> data = p.subspan(8 + static_cast<size_t>(hlen));
  size_t esize = dtypeSize(*dtype);
  // Cap the element count by what the payload holds, so a hostile shape cannot overflow or make
  // anyone allocate more than the file provides.
  auto n = checkedNumElements(shape, static_cast<int64_t>(data.size() / esize));
  if (!n.ok())
    return Error("header: " + dname + shapeToString(shape) + " needs more than the " + std::to_string(data.size()) +
                 " bytes of data in the payload (" + n.error().message() + ")");
  uint64_t need = static_cast<uint64_t>(*n) * esize;
  if (need != data.size())
    return Error("header says " + dname + shapeToString(shape) + " = " + std::to_string(need) + " bytes, but the payload holds " +
                 std::to_string(data.size()) + " bytes of data");
  return TensorHeader{*dtype, std::move(shape), data};
}

bool hasTensorPayload(BlobType t) { return t == BlobType::TensorData || t == BlobType::FeedData; }

}  // namespace

// ---- small public helpers ------------------------------------------------------------------

std::string_view blobTypeName(BlobType type) {
  switch (type) {
    case BlobType::Metadata: return "metadata";
    case BlobType::Executable: return "executable";
    case BlobType::TensorData: return "tensor data";
    case BlobType::FeedData: return "feed data";
    case BlobType::Opaque: return "opaque";
  }
  return "unknown";
}

bool isKnownBlobType(uint16_t v) { return v >= 1 && v <= 5; }

uint32_t crc32(std::span<const uint8_t> bytes) {
  uLong c = ::crc32_z(0L, Z_NULL, 0);
  if (!bytes.empty()) c = ::crc32_z(c, bytes.data(), bytes.size());
  return static_cast<uint32_t>(c);
}

const Blob* PopefFile::find(BlobType type, std::string_view name) const {
  for (const Blob& b : blobs)
    if (b.type == type && (name.empty() || b.name == name)) return &b;
  return nullptr;
}

// ---- writer ----------------------------------------------------------------------------------

Status validatePopef(const PopefFile& file) {
  auto md = validateMetadata(file.metadata);
  if (!md.ok()) return md.error().withContext("metadata");
  if (file.blobs.size() >= UINT32_MAX) return Error("too many blobs for a PopEF file");
  std::set<std::pair<BlobType, std::string>> seen;
  for (size_t i = 0; i < file.blobs.size(); ++i) {
    const Blob& b = file.blobs[i];
    std::string where = "blob " + std::to_string(i) + " (" + blobLabel(b.type, b.name) + ")";
    if (!isKnownBlobType(static_cast<uint16_t>(b.type)))
      return Error(where + ": unknown blob type " + std::to_string(static_cast<unsigned>(b.type)));
    if (b.type == BlobType::Metadata) return Error(where + ": metadata goes in PopefFile::metadata, not in blobs");
    auto name_ok = checkBlobName(b.name);
    if (!name_ok.ok()) return name_ok.error().withContext(where);
    if (!seen.insert({b.type, b.name}).second)
      return Error(where + ": another " + std::string(blobTypeName(b.type)) + " blob has the same name");
    if (hasTensorPayload(b.type)) {
      auto t = parseTensorPayload(b.payload);
      if (!t.ok()) return t.error().withContext(where);
    }
  }
  return okStatus();
}

namespace {
template <class Out>
void serializeInto(const PopefFile& file, Out& out) {
  Status valid = validatePopef(file);
  POPRT_CHECK(valid.ok(), "serializePopef: invalid PopefFile: " + valid.error().message());
  std::vector<uint8_t> metadata = encodeMetadata(file.metadata);

  size_t total = kFileHeaderSize + kBlobHeaderFixedSize + metadata.size();
  for (const Blob& b : file.blobs) total += kBlobHeaderFixedSize + b.name.size() + b.payload.size();
  out.clear();
  out.reserve(total);
  ByteWriter<Out> w(out);

  w.bytes(std::span<const uint8_t>(kFileMagic));
  w.u16(kFormatVersion);
  w.u16(0);  // flags
  w.u16(0);  // reserved
  w.u32(static_cast<uint32_t>(file.blobs.size() + 1));

  auto blob = [&](BlobType type, const std::string& name, std::span<const uint8_t> payload) {
    w.u32(kBlobMagic);
    w.u16(kBlobHeaderVersion);
    w.u16(static_cast<uint16_t>(type));
    w.u64(payload.size());
    w.u32(crc32(payload));
    w.u32(static_cast<uint32_t>(name.size()));
    w.bytes(name);
    w.bytes(payload);
  };
  blob(BlobType::Metadata, "", metadata);
  for (const Blob& b : file.blobs) blob(b.type, b.name, b.payload);
}
}  // namespace

std::vector<uint8_t> serializePopef(const PopefFile& file) {
  std::vector<uint8_t> out;
  serializeInto(file, out);
  return out;
}

void serializePopef(const PopefFile& file, std::string& out) { serializeInto(file, out); }

Status writePopef(const std::filesystem::path& path, const PopefFile& file) {
  Status valid = validatePopef(file);
  if (!valid.ok()) return valid.error().withContext(path.string() + ": cannot write PopEF");
  std::vector<uint8_t> bytes = serializePopef(file);
  return writeFileAtomic(path, bytes);
}

// ---- reader ----------------------------------------------------------------------------------

namespace {
// The file header: the magic, the versions this reader knows, and the blob count it declares.
// `b`: the file's first min(size, kFileHeaderSize) bytes.
Expected<uint32_t> readFileHeader(std::span<const uint8_t> b, uint64_t size, const std::string& file) {
  auto err = [&](const std::string& msg) { return Error(file + ": " + msg); };

  if (size == 0) return err("empty file (expected a PopEF file starting with \"POPEF\\0\")");
  size_t magic_len = std::min(size, sizeof kFileMagic);
  if (std::memcmp(b.data(), kFileMagic, magic_len) != 0)
    return err("not a PopEF file: it does not start with the magic \"POPEF\\0\"");
  if (size < kFileHeaderSize)
    return err("truncated at byte 0: the file header needs " + std::to_string(kFileHeaderSize) + " bytes, only " +
               std::to_string(size) + " present");
  uint16_t version = rd16(b, 6);
  if (version > kFormatVersion)
    return err("PopEF format version " + std::to_string(version) + " is newer than this reader (" +
               std::to_string(kFormatVersion) + ")");
  if (version == 0) return err("invalid PopEF format version 0 (expected 1)");
  uint16_t flags = rd16(b, 8);
  if (flags != 0) return err("unknown flags " + hex(flags, 4) + " in the file header (this reader knows none)");
  uint16_t reserved = rd16(b, 10);
  if (reserved != 0) return err("reserved file header field at byte 10 is " + hex(reserved, 4) + ", expected 0");
  uint32_t count = rd32(b, 12);
  const size_t pos = kFileHeaderSize;
  if (count == 0) return err("file header declares 0 blobs; a PopEF file needs a metadata blob");
  if (count > (size - pos) / kBlobHeaderFixedSize)
    return err("truncated: the file header declares " + std::to_string(count) + " blobs, but only " + std::to_string(size - pos) +
               " bytes follow (each blob takes at least " + std::to_string(kBlobHeaderFixedSize) + ")");
  return count;
}

// Where the parser reads from: bytes in memory, or a file read piece by piece, so that reading a
// PopEF holds each payload once rather than the whole file besides (a 1.2 GB model's popef-run
// peaked at three copies of its weights).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // The n bytes at pos (pos + n <= size()), valid until the next call.
  virtual Expected<std::span<const uint8_t>> view(uint64_t pos, size_t n) = 0;
  virtual Expected<std::vector<uint8_t>> copy(uint64_t pos, size_t n) = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const uint8_t> b) : b_(b) {}
  uint64_t size() const override { return b_.size(); }
  Expected<std::span<const uint8_t>> view(uint64_t pos, size_t n) override { return b_.subspan(pos, n); }
  Expected<std::vector<uint8_t>> copy(uint64_t pos, size_t n) override {
    const auto v = b_.subspan(pos, n);
    return std::vector<uint8_t>(v.begin(), v.end());
  }

 private:
  std::span<const uint8_t> b_;
};

class FileSource final : public ByteSource {
 public:
  FileSource(const std::filesystem::path& path, uint64_t size) : in_(path, std::ios::binary), path_(path.string()), size_(size) {}
  bool opened() const { return static_cast<bool>(in_); }
  uint64_t size() const override { return size_; }
  Expected<std::span<const uint8_t>> view(uint64_t pos, size_t n) override {
    buffer_.resize(n);
    POPRT_TRY(read(pos, buffer_));
    return std::span<const uint8_t>(buffer_);
  }
  Expected<std::vector<uint8_t>> copy(uint64_t pos, size_t n) override {
    std::vector<uint8_t> out(n);
    POPRT_TRY(read(pos, out));
    return out;
  }

 private:
  Status read(uint64_t pos, std::vector<uint8_t>& out) {
    in_.seekg(static_cast<std::streamoff>(pos));
    if (!out.empty() && !in_.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size())))
      return Error(path_ + ": read failed at byte " + std::to_string(pos));
    return okStatus();
  }
  std::ifstream in_;
  std::string path_;
  uint64_t size_;
  std::vector<uint8_t> buffer_;
};

Expected<PopefFile> parseFrom(ByteSource& src, const std::string& file) {
  auto err = [&](const std::string& msg) { return Error(file + ": " + msg); };
  const uint64_t size = src.size();
  POPRT_ASSIGN_OR_RETURN(const std::span<const uint8_t> head,
                         src.view(0, static_cast<size_t>(std::min<uint64_t>(size, kFileHeaderSize))));
  POPRT_ASSIGN_OR_RETURN(const uint32_t count, readFileHeader(head, size, file));
  uint64_t pos = kFileHeaderSize;
  PopefFile out;
  bool have_metadata = false;
  size_t metadata_index = 0, metadata_offset = 0;
  std::set<std::pair<BlobType, std::string>> seen;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t off = pos;
    const std::string where = "blob " + std::to_string(i) + " at byte " + std::to_string(off);
    uint64_t remain = size - pos;
    if (remain < kBlobHeaderFixedSize)
      return err("truncated at byte " + std::to_string(pos) + ": blob " + std::to_string(i) + " header needs " +
                 std::to_string(kBlobHeaderFixedSize) + " bytes, only " + std::to_string(remain) + " remain");
    POPRT_ASSIGN_OR_RETURN(const std::span<const uint8_t> h, src.view(pos, kBlobHeaderFixedSize));
    uint32_t magic = rd32(h, 0);
    if (magic != kBlobMagic)
      return err(where + ": bad blob magic " + hex(magic, 8) + ", expected " + hex(kBlobMagic, 8) +
                 " (\"BLOB\"); the file is corrupt");
    uint16_t hver = rd16(h, 4);
    if (hver > kBlobHeaderVersion)
      return err(where + ": blob header version " + std::to_string(hver) + " is newer than this reader (" +
                 std::to_string(kBlobHeaderVersion) + ")");
    if (hver == 0) return err(where + ": invalid blob header version 0 (expected 1)");
    uint16_t type_value = rd16(h, 6);
    if (!isKnownBlobType(type_value))
      return err(where + " has unknown blob type " + std::to_string(type_value) +
                 " (known: 1 metadata, 2 executable, 3 tensor data, 4 feed data, 5 opaque)");
    auto type = static_cast<BlobType>(type_value);
    uint64_t psize = rd64(h, 8);
    uint32_t stored_crc = rd32(h, 16);
    uint32_t name_len = rd32(h, 20);
    pos += kBlobHeaderFixedSize;
    if (name_len > kMaxBlobNameBytes)
      return err(where + ": name length " + std::to_string(name_len) + " exceeds the limit of " +
                 std::to_string(kMaxBlobNameBytes));
    remain = size - pos;
    if (name_len > remain)
      return err("truncated at byte " + std::to_string(pos) + ": blob header says " + std::to_string(name_len) +
                 " bytes of name, only " + std::to_string(remain) + " remain");
    POPRT_ASSIGN_OR_RETURN(const std::span<const uint8_t> name_bytes, src.view(pos, name_len));
    std::string name(reinterpret_cast<const char*>(name_bytes.data()), name_len);
    pos += name_len;
    if (auto ok = checkBlobName(name); !ok.ok()) return err(where + ": " + ok.error().message());
    const std::string label = where + " (" + blobLabel(type, name) + ")";
    remain = size - pos;
    if (psize > remain)
      return err("truncated at byte " + std::to_string(pos) + ": blob header says " + std::to_string(psize) +
                 " bytes of payload, only " + std::to_string(remain) + " remain");
    POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> payload, src.copy(pos, static_cast<size_t>(psize)));
    pos += psize;
    uint32_t actual_crc = crc32(payload);
    if (actual_crc != stored_crc)
      return err("checksum mismatch in " + label + ": header says " + hex(stored_crc, 8) + ", payload has " + hex(actual_crc, 8) +
                 "; the file is corrupt");

    if (type == BlobType::Metadata) {
      if (have_metadata)
        return err("duplicate metadata blob: " + where + " (the first is blob " + std::to_string(metadata_index) + " at byte " +
                   std::to_string(metadata_offset) + "); a PopEF file has exactly one");
      auto md = decodeMetadata(payload);
      if (!md.ok()) return err("metadata blob (" + where + "): " + md.error().message());
      out.metadata = std::move(md).value();
      have_metadata = true;
      metadata_index = i;
      metadata_offset = off;
      continue;
    }
    if (!seen.insert({type, name}).second)
      return err(label + ": another " + std::string(blobTypeName(type)) + " blob has the same name");
    if (hasTensorPayload(type)) {
      auto t = parseTensorPayload(payload);
      if (!t.ok()) return err(label + ": " + t.error().message());
    }
    out.blobs.push_back(Blob{type, std::move(name), std::move(payload)});
  }
  if (pos != size)
    return err(std::to_string(size - pos) + " unexpected bytes after the last blob at byte " + std::to_string(pos) +
               " (the file header declares " + std::to_string(count) + " blobs)");
  if (!have_metadata) return err("no metadata blob (a PopEF file has exactly one)");
  return out;
}

}  // namespace

Expected<PopefFile> parsePopef(std::span<const uint8_t> bytes, const std::string& file) {
  MemorySource src(bytes);
  return parseFrom(src, file);
}

Expected<PopefFile> readPopef(const std::filesystem::path& path) {
  POPRT_ASSIGN_OR_RETURN(const uint64_t size, boundedFileSize(path));
  FileSource src(path, size);
  if (!src.opened()) return Error(path.string() + ": cannot open: " + std::strerror(errno));
  return parseFrom(src, path.string());
}

// ---- tensor data -----------------------------------------------------------------------------

bool tensorDataSupports(DType dtype) { return dtype != DType::String && dtypeSize(dtype) > 0; }

Blob makeTensorDataBlob(const std::string& name, const Tensor& tensor, BlobType type) {
  POPRT_CHECK(tensorDataSupports(tensor.dtype()), "makeTensorDataBlob: dtype " + std::string(dtypeName(tensor.dtype())) +
                                                      " of '" + name + "' cannot be stored as tensor data");
  POPRT_CHECK(hasTensorPayload(type), "makeTensorDataBlob: type must be TensorData or FeedData");
  POPRT_CHECK(tensor.byteSize() == static_cast<size_t>(tensor.numElements()) * dtypeSize(tensor.dtype()),
              "makeTensorDataBlob: tensor byte size does not match its shape");
  nlohmann::json header = {{"dtype", std::string(dtypeName(tensor.dtype()))}, {"shape", tensor.shape()}};
  std::vector<uint8_t> cbor = nlohmann::json::to_cbor(header);
  Blob blob;
  blob.type = type;
  blob.name = name;
  blob.payload.reserve(8 + cbor.size() + tensor.byteSize());
  ByteWriter w(blob.payload);
  w.u64(cbor.size());
  w.bytes(cbor);
  w.bytes(tensor.bytes());
  return blob;
}

namespace {
Expected<TensorHeader> blobTensorPayload(const Blob& blob) {
  const std::string prefix = std::string(blobTypeName(blob.type)) + " blob " + quoteForError(blob.name);
  if (!hasTensorPayload(blob.type)) return Error(prefix + ": expected a tensor data or feed data blob");
  auto h = parseTensorPayload(blob.payload);
  if (!h.ok()) return h.error().withContext(prefix);
  return h;
}
}  // namespace

Expected<Tensor> tensorFromBlob(const Blob& blob) {
  POPRT_ASSIGN_OR_RETURN(const TensorHeader h, blobTensorPayload(blob));
  Tensor t(h.dtype, h.shape);
  if (!h.data.empty()) std::memcpy(t.bytes().data(), h.data.data(), h.data.size());
  return t;
}

Expected<Tensor> tensorFromBlob(Blob&& blob) {
  POPRT_ASSIGN_OR_RETURN(const TensorHeader h, blobTensorPayload(blob));
  // The elements are the payload's tail: drop the header in place.
  std::vector<uint8_t> bytes = std::move(blob.payload);
  bytes.erase(bytes.begin(), bytes.end() - static_cast<std::ptrdiff_t>(h.data.size()));
  return Tensor(h.dtype, h.shape, std::move(bytes));
}

}  // namespace poprt::popef
