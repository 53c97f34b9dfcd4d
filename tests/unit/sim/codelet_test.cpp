// Codelets against the reference evaluator (a separate implementation), with guard bytes around
// every output and sizes 0, 1, the vector width and +-1.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "lib/exec/codelets.h"
#include "lib/ops/registry.h"
#include "lib/ops/scalar_math.h"
#include "sim/codelets.h"
#include "tests/unit/sim/codelet_test_util.h"

namespace poprt::sim {
namespace {

using namespace codelet_test;

TEST(UnaryCodelet, MatchesReference) {
  const exec::Target target{};
  for (const char* op : {"Relu", "Neg", "Abs", "Exp", "Sigmoid", "Tanh"}) {
    for (int64_t n : kSizes) {
      auto x = randomVector(static_cast<size_t>(n), 1);
      TileMemory mem;
      exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(n), 0.f));
      exec::Field in = mem.add(x);
      exec::Vertex v{0, exec::Codelet::Unary, DType::Float, {out, in}, {static_cast<int64_t>(*ops::unaryFnOf(op)), n}, {}};
      ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
      runVertex(v, mem.bytes.data());
      Tensor t = tensorOf(x, {n});
      expectClose(mem.read(out), reference(op, {&t}));
      mem.expectGuardsIntact(out);
    }
  }
  (void)target;
}

TEST(UnaryCodelet, GeluBothFormsMatchTheFusedOp) {
  for (const char* approximate : {"none", "tanh"})
    for (int64_t n : kSizes) {
      auto x = randomVector(static_cast<size_t>(n), 12);
      TileMemory mem;
      exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(n))), in = mem.add(x);
      const auto fn = std::string(approximate) == "tanh" ? ops::UnaryFn::GeluTanh : ops::UnaryFn::Gelu;
      exec::Vertex v{0, exec::Codelet::Unary, DType::Float, {out, in}, {static_cast<int64_t>(fn), n}, {}};
      ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
      runVertex(v, mem.bytes.data());
      Tensor t = tensorOf(x, {n});
      expectClose(mem.read(out), reference("Gelu", {&t}, {{"approximate", std::string(approximate)}}, "ai.graphcore"));
      mem.expectGuardsIntact(out);
    }
}

// A Fill the codelet could not write (a complex dtype) or whose count times its element size wraps
// round to the field's size is refused, not run: its output would not be written whole.
TEST(FillCodelet, UnwritableDtypesAndWrappingCountsAreRefused) {
  EXPECT_FALSE(checkVertex({0, exec::Codelet::Fill, DType::Complex64, {{0, 16}}, {2}, {1.0f}}).ok());
  EXPECT_FALSE(checkVertex({0, exec::Codelet::Fill, DType::Float, {{0, 8}}, {(int64_t{1} << 62) + 2}, {1.0f}}).ok());
  EXPECT_TRUE(checkVertex({0, exec::Codelet::Fill, DType::Float, {{0, 8}}, {2}, {1.0f}}).ok());
}

TEST(FillCodelet, EveryElementSizeWithGuards) {
  for (DType dt : {DType::Float, DType::Float16, DType::Int64, DType::Int32, DType::UInt8, DType::Bool, DType::Double})
    for (int64_t n : kSizes) {
      SCOPED_TRACE(std::string(dtypeName(dt)) + " n=" + std::to_string(n));
      const size_t esize = dt == DType::Bool ? 1 : dtypeSize(dt);
      const uint64_t offset = 64, bytes = static_cast<uint64_t>(n) * esize;
      std::vector<uint8_t> mem(offset + bytes + kGuardBytes, kGuard);
      exec::Vertex v{0, exec::Codelet::Fill, dt, {{offset, bytes}}, {n}, {3.0f}};
      ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
      runVertex(v, mem.data());
      // The expected bytes: the value cast to that dtype by the evaluator.
      Tensor three(DType::Float, {});
      three.data<float>()[0] = 3.0f;
      ir::Graph g;
      ir::Node* node = g.addNode("Cast", {g.addInput("c", {})}, {g.addValue("y")});
      node->attributes["to"].value = static_cast<int64_t>(dt);
      auto cast = ops::evaluateNode(*node, {&three});
      ASSERT_TRUE(cast.ok()) << cast.error().message();
      const auto& one = (*cast)[0];
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(std::memcmp(mem.data() + offset + static_cast<uint64_t>(i) * esize, one.bytes().data(), esize), 0)
            << "at " << i;
      for (uint64_t i = 0; i < offset; ++i) ASSERT_EQ(mem[i], kGuard) << "guard before";
      for (uint64_t i = 0; i < kGuardBytes; ++i) ASSERT_EQ(mem[offset + bytes + i], kGuard) << "guard after";
    }
}

// Values that probe the conversion: signed zeros, subnormals of both formats, the float16 range's
// edges and just past them (65504 stays, 65520 rounds to infinity), ties, infinities, NaNs.
std::vector<float> castProbes(int64_t n, uint32_t seed) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {
      0.f,     -0.f,  6e-8f,          -3e-8f,          1e-5f, 65504.f, 65519.f,
      65520.f, -1e6f, 1.00048828125f, 1.000732421875f, inf,   -inf,    std::numeric_limits<float>::quiet_NaN(),
      2049.f};
  std::vector<float> v = randomVector(static_cast<size_t>(n), seed);
  for (size_t i = 0; i < v.size(); ++i)
    if (i % 3 == 0) v[i] = special[(i / 3) % special.size()];
  return v;
}

// The evaluator's Cast of `in` to `to`, as bytes.
std::vector<uint8_t> referenceCast(const Tensor& in, DType to) {
  ir::Graph g;
  ir::Node* node = g.addNode("Cast", {g.addInput("x", {})}, {g.addValue("y")});
  node->attributes["to"].value = static_cast<int64_t>(to);
  auto r = ops::evaluateNode(*node, {&in});
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!r.ok()) return {};
  auto b = (*r)[0].bytes();
  return {b.begin(), b.end()};
}

TEST(CastCodelet, BothDirectionsAreBitExactWithTheEvaluator) {
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n=" + std::to_string(n));
    // float32 -> float16
    const std::vector<float> x = castProbes(n, 21);
    Tensor xt = tensorOf(x, {n});
    TileMemory mem;
    exec::Field in32 = mem.add(x);  // first: a float16 field before it could leave it misaligned
    exec::Field out16 = mem.addBytes(std::vector<uint8_t>(static_cast<size_t>(n) * 2, 0));
    exec::Vertex narrow{0, exec::Codelet::Cast, DType::Float16, {out16, in32}, {n, static_cast<int64_t>(DType::Float)}, {}};
    ASSERT_TRUE(checkVertex(narrow).ok()) << checkVertex(narrow).error().message();
    runVertex(narrow, mem.bytes.data());
    std::vector<uint8_t> want16 = referenceCast(xt, DType::Float16);
    ASSERT_EQ(want16.size(), out16.bytes);
    EXPECT_EQ(std::vector<uint8_t>(mem.bytes.begin() + out16.offset, mem.bytes.begin() + out16.offset + out16.bytes), want16);
    mem.expectGuardsIntact(out16);

    // float16 -> float32, from every kind of binary16 pattern (NaN payloads, subnormals, infinities)
    std::vector<uint8_t> h(static_cast<size_t>(n) * 2);
    std::mt19937 rng(22);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(rng());
    const uint16_t patterns[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfd55};
    for (size_t i = 0; i < static_cast<size_t>(n); i += 2) std::memcpy(h.data() + i * 2, &patterns[(i / 2) % 10], 2);
    Tensor ht(DType::Float16, {n});
    if (n > 0) std::memcpy(ht.bytes().data(), h.data(), h.size());
    TileMemory mem2;
    exec::Field out32 = mem2.add(std::vector<float>(static_cast<size_t>(n), 0.f));
    exec::Field in16 = mem2.addBytes(h);
    exec::Vertex widen{0, exec::Codelet::Cast, DType::Float, {out32, in16}, {n, static_cast<int64_t>(DType::Float16)}, {}};
    ASSERT_TRUE(checkVertex(widen).ok()) << checkVertex(widen).error().message();
    runVertex(widen, mem2.bytes.data());
    std::vector<uint8_t> want32 = referenceCast(ht, DType::Float);
    ASSERT_EQ(want32.size(), out32.bytes);
    EXPECT_EQ(std::vector<uint8_t>(mem2.bytes.begin() + out32.offset, mem2.bytes.begin() + out32.offset + out32.bytes), want32);
    mem2.expectGuardsIntact(out32);
  }
}

