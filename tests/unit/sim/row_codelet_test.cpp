// Activation, Reduce, Softmax, CumSum, Norm, BatchNorm and Attention codelets against the reference
// evaluator, with guard bytes around every output and sizes 0, 1, the vector width and +-1.
#include <gtest/gtest.h>

#include <limits>

#include "lib/exec/codelets.h"
#include "lib/ops/scalar_math.h"
#include "sim/codelets.h"
#include "tests/unit/sim/codelet_test_util.h"

namespace poprt::sim {
namespace {

using namespace codelet_test;

// Runs a checked vertex; its output is fields[0].
std::vector<float> run(const exec::Vertex& v, TileMemory& mem) {
  EXPECT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
  runVertex(v, mem.bytes.data());
  mem.expectGuardsIntact(v.fields[0]);
  return mem.read(v.fields[0]);
}

TEST(ActivationCodelet, EveryKindMatchesItsOp) {
  struct Case {
    const char* op;
    int64_t kind;
    std::map<std::string, ir::AttributeValue> attrs;
    float alpha, beta, lo, hi;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<Case> cases = {
      {"Relu", 0, {}, 0, 0, -inf, inf},      {"LeakyRelu", 2, {{"alpha", 0.3f}}, 0.3f, 0, -inf, inf},
      {"Sigmoid", 3, {}, 0, 0, -inf, inf},   {"HardSigmoid", 4, {{"alpha", 0.3f}, {"beta", 0.4f}}, 0.3f, 0.4f, -inf, inf},
      {"HardSwish", 5, {}, 0, 0, -inf, inf}, {"Tanh", 6, {}, 0, 0, -inf, inf},
  };
  for (const auto& c : cases)
    for (int64_t n : kSizes) {
      SCOPED_TRACE(std::string(c.op) + " n=" + std::to_string(n));
      auto x = randomVector(static_cast<size_t>(n), 21);
      TileMemory mem;
      exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(n))), in = mem.add(x);
      Tensor t = tensorOf(x, {n});
      expectClose(run({0, exec::Codelet::Activation, DType::Float, {out, in}, {n, c.kind}, {c.alpha, c.beta, c.lo, c.hi}}, mem),
                  reference(c.op, {&t}, c.attrs));
    }
  // Clip: bounds as inputs (opset 11+).
  auto x = randomVector(65, 22);
  Tensor t = tensorOf(x, {65}), lo = tensorOf({-0.5f}, {}), hi = tensorOf({0.7f}, {});
  TileMemory mem;
  exec::Field out = mem.add(std::vector<float>(65)), in = mem.add(x);
  expectClose(run({0, exec::Codelet::Activation, DType::Float, {out, in}, {65, 1}, {0, 0, -0.5f, 0.7f}}, mem),
              reference("Clip", {&t, &lo, &hi}));
}

TEST(ReduceCodelet, EveryKindOverOuterExtentInner) {
  const std::vector<std::pair<const char*, int64_t>> kinds = {{"ReduceSum", exec::kReduceSum},
                                                              {"ReduceMean", exec::kReduceMean},
                                                              {"ReduceMax", exec::kReduceMax},
                                                              {"ReduceMin", exec::kReduceMin},
                                                              {"ReduceProd", exec::kReduceProd},
                                                              {"ReduceL1", exec::kReduceL1},
                                                              {"ReduceL2", exec::kReduceL2},
                                                              {"ReduceLogSum", exec::kReduceLogSum},
                                                              {"ReduceLogSumExp", exec::kReduceLogSumExp},
                                                              {"ReduceSumSquare", exec::kReduceSumSquare}};
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1}, {2, 3, 1}, {1, 65, 1}, {3, 2, 4}, {2, 7, 3}, {4, 64, 1}};
  for (const auto& [op, kind] : kinds)
    for (const auto& [outer, extent, inner] : shapes) {
      SCOPED_TRACE(std::string(op) + " " + std::to_string(outer) + "x" + std::to_string(extent) + "x" + std::to_string(inner));
      auto x = randomVector(static_cast<size_t>(outer * extent * inner), 23);
      if (std::string(op) == "ReduceLogSum")  // a positive sum
        for (float& v : x) v = std::fabs(v) + 0.1f;
      Tensor t = tensorOf(x, {outer, extent, inner});
      Tensor axes(DType::Int64, {1});
      axes.data<int64_t>()[0] = 1;
      std::vector<float> want = std::string(op) == "ReduceSum"
                                    ? reference(op, {&t, &axes}, {{"keepdims", int64_t{0}}})
                                    : reference(op, {&t}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
      TileMemory mem;
      exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(outer * inner))), in = mem.add(x);
      expectClose(run({0, exec::Codelet::Reduce, DType::Float, {out, in}, {kind, outer, extent, inner}, {}}, mem), want);
    }
}

