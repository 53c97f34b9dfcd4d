// Codelets against the reference evaluator (a separate implementation), with guard bytes around
// every output and sizes 0, 1, the vector width and +-1.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "lib/exec/codelets.h"
#include "lib/ops/registry.h"
#include "lib/ops/scalar_math.h"
#include "sim/codelets.h"

namespace poprt::sim {
namespace {

constexpr uint8_t kGuard = 0xA5;
constexpr uint64_t kGuardBytes = 32;

// A tile memory where each field gets its own guarded slot.
struct TileMemory {
  std::vector<uint8_t> bytes;
  exec::Field add(const std::vector<float>& data) {
    uint64_t offset = bytes.size() + kGuardBytes;
    bytes.resize(offset + data.size() * 4 + kGuardBytes, kGuard);
    if (!data.empty()) std::memcpy(bytes.data() + offset, data.data(), data.size() * 4);
    return {offset, data.size() * 4};
  }
  std::vector<float> read(const exec::Field& f) const {
    std::vector<float> out(f.bytes / 4);
    if (!out.empty()) std::memcpy(out.data(), bytes.data() + f.offset, f.bytes);
    return out;
  }
  void expectGuardsIntact(const exec::Field& f) const {
    for (uint64_t i = 1; i <= kGuardBytes; ++i) ASSERT_EQ(bytes[f.offset - i], kGuard) << "guard before";
    for (uint64_t i = 0; i < kGuardBytes; ++i) ASSERT_EQ(bytes[f.offset + f.bytes + i], kGuard) << "guard after";
  }
};

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

Tensor tensorOf(const std::vector<float>& v, Shape shape) {
  Tensor t(DType::Float, std::move(shape));
  if (!v.empty()) std::memcpy(t.bytes().data(), v.data(), v.size() * 4);
  return t;
}

// Runs one node of the reference evaluator.
std::vector<float> reference(const std::string& op, const std::vector<const Tensor*>& inputs,
                             std::map<std::string, ir::AttributeValue> attrs = {}, const std::string& domain = "") {
  ir::Graph g;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) ins.push_back(g.addInput("i" + std::to_string(i), {}));
  ir::Node* n = g.addNode(op, ins, {g.addValue("y")}, "", domain);
  for (auto& [k, v] : attrs) n->attributes[k].value = v;
  auto r = ops::evaluateNode(*n, inputs);
  EXPECT_TRUE(r.ok()) << r.error().message();
  auto d = (*r)[0].data<float>();
  return {d.begin(), d.end()};
}

void expectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << "at " << i;
}

const std::vector<int64_t> kSizes = {0, 1, 2, 3, 4, 7, 64, 65};  // vector width is 2

TEST(UnaryCodelet, MatchesReference) {
  const exec::Target target{};
  for (const char* op : {"Relu", "Neg", "Abs", "Exp", "Sigmoid", "Tanh"}) {
    for (int64_t n : kSizes) {
      auto x = randomVector(static_cast<size_t>(n), 1);
      TileMemory mem;
      exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(n), 0.f));
      exec::Field in = mem.add(x);
      exec::Vertex v{0, exec::Codelet::Unary, DType::Float, {out, in},
                     {static_cast<int64_t>(*ops::unaryFnOf(op)), n}, {}};
      ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
      runVertex(v, mem.bytes.data());
      Tensor t = tensorOf(x, {n});
      expectClose(mem.read(out), reference(op, {&t}));
      mem.expectGuardsIntact(out);
    }
  }
  (void)target;
}