TEST(CastCodelet, RefusesOtherDtypesAndInconsistentFields) {
  const auto f32 = static_cast<int64_t>(DType::Float), f16 = static_cast<int64_t>(DType::Float16);
  auto ok = [](exec::Vertex v) { return checkVertex(v).ok(); };
  EXPECT_TRUE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 8}, {8, 16}}, {4, f32}, {}}));
  EXPECT_TRUE(ok({0, exec::Codelet::Cast, DType::Float, {{0, 16}, {16, 8}}, {4, f16}, {}}));
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float, {{0, 16}, {16, 16}}, {4, f32}, {}}));  // same dtype
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Int32, {{0, 16}, {16, 8}}, {4, f16}, {}}));   // not a float
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 8}, {8, 32}}, {4, static_cast<int64_t>(DType::Double)}, {}}));
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 8}, {8, 8}}, {4, f32}, {}}));      // input too small
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 16}, {16, 16}}, {4, f32}, {}}));   // output too big
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 8}, {10, 16}}, {4, f32}, {}}));    // misaligned float32
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float, {{0, 16}, {17, 8}}, {4, f16}, {}}));      // misaligned float16
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 8}, {8, 16}}, {-4, f32}, {}}));    // negative count
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 8}, {8, 16}}, {4, f32}, {1.f}}));  // fparams
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 8}}, {4, f32}, {}}));              // one field
  EXPECT_FALSE(ok({0, exec::Codelet::Cast, DType::Float16, {{0, 0}, {0, 0}}, {int64_t{1} << 62, f32}, {}}));  // huge count
}

TEST(CastCodelet, CyclesGrowWithTheCount) {
  exec::Target t{};
  const auto f32 = static_cast<int64_t>(DType::Float);
  exec::Vertex small{0, exec::Codelet::Cast, DType::Float16, {{0, 2}, {4, 4}}, {1, f32}, {}};
  exec::Vertex big{0, exec::Codelet::Cast, DType::Float16, {{0, 2000}, {2000, 4000}}, {1000, f32}, {}};
  EXPECT_LT(vertexCycles(small, t), vertexCycles(big, t));
}

TEST(BinaryCodelet, AlignedAndBroadcastMatchReference) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (int64_t n : kSizes) {
      // Aligned: out[i] = a[i] op b[i].
      auto a = randomVector(static_cast<size_t>(n), 2), b = randomVector(static_cast<size_t>(n), 3);
      TileMemory mem;
      exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(n)));
      exec::Field fa = mem.add(a), fb = mem.add(b);
      exec::Vertex v{0,
                     exec::Codelet::Binary,
                     DType::Float,
                     {out, fa, fb},
                     {static_cast<int64_t>(*ops::binaryFnOf(op)), n, exec::kAligned, exec::kAligned, 0, 1, n, 1, 1},
                     {}};
      ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
      runVertex(v, mem.bytes.data());
      Tensor ta = tensorOf(a, {n}), tb = tensorOf(b, {n});
      expectClose(mem.read(out), reference(op, {&ta, &tb}));
      mem.expectGuardsIntact(out);
    }
    // Broadcast: a [3, 5] (aligned, elements 4..12 of the output), b [5] broadcast along rows.
    auto a = randomVector(15, 4), b = randomVector(5, 5);
    Tensor ta = tensorOf(a, {3, 5}), tb = tensorOf(b, {5});
    auto want = reference(op, {&ta, &tb});
    TileMemory mem;
    exec::Field out = mem.add(std::vector<float>(9));
    exec::Field fa = mem.add(std::vector<float>(a.begin() + 4, a.begin() + 13));
    exec::Field fb = mem.add(b);
    exec::Vertex v{0,
                   exec::Codelet::Binary,
                   DType::Float,
                   {out, fa, fb},
                   {static_cast<int64_t>(*ops::binaryFnOf(op)), 9, exec::kAligned, exec::kBroadcast, 4, 2, 3, 5, 5, 1, 0, 1},
                   {}};
    ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
    runVertex(v, mem.bytes.data());
    expectClose(mem.read(out), std::vector<float>(want.begin() + 4, want.begin() + 13));
    mem.expectGuardsIntact(out);
  }
}

TEST(MatMulCodelet, AllTransposesAndBiasModesMatchReference) {
  for (int64_t rows : {0, 1, 2, 3, 17}) {
    for (int64_t K : {0, 1, 3, 8}) {
      for (int64_t cols : {1, 2, 5}) {
        for (int ta = 0; ta < 2; ++ta) {
          for (int tb = 0; tb < 2; ++tb) {
            for (int64_t bias_mode : {exec::kBiasNone, exec::kBiasScalar, exec::kBiasRow, exec::kBiasColumn, exec::kBiasFull}) {
              auto a = randomVector(static_cast<size_t>(rows * K), 6), b = randomVector(static_cast<size_t>(K * cols), 7);
              Shape sa = ta ? Shape{K, rows} : Shape{rows, K};
              Shape sb = tb ? Shape{cols, K} : Shape{K, cols};
              Shape sc = bias_mode == exec::kBiasScalar   ? Shape{1}
                         : bias_mode == exec::kBiasRow    ? Shape{cols}
                         : bias_mode == exec::kBiasColumn ? Shape{rows, 1}
                                                          : Shape{rows, cols};
              int64_t nc = bias_mode == exec::kBiasScalar   ? 1
                           : bias_mode == exec::kBiasRow    ? cols
                           : bias_mode == exec::kBiasColumn ? rows
                                                            : rows * cols;
              auto c = randomVector(static_cast<size_t>(nc), 8);
              Tensor TA = tensorOf(a, sa), TB = tensorOf(b, sb), TC = tensorOf(c, sc);
              std::vector<const Tensor*> ins{&TA, &TB};
              if (bias_mode != exec::kBiasNone) ins.push_back(&TC);
              auto want =
                  reference("Gemm", ins, {{"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.5f}, {"beta", 2.0f}});
              TileMemory mem;
              exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(rows * cols)));
              exec::Field fa = mem.add(a), fb = mem.add(b);
              exec::Vertex v{0,           exec::Codelet::MatMul, DType::Float, {out, fa, fb}, {rows, K, cols, ta, tb, bias_mode},
                             {0.5f, 2.0f}};
              if (bias_mode != exec::kBiasNone) v.fields.push_back(mem.add(c));
              ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
              runVertex(v, mem.bytes.data());
              expectClose(mem.read(out), want);
              mem.expectGuardsIntact(out);
            }
          }
        }
      }
    }
  }
}

// A float16 vertex's float32 fields are read and written as they are: a split matmul's partial
// sums keep float32 precision, and their reduction reads them so and rounds only its output.
TEST(HalfVertex, Float32FieldsAreNotRounded) {
  const int64_t rows = 3, K = 6, cols = 4;
  auto a = randomVector(static_cast<size_t>(rows * K), 21), b = randomVector(static_cast<size_t>(K * cols), 22);
  for (auto* v : {&a, &b})
    for (float& x : *v) x = halfBitsToFloat(floatToHalfBits(x));  // the operands as float16 holds them
  TileMemory mem;
  exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(rows * cols)));
  out.dtype = DType::Float;
  exec::Field fa = mem.addHalf(a), fb = mem.addHalf(b);
  exec::Vertex mm{0, exec::Codelet::MatMul, DType::Float16, {out, fa, fb}, {rows, K, cols, 0, 0, exec::kBiasNone}, {1.0f, 1.0f}};
  ASSERT_TRUE(checkVertex(mm).ok()) << checkVertex(mm).error().message();
  runVertex(mm, mem.bytes.data());
  mem.expectGuardsIntact(out);
  const std::vector<float> got = mem.read(out);
  int rounded_differs = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += static_cast<double>(a[r * K + k]) * b[k * cols + c];
      const float g = got[static_cast<size_t>(r * cols + c)];
      EXPECT_NEAR(g, want, 1e-5 * (1 + std::fabs(want))) << r << "," << c;
      rounded_differs += std::fabs(halfBitsToFloat(floatToHalfBits(static_cast<float>(want))) - want) > 1e-4;
    }
  EXPECT_GT(rounded_differs, 0) << "float16 outputs would pass too: the test cannot tell";

  // Three partials of 4 sums each, in float32 (multiples of 2^-12: every sum is exact), to float16.
  const int64_t parts = 3, len = 4;
  std::vector<float> partials(static_cast<size_t>(parts * len));
  for (size_t i = 0; i < partials.size(); ++i)
    partials[i] = static_cast<float>(static_cast<int>(i * 7919 % 4001) - 2000) / 4096.0f;
  exec::Field sum = mem.addHalf(std::vector<float>(static_cast<size_t>(len)));
  exec::Field in = mem.add(partials);
  in.dtype = DType::Float;
  exec::Vertex reduce{0, exec::Codelet::Reduce, DType::Float16, {sum, in}, {exec::kReduceSum, 1, parts, len}, {}};
  ASSERT_TRUE(checkVertex(reduce).ok()) << checkVertex(reduce).error().message();
  runVertex(reduce, mem.bytes.data());
  mem.expectGuardsIntact(sum);
  const std::vector<float> sums = mem.readHalf(sum);
  for (int64_t j = 0; j < len; ++j) {
    const float exact =
        partials[static_cast<size_t>(j)] + partials[static_cast<size_t>(len + j)] + partials[static_cast<size_t>(2 * len + j)];
    EXPECT_EQ(sums[static_cast<size_t>(j)], halfBitsToFloat(floatToHalfBits(exact))) << j;
  }

  // Only float16 vertices hold float32 fields, aligned to 4 bytes; a field dtype survives the PopEF form.
  exec::Vertex wide_out = mm;
  wide_out.dtype = DType::Float;
  EXPECT_FALSE(checkVertex(wide_out).ok());
  exec::Vertex half_field = mm;
  half_field.fields[1].dtype = DType::Float16;
  EXPECT_FALSE(checkVertex(half_field).ok());
  exec::Vertex misaligned = mm;
  misaligned.fields[0].offset += 2;
  EXPECT_FALSE(checkVertex(misaligned).ok());
  exec::Executable exe;
  exe.target.tiles_per_ipu = exe.target.num_ipus = 1;
  exe.target.clock_hz = 1.33e9;
  exe.target.fp32_macs_per_cycle = exe.target.fp16_macs_per_cycle = 16;
  exe.target.bytes_per_tile = exe.tile_bytes.emplace_back(mem.bytes.size());
  exe.compute_sets.push_back({"mm", {mm, reduce}});
  auto back = exec::deserialize(exec::serialize(exe), "test");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->compute_sets[0].vertices[0].fields[0].dtype, DType::Float);
  EXPECT_EQ(back->compute_sets[0].vertices[0].fields[1].dtype, DType::Undefined);
  EXPECT_EQ(back->compute_sets[0].vertices[1].fields[1].dtype, DType::Float);
}

