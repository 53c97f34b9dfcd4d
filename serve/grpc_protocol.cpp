#include "serve/grpc_protocol.h"

#include <cstring>
#include <utility>

#include "serve/tensors.h"

namespace poprt::serve {

namespace {

using Contents = inference::InferTensorContents;

// `values` as `count` elements of type Dst, each within Dst's range.
template <typename Dst, typename Values>
Expected<std::vector<uint8_t>> pack(const Values& values, size_t count, const std::string& where, const char* field) {
  if (static_cast<size_t>(values.size()) != count)
    return Error(where + field + " holds " + std::to_string(values.size()) + " elements, its shape " + std::to_string(count));
  std::vector<uint8_t> out(count * sizeof(Dst));
  for (size_t i = 0; i < count; ++i) {
    const auto v = values[static_cast<int>(i)];
    if constexpr (std::is_integral_v<Dst> && !std::is_same_v<std::decay_t<decltype(v)>, bool>) {
      if (!std::in_range<Dst>(v))
        return Error(where + field + " element " + std::to_string(i) + " is " + std::to_string(v) + ", out of range");
    }
    const Dst d = static_cast<Dst>(v);
    std::memcpy(out.data() + i * sizeof(Dst), &d, sizeof(Dst));
  }
  return out;
}

size_t elementsIn(const Contents& c) {
  return static_cast<size_t>(c.bool_contents_size() + c.int_contents_size() + c.int64_contents_size() + c.uint_contents_size() +
                             c.uint64_contents_size() + c.fp32_contents_size() + c.fp64_contents_size() +
                             c.bytes_contents_size());
}

// An input's bytes from its typed contents: the field of its datatype, and no other.
Expected<std::vector<uint8_t>> typedContents(const Contents& c, const InferRequestBuilder::Input& in,
                                             const std::string& datatype) {
  const size_t count = in.bytes / dtypeSize(in.dtype);
  auto from = [&](auto tag, const auto& field, const char* name) -> std::pair<Expected<std::vector<uint8_t>>, size_t> {
    return {pack<decltype(tag)>(field, count, in.where, name), static_cast<size_t>(field.size())};
  };
  std::pair<Expected<std::vector<uint8_t>>, size_t> packed = {Error(""), 0};
  switch (in.dtype) {
    case DType::Bool: packed = from(uint8_t{}, c.bool_contents(), "bool_contents"); break;
    case DType::Int8: packed = from(int8_t{}, c.int_contents(), "int_contents"); break;
    case DType::Int16: packed = from(int16_t{}, c.int_contents(), "int_contents"); break;
    case DType::Int32: packed = from(int32_t{}, c.int_contents(), "int_contents"); break;
    case DType::Int64: packed = from(int64_t{}, c.int64_contents(), "int64_contents"); break;
    case DType::UInt8: packed = from(uint8_t{}, c.uint_contents(), "uint_contents"); break;
    case DType::UInt16: packed = from(uint16_t{}, c.uint_contents(), "uint_contents"); break;
    case DType::UInt32: packed = from(uint32_t{}, c.uint_contents(), "uint_contents"); break;
    case DType::UInt64: packed = from(uint64_t{}, c.uint64_contents(), "uint64_contents"); break;
    case DType::Float: packed = from(float{}, c.fp32_contents(), "fp32_contents"); break;
    case DType::Double: packed = from(double{}, c.fp64_contents(), "fp64_contents"); break;
    default: return Error(in.where + datatype + " has no typed contents field: send it in raw_input_contents");
  }
  auto& [bytes, used] = packed;
  if (bytes.ok() && elementsIn(c) != used) return Error(in.where + "contents in a field other than the one for " + datatype);
  return std::move(bytes);
}

// Parameters change what a request means, so the ones popef-serve does not act on are refused
// rather than ignored; the binary-data ones of the HTTP protocol mean nothing here and are let be.
Status checkParameters(const google::protobuf::Map<std::string, inference::InferParameter>& params, const std::string& where) {
  for (const auto& [key, value] : params)
    if (key != "binary_data" && key != "binary_data_size" && key != "binary_data_output")
      return Error(where + "parameter '" + key + "' is not supported");
  return okStatus();
}

}  // namespace

int grpcCode(int http_status) {
  switch (http_status) {
    case 200: return 0;   // OK
    case 400: return 3;   // INVALID_ARGUMENT
    case 404: return 5;   // NOT_FOUND
    case 413: return 8;   // RESOURCE_EXHAUSTED
    case 503: return 14;  // UNAVAILABLE
    default: return 13;   // INTERNAL
  }
}

Expected<InferCall> parseInferRequest(const inference::ModelInferRequest& request, const ModelLayout& layout) {
  POPRT_TRY(checkParameters(request.parameters(), ""));
  const bool raw = request.raw_input_contents_size() > 0;
  if (raw && request.raw_input_contents_size() != request.inputs_size())
    return Error(std::to_string(request.raw_input_contents_size()) + " raw_input_contents for " +
                 std::to_string(request.inputs_size()) + " inputs (one each, in the order of inputs)");
  InferRequestBuilder builder(layout);
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& t = request.inputs(i);
    const Shape shape(t.shape().begin(), t.shape().end());
    for (int64_t d : shape)
      if (d < 0) return Error("input '" + t.name() + "': shape " + shapeToString(shape) + " has a negative dim");
    POPRT_ASSIGN_OR_RETURN(InferRequestBuilder::Input in,
                           builder.declare(t.name(), t.datatype().empty() ? nullptr : &t.datatype(), &shape));
    POPRT_TRY(checkParameters(t.parameters(), in.where));
    if (raw) {
      if (t.has_contents() && elementsIn(t.contents()) > 0) return Error(in.where + "contents and raw_input_contents both given");
      const std::string& bytes = request.raw_input_contents(i);
      POPRT_TRY(builder.setData(in, std::vector<uint8_t>(bytes.begin(), bytes.end())));
    } else {
      POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, typedContents(t.contents(), in, t.datatype()));
      POPRT_TRY(builder.setData(in, std::move(bytes)));
    }
  }
  for (const auto& o : request.outputs()) {
    POPRT_TRY(checkParameters(o.parameters(), "output '" + o.name() + "': "));
    POPRT_TRY(builder.chooseOutput(o.name(), true));
  }
  return builder.finish(request.id(), true);
}

