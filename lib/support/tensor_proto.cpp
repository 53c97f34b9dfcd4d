#include "lib/support/tensor_proto.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>
#include <fstream>
#include <optional>
#include <system_error>

#include "lib/support/file_io.h"
#include "lib/support/limits.h"

namespace fs = std::filesystem;

namespace poprt {
namespace {

// raw_data and external data are little-endian; we copy them into tensors unchanged.
static_assert(std::endian::native == std::endian::little, "TensorProto I/O assumes a little-endian host");

std::string labelOf(const onnx::TensorProto& p) {
  return p.name().empty() ? std::string("unnamed tensor") : "tensor '" + p.name() + "'";
}

// The typed repeated field the ONNX spec assigns to each data type.
enum class Field { Float, Int32, Int64, Double, UInt64, String };
constexpr Field kAllFields[] = {Field::Float, Field::Int32, Field::Int64, Field::Double, Field::UInt64, Field::String};

struct FieldUse {
  Field field;
  int per_element;  // complex numbers take two values (real, imaginary)
};

FieldUse fieldFor(DType t) {
  switch (t) {
    case DType::Float: return {Field::Float, 1};
    case DType::Complex64: return {Field::Float, 2};
    case DType::Double: return {Field::Double, 1};
    case DType::Complex128: return {Field::Double, 2};
    case DType::Int64: return {Field::Int64, 1};
    case DType::UInt32:
    case DType::UInt64: return {Field::UInt64, 1};
    case DType::String: return {Field::String, 1};
    default: return {Field::Int32, 1};  // int8/16/32, uint8/16, bool, float16, bfloat16
  }
}

const char* fieldName(Field f) {
  switch (f) {
    case Field::Float: return "float_data";
    case Field::Int32: return "int32_data";
    case Field::Int64: return "int64_data";
    case Field::Double: return "double_data";
    case Field::UInt64: return "uint64_data";
    case Field::String: return "string_data";
  }
  return "?";
}

int64_t fieldSize(const onnx::TensorProto& p, Field f) {
  switch (f) {
    case Field::Float: return p.float_data_size();
    case Field::Int32: return p.int32_data_size();
    case Field::Int64: return p.int64_data_size();
    case Field::Double: return p.double_data_size();
    case Field::UInt64: return p.uint64_data_size();
    case Field::String: return p.string_data_size();
  }
  return 0;
}

// Narrows int32_data into a smaller type, refusing values the type cannot hold.
template <class T>
Status narrowInt32(const onnx::TensorProto& p, Tensor& t, int64_t lo, int64_t hi, const std::string& label) {
  auto out = t.data<T>();
  for (int i = 0; i < p.int32_data_size(); ++i) {
    int32_t v = p.int32_data(i);
    if (v < lo || v > hi)
      return Error(label + ": int32_data value " + std::to_string(v) + " is out of range for " +
                   std::string(dtypeName(t.dtype())));
    out[static_cast<size_t>(i)] = static_cast<T>(v);
  }
  return okStatus();
}

Expected<Tensor> fromTypedField(const onnx::TensorProto& p, DType dtype, const Shape& shape, int64_t n,
                                const std::string& label) {
  FieldUse use = fieldFor(dtype);
  int64_t have = fieldSize(p, use.field);
  int64_t need = n * use.per_element;
  if (have != need)
    return Error(label + ": " + fieldName(use.field) + " has " + std::to_string(have) + " values, shape " + shapeToString(shape) +
                 " of " + std::string(dtypeName(dtype)) + " needs " + std::to_string(need));
  Tensor t(dtype, shape);
  switch (dtype) {
    case DType::Float:
    case DType::Complex64: std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>().begin()); break;
    case DType::Double:
    case DType::Complex128: std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>().begin()); break;
    case DType::Int64: std::copy(p.int64_data().begin(), p.int64_data().end(), t.data<int64_t>().begin()); break;
    case DType::UInt64: std::copy(p.uint64_data().begin(), p.uint64_data().end(), t.data<uint64_t>().begin()); break;
    case DType::UInt32: {
      auto out = t.data<uint32_t>();
      for (int i = 0; i < p.uint64_data_size(); ++i) {
        uint64_t v = p.uint64_data(i);
        if (v > UINT32_MAX) return Error(label + ": uint64_data value " + std::to_string(v) + " is out of range for uint32");
        out[static_cast<size_t>(i)] = static_cast<uint32_t>(v);
      }
      break;
    }
    case DType::Int32: std::copy(p.int32_data().begin(), p.int32_data().end(), t.data<int32_t>().begin()); break;
    case DType::Int16: POPRT_TRY(narrowInt32<int16_t>(p, t, INT16_MIN, INT16_MAX, label)); break;
    case DType::Int8: POPRT_TRY(narrowInt32<int8_t>(p, t, INT8_MIN, INT8_MAX, label)); break;
    case DType::UInt16: POPRT_TRY(narrowInt32<uint16_t>(p, t, 0, UINT16_MAX, label)); break;
    case DType::UInt8: POPRT_TRY(narrowInt32<uint8_t>(p, t, 0, UINT8_MAX, label)); break;
    // float16 and bfloat16 keep their 16-bit patterns in int32_data.
    case DType::Float16:
    case DType::BFloat16: POPRT_TRY(narrowInt32<uint16_t>(p, t, 0, UINT16_MAX, label)); break;
    case DType::Bool: {
      // Any non-zero value is true, as onnx.numpy_helper reads it; we store canonical 0/1.
      auto out = t.data<uint8_t>();
      for (int i = 0; i < p.int32_data_size(); ++i) out[static_cast<size_t>(i)] = p.int32_data(i) != 0;
      break;
    }
    case DType::String:
      for (int i = 0; i < p.string_data_size(); ++i) t.strings()[static_cast<size_t>(i)] = p.string_data(i);
      break;
    default: return Error(label + ": unsupported data_type " + std::to_string(p.data_type()));
  }
  return t;
}

