// PopEF: the container poprt stores compiled models in, modelled on Graphcore's PopEF. A file is
// a 16-byte file header followed by blobs (metadata, executable, tensor data, feed data, opaque),
// each behind its own header with a type, a payload size, a CRC32 of the payload and a name.
// The exact byte layout is specified in docs/POPEF.md; this layer knows blobs and metadata only:
// the executable payload is opaque bytes produced and consumed by other layers.
//
// Every file read here is untrusted: the reader checks every size and offset before using it and
// refuses what it does not understand with a one-line error that starts with the file name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/support/dtype.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"
#include "lib/support/value_kind.h"

namespace poprt::popef {

// ---- Format constants (docs/POPEF.md) -------------------------------------------------------

inline constexpr uint16_t kFormatVersion = 1;      // file header version this code writes/reads
inline constexpr uint16_t kBlobHeaderVersion = 1;  // blob header version this code writes/reads
inline constexpr size_t kFileHeaderSize = 16;
inline constexpr size_t kBlobHeaderFixedSize = 24;  // before the name bytes
inline constexpr uint32_t kBlobMagic = 0x424F4C42;  // bytes "BLOB" when written little-endian
inline constexpr size_t kMaxBlobNameBytes = 4096;
inline constexpr uint64_t kMaxTensorHeaderBytes = 64 * 1024;
inline constexpr int kMaxCborDepth = 64;  // nesting limit for every CBOR item we decode
inline constexpr int kMaxRank = 64;
inline constexpr int kMaxCount = 1024;  // replication_factor, num_ipus, batches_per_step

enum class BlobType : uint16_t { Metadata = 1, Executable = 2, TensorData = 3, FeedData = 4, Opaque = 5 };

// "metadata", "executable", "tensor data", "feed data", "opaque" ("unknown" otherwise).
std::string_view blobTypeName(BlobType type);
bool isKnownBlobType(uint16_t value);

// ---- Metadata --------------------------------------------------------------------------------

struct Anchor {
  std::string name;    // tensor name in the model; unique among anchors, non-empty
  std::string handle;  // host stream handle used by the executable
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
  enum class Kind { Input, Output } kind = Kind::Input;
  bool per_replica = false;
  std::vector<std::string> programs;    // programs that use the anchor; each must be in program_flow
  ValueKind value = ValueKind::Tensor;  // a sequence or optional holds tensors of `dtype`

  bool operator==(const Anchor&) const = default;
};

struct ProgramFlow {
  std::vector<std::string> load, main, save;
  bool operator==(const ProgramFlow&) const = default;
};

struct Metadata {
  std::vector<Anchor> anchors;
  ProgramFlow program_flow;
  int replication_factor = 1;  // 1..1024
  int num_ipus = 1;            // 1..1024
  std::string ipu_version;     // e.g. "ipu2"
  int batches_per_step = 1;    // 1..1024
  std::string executable_name;
  std::map<std::string, std::string> compile_options;
  nlohmann::json extra;  // free-form (e.g. a node placement summary); null when unused

  bool operator==(const Metadata&) const = default;
};

// Semantic checks shared by the writer and the reader: non-empty unique anchor names, known
// dtypes, 0 <= dims, rank <= 64, anchors' programs present in program_flow, counts in 1..1024.
// The error has no file-name prefix (callers add context).
Status validateMetadata(const Metadata& metadata);
// Metadata <-> CBOR payload of the metadata blob. Decoding is strict: exact key set, types,
// ranges, then validateMetadata. Errors have no file-name prefix.
std::vector<uint8_t> encodeMetadata(const Metadata& metadata);
Expected<Metadata> decodeMetadata(std::span<const uint8_t> cbor);

// ---- Blobs and files -------------------------------------------------------------------------

struct Blob {
  BlobType type = BlobType::Opaque;
  std::string name;  // tensor name for TensorData/FeedData, framework tag for Opaque; <= 4 KiB
  std::vector<uint8_t> payload;

  bool operator==(const Blob&) const = default;
};

struct PopefFile {
  Metadata metadata;
  std::vector<Blob> blobs;  // every non-metadata blob, in file order

  // First blob of `type` whose name equals `name`; with an empty `name`, the first blob of
  // `type`. nullptr if none.
  const Blob* find(BlobType type, std::string_view name = "") const;
};

// Checks that `file` can be written: valid metadata, no Metadata-typed entry in `blobs`, names
// within 4 KiB, no two blobs with the same type and name.
Status validatePopef(const PopefFile& file);
// Metadata blob first, then `blobs` in order. The file must pass validatePopef (InternalError
// otherwise).
std::vector<uint8_t> serializePopef(const PopefFile& file);
// The same bytes in `out` (replaced): poprt-convert's result holds a PopEF as a string.
void serializePopef(const PopefFile& file, std::string& out);
// validatePopef, serializePopef, then an atomic write (temporary file + rename).
Status writePopef(const std::filesystem::path& path, const PopefFile& file);

Expected<PopefFile> parsePopef(std::span<const uint8_t> bytes, const std::string& name_for_errors);
Expected<PopefFile> readPopef(const std::filesystem::path& path);

// ---- Tensor data payloads --------------------------------------------------------------------
// Payload = u64 LE header length H, H bytes of CBOR {"dtype": name, "shape": [dims]}, then the
// raw little-endian element bytes (exactly numElements * dtypeSize). Numeric dtypes only.

bool tensorDataSupports(DType dtype);  // every dtype with a fixed element size (not string)
// The tensor's dtype must satisfy tensorDataSupports (InternalError otherwise). `type` may be
// TensorData (weights) or FeedData (input data; the name is the anchor's), same payload format.
Blob makeTensorDataBlob(const std::string& name, const Tensor& tensor, BlobType type = BlobType::TensorData);
// Accepts TensorData and FeedData blobs. Errors start with "tensor data blob 'NAME': " (or
// "feed data blob 'NAME': ").
Expected<Tensor> tensorFromBlob(const Blob& blob);
// The same, taking the payload over rather than copying it (a weight's bytes are held once).
Expected<Tensor> tensorFromBlob(Blob&& blob);

// ---- Shared helpers (exposed for tests and tools) -------------------------------------------

uint32_t crc32(std::span<const uint8_t> bytes);  // zlib crc32
// Decodes one CBOR item (whole input) after an iterative well-formedness and nesting-depth
// scan, so hostile input cannot exhaust the stack. Errors have no prefix.
Expected<nlohmann::json> decodeCbor(std::span<const uint8_t> bytes);

}  // namespace poprt::popef