TEST(ReduceCodelet, MaxPropagatesNaN) {
  TileMemory mem;
  exec::Field out = mem.add({0.f}), in = mem.add({1.f, std::nanf(""), 3.f});
  auto got = run({0, exec::Codelet::Reduce, DType::Float, {out, in}, {exec::kReduceMax, 1, 3, 1}, {}}, mem);
  EXPECT_TRUE(std::isnan(got[0]));
}

TEST(SoftmaxCodelet, SoftmaxAndLogSoftmaxAlongTheMiddleAxis) {
  const std::vector<std::array<int64_t, 3>> shapes = {{0, 3, 1}, {1, 1, 1}, {2, 2, 1}, {3, 65, 1}, {2, 5, 3}, {1, 64, 2}};
  for (int64_t log = 0; log < 2; ++log)
    for (const auto& [outer, extent, inner] : shapes) {
      SCOPED_TRACE(std::to_string(log) + " " + std::to_string(outer) + "x" + std::to_string(extent) + "x" +
                   std::to_string(inner));
      auto x = randomVector(static_cast<size_t>(outer * extent * inner), 24);
      Tensor t = tensorOf(x, {outer, extent, inner});
      auto want = reference(log ? "LogSoftmax" : "Softmax", {&t}, {{"axis", int64_t{1}}});
      TileMemory mem;
      exec::Field out = mem.add(std::vector<float>(x.size())), in = mem.add(x);
      expectClose(run({0, exec::Codelet::Softmax, DType::Float, {out, in}, {log, outer, extent, inner}, {}}, mem), want);
    }
}

// The new kind of the typed-params change, written the way the note describes: its params in
// lib/exec/codelets.h, its functions in sim/row_codelets.cpp, its lowering in lower_rows.cpp.
TEST(CumSumCodelet, EveryDirectionAlongTheMiddleAxis) {
  const std::vector<std::array<int64_t, 3>> shapes = {{0, 3, 1}, {1, 1, 1}, {2, 2, 1}, {3, 65, 1}, {2, 5, 3}, {1, 64, 2}};
  for (int64_t exclusive = 0; exclusive < 2; ++exclusive)
    for (int64_t reverse = 0; reverse < 2; ++reverse)
      for (const auto& [outer, extent, inner] : shapes) {
        SCOPED_TRACE(std::to_string(exclusive) + std::to_string(reverse) + " " + std::to_string(outer) + "x" +
                     std::to_string(extent) + "x" + std::to_string(inner));
        auto x = randomVector(static_cast<size_t>(outer * extent * inner), 28);
        Tensor t = tensorOf(x, {outer, extent, inner});
        Tensor axis(DType::Int64, {});
        axis.data<int64_t>()[0] = 1;
        auto want = reference("CumSum", {&t, &axis}, {{"exclusive", exclusive}, {"reverse", reverse}});
        TileMemory mem;
        exec::Field out = mem.add(std::vector<float>(x.size())), in = mem.add(x);
        expectClose(run({0, exec::Codelet::CumSum, DType::Float, {out, in}, {exclusive, reverse, outer, extent, inner}, {}}, mem),
                    want);
      }
}

TEST(NormCodelet, LayerNormRowsWithAndWithoutBias) {
  for (int64_t rows : {0, 1, 3})
    for (int64_t N : {1, 2, 3, 64, 65})
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(N) + (with_bias ? " bias" : ""));
        auto x = randomVector(static_cast<size_t>(rows * N), 25), s = randomVector(static_cast<size_t>(N), 26),
             b = randomVector(static_cast<size_t>(N), 27);
        Tensor tx = tensorOf(x, {rows, N}), ts = tensorOf(s, {N}), tb = tensorOf(b, {N});
        std::vector<const Tensor*> ins{&tx, &ts};
        if (with_bias) ins.push_back(&tb);
        auto want = reference("LayerNormalization", ins, {{"epsilon", 1e-3f}});
        TileMemory mem;
        exec::Field out = mem.add(std::vector<float>(x.size())), in = mem.add(x), fs = mem.add(s);
        exec::Vertex v{0, exec::Codelet::Norm, DType::Float, {out, in, fs}, {rows, N, 0, 1, 0}, {1e-3f}};
        if (with_bias) v.fields.push_back(mem.add(b));
        expectClose(run(v, mem), want);
      }
}

