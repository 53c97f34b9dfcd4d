// Throughput of the simulator's codelets on one tile's memory, in GFLOP/s (items = flops).
#include <benchmark/benchmark.h>

#include <vector>

#include "lib/exec/codelets.h"
#include "lib/ops/scalar_math.h"
#include "lib/support/gemm.h"
#include "lib/support/simd_isa.h"
#include "sim/codelets.h"
#include "sim/logistic.h"
#include "sim/row_sums.h"

namespace {

using poprt::exec::Codelet;
using poprt::exec::Field;
using poprt::exec::Vertex;

void BM_MatMul(benchmark::State& state) {
  const int64_t n = state.range(0);  // rows = K = cols = n
  const uint64_t bytes = static_cast<uint64_t>(n * n) * 4;
  std::vector<uint8_t> mem(3 * bytes, 0);
  Vertex v{0,
           Codelet::MatMul,
           poprt::DType::Float,
           {Field{0, bytes}, Field{bytes, bytes}, Field{2 * bytes, bytes}},
           {n, n, n, 0, 0, poprt::exec::kBiasNone},
           {1.f, 1.f}};
  for (auto _ : state) {
    poprt::sim::runVertex(v, mem.data());
    benchmark::DoNotOptimize(mem.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MatMul)->Arg(16)->Arg(64)->Arg(128);

void BM_BinaryAdd(benchmark::State& state) {
  const int64_t n = state.range(0);
  const uint64_t bytes = static_cast<uint64_t>(n) * 4;
  std::vector<uint8_t> mem(3 * bytes, 0);
  Vertex v{0,
           Codelet::Binary,
           poprt::DType::Float,
           {Field{0, bytes}, Field{bytes, bytes}, Field{2 * bytes, bytes}},
           {static_cast<int64_t>(poprt::ops::BinaryFn::Add), n, poprt::exec::kAligned, poprt::exec::kAligned, 0, 1, n, 1, 1},
           {}};
  for (auto _ : state) {
    poprt::sim::runVertex(v, mem.data());
    benchmark::DoNotOptimize(mem.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_BinaryAdd)->Arg(1024)->Arg(65536);

void BM_Relu(benchmark::State& state) {
  const int64_t n = state.range(0);
  const uint64_t bytes = static_cast<uint64_t>(n) * 4;
  std::vector<uint8_t> mem(2 * bytes, 0);
  Vertex v{0,
           Codelet::Unary,
           poprt::DType::Float,
           {Field{0, bytes}, Field{bytes, bytes}},
           {static_cast<int64_t>(poprt::ops::UnaryFn::Relu), n},
           {}};
  for (auto _ : state) {
    poprt::sim::runVertex(v, mem.data());
    benchmark::DoNotOptimize(mem.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Relu)->Arg(1024)->Arg(65536);

// A 3x3 conv block as the planner cuts ResNet-50 for ipu2: `out_ch` output channels of one output
// row (14 positions) from C input channels (3 input rows held, padding 1 on both sides).
void BM_ConvPartial3x3(benchmark::State& state) {
  const int64_t out_ch = state.range(0), C = state.range(1), W = 14;
  const uint64_t out_bytes = static_cast<uint64_t>(out_ch * W) * 4, in_bytes = static_cast<uint64_t>(C * 3 * W) * 4,
                 w_bytes = static_cast<uint64_t>(out_ch * C * 9) * 4;
  std::vector<uint8_t> mem(out_bytes + in_bytes + w_bytes, 0);
  Vertex v{0,
           Codelet::ConvPartial,
           poprt::DType::Float,
           {Field{0, out_bytes}, Field{out_bytes, in_bytes}, Field{out_bytes + in_bytes, w_bytes}},
           // rank 2, 1 group, C in, out_ch out, no bias; in [3, W], out [1, W], kernel 3x3, stride 1, dilation 1, start [0, -1]
           {2, 1, C, out_ch, 0, 3, W, 1, W, 3, 3, 1, 1, 1, 1, 0, -1},
           {}};
  if (!poprt::sim::checkVertex(v).ok()) state.SkipWithError(poprt::sim::checkVertex(v).error().message().c_str());
  for (auto _ : state) {
    poprt::sim::runVertex(v, mem.data());
    benchmark::DoNotOptimize(mem.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(out_ch * C * 9 * W) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_ConvPartial3x3)->Args({3, 256})->Args({4, 256})->Args({10, 256})->Args({32, 64});
// A block as small convs split them (resnet20_cifar: 4 output channels, 2 of the input channels,
// one output row of 14): per-vertex overhead rather than arithmetic.
BENCHMARK(BM_ConvPartial3x3)->Name("BM_ConvPartial3x3Small")->Args({4, 2});

// resnet20_cifar's most common vertex: 2 output channels of 1 input channel's partial sums, 3 rows
// of 32 from 5 (the halo), padded by 1 on each side of the rows.
void BM_ConvPartialOneChannel(benchmark::State& state) {
  const int64_t W = 32;
  const uint64_t out_bytes = 2 * 3 * W * 4, in_bytes = 5 * W * 4, w_bytes = 2 * 9 * 4;
  std::vector<uint8_t> mem(out_bytes + in_bytes + w_bytes, 0);
  Vertex v{0,
           Codelet::ConvPartial,
           poprt::DType::Float,
           {Field{0, out_bytes}, Field{out_bytes, in_bytes}, Field{out_bytes + in_bytes, w_bytes}},
           // rank 2, 1 group, 1 in, 2 out, no bias; in [5, W], out [3, W], kernel 3x3, stride 1, dilation 1, start [0, -1]
           {2, 1, 1, 2, 0, 5, W, 3, W, 3, 3, 1, 1, 1, 1, 0, -1},
           {}};
  auto params = poprt::sim::prepareVertex(v);  // decoded once, as the engine's plan does
  if (!params.ok()) return state.SkipWithError(params.error().message().c_str());
  for (auto _ : state) {
    poprt::sim::runVertex(v, *params, mem.data());
    benchmark::DoNotOptimize(mem.data());
  }
}
BENCHMARK(BM_ConvPartialOneChannel);

// fastestdet's first conv, the model's costliest step on the simulator: 3 output channels of one
// row of 176 from 3 input channels' 2 rows of 352, a 3x3 kernel at stride 2 (padding 1), bias and
// Relu. A strided window: every tap reads every other input column.
void BM_ConvPartialStride2(benchmark::State& state) {
  const int64_t W = 352, OW = 176;
  const uint64_t out_bytes = 3 * OW * 4, in_bytes = 3 * 2 * W * 4, w_bytes = 3 * 27 * 4, b_bytes = 3 * 4;
  std::vector<uint8_t> mem(out_bytes + in_bytes + w_bytes + b_bytes, 0);
  Vertex v{
      0,
      Codelet::ConvPartial,
      poprt::DType::Float,
      {Field{0, out_bytes}, Field{out_bytes, in_bytes}, Field{out_bytes + in_bytes, w_bytes},
       Field{out_bytes + in_bytes + w_bytes, b_bytes}},
      // rank 2, 1 group, 3 in, 3 out, bias; in [2, W], out [1, OW], kernel 3x3, stride 2, dilation 1,
      // start [-1, -1], Relu
      {2, 1, 3, 3, 1, 2, W, 1, OW, 3, 3, 2, 2, 1, 1, -1, -1, static_cast<int64_t>(poprt::ops::graphcore::ActivationKind::Relu)},
      {0, 0, 0, 0}};
  auto params = poprt::sim::prepareVertex(v);
  if (!params.ok()) return state.SkipWithError(params.error().message().c_str());
  for (auto _ : state) {
    poprt::sim::runVertex(v, *params, mem.data());
    benchmark::DoNotOptimize(mem.data());
  }
}
BENCHMARK(BM_ConvPartialStride2);

// The kernels under each instruction set this CPU has (arg 0: Portable, 1: AVX2, 2: AVX-512),
// on the shapes the small models run most: the last one the CPU has is what runs.
bool pickIsa(benchmark::State& state, poprt::SimdIsa& isa) {
  const auto isas = poprt::availableSimdIsas();
  if (state.range(0) >= static_cast<int64_t>(isas.size())) {
    state.SkipWithError("this CPU lacks that instruction set");
    return false;
  }
  isa = isas[static_cast<size_t>(state.range(0))];
  return true;
}

// A conv block's product: 1-5 output channels (the row tiles' remainder), 16 channels x 3x3 taps,
// 3 rows of 34.
void BM_GemmFewRows(benchmark::State& state) {
  poprt::SimdIsa isa = poprt::SimdIsa::Portable;
  if (!pickIsa(state, isa)) return;
  const int64_t M = state.range(1), K = 144, N = 102;
  std::vector<float> a(static_cast<size_t>(M * K), 0.5f), b(static_cast<size_t>(K * N), 0.25f), out(static_cast<size_t>(M * N));
  for (auto _ : state) {
    poprt::gemmWith(isa, a.data(), M, K, b.data(), N, N, out.data(), N);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(M * K * N) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_GemmFewRows)->ArgsProduct({{0, 1, 2}, {1, 2, 4}});

// light_resnet50's costliest products (M output channels x K input rows x N columns, together a
// third of its multiply-adds a run): rows through pointers, as a 1x1 conv block reads its input
// where the exchange's sources hold it, each row in a line of its own.
void BM_GemmRowsConvShapes(benchmark::State& state) {
  poprt::SimdIsa isa = poprt::SimdIsa::Portable;
  if (!pickIsa(state, isa)) return;
  const int64_t M = state.range(1), K = state.range(2), N = state.range(3), stride = (N + 31) / 16 * 16;
  std::vector<float> a(static_cast<size_t>(M * K), 0.5f), b(static_cast<size_t>(K * stride), 0.25f),
      out(static_cast<size_t>(M * N));
  std::vector<const float*> rows(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) rows[static_cast<size_t>(k)] = b.data() + k * stride;
  for (auto _ : state) {
    poprt::gemmRowsWith(isa, a.data(), M, K, rows.data(), 0, N, out.data(), N);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(M * K * N) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_GemmRowsConvShapes)
    ->ArgsProduct({{0, 1, 2}, {8}, {108}, {14}})
    ->ArgsProduct({{0, 1, 2}, {20}, {64}, {28}})
    ->ArgsProduct({{0, 1, 2}, {32}, {40}, {28}})
    ->ArgsProduct({{0, 1, 2}, {5}, {72}, {56}})
    ->ArgsProduct({{0, 1, 2}, {10}, {72}, {28}})
    ->ArgsProduct({{0, 1, 2}, {8}, {207}, {63}})
    ->ArgsProduct({{0, 1, 2}, {23}, {32}, {49}});

// A split conv's partial sums: 8 rows of 40.
void BM_SumRows(benchmark::State& state) {
  poprt::SimdIsa isa = poprt::SimdIsa::Portable;
  if (!pickIsa(state, isa)) return;
  const int64_t count = 8, n = 40;
  std::vector<float> rows(static_cast<size_t>(count * n), 0.125f), out(static_cast<size_t>(n));
  for (auto _ : state) {
    poprt::sim::sumRowsWith(isa, rows.data(), count, n, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_SumRows)->DenseRange(0, 2);

// A conv block's Swish epilogue: 1,024 outputs.
void BM_Swish(benchmark::State& state) {
  poprt::SimdIsa isa = poprt::SimdIsa::Portable;
  if (!pickIsa(state, isa)) return;
  std::vector<float> x(1024);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.1f - 4.0f;
  std::vector<float> out(x.size());
  for (auto _ : state) {
    poprt::sim::logisticActivationWith(isa, true, x.data(), out.data(), static_cast<int64_t>(x.size()));
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Swish)->DenseRange(0, 2);

}  // namespace

BENCHMARK_MAIN();
