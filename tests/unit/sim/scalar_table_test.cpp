// The scalar-function table (lib/ops/scalar_math.h) through the codelets: every Unary function and
// every activation kind, in float32 and float16, on random values and the edge cases (zeros, NaN,
// infinities, values beyond float16's range), guard bytes around each output, against the
// reference evaluator's op of the same name.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "lib/exec/codelets.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/ops/scalar_math.h"
#include "sim/codelets.h"
#include "tests/unit/sim/codelet_test_util.h"

namespace poprt::sim {
namespace {

using namespace codelet_test;

struct Reference {
  std::string op;
  std::map<std::string, ir::AttributeValue> attrs;
  std::string domain;
};

// The op each Unary function computes, from its row of the table (scalar_math.h): a new row is
// swept here as it is added.
Reference unaryReference(ops::UnaryFn fn) {
  if (fn == ops::UnaryFn::Gelu) return {"Gelu", {{"approximate", std::string("none")}}, "ai.graphcore"};
  if (fn == ops::UnaryFn::GeluTanh) return {"Gelu", {{"approximate", std::string("tanh")}}, "ai.graphcore"};
  switch (fn) {
#define POPRT_UNARY_REFERENCE(name, id, op_type, fp16, cost, value) \
  case ops::UnaryFn::name: return {op_type, {}, ""};
    POPRT_UNARY_FUNCTIONS(POPRT_UNARY_REFERENCE)
#undef POPRT_UNARY_REFERENCE
  }
  return {};
}

std::vector<float> inputs(uint32_t seed) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.f, -0.f, 1.f, -1.f, nan, inf, -inf, 1e-6f, -1e-6f, 70000.f, -70000.f, 6.f, -3.f};
  for (float v : randomVector(51, seed)) x.push_back(v);
  return x;
}

// Equal NaN-ness and infinities, else within `rel` of the reference (plus `abs`).
void expectSame(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& x, double rel,
                double abs) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("x = " + std::to_string(x[i]));
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]);
    } else {
      EXPECT_NEAR(got[i], want[i], abs + rel * std::fabs(want[i]));
    }
  }
}

std::vector<float> roundedToHalf(std::vector<float> v) {
  for (float& x : v) x = halfBitsToFloat(floatToHalfBits(x));
  return v;
}

// Runs the vertex in float32 and in float16 and compares both with the reference on the same
// (for float16: half-rounded) inputs.
void sweep(exec::Codelet codelet, int64_t fn_param_first, const std::vector<float>& fparams, uint32_t seed,
           const std::function<std::vector<float>(const std::vector<float>&)>& reference_of) {
  const std::vector<float> x = inputs(seed);
  const int64_t n = static_cast<int64_t>(x.size());
  auto params = [&](int64_t fn) -> std::vector<int64_t> {
    return codelet == exec::Codelet::Unary ? std::vector<int64_t>{fn, n} : std::vector<int64_t>{n, fn};
  };
  {
    TileMemory mem;
    exec::Field out = mem.add(std::vector<float>(x.size(), 7.f)), in = mem.add(x);
    exec::Vertex v{0, codelet, DType::Float, {out, in}, params(fn_param_first), fparams};
    ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
    runVertex(v, mem.bytes.data());
    SCOPED_TRACE("float32");
    expectSame(mem.read(out), reference_of(x), x, 1e-5, 1e-6);
    mem.expectGuardsIntact(out);
  }
  {
    const std::vector<float> xh = roundedToHalf(x);
    TileMemory mem;
    exec::Field out = mem.addHalf(std::vector<float>(x.size(), 7.f)), in = mem.addHalf(xh);
    exec::Vertex v{0, codelet, DType::Float16, {out, in}, params(fn_param_first), fparams};
    ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
    runVertex(v, mem.bytes.data());
    SCOPED_TRACE("float16");
    // The codelet computes in float32 and rounds once: at most half a float16 ulp from the
    // float32 reference rounded, so one ulp (2^-10 relative) from it, or the smallest subnormal.
    expectSame(mem.readHalf(out), roundedToHalf(reference_of(xh)), xh, 1.0 / 1024, 6e-8);
    mem.expectGuardsIntact(out);
  }
}

TEST(ScalarTable, EveryUnaryFunctionInFloat32AndFloat16) {
  for (int64_t id = 0; id <= static_cast<int64_t>(ops::kLastUnaryFn); ++id) {
    const auto fn = static_cast<ops::UnaryFn>(id);
    const Reference ref = unaryReference(fn);
    SCOPED_TRACE("unary function " + std::to_string(id) + " (" + ref.op + ")");
    ASSERT_FALSE(ref.op.empty()) << "no op computes unary function " << id;
    sweep(exec::Codelet::Unary, id, {}, static_cast<uint32_t>(id + 1), [&](const std::vector<float>& x) {
      Tensor t = tensorOf(x, {static_cast<int64_t>(x.size())});
      return reference(ref.op, {&t}, ref.attrs, ref.domain);
    });
  }
}

TEST(ScalarTable, EveryActivationInFloat32AndFloat16) {
  const float alpha = 0.3f, beta = 0.4f, lo = -0.5f, hi = 0.7f;
  for (int64_t id = 0; id <= static_cast<int64_t>(ops::graphcore::kLastActivationKind); ++id) {
    std::string op;
    for (const char* name : {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Swish"})
      if (ops::graphcore::activationKind(name) == static_cast<ops::graphcore::ActivationKind>(id)) op = name;
    SCOPED_TRACE("activation " + std::to_string(id) + " (" + op + ")");
    ASSERT_FALSE(op.empty()) << "no op computes activation " << id;
    sweep(exec::Codelet::Activation, id, {alpha, beta, lo, hi}, static_cast<uint32_t>(id + 40), [&](const std::vector<float>& x) {
      Tensor t = tensorOf(x, {static_cast<int64_t>(x.size())});
      if (op == "Clip") {
        Tensor tl = tensorOf({lo}, {}), th = tensorOf({hi}, {});
        return reference("Clip", {&t, &tl, &th});
      }
      if (op == "Swish") {  // x * Sigmoid(x): SiLU as exporters write it
        std::vector<float> s = reference("Sigmoid", {&t});
        for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<float>(static_cast<double>(x[i]) * s[i]);
        return s;
      }
      std::map<std::string, ir::AttributeValue> attrs;
      if (op == "LeakyRelu") attrs = {{"alpha", alpha}};
      if (op == "HardSigmoid") attrs = {{"alpha", alpha}, {"beta", beta}};
      return reference(op, {&t}, attrs);
    });
  }
}

}  // namespace
}  // namespace poprt::sim
