#include "tools/run/run_inputs.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "converter/value_check.h"
#include "lib/onnx/value_io.h"
#include "lib/support/dtype_dispatch.h"
#include "runtime/host_value.h"
#include "tools/common/tool_common.h"

namespace poprt::tools {
namespace {

namespace fs = std::filesystem;

// input_<i> followed by '.' or '_': "input_1.npy" and "input_1_x.npy" are input 1, "input_10.npy" is not.
std::optional<size_t> inputIndexOf(const std::string& file) {
  if (file.rfind("input_", 0) != 0) return std::nullopt;
  size_t pos = 6, end = pos;
  while (end < file.size() && std::isdigit(static_cast<unsigned char>(file[end]))) ++end;
  if (end == pos || end - pos > 6 || end == file.size() || (file[end] != '.' && file[end] != '_')) return std::nullopt;
  const std::string ext = fs::path(file).extension().string();
  if (ext != ".npy" && ext != ".pb") return std::nullopt;
  if (ext == ".pb" && file[end] != '.') return std::nullopt;  // input_<i>.pb, as in the ONNX test data
  return std::stoul(file.substr(pos, end - pos));
}

// input index -> file, from --input_dir.
Expected<std::map<size_t, std::string>> scanInputDir(const std::string& dir, size_t num_inputs) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error("--input_dir " + dir + ": not a directory");
  std::map<size_t, std::string> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    auto index = inputIndexOf(name);
    if (!index) continue;
    const std::string path = (fs::path(dir) / name).string();
    if (*index >= num_inputs)
      return Error("--input_dir: " + path + " is input " + std::to_string(*index) + ", the model has " +
                   std::to_string(num_inputs) + " input(s)");
    auto [pos, fresh] = found.emplace(*index, path);
    if (!fresh) return Error("--input_dir: " + pos->second + " and " + path + " are both input " + std::to_string(*index));
  }
  if (ec) return Error("--input_dir " + dir + ": cannot list: " + ec.message());
  return found;
}

// A generated input for --fill: random (--seed; see generateInput), zeros or ones.
Expected<ops::RtValue> filled(const runtime::DataDesc& d, size_t index, const InputOptions& o, const std::string& popef) {
  auto dtype = dtypeFromName(d.dtype);
  const std::string what = popef + ": input '" + d.name + "' (" + d.dtype + shapeToString(d.shape) + ")";
  if (!d.fixedSize() || !dtype || *dtype == DType::Complex64 || *dtype == DType::Complex128)
    return Error(what + ": --fill makes numeric and bool tensors only; give this input with --input");
  if (o.fill == "random") {
    auto t = converter::generateInput(*dtype, d.shape, o.seed, index);
    if (!t.ok()) return t.error().withContext(what);
    return ops::RtValue::of(std::move(t).value());
  }
  auto n = checkedNumElements(d.shape, kMaxFileElements);
  if (!n.ok()) return n.error().withContext(what);
  Tensor t(*dtype, d.shape);  // zeros
  if (o.fill == "ones")
    POPRT_TRY(dispatchNumeric(*dtype, [&](auto tag) {
      using T = decltype(tag);
      for (T& x : t.data<T>()) x = T(1.0f);
    }));
  return ops::RtValue::of(std::move(t));
}

}  // namespace

Expected<std::vector<ops::RtValue>> gatherInputs(const std::vector<runtime::DataDesc>& anchors, const InputOptions& o,
                                                 const std::string& popef) {
  std::string names;
  for (const auto& d : anchors) names += (names.empty() ? "" : ", ") + d.name;
  // input index -> file: --input_dir first, then --input (an explicit file wins).
  std::map<size_t, std::string> files;
  if (!o.input_dir.empty()) { POPRT_ASSIGN_OR_RETURN(files, scanInputDir(o.input_dir, anchors.size())); }
  std::map<std::string, std::string> given;
  for (const auto& text : o.inputs) {
    auto kv = splitAssignment(text, "--input");
    if (!given.emplace(kv.first, kv.second).second) return Error("--input: '" + kv.first + "' is given twice");
    auto it = std::find_if(anchors.begin(), anchors.end(), [&](const auto& d) { return d.name == kv.first; });
    if (it == anchors.end()) return Error("--input: the model has no input named '" + kv.first + "' (inputs: " + names + ")");
    files[static_cast<size_t>(it - anchors.begin())] = kv.second;
  }
  std::vector<ops::RtValue> values;
  for (size_t i = 0; i < anchors.size(); ++i) {
    const runtime::DataDesc& d = anchors[i];
    auto it = files.find(i);
    if (it == files.end()) {
      if (o.fill.empty())
        return Error(popef + ": input '" + d.name + "' (" + d.dtype + shapeToString(d.shape) + ") was not given (hint: --input " +
                     d.name + "=FILE.npy, --input_dir DIR or --fill random)");
      POPRT_ASSIGN_OR_RETURN(ops::RtValue v, filled(d, i, o, popef));
      values.push_back(std::move(v));
      continue;
    }
    POPRT_ASSIGN_OR_RETURN(ops::RtValue v, onnxio::readValueFile(it->second, static_cast<ValueKind>(d.kind)));
    if (auto why = runtime::inputMismatch(d, v); !why.empty()) return Error(it->second + ": " + why);
    values.push_back(std::move(v));
  }
  return values;
}

Expected<runtime::InputMemoryView> inputViews(const std::vector<runtime::DataDesc>& anchors,
                                              const std::vector<ops::RtValue>& values,
                                              std::vector<std::vector<uint8_t>>& encoded) {
  runtime::InputMemoryView views;
  encoded.clear();
  encoded.reserve(anchors.size());  // the views point into these vectors: no reallocation
  for (size_t i = 0; i < anchors.size(); ++i) {
    if (anchors[i].format == runtime::DataFormat::Raw) {
      auto bytes = values[i].tensor.bytes();
      views[anchors[i].name] = {bytes.data(), bytes.size()};
      continue;
    }
    POPRT_ASSIGN_OR_RETURN(auto bytes, runtime::encodeValue(anchors[i], values[i]));
    encoded.push_back(std::move(bytes));
    views[anchors[i].name] = {encoded.back().data(), encoded.back().size()};
  }
  return views;
}

}  // namespace poprt::tools