TEST(NormCodelet, InstanceNormRowsFromAnyRow) {
  const int64_t N = 2, C = 3, S = 5;
  auto x = randomVector(N * C * S, 28), s = randomVector(C, 29), b = randomVector(C, 30);
  Tensor tx = tensorOf(x, {N, C, S}), ts = tensorOf(s, {C}), tb = tensorOf(b, {C});
  auto want = reference("InstanceNormalization", {&tx, &ts, &tb}, {{"epsilon", 1e-4f}});
  // Rows 2..5 (crossing from channel 2 of batch 0 into batch 1) as one block would see them.
  const int64_t first = 2, rows = 4;
  TileMemory mem;
  exec::Field out = mem.add(std::vector<float>(rows * S));
  exec::Field in = mem.add(std::vector<float>(x.begin() + first * S, x.begin() + (first + rows) * S));
  exec::Field fs = mem.add(s), fb = mem.add(b);
  expectClose(run({0, exec::Codelet::Norm, DType::Float, {out, in, fs, fb}, {rows, S, 1, C, first}, {1e-4f}}, mem),
              std::vector<float>(want.begin() + first * S, want.begin() + (first + rows) * S));
}

TEST(BatchNormCodelet, RangesWithAllChannelsOrASlice) {
  const int64_t N = 2, C = 4, inner = 3, total = N * C * inner;
  auto x = randomVector(total, 31), s = randomVector(C, 32), b = randomVector(C, 33), m = randomVector(C, 34);
  std::vector<float> var = randomVector(C, 35);
  for (float& v : var) v = std::fabs(v) + 0.5f;
  Tensor tx = tensorOf(x, {N, C, inner}), ts = tensorOf(s, {C}), tb = tensorOf(b, {C}), tm = tensorOf(m, {C}),
         tv = tensorOf(var, {C});
  auto want = reference("BatchNormalization", {&tx, &ts, &tb, &tm, &tv}, {{"epsilon", 1e-3f}});
  auto slice = [](const std::vector<float>& v, int64_t from, int64_t n) {
    return std::vector<float>(v.begin() + from, v.begin() + from + n);
  };
  // {begin, count, c_first, c_count}: all channels (wrapping into batch 1), a slice, empty, one element.
  const std::vector<std::array<int64_t, 4>> cases = {{0, total, 0, C}, {5, 14, 0, C}, {4, 5, 1, 2}, {7, 0, 0, C}, {13, 1, 0, 1}};
  for (const auto& [begin, count, c0, cn] : cases) {
    SCOPED_TRACE(std::to_string(begin) + "+" + std::to_string(count));
    TileMemory mem;
    exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(count)));
    exec::Vertex v{
        0,      exec::Codelet::BatchNorm, DType::Float, {out, mem.add(slice(x, begin, count))}, {count, begin, C, inner, c0, cn},
        {1e-3f}};
    for (const auto* p : {&s, &b, &m, &var}) v.fields.push_back(mem.add(slice(*p, c0, cn)));
    expectClose(run(v, mem), slice(want, begin, count));
  }
}

TEST(AttentionCodelet, OneHeadMatchesMultiHeadAttention) {
  for (int64_t rows : {1, 2, 3})
    for (int64_t keys : {1, 2, 65})
      for (bool masked : {false, true}) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(keys) + (masked ? " masked" : ""));
        const int64_t D = 3, Dv = 2;
        auto q = randomVector(static_cast<size_t>(rows * D), 36), k = randomVector(static_cast<size_t>(keys * D), 37),
             v = randomVector(static_cast<size_t>(keys * Dv), 38), mask = randomVector(static_cast<size_t>(rows * keys), 39);
        Tensor tq = tensorOf(q, {1, rows, D}), tk = tensorOf(k, {1, keys, D}), tv = tensorOf(v, {1, keys, Dv}),
               tm = tensorOf(mask, {1, 1, rows, keys});
        std::vector<const Tensor*> ins{&tq, &tk, &tv};
        if (masked) ins.push_back(&tm);
        auto want = reference("MultiHeadAttention", ins, {{"num_heads", int64_t{1}}, {"scale", 0.7f}}, "ai.graphcore");
        TileMemory mem;
        exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(rows * Dv)));
        exec::Vertex vx{0,
                        exec::Codelet::Attention,
                        DType::Float,
                        {out, mem.add(q), mem.add(k), mem.add(v)},
                        {rows, keys, D, Dv, masked ? 1 : 0},
                        {0.7f}};
        if (masked) vx.fields.push_back(mem.add(mask));
        expectClose(run(vx, mem), want);
      }
}

