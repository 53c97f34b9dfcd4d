// Throughput of the simulator's codelets on one tile's memory, in GFLOP/s (items = flops).
#include <benchmark/benchmark.h>

#include <vector>

#include "lib/exec/codelets.h"
#include "lib/ops/scalar_math.h"
#include "sim/codelets.h"

namespace {

using poprt::exec::Codelet;
using poprt::exec::Field;
using poprt::exec::Vertex;

void BM_MatMul(benchmark::State& state) {
  const int64_t n = state.range(0);  // rows = K = cols = n
  const uint64_t bytes = static_cast<uint64_t>(n * n) * 4;
  std::vector<uint8_t> mem(3 * bytes, 0);
  Vertex v{0, Codelet::MatMul, poprt::DType::Float, {Field{0, bytes}, Field{bytes, bytes}, Field{2 * bytes, bytes}},
           {n, n, n, 0, 0, poprt::exec::kBiasNone}, {1.f, 1.f}};
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
  Vertex v{0, Codelet::Binary, poprt::DType::Float, {Field{0, bytes}, Field{bytes, bytes}, Field{2 * bytes, bytes}},
           {static_cast<int64_t>(poprt::ops::BinaryFn::Add), n, poprt::exec::kAligned, poprt::exec::kAligned, 0, 1, n, 1, 1}, {}};
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
  Vertex v{0, Codelet::Unary, poprt::DType::Float, {Field{0, bytes}, Field{bytes, bytes}},
           {static_cast<int64_t>(poprt::ops::UnaryFn::Relu), n}, {}};
  for (auto _ : state) {
    poprt::sim::runVertex(v, mem.data());
    benchmark::DoNotOptimize(mem.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Relu)->Arg(1024)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
