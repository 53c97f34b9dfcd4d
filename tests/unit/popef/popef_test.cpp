// PopEF reader/writer tests. The byte-level helpers below are written from docs/POPEF.md, not
// from the writer, so the hand-built files check the layout independently.
#include "popef/popef.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lib/support/half.h"

namespace poprt::popef {
namespace {

using json = nlohmann::json;
using Bytes = std::vector<uint8_t>;

// ---- independent encoders (docs/POPEF.md) ----------------------------------------------------

void putLE(Bytes& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>((v >> (8 * i)) & 0xff));
}

uint32_t zcrc(const Bytes& b) {
  return static_cast<uint32_t>(::crc32(0L, b.empty() ? Z_NULL : b.data(), static_cast<uInt>(b.size())));
}

Bytes fileHeader(uint32_t blob_count, uint16_t version = 1, uint16_t flags = 0) {
  Bytes out = {'P', 'O', 'P', 'E', 'F', 0};
  putLE(out, version, 2);
  putLE(out, flags, 2);
  putLE(out, 0, 2);
  putLE(out, blob_count, 4);
  return out;
}

void appendBlob(Bytes& out, uint16_t type, const std::string& name, const Bytes& payload, uint16_t header_version = 1) {
  out.insert(out.end(), {'B', 'L', 'O', 'B'});
  putLE(out, header_version, 2);
  putLE(out, type, 2);
  putLE(out, payload.size(), 8);
  putLE(out, zcrc(payload), 4);
  putLE(out, name.size(), 4);
  out.insert(out.end(), name.begin(), name.end());
  out.insert(out.end(), payload.begin(), payload.end());
}

json minimalMetadataJson() {
  return {{"anchors", json::array()}, {"program_flow", {{"load", json::array()}, {"main", {"main"}}, {"save", json::array()}}},
          {"replication_factor", 1},  {"num_ipus", 1},
          {"ipu_version", "ipu2"},    {"batches_per_step", 1},
          {"executable_name", "exe"}, {"compile_options", json::object()}};
}

// (Lists of anchors are built with json::array: a braced list holding one json is a copy of it
// for clang, not an array, as nlohmann's documentation warns.)
json anchorJson(const std::string& name, const std::string& dtype, json shape) {
  return {{"name", name},    {"handle", "h_" + name}, {"dtype", dtype},      {"shape", shape},
          {"kind", "input"}, {"per_replica", false},  {"programs", {"main"}}};
}

Bytes fileWithMetadata(const json& md) {
  Bytes f = fileHeader(1);
  appendBlob(f, 1, "", json::to_cbor(md));
  return f;
}

Bytes tensorPayload(const json& header, const Bytes& data) {
  Bytes cbor = json::to_cbor(header);
  Bytes out;
  putLE(out, cbor.size(), 8);
  out.insert(out.end(), cbor.begin(), cbor.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// ---- fixtures ---------------------------------------------------------------------------------

Tensor floatTensor(Shape shape, float start) {
  Tensor t(DType::Float, std::move(shape));
  auto d = t.data<float>();
  for (size_t i = 0; i < d.size(); ++i) d[i] = start + static_cast<float>(i) * 0.5f;
  return t;
}

PopefFile sampleFile() {
  PopefFile f;
  Metadata& m = f.metadata;
  m.anchors.push_back({"input", "h_input", DType::Float16, {1, 3, 4}, Anchor::Kind::Input, true, {"main"}});
  m.anchors.push_back({"output", "h_output", DType::Float, {1, 10}, Anchor::Kind::Output, false, {"main"}});
  m.anchors.push_back({"weights", "h_w", DType::Float, {2, 3}, Anchor::Kind::Input, false, {"load"}});
  m.program_flow = {{"load"}, {"main"}, {"save"}};
  m.replication_factor = 2;
  m.num_ipus = 4;
  m.ipu_version = "ipu21";
  m.batches_per_step = 8;
  m.executable_name = "model.onnx";
  m.compile_options = {{"available_memory_proportion", "0.6"}, {"precision", "fp16"}};
  m.extra = {{"placement", {{"ipu0", 12}, {"ipu1", 7}}}, {"note", "héllo"}, {"ratio", 0.25}};

  f.blobs.push_back({BlobType::Executable, "model.onnx", Bytes{1, 2, 3, 4, 5, 0, 255}});
  f.blobs.push_back(makeTensorDataBlob("w", floatTensor({2, 3}, -1.0f)));
  Tensor x(DType::Float16, {1, 3, 4});
  for (auto& h : x.data<uint16_t>()) h = floatToHalfBits(0.75f);
  f.blobs.push_back(makeTensorDataBlob("input", x, BlobType::FeedData));
  f.blobs.push_back({BlobType::Opaque, "poprt", Bytes{'{', '}', 0}});
  f.blobs.push_back({BlobType::Executable, "empty", Bytes{}});
  return f;
}

PopefFile smallFile() {
  PopefFile f;
  f.metadata.anchors.push_back({"x", "hx", DType::Int32, {2}, Anchor::Kind::Input, false, {"main"}});
  f.metadata.program_flow.main = {"main"};
  f.blobs.push_back({BlobType::Executable, "e", Bytes{9, 8, 7}});
  Tensor t(DType::Int32, {2});
  t.data<int32_t>()[0] = 5;
  t.data<int32_t>()[1] = -6;
  f.blobs.push_back(makeTensorDataBlob("t", t));
  return f;
}

// Error rules every refusal must satisfy: one line, starting with the file name.
void expectFileError(const Expected<PopefFile>& r, const std::string& name, const std::string& contains = "") {
  ASSERT_FALSE(r.ok()) << "expected an error";
  const std::string& msg = r.error().message();
  EXPECT_EQ(msg.rfind(name + ": ", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  if (!contains.empty()) {
    EXPECT_NE(msg.find(contains), std::string::npos) << "message: " << msg << "\nexpected to contain: " << contains;
  }
}

// ---- round trips -------------------------------------------------------------------------------

TEST(PopefTest, RoundTripEveryBlobType) {
  PopefFile f = sampleFile();
  Bytes bytes = serializePopef(f);
  auto r = parsePopef(bytes, "sample.popef");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->metadata, f.metadata);
  EXPECT_EQ(r->blobs, f.blobs);
  ASSERT_NE(r->find(BlobType::TensorData, "w"), nullptr);
  EXPECT_EQ(r->find(BlobType::TensorData, "nope"), nullptr);
  EXPECT_EQ(r->find(BlobType::Executable)->name, "model.onnx");
  EXPECT_EQ(r->find(BlobType::Executable, "empty")->payload.size(), 0u);
  EXPECT_EQ(r->find(BlobType::Opaque, "poprt")->payload, (Bytes{'{', '}', 0}));
  EXPECT_EQ(r->find(BlobType::Metadata), nullptr);
  // Deterministic output.
  EXPECT_EQ(serializePopef(*r), bytes);
}

TEST(PopefTest, WriteAndReadFile) {
  auto dir = std::filesystem::temp_directory_path() / ("popef_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = dir / "a.popef";
  PopefFile f = sampleFile();
  Status s = writePopef(path, f);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto r = readPopef(path);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->metadata, f.metadata);
  EXPECT_EQ(r->blobs, f.blobs);
  // Nothing else left behind (no temporary file).
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);

  auto missing = readPopef(dir / "missing.popef");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message().rfind((dir / "missing.popef").string(), 0), 0u);

  // An invalid file is refused before anything is written.
  PopefFile bad = f;
  bad.metadata.anchors.push_back(bad.metadata.anchors[0]);
  Status w = writePopef(dir / "bad.popef", bad);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message().find("duplicate anchor name"), std::string::npos) << w.error().message();
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.popef"));
  std::filesystem::remove_all(dir);
}

TEST(PopefTest, MetadataEncodeDecode) {
  Metadata m = sampleFile().metadata;
  auto back = decodeMetadata(encodeMetadata(m));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, m);
  m.extra = nullptr;  // optional key: absent when null
  json j = json::from_cbor(encodeMetadata(m));
  EXPECT_FALSE(j.contains("extra"));
  auto back2 = decodeMetadata(encodeMetadata(m));
  ASSERT_TRUE(back2.ok());
  EXPECT_EQ(*back2, m);
}