void fillInferResponse(const ModelId& model, const InferCall& call, const ModelLayout& layout, const ServeResult& result,
                       inference::ModelInferResponse& response) {
  response.set_model_name(model.name);
  response.set_model_version(model.version);
  response.set_id(call.id);
  for (const OutputChoice& c : call.outputs) {
    const AnchorLayout& a = layout.outputs[c.index];
    const ServeOutput& o = result.outputs[c.index];
    auto* t = response.add_outputs();
    t->set_name(a.desc.name);
    t->set_datatype(datatypeOf(a));
    for (int64_t d : o.shape) t->add_shape(d);
    response.add_raw_output_contents(reinterpret_cast<const char*>(o.bytes.data()), o.bytes.size());
  }
}

void fillModelStatistics(const ModelId& model, const Statistics& s, inference::ModelStatistics& out) {
  auto d = [](const DurationStat& x, inference::StatisticDuration* to) {
    to->set_count(x.count);
    to->set_ns(x.ns);
  };
  out.set_name(model.name);
  out.set_version(model.version);
  out.set_last_inference(s.last_inference_ms);
  out.set_inference_count(s.inference_count);
  out.set_execution_count(s.execution_count);
  auto* i = out.mutable_inference_stats();
  d(s.success, i->mutable_success());
  d(s.fail, i->mutable_fail());
  d(s.queue, i->mutable_queue());
  d(s.compute_input, i->mutable_compute_input());
  d(s.compute_infer, i->mutable_compute_infer());
  d(s.compute_output, i->mutable_compute_output());
  for (const auto& [size, b] : s.by_batch_size) {
    auto* bs = out.add_batch_stats();
    bs->set_batch_size(static_cast<uint64_t>(size));
    d(b.compute_input, bs->mutable_compute_input());
    d(b.compute_infer, bs->mutable_compute_infer());
    d(b.compute_output, bs->mutable_compute_output());
  }
}

void fillModelConfig(const ModelId& model, const ModelLayout& layout, const BatcherOptions& options, unsigned replicas,
                     poprt::serve::ModelConfig& config) {
  config.set_name(model.name);
  config.set_platform("poprt_popef");
  config.set_max_batch_size(static_cast<int32_t>(layout.batchable ? layout.batch : 0));
  auto fill = [&](const AnchorLayout& a, auto* t) {
    t->set_name(a.desc.name);
    DataType type = DataType::TYPE_INVALID;
    DataType_Parse("TYPE_" + datatypeOf(a), &type);
    t->set_data_type(type);
    Shape dims = a.desc.shape;
    if (layout.batchable) dims.erase(dims.begin() + layout.axis);
    for (int64_t d : dims) t->add_dims(d);
  };
  for (const AnchorLayout& a : layout.inputs) fill(a, config.add_input());
  for (const AnchorLayout& a : layout.outputs) fill(a, config.add_output());
  auto* group = config.add_instance_group();
  group->set_count(static_cast<int32_t>(replicas));
  group->set_kind(ModelInstanceGroup::KIND_MODEL);
  if (options.dynamic_batching && layout.batchable)
    config.mutable_dynamic_batching()->set_max_queue_delay_microseconds(static_cast<uint64_t>(options.max_queue_delay.count()));
}

void fillModelMetadata(const ModelId& model, const ModelLayout& layout, inference::ModelMetadataResponse& response) {
  response.set_name(model.name);
  response.add_versions(model.version);
  response.set_platform("poprt_popef");
  for (const auto& [anchors, add] : {std::pair{&layout.inputs, &inference::ModelMetadataResponse::add_inputs},
                                     std::pair{&layout.outputs, &inference::ModelMetadataResponse::add_outputs}})
    for (const AnchorLayout& a : *anchors) {
      auto* t = (response.*add)();
      t->set_name(a.desc.name);
      t->set_datatype(datatypeOf(a));
      for (int64_t d : layout.batchable ? layout.shapeFor(a, -1) : a.desc.shape) t->add_shape(d);
    }
}

}  // namespace poprt::serve