TEST(CheckVertex, RefusesInconsistentRowVertices) {
  auto refused = [](exec::Vertex v) { return !checkVertex(v).ok(); };
  EXPECT_TRUE(refused({0, exec::Codelet::Activation, DType::Float, {{0, 16}, {16, 16}}, {4, 99}, {0, 0, 0, 0}}));  // kind
  EXPECT_TRUE(refused({0, exec::Codelet::Activation, DType::Float, {{0, 16}, {16, 12}}, {4, 0}, {0, 0, 0, 0}}));   // size
  EXPECT_TRUE(refused({0, exec::Codelet::Reduce, DType::Float, {{0, 8}, {8, 24}}, {99, 2, 3, 1}, {}}));            // kind
  EXPECT_TRUE(refused({0, exec::Codelet::Reduce, DType::Float, {{0, 8}, {8, 20}}, {0, 2, 3, 1}, {}}));             // input
  EXPECT_TRUE(
      refused({0, exec::Codelet::Reduce, DType::Float, {{0, 8}, {8, 24}}, {0, int64_t{1} << 40, int64_t{1} << 40, 1}, {}}));
  EXPECT_TRUE(refused({0, exec::Codelet::Softmax, DType::Float, {{0, 24}, {24, 24}}, {2, 2, 3, 1}, {}}));  // log flag
  EXPECT_TRUE(refused({0, exec::Codelet::Norm, DType::Float, {{0, 24}, {24, 24}, {48, 8}}, {2, 3, 0, 1, 0}, {1e-5f}}));  // scale
  EXPECT_TRUE(
      refused({0, exec::Codelet::Norm, DType::Float, {{0, 24}, {24, 24}, {48, 12}}, {2, 3, 1, 0, 0}, {1e-5f}}));  // channels
  // BatchNorm: elements 0..5 of [*, 4, 3] span channels 0 and 1, the slice holds channel 1 only.
  EXPECT_TRUE(refused({0,
                       exec::Codelet::BatchNorm,
                       DType::Float,
                       {{0, 24}, {24, 24}, {48, 4}, {52, 4}, {56, 4}, {60, 4}},
                       {6, 0, 4, 3, 1, 1},
                       {1e-5f}}));
  EXPECT_TRUE(refused(
      {0, exec::Codelet::Attention, DType::Float, {{0, 8}, {8, 12}, {20, 12}, {32, 8}}, {1, 1, 3, 2, 1}, {1.f}}));  // mask
                                                                                                                    // missing
}

}  // namespace
}  // namespace poprt::sim

namespace poprt::sim {
namespace {

using namespace codelet_test;

// The values of a float16 tensor the evaluator computed.
std::vector<float> halfReference(const std::string& op, const std::vector<std::vector<float>>& inputs,
                                 const std::vector<Shape>& shapes, std::map<std::string, ir::AttributeValue> attrs = {},
                                 const std::string& domain = "") {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor t(DType::Float16, shapes[i]);
    auto d = t.data<Half>();
    for (size_t k = 0; k < inputs[i].size(); ++k) d[k] = Half(inputs[i][k]);
    tensors.push_back(std::move(t));
  }
  std::vector<const Tensor*> ptrs;
  for (const auto& t : tensors) ptrs.push_back(&t);
  ir::Graph g;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < ptrs.size(); ++i) ins.push_back(g.addInput("i" + std::to_string(i), {}));
  ir::Node* n = g.addNode(op, ins, {g.addValue("y")}, "", domain);
  for (auto& [k, v] : attrs) n->attributes[k].value = v;
  auto r = ops::evaluateNode(*n, ptrs);
  EXPECT_TRUE(r.ok()) << r.error().message();
  std::vector<float> out;
  for (Half h : (*r)[0].data<Half>()) out.push_back(static_cast<float>(h));
  return out;
}