// ---- byte layout, checked against hand-written bytes --------------------------------------------

TEST(PopefTest, FileHeaderAndFirstBlobHeaderAreByteExact) {
  PopefFile f = smallFile();
  Bytes bytes = serializePopef(f);
  ASSERT_GE(bytes.size(), 40u);
  const Bytes expected_file_header = {
      'P',  'O',  'P',  'E',  'F', 0x00,  // magic
      0x01, 0x00,                         // format version 1
      0x00, 0x00,                         // flags
      0x00, 0x00,                         // reserved
      0x03, 0x00, 0x00, 0x00,             // blob count: metadata + executable + tensor data
  };
  EXPECT_EQ(Bytes(bytes.begin(), bytes.begin() + 16), expected_file_header);

  // First blob: metadata. Its payload is the CBOR map; find its size from the second blob's
  // position (the second header starts with "BLOB" right after it).
  size_t payload_start = 16 + 24;
  size_t second = 0;
  for (size_t i = payload_start; i + 4 <= bytes.size(); ++i) {
    Bytes probe(bytes.begin() + i, bytes.begin() + i + 4);
    if (probe == Bytes{'B', 'L', 'O', 'B'}) {
      Bytes candidate(bytes.begin() + payload_start, bytes.begin() + i);
      // The metadata CBOR must decode to exactly this prefix.
      try {
        json parsed = json::from_cbor(candidate);
        (void)parsed;
        second = i;
        break;
      } catch (const json::exception&) {}
    }
  }
  ASSERT_NE(second, 0u);
  Bytes payload(bytes.begin() + payload_start, bytes.begin() + second);
  Bytes expected_blob_header = {'B', 'L', 'O', 'B', 0x01, 0x00, 0x01, 0x00};  // magic, hdr v1, type 1
  putLE(expected_blob_header, payload.size(), 8);
  putLE(expected_blob_header, zcrc(payload), 4);
  putLE(expected_blob_header, 0, 4);  // empty name
  EXPECT_EQ(Bytes(bytes.begin() + 16, bytes.begin() + 40), expected_blob_header);

  // The payload is the metadata CBOR map with the documented keys.
  json md = json::from_cbor(payload);
  EXPECT_EQ(md, json({{"anchors",
                       {{{"name", "x"},
                         {"handle", "hx"},
                         {"dtype", "int32"},
                         {"shape", {2}},
                         {"kind", "input"},
                         {"per_replica", false},
                         {"programs", {"main"}}}}},
                      {"program_flow", {{"load", json::array()}, {"main", {"main"}}, {"save", json::array()}}},
                      {"replication_factor", 1},
                      {"num_ipus", 1},
                      {"ipu_version", ""},
                      {"batches_per_step", 1},
                      {"executable_name", ""},
                      {"compile_options", json::object()}}));

  // Second blob: executable "e", payload 09 08 07.
  Bytes expected_second;
  appendBlob(expected_second, 2, "e", Bytes{9, 8, 7});
  EXPECT_EQ(Bytes(bytes.begin() + second, bytes.begin() + second + expected_second.size()), expected_second);
}