TEST(MatMulCodelet, ActivationEpilogueMatchesGemmAct) {
  const std::vector<std::pair<std::string, int64_t>> kinds = {
      {"Relu", 0}, {"Clip", 1}, {"LeakyRelu", 2}, {"Sigmoid", 3}, {"HardSigmoid", 4}, {"HardSwish", 5}, {"Tanh", 6}};
  const int64_t rows = 3, K = 4, cols = 5;
  auto a = randomVector(rows * K, 9), b = randomVector(K * cols, 10), c = randomVector(cols, 11);
  Tensor TA = tensorOf(a, {rows, K}), TB = tensorOf(b, {K, cols}), TC = tensorOf(c, {cols});
  for (const auto& [name, kind] : kinds) {
    // Parameters chosen so every branch of Clip/LeakyRelu/HardSigmoid is exercised.
    const float alpha = 0.3f, beta = 0.4f, lo = -0.5f, hi = 0.6f;
    auto want = reference("GemmAct", {&TA, &TB, &TC},
                          {{"activation", name},
                           {"activation_alpha", alpha},
                           {"activation_beta", beta},
                           {"activation_min", lo},
                           {"activation_max", hi}},
                          "ai.graphcore");
    TileMemory mem;
    exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(rows * cols)));
    exec::Field fa = mem.add(a), fb = mem.add(b), fc = mem.add(c);
    exec::Vertex v{0,
                   exec::Codelet::MatMul,
                   DType::Float,
                   {out, fa, fb, fc},
                   {rows, K, cols, 0, 0, exec::kBiasRow, kind},
                   {1.f, 1.f, alpha, beta, lo, hi}};
    ASSERT_TRUE(checkVertex(v).ok()) << name << ": " << checkVertex(v).error().message();
    runVertex(v, mem.bytes.data());
    SCOPED_TRACE(name);
    expectClose(mem.read(out), want);
    mem.expectGuardsIntact(out);
  }
}

TEST(CheckVertex, RefusesInconsistentVertices) {
  exec::Vertex unary{0, exec::Codelet::Unary, DType::Float, {{0, 16}, {16, 12}}, {0, 4}, {}};
  EXPECT_FALSE(checkVertex(unary).ok());  // input smaller than count
  exec::Vertex fn{0, exec::Codelet::Unary, DType::Float, {{0, 16}, {16, 16}}, {999, 4}, {}};
  EXPECT_FALSE(checkVertex(fn).ok());
  exec::Vertex mm{0, exec::Codelet::MatMul, DType::Float, {{0, 16}, {16, 16}, {32, 16}}, {2, 2, 2, 0, 0, 0}, {1.f, 1.f}};
  EXPECT_TRUE(checkVertex(mm).ok());
  setParam(mm, 1, 3);
  EXPECT_FALSE(checkVertex(mm).ok());
  // Broadcast strides reaching past the operand buffer.
  exec::Vertex bin{0, exec::Codelet::Binary, DType::Float, {{0, 8}, {8, 8}, {16, 4}}, {0, 2, 0, 1, 0, 1, 2, 1, 1}, {}};
  EXPECT_FALSE(checkVertex(bin).ok());
  setParam(bin, 8, 0);
  EXPECT_TRUE(checkVertex(bin).ok()) << checkVertex(bin).error().message();
}

// ---- ConvPartial and Pool -----------------------------------------------------------------------

// One sliding-window case: X is [1, C, in...]; Conv's W is [M, C/group, kernel...].
struct WindowCase {
  Shape in;  // spatial
  int64_t C = 1, M = 1, group = 1;
  Shape kernel, strides, dilations, pads;  // pads: begin..., end...
  bool bias = false;
  std::string activation;  // ConvAct when set
};

int64_t outExtent(const WindowCase& c, size_t d, bool ceil_mode = false) {
  const size_t r = c.in.size();
  const int64_t span = c.in[d] + c.pads[d] + c.pads[d + r] - ((c.kernel[d] - 1) * c.dilations[d] + 1);
  int64_t out = span / c.strides[d] + 1;
  if (ceil_mode && span % c.strides[d] != 0 && out * c.strides[d] < c.in[d] + c.pads[d]) ++out;
  return out;
}

std::map<std::string, ir::AttributeValue> windowAttrs(const WindowCase& c) {
  return {{"kernel_shape", c.kernel}, {"strides", c.strides}, {"dilations", c.dilations}, {"pads", c.pads}};
}

// The rows [r_lo, r_hi) of the first spatial dim that output rows [o0, o0 + rows) read, clipped.
std::pair<int64_t, int64_t> inputRows(const WindowCase& c, int64_t o0, int64_t rows) {
  const int64_t first = o0 * c.strides[0] - c.pads[0];
  const int64_t last = (o0 + rows - 1) * c.strides[0] - c.pads[0] + (c.kernel[0] - 1) * c.dilations[0];
  const int64_t lo = std::clamp<int64_t>(first, 0, c.in[0]);
  return {lo, std::clamp<int64_t>(last + 1, lo, c.in[0])};
}

// Rows [lo, hi) of the first spatial dim of every channel of a [channels, d0, rest...] buffer.
std::vector<float> rowsOf(const std::vector<float>& v, int64_t channels, int64_t d0, int64_t inner, int64_t lo, int64_t hi) {
  std::vector<float> out;
  for (int64_t ch = 0; ch < channels; ++ch)
    out.insert(out.end(), v.begin() + (ch * d0 + lo) * inner, v.begin() + (ch * d0 + hi) * inner);
  return out;
}

int64_t prod(const Shape& s, size_t first = 0) {
  int64_t p = 1;
  for (size_t i = first; i < s.size(); ++i) p *= s[i];
  return p;
}