TEST(BinaryCodelet, AlignedAndBroadcastMatchReference) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (int64_t n : kSizes) {
      // Aligned: out[i] = a[i] op b[i].
      auto a = randomVector(static_cast<size_t>(n), 2), b = randomVector(static_cast<size_t>(n), 3);
      TileMemory mem;
      exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(n)));
      exec::Field fa = mem.add(a), fb = mem.add(b);
      exec::Vertex v{0, exec::Codelet::Binary, DType::Float, {out, fa, fb},
                     {static_cast<int64_t>(*ops::binaryFnOf(op)), n, exec::kAligned, exec::kAligned, 0, 1, n, 1, 1}, {}};
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
    exec::Vertex v{0, exec::Codelet::Binary, DType::Float, {out, fa, fb},
                   {static_cast<int64_t>(*ops::binaryFnOf(op)), 9, exec::kAligned, exec::kBroadcast, 4, 2, 3, 5, 5, 1, 0, 1}, {}};
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
              Shape sc = bias_mode == exec::kBiasScalar ? Shape{1}
                         : bias_mode == exec::kBiasRow  ? Shape{cols}
                         : bias_mode == exec::kBiasColumn ? Shape{rows, 1}
                                                          : Shape{rows, cols};
              int64_t nc = bias_mode == exec::kBiasScalar ? 1 : bias_mode == exec::kBiasRow ? cols
                           : bias_mode == exec::kBiasColumn ? rows : rows * cols;
              auto c = randomVector(static_cast<size_t>(nc), 8);
              Tensor TA = tensorOf(a, sa), TB = tensorOf(b, sb), TC = tensorOf(c, sc);
              std::vector<const Tensor*> ins{&TA, &TB};
              if (bias_mode != exec::kBiasNone) ins.push_back(&TC);
              auto want = reference("Gemm", ins, {{"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.5f}, {"beta", 2.0f}});
              TileMemory mem;
              exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(rows * cols)));
              exec::Field fa = mem.add(a), fb = mem.add(b);
              exec::Vertex v{0, exec::Codelet::MatMul, DType::Float, {out, fa, fb}, {rows, K, cols, ta, tb, bias_mode}, {0.5f, 2.0f}};
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

TEST(MatMulCodelet, ActivationEpilogueMatchesGemmAct) {
  const std::vector<std::pair<std::string, int64_t>> kinds = {{"Relu", 0},        {"Clip", 1},      {"LeakyRelu", 2},
                                                              {"Sigmoid", 3},     {"HardSigmoid", 4}, {"HardSwish", 5},
                                                              {"Tanh", 6}};
  const int64_t rows = 3, K = 4, cols = 5;
  auto a = randomVector(rows * K, 9), b = randomVector(K * cols, 10), c = randomVector(cols, 11);
  Tensor TA = tensorOf(a, {rows, K}), TB = tensorOf(b, {K, cols}), TC = tensorOf(c, {cols});
  for (const auto& [name, kind] : kinds) {
    // Parameters chosen so every branch of Clip/LeakyRelu/HardSigmoid is exercised.
    const float alpha = 0.3f, beta = 0.4f, lo = -0.5f, hi = 0.6f;
    auto want = reference("GemmAct", {&TA, &TB, &TC},
                          {{"activation", name}, {"activation_alpha", alpha}, {"activation_beta", beta},
                           {"activation_min", lo}, {"activation_max", hi}},
                          "ai.graphcore");
    TileMemory mem;
    exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(rows * cols)));
    exec::Field fa = mem.add(a), fb = mem.add(b), fc = mem.add(c);
    exec::Vertex v{0, exec::Codelet::MatMul, DType::Float, {out, fa, fb, fc}, {rows, K, cols, 0, 0, exec::kBiasRow, kind},
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
  mm.params[1] = 3;
  EXPECT_FALSE(checkVertex(mm).ok());
  // Broadcast strides reaching past the operand buffer.
  exec::Vertex bin{0, exec::Codelet::Binary, DType::Float, {{0, 8}, {8, 8}, {16, 4}}, {0, 2, 0, 1, 0, 1, 2, 1, 1}, {}};
  EXPECT_FALSE(checkVertex(bin).ok());
  bin.params[8] = 0;
  EXPECT_TRUE(checkVertex(bin).ok()) << checkVertex(bin).error().message();
}

}  // namespace
}  // namespace poprt::sim
