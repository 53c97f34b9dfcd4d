// popef-serve's parts: KServe datatypes and JSON tensor data against hand-written values, the
// batch layout's row copies against hand-computed positions, the protocol's parsing and replies,
// the metrics text, and the batcher on compiled models, its outputs compared with the reference
// evaluator's on each request's own rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "popef/popef.h"
#include "serve/batcher.h"
#include "serve/http_protocol.h"
#include "serve/layout.h"
#include "serve/metrics.h"
#include "serve/model.h"
#include "serve/tensors.h"
#include "tests/unit/runtime/runtime_test_util.h"
#include "tests/unit/serve/serve_test_util.h"

namespace poprt::serve {
namespace {

using json = nlohmann::json;
namespace rt = poprt::runtime;
using testing::as;
using testing::bytesOf;
using testing::desc;

// ---------------------------------------------------------------------------- datatypes, JSON data

TEST(ServeTensors, DatatypeNames) {
  const std::pair<const char*, DType> table[] = {{"BOOL", DType::Bool},     {"INT8", DType::Int8},     {"INT16", DType::Int16},
                                                 {"INT32", DType::Int32},   {"INT64", DType::Int64},   {"UINT8", DType::UInt8},
                                                 {"UINT16", DType::UInt16}, {"UINT32", DType::UInt32}, {"UINT64", DType::UInt64},
                                                 {"FP16", DType::Float16},  {"BF16", DType::BFloat16}, {"FP32", DType::Float},
                                                 {"FP64", DType::Double}};
  for (const auto& [name, dtype] : table) {
    EXPECT_EQ(dtypeFromKserve(name), dtype) << name;
    EXPECT_EQ(kserveDatatype(dtype), name) << name;
  }
  EXPECT_FALSE(dtypeFromKserve("BYTES"));
  EXPECT_FALSE(dtypeFromKserve("fp32"));
  EXPECT_FALSE(kserveDatatype(DType::String));
  EXPECT_FALSE(kserveDatatype(DType::Complex64));
}

TEST(ServeTensors, NestedAndFlatDataGiveTheSameBytes) {
  auto flat = decodeJsonData(json::parse("[1, 2.5, -3, 4, 5, 6]"), DType::Float, 6);
  auto nested = decodeJsonData(json::parse("[[[1, 2.5]], [[-3, 4]], [[5, 6]]]"), DType::Float, 6);
  ASSERT_TRUE(flat.ok()) << flat.error().message();
  ASSERT_TRUE(nested.ok()) << nested.error().message();
  EXPECT_EQ(*flat, *nested);
  EXPECT_EQ(as<float>(*flat), (std::vector<float>{1, 2.5f, -3, 4, 5, 6}));
}

TEST(ServeTensors, EveryDtypeDecodes) {
  // Half and bfloat16 bit patterns by hand: 1.5 = 0x3E00 (half), 0x3FC0 (bfloat16); -2 = 0xC000 / 0xC000.
  EXPECT_EQ(as<uint16_t>(*decodeJsonData(json::parse("[1.5, -2]"), DType::Float16, 2)), (std::vector<uint16_t>{0x3E00, 0xC000}));
  EXPECT_EQ(as<uint16_t>(*decodeJsonData(json::parse("[1.5, -2]"), DType::BFloat16, 2)), (std::vector<uint16_t>{0x3FC0, 0xC000}));
  EXPECT_EQ(as<double>(*decodeJsonData(json::parse("[0.1, 3]"), DType::Double, 2)), (std::vector<double>{0.1, 3}));
  EXPECT_EQ(*decodeJsonData(json::parse("[true, false, true]"), DType::Bool, 3), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(as<int8_t>(*decodeJsonData(json::parse("[-128, 127]"), DType::Int8, 2)), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(as<uint16_t>(*decodeJsonData(json::parse("[0, 65535]"), DType::UInt16, 2)), (std::vector<uint16_t>{0, 65535}));
  EXPECT_EQ(as<int64_t>(*decodeJsonData(json::parse("[-9223372036854775808, 9223372036854775807]"), DType::Int64, 2)),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX}));
  EXPECT_EQ(as<uint64_t>(*decodeJsonData(json::parse("[18446744073709551615]"), DType::UInt64, 1)),
            (std::vector<uint64_t>{UINT64_MAX}));
  EXPECT_EQ(as<int32_t>(*decodeJsonData(json::parse("[-2147483648]"), DType::Int32, 1)), (std::vector<int32_t>{INT32_MIN}));
}

TEST(ServeTensors, BadDataIsRefusedNamingTheElement) {
  auto error = [](const char* text, DType dtype, int64_t count) {
    auto r = decodeJsonData(json::parse(text), dtype, count);
    return r.ok() ? std::string("(accepted)") : r.error().message();
  };
  EXPECT_EQ(error("[127, 128]", DType::Int8, 2), "element 1: 128 is out of range");
  EXPECT_EQ(error("[-129]", DType::Int8, 1), "element 0: -129 is out of range");
  EXPECT_EQ(error("[-1]", DType::UInt32, 1), "element 0: -1 is out of range");
  EXPECT_EQ(error("[18446744073709551615]", DType::Int64, 1), "element 0: 18446744073709551615 is out of range");
  EXPECT_EQ(error("[1, 1.5]", DType::Int32, 2), "element 1: expected an integer, got 1.5");
  EXPECT_EQ(error("[1, 0]", DType::Bool, 2), "element 0: expected true or false, got 1");
  EXPECT_EQ(error("[\"1\"]", DType::Float, 1), "element 0: expected a number, got \"1\"");
  EXPECT_EQ(error("[null]", DType::Float, 1), "element 0: expected a number, got null");
  EXPECT_EQ(error("[1, 2]", DType::Float, 3), "2 elements, its shape holds 3");
  EXPECT_EQ(error("[[1, 2], [3, 4]]", DType::Float, 3), "more than the 3 elements its shape holds");
  EXPECT_EQ(error("5", DType::Float, 1), "(accepted)");  // a scalar's one element
  std::string deep(70, '[');
  deep += "1" + std::string(70, ']');
  EXPECT_EQ(error(deep.c_str(), DType::Float, 1), "arrays nested deeper than 64");
}

TEST(ServeTensors, EncodesElementsAsJson) {
  EXPECT_EQ(encodeJsonData(bytesOf<float>({1.5f, -2, NAN, INFINITY}), DType::Float).dump(), "[1.5,-2.0,null,null]");
  EXPECT_EQ(encodeJsonData(bytesOf<uint16_t>({0x3E00, 0xC000}), DType::Float16).dump(), "[1.5,-2.0]");
  EXPECT_EQ(encodeJsonData(std::vector<uint8_t>{1, 0, 7}, DType::Bool).dump(), "[true,false,true]");
  EXPECT_EQ(encodeJsonData(bytesOf<int64_t>({INT64_MIN, 3}), DType::Int64).dump(), "[-9223372036854775808,3]");
  EXPECT_EQ(encodeJsonData(bytesOf<uint64_t>({UINT64_MAX}), DType::UInt64).dump(), "[18446744073709551615]");
  EXPECT_EQ(encodeJsonData(bytesOf<int8_t>({-5, 9}), DType::Int8).dump(), "[-5,9]");
  // A float32 output goes out as the double it is, so a client reading a double gets it exactly.
  const float third = 1.0f / 3;
  EXPECT_EQ(static_cast<float>(encodeJsonData(bytesOf<float>({third}), DType::Float)[0].get<double>()), third);
}

// ---------------------------------------------------------------------------- layout

TEST(ServeLayout, BatchAxisZeroAndRowCopies) {
  auto l = planLayout({desc("x", "float32", {4, 3}, 4)}, {desc("y", "int64", {4, 2}, 8)}, 0);
  ASSERT_TRUE(l.ok()) << l.error().message();
  EXPECT_TRUE(l->batchable) << l->why_not_batchable;
  EXPECT_EQ(l->batch, 4);
  EXPECT_EQ(l->inputs[0].row_bytes, 12u);
  EXPECT_EQ(l->outputs[0].row_bytes, 16u);
  EXPECT_EQ(l->shapeFor(l->inputs[0], 2), (Shape{2, 3}));
  EXPECT_EQ(l->bytesFor(l->outputs[0], 3), 48u);
}

TEST(ServeLayout, BatchAxisOneCopiesEachOuterBlock) {
  // x: [2, 3, 2] batched along axis 1: two outer blocks of 3 rows of 2 floats.
  auto l = planLayout({desc("x", "float32", {2, 3, 2}, 4)}, {desc("y", "float32", {2, 3}, 4)}, 1);
  ASSERT_TRUE(l.ok()) << l.error().message();
  ASSERT_TRUE(l->batchable) << l->why_not_batchable;
  const AnchorLayout& x = l->inputs[0];
  EXPECT_EQ(x.outer, 2);
  EXPECT_EQ(x.row_bytes, 8u);
  // A request of 2 rows ([2, 2, 2]: a0 a1 | b0 b1) placed at row 1 of the batch.
  std::vector<float> req = {10, 11, 20, 21, 30, 31, 40, 41};
  std::vector<float> batch(12, 0);
  std::span<uint8_t> batch_bytes(reinterpret_cast<uint8_t*>(batch.data()), batch.size() * 4);
  copyRowsIn(x, 3, bytesOf(req), 2, 1, batch_bytes);
  EXPECT_EQ(batch, (std::vector<float>{0, 0, 10, 11, 20, 21, 0, 0, 30, 31, 40, 41}));
  std::vector<uint8_t> back(req.size() * 4);
  copyRowsOut(x, 3, batch_bytes, 1, 2, back);
  EXPECT_EQ(as<float>(back), req);
  std::vector<uint8_t> one(2 * 8);
  copyRowsOut(x, 3, batch_bytes, 2, 1, one);
  EXPECT_EQ(as<float>(one), (std::vector<float>{20, 21, 40, 41}));
}

TEST(ServeLayout, ModelsThatCannotBatchSayWhy) {
  auto l = planLayout({desc("x", "float32", {4, 3}, 4)}, {desc("s", "float32", {3}, 4)}, 0);
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(l->batchable);
  EXPECT_EQ(l->batch, 1);
  EXPECT_NE(l->why_not_batchable.find("'s'"), std::string::npos) << l->why_not_batchable;
  EXPECT_EQ(l->shapeFor(l->inputs[0], 1), (Shape{4, 3}));
  EXPECT_EQ(l->bytesFor(l->inputs[0], 1), 48u);

  auto two = planLayout({desc("a", "float32", {4, 3}, 4), desc("b", "float32", {2, 3}, 4)}, {}, 0);
  ASSERT_TRUE(two.ok());
  EXPECT_FALSE(two->batchable);
  EXPECT_NE(two->why_not_batchable.find("'b'"), std::string::npos) << two->why_not_batchable;

  rt::DataDesc seq = desc("q", "float32", {}, 4);
  seq.kind = rt::AnchorKind::Sequence;
  seq.format = rt::DataFormat::OnnxProto;
  auto bad = planLayout({seq}, {}, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "input 'q' is not a tensor: popef-serve serves tensors only");
  rt::DataDesc str = desc("t", "string", {2}, 0);
  str.format = rt::DataFormat::OnnxProto;
  auto strings = planLayout({desc("x", "float32", {2}, 4)}, {str}, 0);
  ASSERT_FALSE(strings.ok());
  EXPECT_NE(strings.error().message().find("output 't' is string"), std::string::npos);
}

// ---------------------------------------------------------------------------- protocol

ModelLayout twoInputLayout() {
  auto l = planLayout({desc("a", "float32", {4, 2}, 4), desc("b", "int32", {4}, 4)}, {desc("y", "float32", {4, 2}, 4)}, 0);
  EXPECT_TRUE(l.ok() && l->batchable);
  return *l;
}

TEST(ServeProtocol, ParsesJsonAndBinaryInputsInModelOrder) {
  const ModelLayout l = twoInputLayout();
  // b as binary (2 rows of int32), a as nested JSON; the inputs in the other order than the model's.
  const std::string header =
      R"({"id": "q1", "inputs": [{"name": "b", "shape": [2], "datatype": "INT32", "parameters": {"binary_data_size": 8}},)"
      R"( {"name": "a", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2], [3, 4]]}],)"
      R"( "outputs": [{"name": "y", "parameters": {"binary_data": true}}]})";
  std::string body = header;
  const std::vector<int32_t> b = {7, -8};
  body.append(reinterpret_cast<const char*>(b.data()), 8);
  auto call = parseInfer(body, std::to_string(header.size()), l);
  ASSERT_TRUE(call.ok()) << call.error().message();
  EXPECT_EQ(call->id, "q1");
  EXPECT_EQ(call->request.rows, 2);
  ASSERT_EQ(call->request.inputs.size(), 2u);
  EXPECT_EQ(as<float>(call->request.inputs[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(as<int32_t>(call->request.inputs[1]), b);
  ASSERT_EQ(call->outputs.size(), 1u);
  EXPECT_TRUE(call->outputs[0].binary);

  // The reply: JSON header, then the binary output; its length in header_length.
  ServeResult result;
  result.outputs.push_back({{2, 2}, bytesOf<float>({0.5f, 1, 2, 3})});
  HttpReply r = inferReply({"m"}, *call, l, result);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/octet-stream");
  ASSERT_EQ(r.body.size(), r.header_length + 16);
  json j = json::parse(r.body.substr(0, r.header_length));
  EXPECT_EQ(j["id"], "q1");
  EXPECT_EQ(j["model_name"], "m");
  EXPECT_EQ(j["outputs"][0]["shape"], json::parse("[2, 2]"));
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 16);
  float tail[4];
  std::memcpy(tail, r.body.data() + r.header_length, 16);
  EXPECT_EQ(tail[3], 3);

  // Without "outputs": every output, as JSON.
  auto plain = parseInfer(R"({"inputs": [{"name": "a", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]},
                                          {"name": "b", "shape": [1], "datatype": "INT32", "data": [3]}]})",
                          "", l);
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  ServeResult one;
  one.outputs.push_back({{1, 2}, bytesOf<float>({4, 5})});
  HttpReply pr = inferReply({"m"}, *plain, l, one);
  EXPECT_EQ(pr.header_length, 0u);
  EXPECT_EQ(pr.content_type, "application/json");
  EXPECT_EQ(json::parse(pr.body)["outputs"][0]["data"], json::parse("[4.0, 5.0]"));
}

TEST(ServeProtocol, RefusesWhatDoesNotFitTheModel) {
  const ModelLayout l = twoInputLayout();
  const std::string a1 = R"({"name": "a", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]})";
  const std::string b1 = R"({"name": "b", "shape": [1], "datatype": "INT32", "data": [3]})";
  const std::string b2 = R"({"name": "b", "shape": [2], "datatype": "INT32", "data": [3, 4]})";
  auto error = [&](const std::string& body, const std::string& header_length = "") {
    auto r = parseInfer(body, header_length, l);
    return r.ok() ? std::string("(accepted)") : r.error().message();
  };
  EXPECT_EQ(error("{\"inputs\": [" + a1 + ", " + b1 + "]}"), "(accepted)");
  EXPECT_EQ(error("{\"inputs\": [" + a1 + ", " + b2 + "]}"), "input 'b': 2 rows along axis 0, input 'a' has 1");
  EXPECT_EQ(error("{\"inputs\": [" + a1 + "]}"), "input 'b' is missing");
  EXPECT_EQ(error("[]"), "the request must be a JSON object");
  // A number beyond a double is a bad request, in words without the JSON library's tags.
  EXPECT_EQ(error(R"({"inputs": [{"name": "a", "shape": [1, 2], "datatype": "FP32", "data": [1e999, 2]}]})"),
            "the request is not valid JSON: number overflow parsing '1e999'");
  EXPECT_EQ(error("{}"), "the request has no \"inputs\" (the model takes: a, b)");
  EXPECT_EQ(error("{\"inputs\": {}}"), "\"inputs\" must be an array");
  EXPECT_EQ(error(R"({"inputs": [{"name": "a", "shape": [1, 2], "datatype": "FP32"}]})"),
            "input 'a': no \"data\" (nor binary_data_size)");
  EXPECT_EQ(error(R"({"inputs": [{"name": "a", "shape": [1, -2], "datatype": "FP32", "data": []}]})"),
            "input 'a': \"shape\" [1,-2] must hold non-negative integers");
  EXPECT_EQ(error(R"({"inputs": [{"name": "a", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]}]})"),
            "input 'a': shape [1,3], the model takes [-1,2] with 1..4 rows along axis 0");
  EXPECT_EQ(error("{\"inputs\": [" + a1 + ", " + b1 + "], \"outputs\": [{\"name\": \"y\"}, {\"name\": \"y\"}]}"),
            "output 'y' is asked for twice");
  EXPECT_EQ(error("{\"inputs\": [" + a1 + ", " + b1 + "], \"parameters\": {\"binary_data_output\": 1}}"),
            "parameters: \"binary_data_output\" must be true or false");
  // Parameters popef-serve does not act on are refused, not ignored.
  EXPECT_EQ(
      error("{\"inputs\": [" + a1 + ", " + b1 + "], \"outputs\": [{\"name\": \"y\", \"parameters\": {\"classification\": 3}}]}"),
      "output 'y': parameter 'classification' is not supported");
  EXPECT_EQ(error("{\"inputs\": [" + a1 + ", " + b1 + "], \"parameters\": {\"priority\": 1}}"),
            "parameter 'priority' is not supported");
  EXPECT_EQ(error("{\"inputs\": [" + a1 + ", " + b1 + "]}", "x12"),
            "Inference-Header-Content-Length 'x12' is not a length within the body (" +
                std::to_string(std::string("{\"inputs\": [" + a1 + ", " + b1 + "]}").size()) + " bytes)");
  // A BOOL input's binary bytes must be 0 or 1.
  auto lb = planLayout({desc("m", "bool", {2}, 1)}, {desc("o", "bool", {2}, 1)}, 0);
  const std::string h = R"({"inputs": [{"name": "m", "shape": [2], "datatype": "BOOL", "parameters": {"binary_data_size": 2}}]})";
  auto bad_bool = parseInfer(h + std::string("\x01\x02", 2), std::to_string(h.size()), *lb);
  ASSERT_FALSE(bad_bool.ok());
  EXPECT_EQ(bad_bool.error().message(), "input 'm': BOOL byte 1 is 2, not 0 or 1");
}

TEST(ServeProtocol, MetadataAndErrors) {
  const ModelLayout l = twoInputLayout();
  json m = modelMetadata({"m"}, l);
  EXPECT_EQ(m["inputs"][0], json::parse(R"({"name": "a", "datatype": "FP32", "shape": [-1, 2]})"));
  EXPECT_EQ(m["inputs"][1], json::parse(R"({"name": "b", "datatype": "INT32", "shape": [-1]})"));
  json c = modelConfig({"m"}, l, {true, std::chrono::microseconds(250)}, 2);
  // Triton's entries: the batch axis (0, of 4 rows) left out of dims.
  EXPECT_EQ(c["input"], json::parse(R"([{"name": "a", "data_type": "TYPE_FP32", "dims": [2]},
                                        {"name": "b", "data_type": "TYPE_INT32", "dims": []}])"));
  EXPECT_EQ(c["output"][0], json::parse(R"({"name": "y", "data_type": "TYPE_FP32", "dims": [2]})"));
  EXPECT_EQ(c["instance_group"][0]["count"], 2);
  EXPECT_EQ(c["max_batch_size"], 4);
  EXPECT_EQ(c["dynamic_batching"]["max_queue_delay_microseconds"], 250);
  EXPECT_EQ(c["replicas"], 2);
  HttpReply e = errorReply(404, "unknown model 'x'");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(json::parse(e.body), json::parse(R"({"error": "unknown model 'x'"})"));
  ServeResult failed;
  failed.status = 503;
  failed.error = "busy";
  EXPECT_EQ(inferReply({"m"}, {}, l, failed).status, 503);
}

// ---------------------------------------------------------------------------- metrics

TEST(ServeMetrics, HistogramBucketsAreCumulative) {
  Histogram h;
  h.observe(0.00005);  // below the first bound
  h.observe(0.0003);   // (0.00025, 0.0005]
  h.observe(0.0005);   // on a bound: in it
  h.observe(100);      // above every bound
  std::string out;
  h.render("t", "model=\"m\"", out);
  EXPECT_NE(out.find("t_bucket{model=\"m\",le=\"0.0001\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_bucket{model=\"m\",le=\"0.00025\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_bucket{model=\"m\",le=\"0.0005\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_bucket{model=\"m\",le=\"10\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_bucket{model=\"m\",le=\"+Inf\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_count{model=\"m\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_sum{model=\"m\"} 100.00085\n"), std::string::npos) << out;
}

TEST(ServeMetrics, RendersEveryModelAndResponseCode) {
  ServerMetrics s;
  ModelMetrics* m = s.addModel("a\"b");
  m->batch = 4;
  m->batches = 2;
  m->rows = 6;
  m->success = 3;
  s.countResponse(200);
  s.countResponse(200);
  s.countResponse(404);
  const std::string out = s.render();
  EXPECT_NE(out.find("# TYPE poprt_inference_request_success_total counter\n"), std::string::npos);
  EXPECT_NE(out.find("poprt_inference_request_success_total{model=\"a\\\"b\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("poprt_batch_fill_ratio{model=\"a\\\"b\"} 0.75\n"), std::string::npos) << out;
  EXPECT_NE(out.find("poprt_http_responses_total{code=\"200\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("poprt_http_responses_total{code=\"404\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# TYPE poprt_inference_queue_duration_seconds histogram\n"), std::string::npos);
}

TEST(ServeMetrics, StatisticsAndTritonNamesCountRequestsAndBatches) {
  using std::chrono::microseconds;
  ServerMetrics s;
  ModelMetrics* m = s.addModel("m");
  m->queued(microseconds(30));
  m->queued(microseconds(50));
  m->batchRun(3, microseconds(10), microseconds(200), microseconds(7));
  m->requestDone(true, microseconds(400));
  m->requestDone(true, microseconds(600));
  m->requestRefused(microseconds(5));
  const Statistics st = m->statistics();
  EXPECT_EQ(std::make_pair(st.success.count, st.success.ns), (std::pair<uint64_t, uint64_t>{2, 1000000}));
  EXPECT_EQ(std::make_pair(st.fail.count, st.fail.ns), (std::pair<uint64_t, uint64_t>{1, 5000}));
  EXPECT_EQ(std::make_pair(st.queue.count, st.queue.ns), (std::pair<uint64_t, uint64_t>{2, 80000}));
  EXPECT_EQ(std::make_pair(st.inference_count, st.execution_count), (std::pair<uint64_t, uint64_t>{3, 1}));
  ASSERT_EQ(st.by_batch_size.size(), 1u);
  EXPECT_EQ(st.by_batch_size.at(3).compute_infer.ns, 200000u);
  EXPECT_GT(st.last_inference_ms, 0u);
  const std::string out = s.render();
  EXPECT_NE(out.find("nv_inference_request_success{model=\"m\",version=\"1\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("nv_inference_request_failure{model=\"m\",version=\"1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("nv_inference_count{model=\"m\",version=\"1\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("nv_inference_request_duration_us{model=\"m\",version=\"1\"} 1005\n"), std::string::npos) << out;
  EXPECT_NE(out.find("nv_inference_queue_duration_us{model=\"m\",version=\"1\"} 80\n"), std::string::npos) << out;
  EXPECT_NE(out.find("nv_inference_compute_infer_duration_us{model=\"m\",version=\"1\"} 200\n"), std::string::npos) << out;
}

// ---------------------------------------------------------------------------- the batcher on a compiled model

namespace rtt = poprt::runtime::testing;

// The first `rows` rows of x ([n, 8]) as a tensor of their own.
Tensor rowsOf(const Tensor& x, int64_t first, int64_t rows) {
  Tensor t(DType::Float, {rows, x.shape()[1]});
  const auto src = x.data<float>();
  std::copy(src.begin() + first * x.shape()[1], src.begin() + (first + rows) * x.shape()[1], t.data<float>().begin());
  return t;
}

class BatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    popef_ = rtt::writeModel(rtt::mlpModel(4), dir_.path(), "mlp");
    runner_ = std::make_unique<rt::ModelRunner>(popef_, rtt::privateSystem());
    auto l = planLayout(runner_->getExecuteInputs(), runner_->getExecuteOutputs(), 0);
    ASSERT_TRUE(l.ok() && l->batchable);
    layout_ = *l;
    x_ = rtt::randomTensor({8, 8}, 99);
    metrics_ = server_metrics_.addModel("mlp");
    metrics_->batch = layout_.batch;
  }

  ServeRequest request(int64_t first, int64_t rows) {
    ServeRequest r;
    r.rows = rows;
    auto t = rowsOf(x_, first, rows);
    r.inputs.emplace_back(t.bytes().begin(), t.bytes().end());
    return r;
  }

  // The evaluator's y for those rows, on a model of that many rows with the same weights.
  void expectRows(const ServeResult& r, int64_t first, int64_t rows) {
    ASSERT_EQ(r.status, 200) << r.error;
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].shape, (Shape{rows, 6}));
    ASSERT_EQ(r.outputs[0].bytes.size(), static_cast<size_t>(rows * 6 * 4));
    const Tensor want = rtt::reference(rtt::mlpModel(rows), "x", rowsOf(x_, first, rows));
    rtt::expectNear(reinterpret_cast<const float*>(r.outputs[0].bytes.data()), want,
                    "rows " + std::to_string(first) + ".." + std::to_string(first + rows));
  }

  rtt::TempDir dir_;
  std::string popef_;
  std::unique_ptr<rt::ModelRunner> runner_;
  ModelLayout layout_;
  Tensor x_;
  ServerMetrics server_metrics_;
  ModelMetrics* metrics_ = nullptr;
};

TEST_F(BatcherTest, RequestsThatFitShareOneBatchAndGetTheirOwnRows) {
  Batcher b(*runner_, layout_, {true, std::chrono::seconds(5)}, *metrics_);
  // 1 + 2 + 1 rows: one full batch, run as soon as it is full (long before the 5 s delay).
  auto f1 = b.submit(request(0, 1));
  auto f2 = b.submit(request(3, 2));
  auto f3 = b.submit(request(7, 1));
  ASSERT_EQ(f3.wait_for(std::chrono::seconds(4)), std::future_status::ready);
  expectRows(f1.get(), 0, 1);
  expectRows(f2.get(), 3, 2);
  expectRows(f3.get(), 7, 1);
  EXPECT_EQ(metrics_->batches, 1u);
  EXPECT_EQ(metrics_->rows, 4u);
}

TEST_F(BatcherTest, ARequestThatDoesNotFitOpensTheNextBatch) {
  Batcher b(*runner_, layout_, {true, std::chrono::milliseconds(100)}, *metrics_);
  auto f1 = b.submit(request(0, 3));
  auto f2 = b.submit(request(2, 2));  // 3 + 2 > 4: the next batch, padded
  auto f3 = b.submit(request(4, 4));  // a full batch: alone
  expectRows(f1.get(), 0, 3);
  expectRows(f2.get(), 2, 2);
  expectRows(f3.get(), 4, 4);
  EXPECT_EQ(metrics_->batches, 3u);
  EXPECT_EQ(metrics_->rows, 9u);
  EXPECT_EQ(metrics_->pending, 0);
}

TEST_F(BatcherTest, WithoutDynamicBatchingEachRequestRunsAlone) {
  Batcher b(*runner_, layout_, {false, std::chrono::seconds(1)}, *metrics_);
  std::vector<std::future<ServeResult>> fs;
  for (int64_t i = 0; i < 4; ++i) fs.push_back(b.submit(request(i, 1)));
  for (int64_t i = 0; i < 4; ++i) expectRows(fs[static_cast<size_t>(i)].get(), i, 1);
  EXPECT_EQ(metrics_->batches, 4u);
}

TEST_F(BatcherTest, StopRunsWhatIsQueuedThenRefuses) {
  Batcher b(*runner_, layout_, {true, std::chrono::seconds(30)}, *metrics_);
  auto f = b.submit(request(1, 1));  // would wait 30 s for company
  b.stop();                          // runs it now
  ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  expectRows(f.get(), 1, 1);
  ServeResult late = b.submit(request(0, 1)).get();
  EXPECT_EQ(late.status, 503);
}

// A model batched along axis 1 (compile option batch_axis = 1): y = x * 2 for x [2, 3, 5].
TEST(ServedModel, ReadsTheBatchAxisFromThePopef) {
  rtt::TempDir dir;
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", rtt::f32({2, 3, 5}));
  Tensor two(DType::Float, {});
  two.data<float>()[0] = 2;
  ir::Value* c = g.addInitializer("two", two);
  ir::Value* y = g.addValue("y", rtt::f32({2, 3, 5}));
  g.addNode("Mul", {x, c}, {y}, "mul");
  g.addOutput(y);
  const std::string path = rtt::writeModel(m, dir.path(), "axis1");
  auto file = popef::readPopef(path);
  ASSERT_TRUE(file.ok()) << file.error().message();
  file->metadata.compile_options["batch_axis"] = "1";
  ASSERT_TRUE(popef::writePopef(path, *file).ok());

  ServerMetrics metrics;
  auto served = ServedModel::load({"m"}, path, {true, std::chrono::seconds(5)}, metrics);
  ASSERT_TRUE(served.ok()) << served.error().message();
  const ModelLayout& l = (*served)->layout();
  ASSERT_TRUE(l.batchable) << l.why_not_batchable;
  EXPECT_EQ(l.axis, 1);
  EXPECT_EQ(l.batch, 3);
  // Requests of 2 and 1 rows along axis 1: [2, 2, 5] and [2, 1, 5].
  auto make = [](int64_t rows, float base) {
    ServeRequest r;
    r.rows = rows;
    std::vector<float> v(static_cast<size_t>(2 * rows * 5));
    for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
    r.inputs.push_back(bytesOf(v));
    return std::make_pair(r, v);
  };
  auto [r1, v1] = make(2, 100);
  auto [r2, v2] = make(1, -50);
  auto f1 = (*served)->batcher().submit(r1);
  auto f2 = (*served)->batcher().submit(r2);
  for (auto [f, v, rows] : {std::make_tuple(&f1, &v1, 2), std::make_tuple(&f2, &v2, 1)}) {
    ServeResult r = f->get();
    ASSERT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.outputs[0].shape, (Shape{2, rows, 5}));
    std::vector<float> want(*v);
    for (float& w : want) w *= 2;
    EXPECT_EQ(as<float>(r.outputs[0].bytes), want);
  }
  EXPECT_EQ((*served)->metrics().batches, 1u);

  file->metadata.compile_options["batch_axis"] = "x";
  ASSERT_TRUE(popef::writePopef(path, *file).ok());
  auto bad = ServedModel::load({"m"}, path, {}, metrics);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), path + ": compile option batch_axis 'x' is not an axis");
}

}  // namespace
}  // namespace poprt::serve