const std::vector<std::pair<std::string, int64_t>> kActivations = {
    {"Relu", 0}, {"Clip", 1}, {"LeakyRelu", 2}, {"Sigmoid", 3}, {"HardSigmoid", 4}, {"HardSwish", 5}, {"Tanh", 6}, {"Swish", 7}};

// Runs ConvPartial on output rows [o0, o0 + rows) of every channel (all groups in one vertex)
// and compares with the same rows of the evaluator's Conv/ConvAct.
// `tol` scales with the magnitude of the sums (float accumulation over in_channels x kernel terms).
void checkConv(const WindowCase& c, int64_t o0 = 0, int64_t rows = -1, uint32_t seed = 1, double tol = 1e-5) {
  const size_t r = c.in.size();
  Shape out_dims;
  for (size_t d = 0; d < r; ++d) out_dims.push_back(outExtent(c, d));
  if (rows < 0) rows = out_dims[0] - o0;
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  Shape xs{1, c.C}, ws{c.M, Cg};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  auto x = randomVector(static_cast<size_t>(prod(xs)), seed), w = randomVector(static_cast<size_t>(prod(ws)), seed + 1);
  auto b = randomVector(static_cast<size_t>(c.M), seed + 2);
  Tensor tx = tensorOf(x, xs), tw = tensorOf(w, ws), tb = tensorOf(b, {c.M});
  std::vector<const Tensor*> ins{&tx, &tw};
  if (c.bias) ins.push_back(&tb);
  auto attrs = windowAttrs(c);
  attrs["group"] = c.group;
  const float alpha = 0.3f, beta = 0.4f, lo = -0.5f, hi = 0.6f;
  int64_t act_kind = -1;
  if (!c.activation.empty()) {
    attrs["activation"] = c.activation;
    attrs["activation_alpha"] = alpha;
    attrs["activation_beta"] = beta;
    attrs["activation_min"] = lo;
    attrs["activation_max"] = hi;
    for (const auto& [name, kind] : kActivations)
      if (name == c.activation) act_kind = kind;
  }
  auto full = reference(c.activation.empty() ? "Conv" : "ConvAct", ins, attrs, c.activation.empty() ? "" : "ai.graphcore");
  const int64_t inner_out = prod(out_dims, 1), inner_in = prod(c.in, 1);
  auto want = rowsOf(full, c.M, out_dims[0], inner_out, o0, o0 + rows);
  auto [r_lo, r_hi] = inputRows(c, o0, rows);
  Shape in_dims = c.in, block_out = out_dims, starts(r);
  in_dims[0] = r_hi - r_lo;
  block_out[0] = rows;
  for (size_t d = 0; d < r; ++d) starts[d] = -c.pads[d];
  starts[0] = o0 * c.strides[0] - c.pads[0] - r_lo;
  TileMemory mem;
  exec::Field out = mem.add(std::vector<float>(want.size(), 7.f));
  exec::Field fin = mem.add(rowsOf(x, c.C, c.in[0], inner_in, r_lo, r_hi));
  exec::Field fw = mem.add(w);
  exec::Vertex v{
      0, exec::Codelet::ConvPartial, DType::Float, {out, fin, fw}, {static_cast<int64_t>(r), c.group, Cg, Mg, c.bias ? 1 : 0},
      {}};
  if (c.bias) v.fields.push_back(mem.add(b));
  for (const Shape* s : std::initializer_list<const Shape*>{&in_dims, &block_out, &c.kernel, &c.strides, &c.dilations, &starts})
    editParams(v, [&](std::vector<int64_t>& p) { p.insert(p.end(), s->begin(), s->end()); });
  if (act_kind >= 0) {
    editParams(v, [&](std::vector<int64_t>& p) { p.push_back(act_kind); });
    v.fparams = {alpha, beta, lo, hi};
  }
  ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
  runVertex(v, mem.bytes.data());
  auto got = mem.read(out);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol + 1e-5 * std::fabs(want[i])) << "at " << i;
  mem.expectGuardsIntact(out);
  EXPECT_GT(vertexCycles(v, exec::Target{"t", "ipu2", 1, 4, 1024, 6, 1e9, 4, 100, 16, 64, 2}), 0u);
}

TEST(ConvPartialCodelet, Conv2dStridesDilationsPadsMatchReference) {
  for (int64_t stride : {1, 2, 3})
    for (int64_t dil : {1, 2})
      for (Shape pads : {Shape{0, 0, 0, 0}, Shape{1, 1, 1, 1}, Shape{2, 0, 1, 3}}) {
        SCOPED_TRACE(std::to_string(stride) + " " + std::to_string(dil) + " " + std::to_string(pads[0]) +
                     std::to_string(pads[2]));
        checkConv({{7, 6}, 3, 4, 1, {3, 3}, {stride, stride}, {dil, dil}, pads, true});
        checkConv({{5, 8}, 2, 3, 1, {2, 3}, {stride, 1}, {1, dil}, pads, false});
      }
}

TEST(ConvPartialCodelet, SizesZeroOneAndEdges) {
  checkConv({{1, 1}, 1, 1, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false});  // one element
  checkConv({{1, 1}, 1, 1, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true});   // all but the centre is padding
  checkConv({{2, 2}, 1, 1, 1, {1, 1}, {1, 1}, {1, 1}, {3, 3, 3, 3}, true});   // outputs that are all padding (bias only)
  checkConv({{4, 4}, 2, 0, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true});   // no output channels
  checkConv({{4, 4}, 0, 3, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true});   // no input channels: the bias
  checkConv({{3, 9}, 1, 5, 1, {3, 9}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true});   // kernel as large as the input
  checkConv({{6, 6}, 4, 8, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true});   // 1x1: read in place
  checkConv({{6, 6}, 4, 8, 1, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false});  // 1x1 strided
  checkConv({{6, 6}, 4, 8, 1, {1, 1}, {1, 1}, {1, 1}, {1, 0, 0, 1}, false});  // 1x1 padded
}

TEST(ConvPartialCodelet, GroupsAndDepthwise) {
  checkConv({{6, 5}, 4, 6, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true});
  checkConv({{6, 5}, 6, 6, 6, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true});   // depthwise
  checkConv({{6, 5}, 3, 6, 3, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, false});  // depthwise, multiplier 2
}

TEST(ConvPartialCodelet, OneAndThreeSpatialDims) {
  checkConv({{9}, 3, 4, 1, {3}, {2}, {1}, {1, 2}, true});
  checkConv({{9}, 4, 4, 4, {5}, {1}, {2}, {4, 4}, false});
  checkConv({{1}, 1, 1, 1, {1}, {1}, {1}, {0, 0}, false});
  checkConv({{4, 5, 3}, 2, 3, 1, {3, 2, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 2, 1, 1, 2}, true});
  checkConv({{4, 5, 3}, 4, 4, 2, {2, 2, 2}, {2, 1, 1}, {1, 1, 1}, {0, 0, 0, 1, 1, 1}, false});
  // Kernels wider than the output rows (im2col output by output): a long 1-D filter over a few
  // frames, as an STFT does, and a dilated 2-D one with uneven pads.
  checkConv({{100}, 2, 3, 1, {40}, {16}, {1}, {3, 5}, true});
  checkConv({{6, 20}, 2, 3, 1, {2, 7}, {1, 3}, {1, 2}, {1, 0, 2, 4}, false});
}

TEST(ConvPartialCodelet, RowBlocksWithHalo) {
  // Every row block of a padded, strided, dilated conv: the vertex holds only the rows it reads.
  const WindowCase c{{11, 7}, 3, 4, 1, {3, 3}, {2, 1}, {2, 1}, {2, 1, 3, 1}, true};
  const int64_t out_rows = outExtent(c, 0);
  for (int64_t rows : {1, 2, 3})
    for (int64_t o0 = 0; o0 < out_rows; o0 += rows) checkConv(c, o0, std::min(rows, out_rows - o0));
  const WindowCase d{{10}, 2, 2, 2, {4}, {3}, {1}, {2, 3}, false};  // 1-D: the rows are the positions
  for (int64_t o0 = 0; o0 < outExtent(d, 0); ++o0) checkConv(d, o0, 1);
}