Expected<uint64_t> parseUnsigned(const std::string& text, const std::string& what, const std::string& label) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return Error(label + ": external data " + what + " '" + text + "' is not a non-negative integer");
  return v;
}

// True if canonical path `p` is `root` or below it (compared by component, so /a/bc is not in /a/b).
bool isInside(const fs::path& p, const fs::path& root) {
  auto [r, q] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  (void)q;
  return r == root.end();
}

// The external data keys of a proto: each at most once; offset and length are numbers.
struct ExternalKeys {
  std::optional<std::string> location;
  std::optional<uint64_t> offset, length;
};

Expected<ExternalKeys> externalKeys(const onnx::TensorProto& p, const std::string& label) {
  ExternalKeys k;
  for (const auto& entry : p.external_data()) {
    const std::string& key = entry.key();
    if ((key == "location" && k.location) || (key == "offset" && k.offset) || (key == "length" && k.length))
      return Error(label + ": external data key '" + key + "' appears twice");
    if (key == "location") {
      k.location = entry.value();
    } else if (key == "offset") {
      POPRT_ASSIGN_OR_RETURN(k.offset, parseUnsigned(entry.value(), "offset", label));
    } else if (key == "length") {
      POPRT_ASSIGN_OR_RETURN(k.length, parseUnsigned(entry.value(), "length", label));
    }
    // 'checksum' (and any key we do not know) does not change where the bytes are: ignored.
  }
  return k;
}

// The model file must not be able to make us read, or even look at, arbitrary files on this
// machine: the location is relative, has no '..' and resolves (symlinks followed) inside the
// model's folder.
Expected<fs::path> resolveLocation(const ExternalKeys& k, const fs::path& model_dir, const std::string& label) {
  if (model_dir.empty())
    return Error(label + ": has external data, but the model's directory is unknown (load the model from a file)");
  if (!k.location || k.location->empty()) return Error(label + ": external data has no 'location'");
  const std::string& location = *k.location;
  if (location.find('\0') != std::string::npos) return Error(label + ": external data location contains a NUL byte");
  fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    return Error(label + ": external data location '" + location +
                 "' is an absolute path; it must be relative to the model directory");
  for (const auto& part : rel)
    if (part == "..")
      return Error(label + ": external data location '" + location + "' contains '..'; it must stay inside the model directory");
  std::error_code ec;
  fs::path root = fs::canonical(model_dir, ec);
  if (ec) return Error(label + ": cannot resolve model directory '" + model_dir.string() + "': " + ec.message());
  fs::path file = fs::canonical(model_dir / rel, ec);
  if (ec) return Error(label + ": external data file '" + location + "' not found in '" + model_dir.string() + "'");
  if (!isInside(file, root))
    return Error(label + ": external data location '" + location + "' resolves to '" + file.string() +
                 "', outside the model directory '" + root.string() + "'");
  if (!fs::is_regular_file(file, ec)) return Error(label + ": external data location '" + location + "' is not a regular file");
  return file;
}

Expected<Tensor> fromExternal(const onnx::TensorProto& p, DType dtype, const Shape& shape, int64_t n, const fs::path& model_dir,
                              const std::string& label) {
  if (dtype == DType::String) return Error(label + ": string tensors cannot use external data");
  POPRT_ASSIGN_OR_RETURN(ExternalKeys keys, externalKeys(p, label));
  POPRT_ASSIGN_OR_RETURN(fs::path file, resolveLocation(keys, model_dir, label));
  const std::string& location = *keys.location;
  const std::optional<uint64_t>& offset = keys.offset;
  const std::optional<uint64_t>& length = keys.length;
  std::error_code ec;
  uint64_t size = fs::file_size(file, ec);
  if (ec) return Error(label + ": cannot read the size of '" + file.string() + "': " + ec.message());

  uint64_t off = offset.value_or(0);
  uint64_t need = static_cast<uint64_t>(n) * dtypeSize(dtype);  // n is capped: no overflow
  if (length && *length != need)
    return Error(label + ": external data length " + std::to_string(*length) + " does not match shape " + shapeToString(shape) +
                 " of " + std::string(dtypeName(dtype)) + " (needs " + std::to_string(need) + " bytes)");
  if (off > size || need > size - off)
    return Error(label + ": external data '" + location + "' is " + std::to_string(size) + " bytes, too short for " +
                 std::to_string(need) + " bytes at offset " + std::to_string(off));

  Tensor t(dtype, shape);
  if (need == 0) return t;
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(off));
  if (!in || !in.read(reinterpret_cast<char*>(t.bytes().data()), static_cast<std::streamsize>(need)))
    return Error(label + ": cannot read external data from '" + file.string() + "'");
  return t;
}