TEST(PopefTest, ReadsHandBuiltFile) {
  json md = minimalMetadataJson();
  md["anchors"] = json::array({anchorJson("x", "float32", {2, 2})});
  md["extra"] = {{"k", "v"}};
  Bytes f = fileHeader(4);
  appendBlob(f, 5, "framework", Bytes{'o', 'k'});  // metadata need not come first
  appendBlob(f, 1, "", json::to_cbor(md));
  Bytes data;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    putLE(data, bits, 4);
  }
  appendBlob(f, 3, "x", tensorPayload({{"dtype", "float32"}, {"shape", {2, 2}}}, data));
  appendBlob(f, 2, "", Bytes{42});
  auto r = parsePopef(f, "hand.popef");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->metadata.ipu_version, "ipu2");
  EXPECT_EQ(r->metadata.executable_name, "exe");
  ASSERT_EQ(r->metadata.anchors.size(), 1u);
  EXPECT_EQ(r->metadata.anchors[0].dtype, DType::Float);
  EXPECT_EQ(r->metadata.anchors[0].shape, (Shape{2, 2}));
  EXPECT_EQ(r->metadata.extra["k"], "v");
  ASSERT_EQ(r->blobs.size(), 3u);
  EXPECT_EQ(r->blobs[0].type, BlobType::Opaque);
  EXPECT_EQ(r->blobs[1].type, BlobType::TensorData);
  EXPECT_EQ(r->blobs[2].type, BlobType::Executable);
  auto t = tensorFromBlob(*r->find(BlobType::TensorData, "x"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->dtype(), DType::Float);
  EXPECT_EQ(t->shape(), (Shape{2, 2}));
  EXPECT_EQ(t->data<float>()[3], 4.0f);
}

// ---- refusals --------------------------------------------------------------------------------------

TEST(PopefTest, RefusesEmptyFile) { expectFileError(parsePopef({}, "empty.popef"), "empty.popef", "empty file"); }

TEST(PopefTest, RefusesRandomBytes) {
  std::mt19937 rng(12345);
  for (size_t len : {1u, 5u, 6u, 15u, 16u, 17u, 23u, 40u, 41u, 100u, 1000u, 65536u}) {
    for (int trial = 0; trial < 20; ++trial) {
      Bytes b(len);
      for (auto& x : b) x = static_cast<uint8_t>(rng());
      expectFileError(parsePopef(b, "rand"), "rand");
      // Random bytes behind a valid file header (and then behind a valid blob magic) get further.
      Bytes h = fileHeader(static_cast<uint32_t>(rng() % 4));
      h.insert(h.end(), b.begin(), b.end());
      expectFileError(parsePopef(h, "rand"), "rand");
      Bytes h2 = fileHeader(1);
      h2.insert(h2.end(), {'B', 'L', 'O', 'B', 1, 0, 1, 0});
      h2.insert(h2.end(), b.begin(), b.end());
      expectFileError(parsePopef(h2, "rand"), "rand");
    }
  }
}