TEST(ConvPartialCodelet, ActivationEpilogueMatchesConvAct) {
  for (const auto& [name, kind] : kActivations) {
    SCOPED_TRACE(name);
    WindowCase c{{5, 5}, 3, 4, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, name};
    checkConv(c);
    checkConv(c, 2, 2);
  }
}

// The codelet's numerics, whichever way it builds the product (rows of a padded copy of the input
// at strides 1 and 2 here, im2col at stride 3): each output is its products summed in order (input
// channel, then kernel row, then kernel column) with fused multiply-adds from zero, padding taps
// adding fma(w, 0, sum), then the bias. Bit for bit, against that loop written out.
TEST(ConvPartialCodelet, EachOutputSumsItsProductsInOrder) {
  const int64_t C = 3, M = 5, H = 20, W = 21, kh = 3;
  for (int64_t kw : {3, 1})  // a kernel one column wide: the product is written straight to the output
    for (int64_t stride : {1, 2, 3})
      for (int64_t dil : {1, 2, 4}) {
        SCOPED_TRACE(std::to_string(kw) + " " + std::to_string(stride) + " " + std::to_string(dil));
        const int64_t pad = dil, padx = kw == 1 ? 0 : pad;
        const int64_t oh = (H + 2 * pad - (kh - 1) * dil - 1) / stride + 1, ow = (W + 2 * padx - (kw - 1) * dil - 1) / stride + 1;
        auto x = randomVector(static_cast<size_t>(C * H * W), 5), w = randomVector(static_cast<size_t>(M * C * kh * kw), 6);
        auto b = randomVector(static_cast<size_t>(M), 7);
        std::vector<float> want(static_cast<size_t>(M * oh * ow));
        for (int64_t m = 0; m < M; ++m)
          for (int64_t y = 0; y < oh; ++y)
            for (int64_t xo = 0; xo < ow; ++xo) {
              float sum = 0.0f;
              for (int64_t c = 0; c < C; ++c)
                for (int64_t ky = 0; ky < kh; ++ky)
                  for (int64_t kx = 0; kx < kw; ++kx) {
                    const int64_t iy = y * stride - pad + ky * dil, ix = xo * stride - padx + kx * dil;
                    const float in =
                        iy >= 0 && iy < H && ix >= 0 && ix < W ? x[static_cast<size_t>((c * H + iy) * W + ix)] : 0.0f;
                    sum = std::fma(w[static_cast<size_t>(((m * C + c) * kh + ky) * kw + kx)], in, sum);
                  }
              want[static_cast<size_t>((m * oh + y) * ow + xo)] = sum + b[static_cast<size_t>(m)];
            }
        TileMemory mem;
        exec::Field out = mem.add(std::vector<float>(want.size(), 7.f));
        exec::Vertex v{0,
                       exec::Codelet::ConvPartial,
                       DType::Float,
                       {out, mem.add(x), mem.add(w), mem.add(b)},
                       {2, 1, C, M, 1, H, W, oh, ow, kh, kw, stride, stride, dil, dil, -pad, -padx},
                       {}};
        ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
        runVertex(v, mem.bytes.data());
        auto got = mem.read(out);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "at " << i;
        mem.expectGuardsIntact(out);
      }
}

// Blocks the engine gives to runVertices several at once, sharing their set-up: 2-D blocks with
// padding and strides (rows of a padded copy whose zeros are written once for all of them), blocks
// without padding (rows read in the input), a 1x1 kernel (read in place), a stride of 3 (im2col),
// and long filters over a few frames (an STFT's 512
// taps at a stride of 160 over 2 frames: interleaved sums). Each vertex, with its own input,
// weights and bias, comes out bit for bit as its products summed in order with fused multiply-adds
// from zero, padding taps adding fma(w, 0, sum), then the bias and a Relu; and within float
// rounding of the evaluator's Conv.
TEST(ConvPartialCodelet, BlocksRunTogetherAsEachAlone) {
  struct Case {
    int64_t C, M, H, W, kh, kw, stride, dil, pad;
    bool bias;
  };
  const Case cases[] = {
      {1, 2, 5, 32, 3, 3, 1, 1, 1, true},        // resnet20_cifar's commonest block
      {2, 4, 8, 8, 3, 3, 2, 1, 1, true},         // strided: phase planes
      {3, 2, 6, 7, 3, 3, 1, 2, 2, false},        // dilated
      {4, 8, 2, 8, 1, 1, 1, 1, 0, true},         // 1x1
      {4, 9, 5, 8, 3, 1, 1, 1, 0, true},         // no padding, one column: rows read in the input
      {2, 3, 5, 12, 3, 3, 1, 1, 0, false},       // no padding, lines of products of their own: the same
      {2, 3, 7, 9, 3, 3, 3, 1, 1, true},         // stride 3: im2col
      {1, 1, 1, 672, 1, 512, 160, 1, 0, false},  // an STFT's filter: interleaved sums
      {2, 2, 1, 300, 1, 90, 50, 2, 0, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.C) + "x" + std::to_string(c.M) + " kernel " + std::to_string(c.kh) + "x" +
                 std::to_string(c.kw) + " stride " + std::to_string(c.stride));
    const int64_t padh = c.kh > 1 ? c.pad : 0;
    const int64_t oh = (c.H + 2 * padh - (c.kh - 1) * c.dil - 1) / c.stride + 1,
                  ow = (c.W + 2 * c.pad - (c.kw - 1) * c.dil - 1) / c.stride + 1;
    exec::Vertex proto{0,
                       exec::Codelet::ConvPartial,
                       DType::Float,
                       {},
                       {2, 1, c.C, c.M, c.bias ? 1 : 0, c.H, c.W, oh, ow, c.kh, c.kw, c.stride, c.stride, c.dil, c.dil, -padh,
                        -c.pad, 0},  // 0: a Relu epilogue
                       {0.f, 0.f, 0.f, 0.f}};
    TileMemory mem;
    std::vector<exec::Vertex> vertices;
    std::vector<std::vector<float>> wants;
    for (uint32_t i = 0; i < 11; ++i) {
      auto x = randomVector(static_cast<size_t>(c.C * c.H * c.W), 100 + 3 * i);
      auto w = randomVector(static_cast<size_t>(c.M * c.C * c.kh * c.kw), 101 + 3 * i);
      auto b = randomVector(static_cast<size_t>(c.M), 102 + 3 * i);
      std::vector<float> want(static_cast<size_t>(c.M * oh * ow));
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t xo = 0; xo < ow; ++xo) {
            float sum = 0.0f;
            for (int64_t ch = 0; ch < c.C; ++ch)
              for (int64_t ky = 0; ky < c.kh; ++ky)
                for (int64_t kx = 0; kx < c.kw; ++kx) {
                  const int64_t iy = y * c.stride - padh + ky * c.dil, ix = xo * c.stride - c.pad + kx * c.dil;
                  const float in =
                      iy >= 0 && iy < c.H && ix >= 0 && ix < c.W ? x[static_cast<size_t>((ch * c.H + iy) * c.W + ix)] : 0.0f;
                  sum = std::fma(w[static_cast<size_t>(((m * c.C + ch) * c.kh + ky) * c.kw + kx)], in, sum);
                }
            if (c.bias) sum += b[static_cast<size_t>(m)];
            want[static_cast<size_t>((m * oh + y) * ow + xo)] = std::max(sum, 0.0f);
          }
      // The evaluator's Conv of the same block.
      Tensor tx = tensorOf(x, {1, c.C, c.H, c.W}), tw = tensorOf(w, {c.M, c.C, c.kh, c.kw}), tb = tensorOf(b, {c.M});
      std::vector<const Tensor*> ins{&tx, &tw};
      if (c.bias) ins.push_back(&tb);
      auto conv = reference("Conv", ins,
                            {{"kernel_shape", Shape{c.kh, c.kw}},
                             {"strides", Shape{c.stride, c.stride}},
                             {"dilations", Shape{c.dil, c.dil}},
                             {"pads", Shape{padh, c.pad, padh, c.pad}}});
      ASSERT_EQ(conv.size(), want.size());
      for (size_t k = 0; k < conv.size(); ++k) ASSERT_NEAR(std::max(conv[k], 0.0f), want[k], 1e-4 + 1e-5 * std::fabs(want[k]));
      exec::Vertex v = proto;
      v.fields = {mem.add(std::vector<float>(want.size(), 7.f)), mem.add(x), mem.add(w)};
      if (c.bias) v.fields.push_back(mem.add(b));
      ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
      vertices.push_back(v);
      wants.push_back(want);
    }
    const VertexParams params = verifiedParams(vertices[0]);
    ASSERT_TRUE(runsTogether(params));
    std::vector<VertexView> views(vertices.begin(), vertices.end());
    std::vector<const VertexView*> group;
    for (const VertexView& v : views) group.push_back(&v);
    runVertices(group.data(), 8, params, mem.bytes.data());      // a full group
    runVertices(group.data() + 8, 3, params, mem.bytes.data());  // and the rest of the run
    for (size_t i = 0; i < vertices.size(); ++i) {
      auto got = mem.read(vertices[i].fields[0]);
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[k]), std::bit_cast<uint32_t>(wants[i][k])) << "vertex " << i << " at " << k;
      mem.expectGuardsIntact(vertices[i].fields[0]);
    }
  }
  // A block whose input would not stay in the caches runs alone.
  exec::Vertex big{0, exec::Codelet::ConvPartial, DType::Float, {}, {1, 1, 8, 8, 0, 600, 598, 3, 1, 1, 0}, {}};
  EXPECT_FALSE(runsTogether(verifiedParams(big)));
}

