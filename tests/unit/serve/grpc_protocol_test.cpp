// The gRPC messages as popef-serve reads them: typed contents of every datatype that has a field
// give the bytes raw contents give (the values written out by hand here), out-of-range and
// misplaced contents are refused naming the input, and the HTTP statuses map to gRPC's codes.
#include "serve/grpc_protocol.h"

#include <gtest/gtest.h>

#include "tests/unit/serve/serve_test_util.h"

namespace poprt::serve {
namespace {

using testing::as;
using testing::bytesOf;
using testing::desc;
using Request = inference::ModelInferRequest;

ModelLayout layoutOf(const std::string& dtype, size_t element) {
  auto l = planLayout({desc("x", dtype, {2, 2}, element)}, {desc("y", dtype, {2, 2}, element)}, 0);
  EXPECT_TRUE(l.ok());
  return *l;
}

Request::InferInputTensor* input(Request& q, const std::string& datatype, std::vector<int64_t> shape = {2, 2}) {
  auto* t = q.add_inputs();
  t->set_name("x");
  t->set_datatype(datatype);
  for (int64_t d : shape) t->add_shape(d);
  return t;
}

std::string error(const Request& q, const ModelLayout& l) {
  auto r = parseInferRequest(q, l);
  return r.ok() ? "(accepted)" : r.error().message();
}

TEST(GrpcProtocol, TypedContentsOfEveryFieldGiveTheElements) {
  {
    Request q;
    auto* c = input(q, "INT8")->mutable_contents();
    for (int v : {-128, 0, 5, 127}) c->add_int_contents(v);
    auto call = parseInferRequest(q, layoutOf("int8", 1));
    ASSERT_TRUE(call.ok()) << call.error().message();
    EXPECT_EQ(as<int8_t>(call->request.inputs[0]), (std::vector<int8_t>{-128, 0, 5, 127}));
  }
  {
    Request q;
    auto* c = input(q, "UINT16")->mutable_contents();
    for (unsigned v : {0u, 1u, 65535u, 300u}) c->add_uint_contents(v);
    auto call = parseInferRequest(q, layoutOf("uint16", 2));
    ASSERT_TRUE(call.ok()) << call.error().message();
    EXPECT_EQ(as<uint16_t>(call->request.inputs[0]), (std::vector<uint16_t>{0, 1, 65535, 300}));
  }
  {
    Request q;
    auto* c = input(q, "BOOL")->mutable_contents();
    for (bool v : {true, false, false, true}) c->add_bool_contents(v);
    auto call = parseInferRequest(q, layoutOf("bool", 1));
    ASSERT_TRUE(call.ok()) << call.error().message();
    EXPECT_EQ(call->request.inputs[0], (std::vector<uint8_t>{1, 0, 0, 1}));
  }
  {
    Request q;
    auto* c = input(q, "INT64")->mutable_contents();
    for (int64_t v : {INT64_MIN, int64_t{-1}, int64_t{0}, INT64_MAX}) c->add_int64_contents(v);
    auto call = parseInferRequest(q, layoutOf("int64", 8));
    ASSERT_TRUE(call.ok()) << call.error().message();
    EXPECT_EQ(as<int64_t>(call->request.inputs[0]), (std::vector<int64_t>{INT64_MIN, -1, 0, INT64_MAX}));
  }
  {
    Request q;
    auto* c = input(q, "FP64")->mutable_contents();
    for (double v : {0.5, -1.25, 1e300, 3.0}) c->add_fp64_contents(v);
    auto call = parseInferRequest(q, layoutOf("float64", 8));
    ASSERT_TRUE(call.ok()) << call.error().message();
    EXPECT_EQ(as<double>(call->request.inputs[0]), (std::vector<double>{0.5, -1.25, 1e300, 3.0}));
  }
}

TEST(GrpcProtocol, RawContentsAreTakenAsTheyAre) {
  Request q;
  input(q, "FP16");
  const std::vector<uint16_t> halves = {0x3c00, 0xc000, 0x7bff, 0x0001};  // 1, -2, 65504, the smallest subnormal
  const auto bytes = bytesOf(halves);
  q.add_raw_input_contents(std::string(bytes.begin(), bytes.end()));
  q.add_outputs()->set_name("y");
  auto call = parseInferRequest(q, layoutOf("float16", 2));
  ASSERT_TRUE(call.ok()) << call.error().message();
  EXPECT_EQ(as<uint16_t>(call->request.inputs[0]), halves);
  ASSERT_EQ(call->outputs.size(), 1u);
}

TEST(GrpcProtocol, RefusesWhatDoesNotFit) {
  const ModelLayout i8 = layoutOf("int8", 1);
  Request range;
  auto* c = input(range, "INT8")->mutable_contents();
  for (int v : {1, 2, 128, 4}) c->add_int_contents(v);
  EXPECT_EQ(error(range, i8), "input 'x': int_contents element 2 is 128, out of range");

  Request count;
  input(count, "INT8")->mutable_contents()->add_int_contents(1);
  EXPECT_EQ(error(count, i8), "input 'x': int_contents holds 1 elements, its shape 4");

  Request elsewhere;
  auto* e = input(elsewhere, "INT8")->mutable_contents();
  for (int v = 0; v < 4; ++v) e->add_int_contents(v);
  e->add_fp32_contents(1.0f);
  EXPECT_EQ(error(elsewhere, i8), "input 'x': contents in a field other than the one for INT8");

  Request raw_count;
  input(raw_count, "INT8");
  input(raw_count, "INT8")->set_name("z");
  raw_count.add_raw_input_contents("abcd");
  EXPECT_EQ(error(raw_count, i8), "1 raw_input_contents for 2 inputs (one each, in the order of inputs)");

  Request negative;
  input(negative, "INT8", {-1, 2});
  EXPECT_EQ(error(negative, i8), "input 'x': shape [-1,2] has a negative dim");

  Request no_type;
  input(no_type, "");
  EXPECT_EQ(error(no_type, i8), "input 'x': no \"datatype\" (the model takes INT8)");

  Request param;
  input(param, "INT8");
  param.add_raw_input_contents("abcd");
  (*param.mutable_parameters())["priority"].set_int64_param(1);
  EXPECT_EQ(error(param, i8), "parameter 'priority' is not supported");
}

TEST(GrpcProtocol, HttpStatusesMapToGrpcCodes) {
  // grpc::StatusCode: OK 0, INVALID_ARGUMENT 3, NOT_FOUND 5, RESOURCE_EXHAUSTED 8, INTERNAL 13, UNAVAILABLE 14.
  EXPECT_EQ(grpcCode(200), 0);
  EXPECT_EQ(grpcCode(400), 3);
  EXPECT_EQ(grpcCode(404), 5);
  EXPECT_EQ(grpcCode(413), 8);
  EXPECT_EQ(grpcCode(500), 13);
  EXPECT_EQ(grpcCode(503), 14);
}

}  // namespace
}  // namespace poprt::serve