TEST(PopefTest, MutatedPayloadsNeverCrash) {
  // Mutate the metadata and tensor payloads and fix up the CRC, so the CBOR decoders and the
  // validators see the damage: every result is a success or a one-line error, never a crash.
  std::mt19937 rng(777);
  Bytes md_cbor = encodeMetadata(sampleFile().metadata);
  Bytes tensor = sampleFile().blobs[1].payload;
  int errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes md = md_cbor, t = tensor;
    Bytes& target = (iter % 2) ? md : t;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) target[rng() % target.size()] = static_cast<uint8_t>(rng());
    if (rng() % 8 == 0) target.resize(rng() % target.size());
    Bytes f = fileHeader(2);
    appendBlob(f, 1, "", md);
    appendBlob(f, 3, "w", t);
    auto r = parsePopef(f, "mut");
    if (!r.ok()) {
      ++errors;
      expectFileError(r, "mut");
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(errors, 1000);
}

TEST(PopefTest, RefusesEveryTruncation) {
  Bytes full = serializePopef(smallFile());
  ASSERT_TRUE(parsePopef(full, "small").ok());
  for (size_t n = 0; n < full.size(); ++n) {
    Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = parsePopef(prefix, "small");
    expectFileError(r, "small");
    if (HasFailure()) {
      ADD_FAILURE() << "at prefix length " << n;
      return;
    }
  }
  // The exact message when the last payload is cut short: the last blob is the tensor data "t".
  Bytes last;
  appendBlob(last, 3, "t", smallFile().blobs[1].payload);
  size_t payload_at = full.size() - last.size() + 24 + 1;  // header + 1-byte name
  uint64_t payload_size = last.size() - 25;
  Bytes cut(full.begin(), full.end() - 3);
  auto r = parsePopef(cut, "small");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "small: truncated at byte " + std::to_string(payload_at) + ": blob header says " +
                                     std::to_string(payload_size) + " bytes of payload, only " +
                                     std::to_string(payload_size - 3) + " remain");
  // Trailing bytes are refused too.
  Bytes longer = full;
  longer.push_back(0);
  expectFileError(parsePopef(longer, "small"), "small", "unexpected bytes after the last blob");
}

TEST(PopefTest, RefusesFlippedPayloadByte) {
  PopefFile f = smallFile();
  Bytes bytes = serializePopef(f);
  // Flip the last byte: inside the tensor data blob "t".
  Bytes bad = bytes;
  bad.back() ^= 0x01;
  expectFileError(parsePopef(bad, "crc.popef"), "crc.popef", "checksum mismatch in blob 2");
  expectFileError(parsePopef(bad, "crc.popef"), "crc.popef", "tensor data 't'");
  // Flip a byte of the metadata payload.
  Bytes bad2 = bytes;
  bad2[16 + 24 + 3] ^= 0x80;
  expectFileError(parsePopef(bad2, "crc.popef"), "crc.popef", "checksum mismatch in blob 0 at byte 16 (metadata)");
  // Flip every payload byte of the executable (3 bytes just before the last blob).
  Bytes exe_blob;
  appendBlob(exe_blob, 2, "e", Bytes{9, 8, 7});
  auto it = std::search(bytes.begin(), bytes.end(), exe_blob.begin(), exe_blob.end());
  ASSERT_NE(it, bytes.end());
  size_t exe_payload = static_cast<size_t>(it - bytes.begin()) + 25;
  for (size_t i = 0; i < 3; ++i) {
    Bytes b = bytes;
    b[exe_payload + i] ^= 0x10;
    expectFileError(parsePopef(b, "crc.popef"), "crc.popef", "executable 'e'");
  }
}

TEST(PopefTest, RefusesUnknownBlobType) {
  Bytes f = serializePopef(smallFile());
  Bytes exe_blob;
  appendBlob(exe_blob, 2, "e", Bytes{9, 8, 7});
  size_t at = static_cast<size_t>(std::search(f.begin(), f.end(), exe_blob.begin(), exe_blob.end()) - f.begin());
  f[at + 6] = 9;
  f[at + 7] = 0;
  expectFileError(parsePopef(f, "type.popef"), "type.popef", "blob 1 at byte " + std::to_string(at) + " has unknown blob type 9");
  f[at + 6] = 0;
  expectFileError(parsePopef(f, "type.popef"), "type.popef", "unknown blob type 0");
}