TEST(ConvPartialCodelet, LargeBlocksChunkTheirScratch) {
  // im2col in several chunks of output lines, and the tap-by-tap path for very wide lines.
  // Sums of 576 and 12288 products of values in [-2, 2] (magnitudes around 30 and 150).
  checkConv({{130, 64}, 64, 2, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true}, 0, -1, 1, 2e-4);
  checkConv({{1100}, 4096, 1, 1, {3}, {1}, {1}, {1, 1}, true}, 0, -1, 1, 2e-3);
}

// Runs a Pool vertex on output rows [o0, o0 + rows) and compares with the evaluator.
void checkPool(const std::string& op, const WindowCase& c, bool ceil_mode, bool include_pad, int64_t o0 = 0, int64_t rows = -1,
               std::vector<float> x = {}) {
  const size_t r = c.in.size();
  const bool global = op.rfind("Global", 0) == 0;
  WindowCase g = c;
  if (global) {
    g.kernel = c.in;
    g.strides.assign(r, 1);
    g.dilations.assign(r, 1);
    g.pads.assign(2 * r, 0);
  }
  Shape out_dims;
  for (size_t d = 0; d < r; ++d) out_dims.push_back(outExtent(g, d, ceil_mode));
  if (rows < 0) rows = out_dims[0] - o0;
  Shape xs{1, c.C};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  if (x.empty()) x = randomVector(static_cast<size_t>(prod(xs)), 31);
  Tensor tx = tensorOf(x, xs);
  std::map<std::string, ir::AttributeValue> attrs;
  if (!global) {
    attrs = windowAttrs(g);
    if (op == "AveragePool") {
      attrs.erase("dilations");
      attrs["count_include_pad"] = int64_t{include_pad};
    }
    attrs["ceil_mode"] = int64_t{ceil_mode};
  }
  auto full = reference(op, {&tx}, attrs);
  const int64_t inner_out = prod(out_dims, 1), inner_in = prod(c.in, 1);
  auto want = rowsOf(full, c.C, out_dims[0], inner_out, o0, o0 + rows);
  auto [r_lo, r_hi] = inputRows(g, o0, rows);
  Shape in_dims = c.in, block_out = out_dims, starts(r), pends(r);
  in_dims[0] = r_hi - r_lo;
  block_out[0] = rows;
  for (size_t d = 0; d < r; ++d) {
    starts[d] = -g.pads[d];
    pends[d] = c.in[d] + g.pads[d + r];
  }
  starts[0] = o0 * g.strides[0] - g.pads[0] - r_lo;
  pends[0] -= r_lo;
  TileMemory mem;
  exec::Field out = mem.add(std::vector<float>(want.size(), 7.f));
  exec::Field fin = mem.add(rowsOf(x, c.C, c.in[0], inner_in, r_lo, r_hi));
  const bool is_max = op.find("Max") != std::string::npos;
  exec::Vertex v{0,
                 exec::Codelet::Pool,
                 DType::Float,
                 {out, fin},
                 {static_cast<int64_t>(r), c.C, is_max ? exec::kPoolMax : exec::kPoolAvg, include_pad ? 1 : 0},
                 {}};
  for (const Shape* s :
       std::initializer_list<const Shape*>{&in_dims, &block_out, &g.kernel, &g.strides, &g.dilations, &starts, &pends})
    editParams(v, [&](std::vector<int64_t>& p) { p.insert(p.end(), s->begin(), s->end()); });
  ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
  runVertex(v, mem.bytes.data());
  auto got = mem.read(out);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else {
      ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << "at " << i;
    }
  }
  mem.expectGuardsIntact(out);
  EXPECT_GT(vertexCycles(v, exec::Target{"t", "ipu2", 1, 4, 1024, 6, 1e9, 4, 100, 16, 64, 2}), 0u);
}

