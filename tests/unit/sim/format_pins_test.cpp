// The numbers a PopEF stores for enums (vertex kinds and params, stream roles, steps, dtypes):
// written here as literals, from docs/POPEF.md, so that moving or renumbering an enum in the code
// fails this test instead of silently changing what every PopEF already written means.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "lib/exec/codelets.h"
#include "lib/exec/executable.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/ops/scalar_math.h"
#include "popef/popef.h"

namespace poprt {
namespace {

template <class E>
int64_t n(E e) {
  return static_cast<int64_t>(e);
}

TEST(FormatPins, VertexKinds) {
  using C = exec::Codelet;
  const std::vector<std::pair<C, int64_t>> pins = {
      {C::Unary, 1},      {C::Binary, 2},     {C::MatMul, 3}, {C::Fill, 4},    {C::ConvPartial, 5},
      {C::Pool, 6},       {C::Activation, 7}, {C::Reduce, 8}, {C::Softmax, 9}, {C::Norm, 10},
      {C::BatchNorm, 11}, {C::Attention, 12}, {C::Cast, 13},  {C::CumSum, 14}, {C::ElementwiseChain, 15}};
  for (const auto& [kind, id] : pins) EXPECT_EQ(n(kind), id);
  EXPECT_EQ(exec::kMaxCodelet, 15u) << "a new kind takes id 16, and this list and docs/POPEF.md name it";
  // docs/POPEF.md lists the ids as the kind list names them: "(1 Unary, 2 Binary, ..., 15 ElementwiseChain)".
  std::string listed = "(";
  for (uint32_t id = 1; id <= exec::kMaxCodelet; ++id)
    listed += (id > 1 ? ", " : "") + std::to_string(id) + " " + std::string(exec::codeletName(static_cast<C>(id)));
  listed += ")";
  std::ifstream doc(std::string(POPRT_SOURCE_DIR) + "/docs/POPEF.md");
  const std::string text{std::istreambuf_iterator<char>(doc), std::istreambuf_iterator<char>()};
  EXPECT_NE(text.find(listed), std::string::npos) << "docs/POPEF.md does not list " << listed;
  EXPECT_EQ(exec::codeletName(static_cast<C>(16)), "unknown");
}

TEST(FormatPins, UnaryAndBinaryFunctions) {
  using U = ops::UnaryFn;
  const std::vector<std::pair<U, int64_t>> unary = {
      {U::Relu, 0},      {U::Neg, 1},       {U::Abs, 2},        {U::Exp, 3},   {U::Log, 4},   {U::Sqrt, 5},
      {U::Sigmoid, 6},   {U::Tanh, 7},      {U::Reciprocal, 8}, {U::Floor, 9}, {U::Ceil, 10}, {U::Gelu, 11},
      {U::GeluTanh, 12}, {U::Softsign, 13}, {U::Softplus, 14},  {U::Sin, 15},  {U::Cos, 16},  {U::Round, 17}};
  for (const auto& [fn, id] : unary) EXPECT_EQ(n(fn), id);
  EXPECT_EQ(n(ops::kLastUnaryFn), 17);
  using B = ops::BinaryFn;
  const std::vector<std::pair<B, int64_t>> binary = {{B::Add, 0}, {B::Sub, 1}, {B::Mul, 2}, {B::Div, 3},
                                                     {B::Max, 4}, {B::Min, 5}, {B::Pow, 6}};
  for (const auto& [fn, id] : binary) EXPECT_EQ(n(fn), id);
  EXPECT_EQ(n(ops::kLastBinaryFn), 6);
}

TEST(FormatPins, ActivationsReductionsAndModes) {
  using A = ops::graphcore::ActivationKind;
  const std::vector<std::pair<A, int64_t>> acts = {{A::Relu, 0},        {A::Clip, 1},      {A::LeakyRelu, 2}, {A::Sigmoid, 3},
                                                   {A::HardSigmoid, 4}, {A::HardSwish, 5}, {A::Tanh, 6},      {A::Swish, 7}};
  for (const auto& [kind, id] : acts) EXPECT_EQ(n(kind), id);
  EXPECT_EQ(n(ops::graphcore::kLastActivationKind), 7);
  const std::vector<std::pair<exec::ReduceKind, int64_t>> reduce = {
      {exec::kReduceSum, 0},       {exec::kReduceMean, 1},     {exec::kReduceMax, 2}, {exec::kReduceMin, 3},
      {exec::kReduceProd, 4},      {exec::kReduceL1, 5},       {exec::kReduceL2, 6},  {exec::kReduceLogSum, 7},
      {exec::kReduceLogSumExp, 8}, {exec::kReduceSumSquare, 9}};
  for (const auto& [kind, id] : reduce) EXPECT_EQ(n(kind), id);
  EXPECT_EQ(exec::kLastReduceKind, 9);
  EXPECT_EQ(n(exec::kAligned), 0);
  EXPECT_EQ(n(exec::kBroadcast), 1);
  EXPECT_EQ(n(exec::kBiasNone), 0);
  EXPECT_EQ(n(exec::kBiasScalar), 1);
  EXPECT_EQ(n(exec::kBiasRow), 2);
  EXPECT_EQ(n(exec::kBiasColumn), 3);
  EXPECT_EQ(n(exec::kBiasFull), 4);
  EXPECT_EQ(n(exec::kPoolMax), 0);
  EXPECT_EQ(n(exec::kPoolAvg), 1);
  EXPECT_EQ(n(exec::kStepUnary), 0);
  EXPECT_EQ(n(exec::kStepBinary), 1);
}

TEST(FormatPins, StreamsStepsStrategiesValuesAndBlobs) {
  using R = exec::HostStream::Role;
  EXPECT_EQ(n(R::Input), 0);
  EXPECT_EQ(n(R::Output), 1);
  EXPECT_EQ(n(R::Weight), 2);
  EXPECT_EQ(n(R::Host), 3);
  using S = exec::StepKind;
  EXPECT_EQ(n(S::StreamIn), 0);
  EXPECT_EQ(n(S::StreamOut), 1);
  EXPECT_EQ(n(S::Exchange), 2);
  EXPECT_EQ(n(S::Compute), 3);
  EXPECT_EQ(n(S::HostCall), 4);
  EXPECT_EQ(n(exec::Strategy::Sharded), 0);
  EXPECT_EQ(n(exec::Strategy::Pipelined), 1);
  EXPECT_EQ(n(ValueKind::Tensor), 0);
  EXPECT_EQ(n(ValueKind::Sequence), 1);
  EXPECT_EQ(n(ValueKind::Optional), 2);
  EXPECT_EQ(n(ValueKind::OptionalSequence), 3);
  using P = popef::BlobType;
  EXPECT_EQ(n(P::Metadata), 1);
  EXPECT_EQ(n(P::Executable), 2);
  EXPECT_EQ(n(P::TensorData), 3);
  EXPECT_EQ(n(P::FeedData), 4);
  EXPECT_EQ(n(P::Opaque), 5);
  // Element types are ONNX's TensorProto.DataType numbers.
  EXPECT_EQ(n(DType::Float), 1);
  EXPECT_EQ(n(DType::Float16), 10);
  EXPECT_EQ(n(DType::Int64), 7);
  EXPECT_EQ(n(DType::BFloat16), 16);
}

}  // namespace
}  // namespace poprt