TEST(PopefTest, RefusesUnknownVersionsAndFlags) {
  Bytes f = serializePopef(smallFile());
  Bytes v2 = f;
  v2[6] = 2;
  auto r = parsePopef(v2, "new.popef");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "new.popef: PopEF format version 2 is newer than this reader (1)");
  Bytes v0 = f;
  v0[6] = 0;
  expectFileError(parsePopef(v0, "v0"), "v0", "invalid PopEF format version 0");
  Bytes big = f;
  big[7] = 1;  // 257
  expectFileError(parsePopef(big, "big"), "big", "PopEF format version 257 is newer");
  Bytes flags = f;
  flags[8] = 1;
  expectFileError(parsePopef(flags, "flags"), "flags", "unknown flags 0x0001");
  Bytes reserved = f;
  reserved[11] = 1;
  expectFileError(parsePopef(reserved, "res"), "res", "reserved");
  Bytes hv = f;
  hv[16 + 4] = 2;  // metadata blob header version
  expectFileError(parsePopef(hv, "hv"), "hv", "blob 0 at byte 16: blob header version 2 is newer than this reader (1)");
  Bytes magic = f;
  magic[16] = 'X';
  expectFileError(parsePopef(magic, "magic"), "magic", "bad blob magic");
  Bytes notpopef = f;
  notpopef[0] = 'Q';
  expectFileError(parsePopef(notpopef, "np"), "np", "not a PopEF file");
}

TEST(PopefTest, RefusesBlobCountMismatches) {
  json md = minimalMetadataJson();
  Bytes body;
  appendBlob(body, 1, "", json::to_cbor(md));
  Bytes zero = fileHeader(0);
  zero.insert(zero.end(), body.begin(), body.end());
  expectFileError(parsePopef(zero, "c"), "c", "declares 0 blobs");
  Bytes many = fileHeader(0xffffffffu);
  many.insert(many.end(), body.begin(), body.end());
  expectFileError(parsePopef(many, "c"), "c", "declares 4294967295 blobs");
  Bytes two = fileHeader(2);
  two.insert(two.end(), body.begin(), body.end());
  expectFileError(parsePopef(two, "c"), "c");
}

TEST(PopefTest, RefusesMissingOrDuplicateMetadata) {
  Bytes dup = fileHeader(2);
  appendBlob(dup, 1, "", json::to_cbor(minimalMetadataJson()));
  appendBlob(dup, 1, "", json::to_cbor(minimalMetadataJson()));
  expectFileError(parsePopef(dup, "dup.popef"), "dup.popef", "duplicate metadata blob");

  Bytes none = fileHeader(1);
  appendBlob(none, 2, "", Bytes{1});
  expectFileError(parsePopef(none, "none.popef"), "none.popef", "no metadata blob");

  Bytes dup_exe = fileHeader(3);
  appendBlob(dup_exe, 1, "", json::to_cbor(minimalMetadataJson()));
  appendBlob(dup_exe, 2, "a", Bytes{1});
  appendBlob(dup_exe, 2, "a", Bytes{2});
  expectFileError(parsePopef(dup_exe, "d"), "d", "same name");
}

TEST(PopefTest, RefusesBadBlobNames) {
  Bytes longname = fileHeader(2);
  appendBlob(longname, 1, "", json::to_cbor(minimalMetadataJson()));
  appendBlob(longname, 5, std::string(4097, 'a'), Bytes{});
  expectFileError(parsePopef(longname, "n"), "n", "name length 4097 exceeds the limit of 4096");
  Bytes bad_utf8 = fileHeader(2);
  appendBlob(bad_utf8, 1, "", json::to_cbor(minimalMetadataJson()));
  appendBlob(bad_utf8, 5, std::string("a\xff", 2), Bytes{});
  expectFileError(parsePopef(bad_utf8, "n"), "n", "not valid UTF-8");
  Bytes nul = fileHeader(2);
  appendBlob(nul, 1, "", json::to_cbor(minimalMetadataJson()));
  appendBlob(nul, 5, std::string("a\0b", 3), Bytes{});
  expectFileError(parsePopef(nul, "n"), "n", "NUL");
  // The maximum length is fine.
  Bytes ok = fileHeader(2);
  appendBlob(ok, 1, "", json::to_cbor(minimalMetadataJson()));
  appendBlob(ok, 5, std::string(4096, 'a'), Bytes{});
  EXPECT_TRUE(parsePopef(ok, "n").ok());
}