TEST(PoolCodelet, MaxAndAveragePoolMatchReference) {
  for (const char* op : {"MaxPool", "AveragePool"})
    for (bool ceil_mode : {false, true})
      for (bool include_pad : {false, true})
        for (Shape pads : {Shape{0, 0, 0, 0}, Shape{1, 1, 1, 1}, Shape{1, 0, 2, 1}}) {
          SCOPED_TRACE(std::string(op) + " ceil " + std::to_string(ceil_mode) + " pad " + std::to_string(include_pad));
          checkPool(op, {{7, 8}, 3, 3, 3, {3, 3}, {2, 2}, {1, 1}, pads}, ceil_mode, include_pad);
          checkPool(op, {{6, 5}, 2, 2, 2, {2, 3}, {2, 1}, {1, 1}, pads}, ceil_mode, include_pad);
          checkPool(op, {{1, 1}, 1, 1, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, ceil_mode, include_pad);
        }
  checkPool("MaxPool", {{9, 9}, 2, 2, 2, {3, 3}, {1, 2}, {2, 2}, {1, 1, 1, 1}}, false, false);      // dilations
  checkPool("AveragePool", {{4, 4}, 0, 0, 0, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, false, false);  // no channels
  checkPool("MaxPool", {{9, 9}, 2, 2, 2, {2, 2}, {3, 3}, {2, 1}, {0, 0, 0, 0}}, true, false);
}

TEST(PoolCodelet, OneAndThreeSpatialDimsAndRowBlocks) {
  checkPool("MaxPool", {{11}, 3, 3, 3, {3}, {2}, {1}, {1, 1}}, true, false);
  checkPool("AveragePool", {{11}, 3, 3, 3, {4}, {3}, {1}, {2, 1}}, true, true);
  checkPool("AveragePool", {{4, 5, 6}, 2, 2, 2, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {1, 0, 1, 0, 1, 1}}, false, false);
  checkPool("MaxPool", {{4, 5, 6}, 2, 2, 2, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {1, 0, 1, 0, 1, 1}}, true, false);
  const WindowCase c{{10, 6}, 2, 2, 2, {3, 3}, {2, 2}, {1, 1}, {1, 1, 2, 1}};
  for (const char* op : {"MaxPool", "AveragePool"})
    for (bool include_pad : {false, true})
      for (int64_t o0 = 0; o0 < outExtent(c, 0, true); ++o0) checkPool(op, c, true, include_pad, o0, 1);
}

TEST(PoolCodelet, GlobalPoolsAndNaN) {
  for (const char* op : {"GlobalMaxPool", "GlobalAveragePool"}) {
    checkPool(op, {{7, 7}, 5, 5, 5}, false, false);
    checkPool(op, {{1, 1}, 1, 1, 1}, false, false);
    checkPool(op, {{9}, 3, 3, 3}, false, false);
    checkPool(op, {{2, 3, 4}, 2, 2, 2}, false, false);
  }
  // Max pooling propagates NaN wherever it appears in a window.
  std::vector<float> x = randomVector(2 * 16, 5);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[16] = std::numeric_limits<float>::quiet_NaN();
  checkPool("MaxPool", {{4, 4}, 2, 2, 2, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, false, false, 0, -1, x);
  checkPool("GlobalMaxPool", {{4, 4}, 2, 2, 2}, false, false, 0, -1, x);
}

// A window far wider than the input (a PopEF is untrusted: the checks bound a kernel by 2^24 a
// dim, not by the input): each output pools the few taps inside the input, and the work stays
// bounded by them, not by the kernel.
TEST(PoolCodelet, AWindowWiderThanTheInputCostsOnlyItsTapsInside) {
  const int64_t K = exec::kMaxWindowExtent;
  const std::vector<float> x = {1.5f, -4.0f, 3.25f};  // in [1, 3]
  for (const exec::PoolKind kind : {exec::kPoolMax, exec::kPoolAvg}) {
    TileMemory mem;
    exec::Field out = mem.add(std::vector<float>(4, 7.f));
    exec::Field fin = mem.add(x);
    // rank 2, 1 channel; in [1, 3], out [2, 2], kernel [K, K], strides 1, dilations 1, starts
    // [-K/2, -K/2], padded ends [1 + K, 3 + K]: every output's window holds the whole input.
    exec::Vertex v{0,
                   exec::Codelet::Pool,
                   DType::Float,
                   {out, fin},
                   {2, 1, kind, 0, 1, 3, 2, 2, K, K, 1, 1, 1, 1, -K / 2, -K / 2, 1 + K, 3 + K},
                   {}};
    ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
    runVertex(v, mem.bytes.data());
    const float want = kind == exec::kPoolMax ? 3.25f : static_cast<float>((1.5 + -4.0 + 3.25) / 3);
    EXPECT_EQ(mem.read(out), std::vector<float>(4, want));
  }
}

TEST(CheckVertex, RefusesInconsistentWindowVertices) {
  // A valid 2-D ConvPartial: 1 group, 2 -> 3 channels, in 4x4, out 2x2, kernel 3x3.
  exec::Vertex conv{0,
                    exec::Codelet::ConvPartial,
                    DType::Float,
                    {{0, 3 * 4 * 4}, {64, 2 * 16 * 4}, {256, 3 * 2 * 9 * 4}},
                    {2, 1, 2, 3, 0, 4, 4, 2, 2, 3, 3, 1, 1, 1, 1, 0, 0},
                    {}};
  ASSERT_TRUE(checkVertex(conv).ok()) << checkVertex(conv).error().message();
  auto bad = [&](auto mutate) {
    exec::Vertex v = conv;
    mutate(v);
    return !checkVertex(v).ok();
  };
  EXPECT_TRUE(bad([](exec::Vertex& v) { v.fields[1].bytes -= 4; }));             // input smaller than its dims
  EXPECT_TRUE(bad([](exec::Vertex& v) { v.fields[2].bytes += 4; }));             // weights larger
  EXPECT_TRUE(bad([](exec::Vertex& v) { setParam(v, 0, 4); }));                  // rank beyond 3
  EXPECT_TRUE(bad([](exec::Vertex& v) { setParam(v, 4, 1); }));                  // bias without a field
  EXPECT_TRUE(bad([](exec::Vertex& v) { setParam(v, 11, 0); }));                 // stride 0
  EXPECT_TRUE(bad([](exec::Vertex& v) { setParam(v, 5, int64_t{1} << 40); }));   // huge extent
  EXPECT_TRUE(bad([](exec::Vertex& v) { setParam(v, 15, int64_t{1} << 50); }));  // huge start
  EXPECT_TRUE(bad([](exec::Vertex& v) {
    editParams(v, [](std::vector<int64_t>& p) { p.push_back(99); });
    v.fparams = {0, 0, 0, 0};
  }));  // unknown activation
  EXPECT_TRUE(bad(
      [](exec::Vertex& v) { editParams(v, [](std::vector<int64_t>& p) { p.push_back(0); }); }));  // activation without fparams
  EXPECT_TRUE(bad([](exec::Vertex& v) { v.dtype = DType::Float16; }));
  EXPECT_TRUE(bad([](exec::Vertex& v) { v.fields[0].offset = 2; }));  // misaligned
  // Channel counts whose products overflow must not wrap around to match the fields.
  EXPECT_TRUE(bad([](exec::Vertex& v) {
    setParam(v, 1, int64_t{1} << 24);
    setParam(v, 2, int64_t{1} << 24);
    setParam(v, 3, int64_t{1} << 24);
  }));
  exec::Vertex pool{0,
                    exec::Codelet::Pool,
                    DType::Float,
                    {{0, 2 * 2 * 4}, {64, 2 * 9 * 4}},
                    {2, 2, exec::kPoolMax, 0, 3, 3, 2, 1, 2, 3, 1, 1, 1, 1, 0, 0, 3, 3},
                    {}};
  ASSERT_TRUE(checkVertex(pool).ok()) << checkVertex(pool).error().message();
  exec::Vertex p2 = pool;
  setParam(p2, 2, 7);  // unknown kind
  EXPECT_FALSE(checkVertex(p2).ok());
  p2 = pool;
  p2.fields[0].bytes = 4;
  EXPECT_FALSE(checkVertex(p2).ok());
  p2 = pool;
  editParams(p2, [](std::vector<int64_t>& p) { p.pop_back(); });
  EXPECT_FALSE(checkVertex(p2).ok());
  p2 = pool;
  setParam(p2, 3, 2);
  EXPECT_FALSE(checkVertex(p2).ok());
}

// broadcastSpan's run decomposition against visiting every element, on random shapes, strides
// (0 for broadcast dims) and ranges; and a Binary vertex with a based operand buffer holding just
// that span gives the same result as one holding the whole operand.
TEST(BroadcastSpan, MatchesVisitingEveryElement) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t rank = std::uniform_int_distribution<int64_t>(0, 4)(rng);
    std::vector<int64_t> dims(static_cast<size_t>(rank)), strides(static_cast<size_t>(rank));
    int64_t total = 1;
    for (int64_t d = 0; d < rank; ++d) {
      dims[d] = std::uniform_int_distribution<int64_t>(1, 6)(rng);
      strides[d] =
          std::uniform_int_distribution<int64_t>(0, 2)(rng) == 0 ? 0 : std::uniform_int_distribution<int64_t>(1, 40)(rng);
      total *= dims[d];
    }
    const int64_t begin = std::uniform_int_distribution<int64_t>(0, total - 1)(rng);
    const int64_t count = std::uniform_int_distribution<int64_t>(1, total - begin)(rng);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = begin; i < begin + count; ++i) {
      int64_t off = 0, rem = i;
      for (int64_t d = rank; d-- > 0;) {
        off += (rem % dims[d]) * strides[d];
        rem /= dims[d];
      }
      lo = std::min(lo, off);
      hi = std::max(hi, off);
    }
    const exec::IndexSpan span = exec::broadcastSpan(dims.data(), strides.data(), rank, begin, count);
    ASSERT_EQ(static_cast<int64_t>(span.lo), lo) << "trial " << trial;
    ASSERT_EQ(static_cast<int64_t>(span.hi), hi) << "trial " << trial;
  }
}

TEST(BinaryCodelet, ABasedBroadcastBufferReadsItsSlice) {
  // out [3][4] = a [3][4] + bias [4]; the vertex computes elements 5..7 (row 1, columns 1..3), which
  // read bias columns 1..3 only: its buffer holds those three, from base 1.
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, bias = {100, 200, 300, 400};
  TileMemory mem;
  exec::Field out = mem.add(std::vector<float>(3, 0.f));
  exec::Field fa = mem.add(std::vector<float>(a.begin() + 5, a.begin() + 8));
  exec::Field fb = mem.add(std::vector<float>(bias.begin() + 1, bias.end()));  // columns 1..3: base 1
  exec::Vertex v{0,
                 exec::Codelet::Binary,
                 DType::Float,
                 {out, fa, fb},
                 {static_cast<int64_t>(ops::BinaryFn::Add), 3, exec::kAligned, exec::kBroadcast, 5, 2, 3, 4, 4, 1, 0, 1, 0, 1},
                 {}};
  ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
  runVertex(v, mem.bytes.data());
  EXPECT_EQ(mem.read(out), (std::vector<float>{206, 307, 408}));
  // A base past the first column the elements read is refused: the read would fall before the buffer.
  exec::Vertex bad = v;
  editParams(bad, [](std::vector<int64_t>& p) { p.back() = 2; });
  EXPECT_FALSE(checkVertex(bad).ok());
  // So is a buffer too short for the last column read.
  bad = v;
  bad.fields[2].bytes = 8;
  EXPECT_FALSE(checkVertex(bad).ok());
}