// What a proto declares, checked before anything is read or allocated: a dtype we know, no
// segment, dims that are not negative and whose element count and byte size stay under the caps
// (so a sparse external file or a lying length cannot make us allocate more than the limit).
struct Declared {
  DType dtype;
  Shape shape;
  int64_t n;
};

Expected<Declared> declared(const onnx::TensorProto& p, const std::string& label) {
  if (p.has_segment()) return Error(label + ": segmented tensors are not supported");
  auto dtype = dtypeFromOnnx(p.data_type());
  if (!dtype) return Error(label + ": unsupported data_type " + std::to_string(p.data_type()));
  Shape shape(p.dims().begin(), p.dims().end());
  auto n = checkedNumElements(shape, kMaxFileElements);
  if (!n.ok()) return n.error().withContext(label);
  POPRT_ASSIGN_OR_RETURN(uint64_t cap, maxTensorBytes());
  if (uint64_t bytes = static_cast<uint64_t>(*n) * dtypeSize(*dtype); bytes > cap)
    return Error(label + ": shape " + shapeToString(shape) + " of " + std::string(dtypeName(*dtype)) + " is " +
                 std::to_string(bytes) + " bytes, above the limit of " + std::to_string(cap) + " (POPRT_MAX_TENSOR_BYTES)");
  return Declared{*dtype, std::move(shape), *n};
}

}  // namespace

Status checkTensorDeclaration(const onnx::TensorProto& p) {
  auto d = declared(p, labelOf(p));
  if (!d.ok()) return d.error();
  return okStatus();
}

Expected<Tensor> tensorFromProto(const onnx::TensorProto& p, const fs::path& model_dir) {
  std::string label = labelOf(p);
  POPRT_ASSIGN_OR_RETURN(Declared d, declared(p, label));
  const Shape& shape = d.shape;

  // Exactly one place may hold the values; data in a field the type does not use is a
  // malformed proto, not something to silently drop.
  Field expected = fieldFor(d.dtype).field;
  bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  for (Field f : kAllFields) {
    if (fieldSize(p, f) == 0) continue;
    if (external || p.has_raw_data())
      return Error(label + ": has both " + (external ? "external data" : "raw_data") + " and " + fieldName(f));
    if (f != expected)
      return Error(label + ": has " + fieldName(f) + ", but " + std::string(dtypeName(d.dtype)) + " values belong in " +
                   fieldName(expected));
  }
  if (external) {
    if (p.has_raw_data()) return Error(label + ": has both external data and raw_data");
    return fromExternal(p, d.dtype, shape, d.n, model_dir, label);
  }
  if (p.has_raw_data()) {
    if (d.dtype == DType::String) return Error(label + ": string tensors cannot use raw_data");
    uint64_t need = static_cast<uint64_t>(d.n) * dtypeSize(d.dtype);
    if (p.raw_data().size() != need)
      return Error(label + ": raw_data has " + std::to_string(p.raw_data().size()) + " bytes, shape " + shapeToString(shape) +
                   " of " + std::string(dtypeName(d.dtype)) + " needs " + std::to_string(need));
    const auto* raw = reinterpret_cast<const uint8_t*>(p.raw_data().data());
    return Tensor(d.dtype, shape, std::vector<uint8_t>(raw, raw + need));  // copied once, not zeroed first
  }
  return fromTypedField(p, d.dtype, shape, d.n, label);
}

Expected<fs::path> externalDataFile(const onnx::TensorProto& p, const fs::path& model_dir) {
  const std::string label = labelOf(p);
  POPRT_ASSIGN_OR_RETURN(ExternalKeys keys, externalKeys(p, label));
  return resolveLocation(keys, model_dir, label);
}

void tensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  if (tensor.dtype() == DType::String) {
    for (const auto& s : tensor.strings()) proto->add_string_data(s);
  } else {
    proto->set_raw_data(tensor.bytes().data(), tensor.bytes().size());
  }
}

Expected<NamedTensor> readTensorProtoFile(const fs::path& path) {
  POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, readFileBytes(path));
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return Error(path.string() + ": is " + std::to_string(bytes.size()) + " bytes, above protobuf's 2 GiB message limit");
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Error(path.string() + ": not a valid ONNX TensorProto");
  fs::path dir = path.parent_path();
  auto tensor = tensorFromProto(proto, dir.empty() ? fs::path(".") : dir);
  if (!tensor.ok()) return tensor.error().withContext(path.string());
  return NamedTensor{proto.name(), std::move(tensor).value()};
}

}  // namespace poprt