TEST(PopefTest, RefusesBadMetadata) {
  auto check = [](const json& md, const std::string& contains) {
    SCOPED_TRACE(contains);
    expectFileError(parsePopef(fileWithMetadata(md), "md.popef"), "md.popef", contains);
  };
  ASSERT_TRUE(parsePopef(fileWithMetadata(minimalMetadataJson()), "md.popef").ok());

  json bad_dtype = minimalMetadataJson();
  bad_dtype["anchors"] = json::array({anchorJson("x", "float33", {1})});
  check(bad_dtype, "unknown dtype 'float33'");

  json neg = minimalMetadataJson();
  neg["anchors"] = json::array({anchorJson("x", "float32", {1, -3})});
  check(neg, "negative dimension -3");

  json dup = minimalMetadataJson();
  dup["anchors"] = json::array({anchorJson("x", "float32", {1}), anchorJson("x", "int32", {2})});
  check(dup, "anchor 'x': duplicate anchor name");

  json missing = minimalMetadataJson();
  missing.erase("num_ipus");
  check(missing, "missing required key 'num_ipus'");

  json unknown = minimalMetadataJson();
  unknown["surprise"] = 1;
  check(unknown, "unknown key 'surprise'");

  json wrong_type = minimalMetadataJson();
  wrong_type["replication_factor"] = "2";
  check(wrong_type, "replication_factor: expected an integer");

  json range = minimalMetadataJson();
  range["batches_per_step"] = 1025;
  check(range, "batches_per_step: 1025 is outside 1..1024");
  range["batches_per_step"] = 0;
  check(range, "batches_per_step: 0 is outside 1..1024");

  json ipus = minimalMetadataJson();
  ipus["num_ipus"] = -1;
  check(ipus, "num_ipus: -1 is outside 1..1024");

  json float_dim = minimalMetadataJson();
  float_dim["anchors"] = json::array({anchorJson("x", "float32", {1.5})});
  check(float_dim, "shape[0]: expected an integer");

  json huge_dim = minimalMetadataJson();
  huge_dim["anchors"] = json::array({anchorJson("x", "float32", {std::numeric_limits<uint64_t>::max()})});
  check(huge_dim, "out of range");

  json overflow = minimalMetadataJson();
  overflow["anchors"] = json::array({anchorJson("x", "float32", {int64_t{1} << 40, int64_t{1} << 40})});
  check(overflow, "anchor 'x'");

  json kind = minimalMetadataJson();
  kind["anchors"] = json::array({anchorJson("x", "float32", {1})});
  kind["anchors"][0]["kind"] = "sideways";
  check(kind, "expected \"input\" or \"output\"");

  json program = minimalMetadataJson();
  program["anchors"] = json::array({anchorJson("x", "float32", {1})});
  program["anchors"][0]["programs"] = {"elsewhere"};
  check(program, "program 'elsewhere' is not in program_flow");

  json anchor_key = minimalMetadataJson();
  anchor_key["anchors"] = json::array({anchorJson("x", "float32", {1})});
  anchor_key["anchors"][0]["colour"] = "blue";
  check(anchor_key, "anchors[0] 'x': unknown key 'colour'");

  json opts = minimalMetadataJson();
  opts["compile_options"] = {{"a", 1}};
  check(opts, "compile_options['a']: expected a text string");

  json newline = minimalMetadataJson();
  newline["anchors"] = json::array({anchorJson("x", "float\n32", {1})});
  check(newline, "unknown dtype 'float\\n32'");

  check(json::array(), "metadata: expected a map");
  check(json("string"), "metadata: expected a map");

  // Not CBOR at all.
  Bytes garbage = fileHeader(1);
  appendBlob(garbage, 1, "", Bytes{0xff, 0x00, 0x13});
  expectFileError(parsePopef(garbage, "md.popef"), "md.popef", "malformed CBOR");
  // CBOR with trailing bytes.
  Bytes trailing_cbor = json::to_cbor(minimalMetadataJson());
  trailing_cbor.push_back(0);
  Bytes trailing = fileHeader(1);
  appendBlob(trailing, 1, "", trailing_cbor);
  expectFileError(parsePopef(trailing, "md.popef"), "md.popef", "trailing");
}

TEST(PopefTest, RefusesDeeplyNestedCborWithoutCrashing) {
  // extra = [[[[...]]]] a million levels deep: must be an error, not a stack overflow.
  Bytes cbor = json::to_cbor(minimalMetadataJson());
  // Patch: the map has 8 entries (0xa8); make it 9 and append "extra": <deep>.
  ASSERT_EQ(cbor[0], 0xa8);
  cbor[0] = 0xa9;
  Bytes key = json::to_cbor(json("extra"));
  cbor.insert(cbor.end(), key.begin(), key.end());
  cbor.insert(cbor.end(), 1'000'000, 0x81);
  cbor.push_back(0x00);
  Bytes f = fileHeader(1);
  appendBlob(f, 1, "", cbor);
  expectFileError(parsePopef(f, "deep"), "deep", "nesting deeper than 64");
  // Indefinite-length nesting too.
  Bytes cbor2 = json::to_cbor(minimalMetadataJson());
  cbor2[0] = 0xa9;
  cbor2.insert(cbor2.end(), key.begin(), key.end());
  cbor2.insert(cbor2.end(), 100'000, 0x9f);
  Bytes f2 = fileHeader(1);
  appendBlob(f2, 1, "", cbor2);
  expectFileError(parsePopef(f2, "deep"), "deep", "nesting deeper than 64");
  // Moderate nesting is fine.
  json md = minimalMetadataJson();
  json nest = 1;
  for (int i = 0; i < 40; ++i) nest = json::array({nest});
  md["extra"] = nest;
  auto r = parsePopef(fileWithMetadata(md), "ok");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->metadata.extra, nest);
}