// A tile's piece of an attention's scores (rows 1..4, columns 2..5 of a [2, 6, 7] output, batch
// entry 1) plus a bias of [6, 7] (each row reads its own bias row) and one of [7] (every row the
// same columns): a Binary vertex over row runs, against the evaluator's Add. The [6, 7] bias
// buffer holds each row's 4 columns (skip 3 between them); the [7] one their union, 4 columns.
// A chain's steps against the unfused ops of the reference evaluator, one after another: a
// quantizer's Div, Round and Max, then 120 - v (its operand first). Exact steps: the same bits.
TEST(ElementwiseChainCodelet, MatchesTheUnfusedOpsOfTheReference) {
  const auto B = [](ops::BinaryFn fn) { return static_cast<int64_t>(fn); };
  const std::vector<int64_t> program = {exec::kStepBinary,
                                        B(ops::BinaryFn::Div),
                                        1,
                                        exec::kStepUnary,
                                        static_cast<int64_t>(ops::UnaryFn::Round),
                                        0,
                                        exec::kStepBinary,
                                        B(ops::BinaryFn::Max),
                                        2,
                                        exec::kStepBinary,
                                        B(ops::BinaryFn::Sub),
                                        -3};
  const Tensor d = tensorOf({2.5f}, {}), lo = tensorOf({-100.f}, {}), hi = tensorOf({120.f}, {});
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    auto x = randomVector(static_cast<size_t>(n), 21);
    for (float& e : x) e *= 400.f;  // past both bounds
    TileMemory mem;
    exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(n), 0.f));
    exec::Field in = mem.add(x), fd = mem.add({2.5f}), flo = mem.add({-100.f}), fhi = mem.add({120.f});
    std::vector<int64_t> params = {n, 4};
    params.insert(params.end(), program.begin(), program.end());
    exec::Vertex v{0, exec::Codelet::ElementwiseChain, DType::Float, {out, in, fd, flo, fhi}, params, {}};
    ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
    runVertex(v, mem.bytes.data());
    const Tensor t0 = tensorOf(x, {n});
    const Tensor t1 = tensorOf(reference("Div", {&t0, &d}), {n});
    const Tensor t2 = tensorOf(reference("Round", {&t1}), {n});
    const Tensor t3 = tensorOf(reference("Max", {&t2, &lo}), {n});
    EXPECT_EQ(mem.read(out), reference("Sub", {&hi, &t3}));
    mem.expectGuardsIntact(out);
  }
}

// Untrusted steps are refused before anything runs: an unknown kind, a unary step with an
// operand, a binary one without, an operand past the fields, one of two elements, no steps, more
// steps than the cap.
TEST(ElementwiseChainCodelet, RefusesBadSteps) {
  TileMemory mem;
  exec::Field out = mem.add(std::vector<float>(4)), in = mem.add(std::vector<float>(4));
  exec::Field one = mem.add({1.f}), two = mem.add({1.f, 2.f});
  const int64_t add = static_cast<int64_t>(ops::BinaryFn::Add), neg = static_cast<int64_t>(ops::UnaryFn::Neg);
  auto vertex = [&](std::vector<exec::Field> operands, std::vector<int64_t> program) {
    std::vector<exec::Field> fields = {out, in};
    fields.insert(fields.end(), operands.begin(), operands.end());
    std::vector<int64_t> params = {4, static_cast<int64_t>(program.size() / 3)};
    params.insert(params.end(), program.begin(), program.end());
    return exec::Vertex{0, exec::Codelet::ElementwiseChain, DType::Float, fields, params, {}};
  };
  EXPECT_TRUE(checkVertex(vertex({one}, {exec::kStepBinary, add, 1, exec::kStepUnary, neg, 0})).ok());
  EXPECT_TRUE(checkVertex(vertex({one}, {exec::kStepBinary, add, -1})).ok());
  EXPECT_FALSE(checkVertex(vertex({one}, {2, add, 1})).ok()) << "kind";
  EXPECT_FALSE(checkVertex(vertex({one}, {exec::kStepUnary, neg, 1})).ok()) << "unary with an operand";
  EXPECT_FALSE(checkVertex(vertex({one}, {exec::kStepBinary, add, 0})).ok()) << "binary without";
  EXPECT_FALSE(checkVertex(vertex({one}, {exec::kStepBinary, add, 2})).ok()) << "past the fields";
  EXPECT_FALSE(checkVertex(vertex({one}, {exec::kStepBinary, add, -2})).ok()) << "past the fields, first";
  EXPECT_FALSE(checkVertex(vertex({two}, {exec::kStepBinary, add, 1})).ok()) << "two elements";
  EXPECT_FALSE(checkVertex(vertex({one}, {exec::kStepBinary, 99, 1})).ok()) << "function";
  EXPECT_FALSE(checkVertex(vertex({one}, {})).ok()) << "no steps";
  std::vector<int64_t> long_program;
  for (int64_t k = 0; k <= exec::kMaxChainSteps; ++k) long_program.insert(long_program.end(), {exec::kStepUnary, neg, 0});
  EXPECT_FALSE(checkVertex(vertex({one}, long_program)).ok()) << "too many steps";
  exec::Vertex huge = vertex({one}, {exec::kStepUnary, neg, 0});
  editParams(huge, [](std::vector<int64_t>& p) { p[1] = INT64_MAX; });  // a step count no params array could hold
  EXPECT_FALSE(checkVertex(huge).ok());
}

TEST(BinaryCodelet, RowRunsReadEachRowsSliceOfABroadcastOperand) {
  const int64_t rows = 4, cols = 4, first_row = 1, first_col = 2, entry = 1;
  const auto scores = randomVector(2 * 6 * 7, 11), bias2 = randomVector(6 * 7, 12), bias1 = randomVector(7, 13);
  Tensor ts = tensorOf(scores, {2, 6, 7}), tb2 = tensorOf(bias2, {6, 7}), tb1 = tensorOf(bias1, {7});
  const int64_t begin = entry * 42 + first_row * 7 + first_col;
  auto piece = [&](const std::vector<float>& full) {  // the block's elements, row after row
    std::vector<float> p;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) p.push_back(full[static_cast<size_t>(begin + r * 7 + c)]);
    return p;
  };
  for (bool per_row : {true, false}) {
    const Tensor& bias = per_row ? tb2 : tb1;
    std::vector<float> buffer;  // what the vertex's bias field holds
    if (per_row) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) buffer.push_back(bias2[static_cast<size_t>((first_row + r) * 7 + first_col + c)]);
    } else {
      buffer.assign(bias1.begin() + first_col, bias1.begin() + first_col + cols);
    }
    const int64_t base = per_row ? first_row * 7 + first_col : first_col, skip = per_row ? 7 - cols : 0;
    const int64_t b_strides[3] = {0, per_row ? 7 : 0, 1};
    TileMemory mem;
    exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(rows * cols)));
    exec::Field fa = mem.add(piece(scores)), fb = mem.add(buffer);
    exec::Vertex v{0,
                   exec::Codelet::Binary,
                   DType::Float,
                   {out, fa, fb},
                   {static_cast<int64_t>(ops::BinaryFn::Add),
                    cols,
                    exec::kAligned,
                    exec::kBroadcast,
                    begin,
                    3,
                    2,
                    6,
                    7,
                    42,
                    7,
                    1,
                    b_strides[0],
                    b_strides[1],
                    b_strides[2],
                    0,
                    base,
                    rows,
                    7,
                    0,
                    skip},
                   {}};
    ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
    runVertex(v, mem.bytes.data());
    EXPECT_EQ(mem.read(out), piece(reference("Add", {&ts, &bias}))) << (per_row ? "[6, 7] bias" : "[7] bias");
    mem.expectGuardsIntact(out);
    // A skip one too short reads past the buffer's end in the last row (or is negative), a step
    // past the output, and no rows at all are refused.
    exec::Vertex bad = v;
    editParams(bad, [](std::vector<int64_t>& p) { p.back() -= 1; });
    EXPECT_FALSE(checkVertex(bad).ok()) << "skip";
    bad = v;
    editParams(bad, [](std::vector<int64_t>& p) { p[p.size() - 3] = 20; });
    EXPECT_FALSE(checkVertex(bad).ok()) << "step";
    bad = v;
    editParams(bad, [](std::vector<int64_t>& p) { p[p.size() - 4] = 0; });
    EXPECT_FALSE(checkVertex(bad).ok()) << "no rows";
  }
}

}  // namespace
}  // namespace poprt::sim
