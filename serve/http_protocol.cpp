#include "serve/http_protocol.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "serve/infer_request.h"
#include "serve/tensors.h"

namespace poprt::serve {
namespace {

using json = nlohmann::json;

// An optional member of an object, which must have `check`'s JSON type when present.
template <class Check>
Expected<const json*> member(const json& object, const char* key, const std::string& where, Check check, const char* expected) {
  auto it = object.find(key);
  if (it == object.end()) return static_cast<const json*>(nullptr);
  if (!check(*it)) return Error(where + "\"" + key + "\" must be " + expected);
  return &*it;
}
bool isObject(const json& j) { return j.is_object(); }
bool isArray(const json& j) { return j.is_array(); }
bool isString(const json& j) { return j.is_string(); }
bool isBool(const json& j) { return j.is_boolean(); }

Expected<Shape> parseShape(const json& j, const std::string& where) {
  if (!j.is_array()) return Error(where + "\"shape\" must be an array of dims");
  Shape s;
  for (const auto& d : j) {
    if (!d.is_number_integer() || (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0))
      return Error(where + "\"shape\" " + j.dump() + " must hold non-negative integers");
    if (d.is_number_unsigned() && d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return Error(where + "\"shape\" " + j.dump() + " has a dim out of range");
    s.push_back(d.get<int64_t>());
  }
  return s;
}

// Parameters change what a request means: the ones popef-serve does not act on (classification,
// priority, sequence ids...) are refused by name rather than ignored.
Status onlyParameters(const json& params, std::initializer_list<const char*> known, const std::string& where) {
  for (const auto& item : params.items()) {
    const std::string& key = item.key();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
      return Error(where + "parameter '" + key + "' is not supported");
  }
  return okStatus();
}

Expected<size_t> parseHeaderLength(const std::string& text, size_t body_size) {
  size_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n > body_size)
    return Error(std::string(kHeaderLengthHeader) + " '" + text + "' is not a length within the body (" +
                 std::to_string(body_size) + " bytes)");
  return n;
}

}  // namespace

HttpReply jsonReply(int status, const json& body) {
  HttpReply r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

HttpReply errorReply(int status, const std::string& message) { return jsonReply(status, {{"error", message}}); }

Expected<InferCall> parseInfer(std::string_view body, const std::string& header_length, const ModelLayout& layout) {
  std::string_view text = body, binary;
  if (!header_length.empty()) {
    POPRT_ASSIGN_OR_RETURN(size_t n, parseHeaderLength(header_length, body.size()));
    text = body.substr(0, n);
    binary = body.substr(n);
  }
  json request;
  try {
    request = json::parse(text);
  } catch (const json::exception& e) {  // a parse error, or a number beyond a double (1e999)
    std::string what = e.what();        // without the library's "[json.exception.parse_error.101] " tag
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) what.erase(0, what.find("] ") + 2);
    return Error("the request is not valid JSON: " + what);
  }
  if (!request.is_object()) return Error("the request must be a JSON object");

  InferRequestBuilder builder(layout);
  std::string id;
  POPRT_ASSIGN_OR_RETURN(const json* id_j, member(request, "id", "", isString, "a string"));
  if (id_j) id = id_j->get<std::string>();
  bool binary_default = false;
  POPRT_ASSIGN_OR_RETURN(const json* params, member(request, "parameters", "", isObject, "an object"));
  if (params) {
    POPRT_TRY(onlyParameters(*params, {"binary_data_output"}, ""));
    POPRT_ASSIGN_OR_RETURN(const json* b, member(*params, "binary_data_output", "parameters: ", isBool, "true or false"));
    if (b) binary_default = b->get<bool>();
  }

  POPRT_ASSIGN_OR_RETURN(const json* inputs, member(request, "inputs", "", isArray, "an array"));
  if (!inputs) return Error("the request has no \"inputs\" (the model takes: " + anchorNames(layout.inputs) + ")");
  size_t binary_used = 0;
  for (const json& in : *inputs) {
    if (!in.is_object()) return Error("every element of \"inputs\" must be an object");
    POPRT_ASSIGN_OR_RETURN(const json* name_j, member(in, "name", "input: ", isString, "a string"));
    if (!name_j) return Error("an input has no \"name\"");
    const std::string name = name_j->get<std::string>();
    const std::string where = "input '" + name + "': ";
    POPRT_ASSIGN_OR_RETURN(const json* dt_j, member(in, "datatype", where, isString, "a string"));
    const std::string datatype = dt_j ? dt_j->get<std::string>() : "";
    auto shape_it = in.find("shape");
    std::optional<Shape> shape;
    if (shape_it != in.end()) { POPRT_ASSIGN_OR_RETURN(shape, parseShape(*shape_it, where)); }
    POPRT_ASSIGN_OR_RETURN(InferRequestBuilder::Input declared,
                           builder.declare(name, dt_j ? &datatype : nullptr, shape ? &*shape : nullptr));

    POPRT_ASSIGN_OR_RETURN(const json* in_params, member(in, "parameters", where, isObject, "an object"));
    const json* size_j = nullptr;
    if (in_params) {
      POPRT_TRY(onlyParameters(*in_params, {"binary_data_size"}, where));
      auto it = in_params->find("binary_data_size");
      if (it != in_params->end()) size_j = &*it;
    }
    auto data = in.find("data");
    if (size_j && data != in.end()) return Error(where + "both \"data\" and binary_data_size");
    if (size_j) {
      if (header_length.empty()) return Error(where + "binary_data_size without an " + kHeaderLengthHeader + " header");
      if (!size_j->is_number_unsigned() || size_j->get<uint64_t>() != declared.bytes)
        return Error(where + "binary_data_size " + size_j->dump() + ", its shape " + shapeToString(*shape) + " of " + datatype +
                     " is " + std::to_string(declared.bytes) + " bytes");
      if (binary.size() - binary_used < declared.bytes)
        return Error(where + "binary_data_size " + std::to_string(declared.bytes) + " runs past the end of the body (" +
                     std::to_string(binary.size() - binary_used) + " bytes left)");
      const auto* p = reinterpret_cast<const uint8_t*>(binary.data()) + binary_used;
      binary_used += declared.bytes;
      POPRT_TRY(builder.setData(declared, std::vector<uint8_t>(p, p + declared.bytes)));
    } else {
      if (data == in.end()) return Error(where + "no \"data\" (nor binary_data_size)");
      const size_t element = dtypeSize(declared.dtype);
      auto v = decodeJsonData(*data, declared.dtype, static_cast<int64_t>(declared.bytes / element));
      if (!v.ok()) return v.error().withContext("input '" + name + "': data");
      POPRT_TRY(builder.setData(declared, std::move(v).value()));
    }
  }
  if (binary_used != binary.size())
    return Error(std::to_string(binary.size() - binary_used) + " bytes of binary data after the inputs' binary_data_size");

  POPRT_ASSIGN_OR_RETURN(const json* outputs, member(request, "outputs", "", isArray, "an array"));
  if (outputs) {
    for (const json& out : *outputs) {
      if (!out.is_object()) return Error("every element of \"outputs\" must be an object");
      POPRT_ASSIGN_OR_RETURN(const json* name_j, member(out, "name", "output: ", isString, "a string"));
      if (!name_j) return Error("an output has no \"name\"");
      const std::string name = name_j->get<std::string>();
      bool binary_out = binary_default;
      POPRT_ASSIGN_OR_RETURN(const json* out_params, member(out, "parameters", "output '" + name + "': ", isObject, "an object"));
      if (out_params) {
        POPRT_TRY(onlyParameters(*out_params, {"binary_data"}, "output '" + name + "': "));
        POPRT_ASSIGN_OR_RETURN(
            const json* b, member(*out_params, "binary_data", "output '" + name + "': parameters: ", isBool, "true or false"));
        if (b) binary_out = b->get<bool>();
      }
      POPRT_TRY(builder.chooseOutput(name, binary_out));
    }
  }
  return builder.finish(std::move(id), binary_default);
}

HttpReply inferReply(const ModelId& model, const InferCall& call, const ModelLayout& layout, const ServeResult& result) {
  if (result.status != 200) return errorReply(result.status, result.error);
  json reply = {{"model_name", model.name}, {"model_version", model.version}};
  if (!call.id.empty()) reply["id"] = call.id;
  json outputs = json::array();
  std::string tail;
  for (const OutputChoice& c : call.outputs) {
    const AnchorLayout& a = layout.outputs[c.index];
    const ServeOutput& o = result.outputs[c.index];
    json out = {{"name", a.desc.name}, {"datatype", datatypeOf(a)}, {"shape", o.shape}};
    if (c.binary) {
      out["parameters"] = {{"binary_data_size", o.bytes.size()}};
      tail.append(reinterpret_cast<const char*>(o.bytes.data()), o.bytes.size());
    } else {
      out["data"] = encodeJsonData(o.bytes, a.dtype);
    }
    outputs.push_back(std::move(out));
  }
  reply["outputs"] = std::move(outputs);
  HttpReply r = jsonReply(200, reply);
  const bool any_binary = std::any_of(call.outputs.begin(), call.outputs.end(), [](const auto& c) { return c.binary; });
  if (any_binary) {
    r.header_length = r.body.size();
    r.body += tail;
    r.content_type = "application/octet-stream";
  }
  return r;
}

json modelStatistics(const ModelId& model, const Statistics& s) {
  auto d = [](const DurationStat& x) { return json{{"count", x.count}, {"ns", x.ns}}; };
  json batches = json::array();
  for (const auto& [size, b] : s.by_batch_size)
    batches.push_back({{"batch_size", size},
                       {"compute_input", d(b.compute_input)},
                       {"compute_infer", d(b.compute_infer)},
                       {"compute_output", d(b.compute_output)}});
  return {{"name", model.name},
          {"version", model.version},
          {"last_inference", s.last_inference_ms},
          {"inference_count", s.inference_count},
          {"execution_count", s.execution_count},
          {"inference_stats",
           {{"success", d(s.success)},
            {"fail", d(s.fail)},
            {"queue", d(s.queue)},
            {"compute_input", d(s.compute_input)},
            {"compute_infer", d(s.compute_infer)},
            {"compute_output", d(s.compute_output)}}},
          {"batch_stats", std::move(batches)}};
}

json modelMetadata(const ModelId& model, const ModelLayout& layout) {
  auto tensors = [&](const std::vector<AnchorLayout>& anchors) {
    json list = json::array();
    for (const auto& a : anchors)
      list.push_back({{"name", a.desc.name},
                      {"datatype", datatypeOf(a)},
                      {"shape", layout.batchable ? layout.shapeFor(a, -1) : a.desc.shape}});
    return list;
  };
  return {{"name", model.name},
          {"versions", {model.version}},
          {"platform", "poprt_popef"},
          {"inputs", tensors(layout.inputs)},
          {"outputs", tensors(layout.outputs)}};
}

json modelConfig(const ModelId& model, const ModelLayout& layout, const BatcherOptions& options, unsigned replicas) {
  // Triton's tensor entries: TYPE_<datatype>, and dims without the batch axis when the model batches.
  auto tensors = [&](const std::vector<AnchorLayout>& anchors) {
    json list = json::array();
    for (const AnchorLayout& a : anchors) {
      Shape dims = a.desc.shape;
      if (layout.batchable) dims.erase(dims.begin() + layout.axis);
      list.push_back({{"name", a.desc.name}, {"data_type", "TYPE_" + datatypeOf(a)}, {"dims", dims}});
    }
    return list;
  };
  return {{"name", model.name},
          {"platform", "poprt_popef"},
          {"max_batch_size", layout.batchable ? layout.batch : 0},
          {"input", tensors(layout.inputs)},
          {"output", tensors(layout.outputs)},
          {"instance_group", {{{"count", replicas}, {"kind", "KIND_MODEL"}}}},
          {"batch_axis", layout.axis},
          {"replicas", replicas},
          {"dynamic_batching",
           {{"enabled", options.dynamic_batching && layout.batchable},
            {"max_queue_delay_microseconds", options.max_queue_delay.count()}}}};
}

}  // namespace poprt::serve