// Float16 results: within a couple of half-precision ulps of the evaluator's.
void expectHalfClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-3 + 2e-3 * std::fabs(want[i])) << "at " << i;
}

TEST(HalfVertices, StoreFloat16AndMatchTheEvaluatorOnFloat16Tensors) {
  // Inputs already rounded to float16, so codelet and evaluator see the same values.
  auto rounded = [](std::vector<float> v) {
    for (float& x : v) x = halfBitsToFloat(floatToHalfBits(x));
    return v;
  };
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n=" + std::to_string(n));
    auto a = rounded(randomVector(static_cast<size_t>(n), 40)), b = rounded(randomVector(static_cast<size_t>(n), 41));
    TileMemory mem;
    exec::Field out = mem.addHalf(std::vector<float>(static_cast<size_t>(n))), fa = mem.addHalf(a), fb = mem.addHalf(b);
    exec::Vertex unary{0, exec::Codelet::Unary, DType::Float16, {out, fa}, {static_cast<int64_t>(ops::UnaryFn::Exp), n}, {}};
    ASSERT_TRUE(checkVertex(unary).ok()) << checkVertex(unary).error().message();
    runVertex(unary, mem.bytes.data());
    mem.expectGuardsIntact(out);
    expectHalfClose(mem.readHalf(out), halfReference("Exp", {a}, {{n}}));
    exec::Vertex binary{0,
                        exec::Codelet::Binary,
                        DType::Float16,
                        {out, fa, fb},
                        {static_cast<int64_t>(ops::BinaryFn::Mul), n, exec::kAligned, exec::kAligned, 0, 1, n, 1, 1},
                        {}};
    ASSERT_TRUE(checkVertex(binary).ok()) << checkVertex(binary).error().message();
    runVertex(binary, mem.bytes.data());
    mem.expectGuardsIntact(out);
    expectHalfClose(mem.readHalf(out), halfReference("Mul", {a, b}, {{n}, {n}}));
  }
  // A matmul and a softmax whose sums would lose accuracy if they were accumulated in float16.
  const int64_t rows = 3, K = 300, cols = 5;
  auto a = rounded(randomVector(rows * K, 42)), b = rounded(randomVector(K * cols, 43));
  TileMemory mem;
  exec::Field out = mem.addHalf(std::vector<float>(rows * cols)), fa = mem.addHalf(a), fb = mem.addHalf(b);
  exec::Vertex mm{0, exec::Codelet::MatMul, DType::Float16, {out, fa, fb}, {rows, K, cols, 0, 0, exec::kBiasNone}, {1.f, 1.f}};
  ASSERT_TRUE(checkVertex(mm).ok()) << checkVertex(mm).error().message();
  runVertex(mm, mem.bytes.data());
  mem.expectGuardsIntact(out);
  expectHalfClose(mem.readHalf(out), halfReference("MatMul", {a, b}, {{rows, K}, {K, cols}}));
  exec::Field sm_out = mem.addHalf(std::vector<float>(rows * K));
  exec::Vertex sm{0, exec::Codelet::Softmax, DType::Float16, {sm_out, fa}, {0, rows, K, 1}, {}};
  ASSERT_TRUE(checkVertex(sm).ok()) << checkVertex(sm).error().message();
  runVertex(sm, mem.bytes.data());
  mem.expectGuardsIntact(sm_out);
  expectHalfClose(mem.readHalf(sm_out), halfReference("Softmax", {a}, {{rows, K}}, {{"axis", int64_t{-1}}}));
}

TEST(HalfVertices, CheckUsesTwoBytesPerElement) {
  // A float16 Unary of 4 elements has 8-byte fields; 16-byte (float32-sized) fields are refused.
  EXPECT_TRUE(checkVertex({0, exec::Codelet::Unary, DType::Float16, {{0, 8}, {8, 8}}, {0, 4}, {}}).ok());
  EXPECT_FALSE(checkVertex({0, exec::Codelet::Unary, DType::Float16, {{0, 16}, {16, 16}}, {0, 4}, {}}).ok());
  EXPECT_FALSE(checkVertex({0, exec::Codelet::Unary, DType::Float16, {{1, 8}, {9, 8}}, {0, 4}, {}}).ok());  // misaligned
}

}  // namespace
}  // namespace poprt::sim