TEST(PopefTest, CborScannerRefusesMalformedItems) {
  auto bad = [](Bytes b, const std::string& contains) {
    auto r = decodeCbor(b);
    ASSERT_FALSE(r.ok()) << contains;
    EXPECT_NE(r.error().message().find(contains), std::string::npos) << r.error().message();
  };
  bad({}, "unexpected end");
  bad({0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "exceeds the data");  // huge array
  bad({0x7b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "exceeds the data");  // huge string
  bad({0xc0, 0x00}, "tags are not allowed");
  bad({0x1c}, "reserved");
  bad({0xff}, "unexpected break");
  bad({0x62, 0xc3, 0x28}, "UTF-8");
  bad({0x7f, 0x41, 0x61, 0xff}, "wrong type");  // byte-string chunk in a text string
  bad({0x9f, 0x01}, "unexpected end");
  bad({0x82, 0x01}, "exceeds the data");
  auto ok = decodeCbor(Bytes{0x7f, 0x61, 'a', 0x61, 'b', 0xff});
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(*ok, "ab");
  auto ok2 = decodeCbor(Bytes{0xbf, 0x61, 'k', 0x9f, 0x01, 0x02, 0xff, 0xff});
  ASSERT_TRUE(ok2.ok()) << ok2.error().message();
  EXPECT_EQ(*ok2, json({{"k", {1, 2}}}));
}

// ---- tensor data ---------------------------------------------------------------------------------

TEST(PopefTest, TensorDataRoundTrip) {
  std::vector<Tensor> tensors;
  tensors.push_back(floatTensor({2, 3, 4}, 1.5f));
  tensors.push_back(floatTensor({}, 7.0f));      // scalar
  tensors.push_back(floatTensor({0, 5}, 0.0f));  // empty
  Tensor h(DType::Float16, {3});
  h.data<uint16_t>()[1] = floatToHalfBits(-2.0f);
  tensors.push_back(h);
  Tensor i64(DType::Int64, {2});
  i64.data<int64_t>()[0] = INT64_MIN;
  i64.data<int64_t>()[1] = INT64_MAX;
  tensors.push_back(i64);
  Tensor b(DType::Bool, {4});
  b.data<uint8_t>()[2] = 1;
  tensors.push_back(b);
  tensors.push_back(Tensor(DType::BFloat16, {1, 1}));
  tensors.push_back(Tensor(DType::Complex128, {2}));
  tensors.push_back(Tensor(DType::UInt8, {7}));
  for (const Tensor& t : tensors) {
    Blob blob = makeTensorDataBlob("t", t);
    EXPECT_EQ(blob.type, BlobType::TensorData);
    EXPECT_EQ(blob.name, "t");
    auto back = tensorFromBlob(blob);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(*back, t) << dtypeName(t.dtype());
    // Taken over rather than copied: the same tensor, in the payload's own memory.
    const uint8_t* payload_memory = blob.payload.data();
    auto taken = tensorFromBlob(std::move(blob));
    ASSERT_TRUE(taken.ok()) << taken.error().message();
    EXPECT_EQ(*taken, t) << dtypeName(t.dtype());
    EXPECT_EQ(taken->bytes().data(), payload_memory);
  }
  // Layout: u64 header length, CBOR header, raw bytes.
  Tensor t = floatTensor({2}, 1.0f);
  Blob blob = makeTensorDataBlob("t", t);
  Bytes expected = tensorPayload({{"dtype", "float32"}, {"shape", {2}}}, Bytes(t.bytes().begin(), t.bytes().end()));
  EXPECT_EQ(blob.payload, expected);
  // The worked example in docs/POPEF.md, byte for byte.
  Tensor ex(DType::Float, {2});
  ex.data<float>()[0] = 1.0f;
  ex.data<float>()[1] = 1.5f;
  const Bytes doc_example = {0x17, 0,   0,    0,    0,    0,    0,    0,    0xA2, 0x65, 'd',  't',  'y',
                             'p',  'e', 0x67, 'f',  'l',  'o',  'a',  't',  '3',  '2',  0x65, 's',  'h',
                             'a',  'p', 'e',  0x81, 0x02, 0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0xC0, 0x3F};
  EXPECT_EQ(makeTensorDataBlob("ex", ex).payload, doc_example);
  // Feed data uses the same payload.
  Blob feed = makeTensorDataBlob("in", t, BlobType::FeedData);
  EXPECT_EQ(feed.type, BlobType::FeedData);
  EXPECT_EQ(feed.payload, expected);
  EXPECT_EQ(*tensorFromBlob(feed), t);
  // Strings cannot be stored.
  EXPECT_FALSE(tensorDataSupports(DType::String));
  EXPECT_FALSE(tensorDataSupports(DType::Undefined));
  EXPECT_THROW(makeTensorDataBlob("s", Tensor(DType::String, {1})), InternalError);
}

TEST(PopefTest, TensorDataRefusesBadPayloads) {
  auto bad = [](const Bytes& payload, const std::string& contains) {
    Blob blob{BlobType::TensorData, "w", payload};
    auto r = tensorFromBlob(blob);
    ASSERT_FALSE(r.ok()) << contains;
    const std::string& msg = r.error().message();
    EXPECT_EQ(msg.rfind("tensor data blob 'w': ", 0), 0u) << msg;
    EXPECT_NE(msg.find(contains), std::string::npos) << msg;
  };
  Bytes four(16, 0);
  // A header claiming a huge shape with only 16 bytes of data: refused before allocating.
  bad(tensorPayload({{"dtype", "float32"}, {"shape", {int64_t{1} << 40, int64_t{1} << 40}}}, four),
      "needs more than the 16 bytes");
  bad(tensorPayload({{"dtype", "float32"}, {"shape", {INT64_MAX, INT64_MAX}}}, four), "needs more than");
  bad(tensorPayload({{"dtype", "float32"}, {"shape", {5}}}, four), "needs more than");
  bad(tensorPayload({{"dtype", "float32"}, {"shape", {3}}}, four), "= 12 bytes, but the payload holds 16");
  bad(tensorPayload({{"dtype", "float32"}, {"shape", {-4}}}, four), "negative dimension");
  bad(tensorPayload({{"dtype", "string"}, {"shape", {1}}}, four), "not supported in tensor data");
  bad(tensorPayload({{"dtype", "floaty"}, {"shape", {1}}}, four), "unknown dtype 'floaty'");
  bad(tensorPayload({{"dtype", "float32"}}, four), "exactly the keys");
  bad(tensorPayload({{"dtype", "float32"}, {"shape", {1}}, {"x", 1}}, four), "exactly the keys");
  bad(tensorPayload({{"dtype", "float32"}, {"shape", {"1"}}}, four), "array of integers");
  bad(tensorPayload({{"dtype", "float32"}, {"shape", {std::numeric_limits<uint64_t>::max()}}}, four), "out of range");
  bad(Bytes{1, 2, 3}, "shorter than its 8-byte header length");
  Bytes huge_len;
  putLE(huge_len, 0xffffffffffffffffull, 8);
  bad(huge_len, "exceeds the limit");
  Bytes over;
  putLE(over, 100, 8);
  over.push_back(0xa0);
  bad(over, "exceeds the 1 bytes that follow");
  Bytes not_cbor;
  putLE(not_cbor, 1, 8);
  not_cbor.push_back(0x1c);
  bad(not_cbor, "malformed CBOR");
  // Wrong blob type.
  auto r = tensorFromBlob(Blob{BlobType::Executable, "e", {}});
  EXPECT_FALSE(r.ok());

  // The reader checks tensor data payloads in files, too.
  Bytes f = fileHeader(2);
  appendBlob(f, 1, "", json::to_cbor(minimalMetadataJson()));
  appendBlob(f, 3, "w", tensorPayload({{"dtype", "float32"}, {"shape", {int64_t{1} << 62}}}, four));
  expectFileError(parsePopef(f, "t.popef"), "t.popef", "blob 1 at byte");
  expectFileError(parsePopef(f, "t.popef"), "t.popef", "tensor data 'w'");
}

TEST(PopefTest, ValidatePopefRefusesInvalidFiles) {
  PopefFile f = smallFile();
  EXPECT_TRUE(validatePopef(f).ok());
  PopefFile md_blob = f;
  md_blob.blobs.push_back({BlobType::Metadata, "", {}});
  EXPECT_FALSE(validatePopef(md_blob).ok());
  EXPECT_THROW(serializePopef(md_blob), InternalError);
  PopefFile dup = f;
  dup.blobs.push_back(dup.blobs[0]);
  EXPECT_FALSE(validatePopef(dup).ok());
  PopefFile longname = f;
  longname.blobs.push_back({BlobType::Opaque, std::string(4097, 'x'), {}});
  EXPECT_FALSE(validatePopef(longname).ok());
  PopefFile badtensor = f;
  badtensor.blobs.push_back({BlobType::TensorData, "bad", {1, 2, 3}});
  EXPECT_FALSE(validatePopef(badtensor).ok());
  PopefFile range = f;
  range.metadata.replication_factor = 0;
  EXPECT_FALSE(validatePopef(range).ok());
  PopefFile undef = f;
  undef.metadata.anchors[0].dtype = DType::Undefined;
  EXPECT_FALSE(validatePopef(undef).ok());
}

}  // namespace
}  // namespace poprt::popef
