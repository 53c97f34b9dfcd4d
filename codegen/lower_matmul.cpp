// MatMul and Gemm: a planner splits each batch's M x N output into row and column blocks, and
// maybe K into blocks too, one block per tile, within the tile memory budget; each tile gathers
// its rows of A and columns of B (and its part of Gemm's C) and runs one MatMul vertex. With K
// split, the vertices write float32 partial sums and the next superstep adds them up.
#include <algorithm>
#include <cmath>

#include "codegen/lowering.h"
#include "codegen/matmul_planner.h"
#include "codegen/partial_sums.h"
#include "lib/exec/vertex_params.h"
#include "lib/ops/broadcast.h"
#include "lib/ops/graphcore_ops.h"

namespace poprt::codegen {

namespace {
constexpr double kMacsPerCycle = 16;
constexpr double kExchangeBytesPerCycle = 16;  // as the planner has always weighed operand bytes against MACs
constexpr double kVectorWidth = 2;             // float32 adds per cycle in the reduction
constexpr double kSyncCycles = 150;            // the reduction's extra superstep
}  // namespace

uint64_t matMulBlockBytes(int64_t rows, int64_t k_block, int64_t cols, int64_t k_splits, uint64_t elem_bytes) {
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  const uint64_t operands = elem_bytes * u(rows * k_block + k_block * cols);
  if (k_splits == 1) return operands + 2 * elem_bytes * u(rows * cols);
  const uint64_t slice = u(reductionSlice(rows * cols, k_splits));
  // Its partials, the bias bound, and its slice of the reduction: every partial's share, and the sums.
  return operands + (kPartialBytes + elem_bytes) * u(rows * cols) + kPartialBytes * u(k_splits) * slice + elem_bytes * slice;
}

MatMulPlan planMatMul(int64_t batches, int64_t M, int64_t K, int64_t N, uint32_t tiles, uint64_t budget_bytes,
                      uint64_t elem_bytes) {
  const double es = static_cast<double>(elem_bytes);
  MatMulPlan best;
  double best_cost = INFINITY;
  const int64_t per_batch = std::max<int64_t>(1, tiles / std::max<int64_t>(1, batches));
  for (int64_t k_splits = 1; k_splits <= std::max<int64_t>(1, std::min({K, kMaxKSplits, per_batch})); ++k_splits) {
    const int64_t k_block = (K + k_splits - 1) / k_splits;
    if (k_splits > 1 && (k_splits - 1) * k_block >= K) continue;  // the same blocks as fewer splits
    for (int64_t col_blocks = 1; col_blocks <= std::min<int64_t>(N, per_batch / k_splits); ++col_blocks) {
      const int64_t row_blocks = std::min<int64_t>(M, std::max<int64_t>(1, per_batch / (col_blocks * k_splits)));
      const int64_t rows = (M + row_blocks - 1) / row_blocks, cols = (N + col_blocks - 1) / col_blocks;
      const uint64_t bytes = matMulBlockBytes(rows, k_block, cols, k_splits, elem_bytes);
      // Cost: the busiest tile's multiply-accumulates plus the bytes it receives (exchange), and
      // with K split the reduction's superstep: its slice of every partial, received and added.
      double cost = static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(k_block) / kMacsPerCycle +
                    static_cast<double>(rows * k_block + k_block * cols) * es / kExchangeBytesPerCycle;
      if (k_splits > 1) {
        const double slice = static_cast<double>(reductionSlice(rows * cols, k_splits)), parts = static_cast<double>(k_splits);
        cost += kSyncCycles + slice * parts / kVectorWidth +
                static_cast<double>(kPartialBytes) * slice * (parts - 1) / kExchangeBytesPerCycle;
      }
      const bool fits = bytes <= budget_bytes;
      const double rank = fits ? cost : 1e12 + static_cast<double>(bytes);  // over budget: the smallest, as a last resort
      if (rank < best_cost) {
        best_cost = rank;
        best = {row_blocks, col_blocks, rows, cols, k_splits, k_block, bytes, cost, fits};
      }
    }
  }
  return best;
}

Status lowerMatMul(Lowering& l, const ir::Node& node) {
  const bool gemm = node.opType() == "Gemm" || node.opType() == "GemmAct";
  const ir::Value* a = node.input(0);
  const ir::Value* b = node.input(1);
  const ir::Value* c = gemm ? node.input(2) : nullptr;
  const ir::Value* y = node.output(0);
  const bool trans_a = gemm && node.attrInt("transA", 0) != 0;
  const bool trans_b = gemm && node.attrInt("transB", 0) != 0;
  const float alpha = gemm ? node.attrFloat("alpha", 1.0f) : 1.0f;
  const float beta = gemm ? node.attrFloat("beta", 1.0f) : 1.0f;

  // Numpy matmul semantics: promote 1-D operands, broadcast the batch dims.
  Shape sa = a->type.staticShape(), sb = b->type.staticShape();
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  int64_t M = trans_a ? sa[sa.size() - 1] : sa[sa.size() - 2];
  const int64_t K = trans_a ? sa[sa.size() - 2] : sa[sa.size() - 1];
  const int64_t N = trans_b ? sb[sb.size() - 2] : sb[sb.size() - 1];
  Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  POPRT_ASSIGN_OR_RETURN(Shape batch, ops::broadcastShapes(batch_a, batch_b));
  const std::vector<int64_t> stride_a = ops::broadcastStrides(batch_a, batch), stride_b = ops::broadcastStrides(batch_b, batch);
  const std::vector<int64_t> batch_strides = ops::contiguousStrides(batch);
  int64_t batches = 1, batches_a = 1;
  for (int64_t d : batch) batches *= d;
  for (int64_t d : batch_a) batches_a *= d;
  // A B shared by every batch entry (a 2-D weight, say): the entries' rows of A are one matrix of
  // batches x M rows, split over all the tiles, not each entry over its own share of them.
  if (!trans_a && batches > 1 && batches_a == batches &&
      std::all_of(stride_b.begin(), stride_b.end(), [](int64_t s) { return s == 0; })) {
    M *= batches;
    batches = 1;
  }

  // Gemm's C broadcasts to [M, N] in one of four ways.
  exec::BiasMode bias_mode = exec::kBiasNone;
  if (c) {
    Shape sc = c->type.staticShape();
    while (sc.size() < 2) sc.insert(sc.begin(), 1);
    bias_mode =
        sc[0] == 1 ? (sc[1] == 1 ? exec::kBiasScalar : exec::kBiasRow) : (sc[1] == 1 ? exec::kBiasColumn : exec::kBiasFull);
  }

  if (M == 0 || N == 0 || batches == 0) {  // an empty output: nothing to compute
    l.setMapping(y, {});
    return okStatus();
  }
  const uint64_t budget = l.options().tileBudget();
  const DType dt = y->type.dtype;
  const uint64_t es = dtypeSize(dt);
  const MatMulPlan plan = planMatMul(batches, M, K, N, l.tileCount(), budget, es);
  if (!plan.fits)
    return Error(node.describe() + ": no split of the " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) +
                 " matmul fits in " + std::to_string(budget) + " bytes per tile (hint: " + halfPrecisionHint(dt) +
                 "raise --available_memory_proportion or use more IPUs)");

  // GemmAct: the activation runs in the vertex, on each output as it is written.
  std::optional<exec::VertexActivation> act;
  if (node.opType() == "GemmAct") {
    POPRT_ASSIGN_OR_RETURN(ops::graphcore::Activation a, ops::graphcore::activationOf(node));
    act = exec::vertexActivation(a);
  }
  TileMapping out;
  // Output elements [e, e + count) of block (bi, m0, n0) (rows of `cols`, one after another from
  // `offset` on `tile`) as regions of Y: a row's part is N apart from the next one's.
  auto place = [&](int64_t bi, int64_t m0, int64_t n0, int64_t cols, int64_t e, int64_t count, uint32_t t, uint64_t offset) {
    if (cols == N) return out.regions.push_back({bi * M * N + m0 * N + e, count, t, offset});
    for (const int64_t end = e + count; e < end;) {
      const int64_t r = e / cols, piece = std::min(end, (r + 1) * cols) - e;
      out.regions.push_back({bi * M * N + (m0 + r) * N + n0 + e % cols, piece, t, offset});
      offset += static_cast<uint64_t>(piece) * es;
      e += piece;
    }
  };
  const bool split = plan.k_splits > 1;
  struct SplitBlock {
    int64_t bi, m0, n0, rows, cols;
    std::vector<std::pair<uint32_t, uint64_t>> partials;  // (tile, offset) of each K block's
  };
  std::vector<SplitBlock> split_blocks;
  uint32_t tile = l.ipu() * l.tileCount();  // every matmul starts at its IPU's first tile
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t oa = ops::broadcastOffset(bi, batch_strides, stride_a) * M * K;
    const int64_t ob = ops::broadcastOffset(bi, batch_strides, stride_b) * K * N;
    for (int64_t m0 = 0; m0 < M; m0 += plan.rows) {
      const int64_t rows = std::min(plan.rows, M - m0);
      for (int64_t n0 = 0; n0 < N; n0 += plan.cols) {
        const int64_t cols = std::min(plan.cols, N - n0);
        if (split) split_blocks.push_back({bi, m0, n0, rows, cols, {}});
        for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += std::max<int64_t>(plan.k_block, 1)) {
          const int64_t kb = split ? std::min(plan.k_block, K - k0) : K;
          // An operand block of `reps` runs of `count` elements, `stride` apart.
          auto block = [&](const ir::Value* v, int64_t begin, int64_t count, int64_t reps, int64_t stride) {
            return l.operandRows(v, begin, count, reps, stride, tile);
          };
          // A block: rows of A, or with trans_a one run of `rows` per k (whole rows: one run).
          const uint64_t a_off = trans_a   ? block(a, oa + k0 * M + m0, rows, kb, M)
                                 : kb == K ? block(a, oa + m0 * K, rows * K, 1, 0)
                                           : block(a, oa + m0 * K + k0, kb, rows, K);
          // B block: with trans_b rows n0.. of B (whole rows: one run); else one run of `cols` per k.
          const uint64_t b_off = !trans_b  ? block(b, ob + k0 * N + n0, cols, kb, N)
                                 : kb == K ? block(b, ob + n0 * K, cols * K, 1, 0)
                                           : block(b, ob + n0 * K + k0, kb, cols, K);
          // A K block writes float32 partial sums, added up in the next superstep; else Y's block.
          const uint64_t outputs = static_cast<uint64_t>(rows * cols);
          const exec::Field out_field =
              split ? exec::Field{l.scratch(tile, outputs * kPartialBytes), outputs * kPartialBytes, partialFieldDtype(dt)}
                    : exec::Field{l.allocator().allocate(tile, outputs * es), outputs * es};
          const bool first = k0 == 0;  // Gemm's C is added once, by the first K block
          std::vector<exec::Field> fields = {
              out_field, {a_off, static_cast<uint64_t>(rows * kb) * es}, {b_off, static_cast<uint64_t>(kb * cols) * es}};
          // A split block's activation waits for the sum.
          const exec::MatMulParams params{
              rows, kb, cols, trans_a, trans_b, first ? bias_mode : exec::kBiasNone, alpha, beta, split ? std::nullopt : act};
          if (c && first) {
            const uint64_t c_off = bias_mode == exec::kBiasScalar   ? block(c, 0, 1, 1, 0)
                                   : bias_mode == exec::kBiasRow    ? block(c, n0, cols, 1, 0)
                                   : bias_mode == exec::kBiasColumn ? block(c, m0, rows, 1, 0)
                                                                    : block(c, m0 * N + n0, cols, rows, N);
            const int64_t count = bias_mode == exec::kBiasScalar   ? 1
                                  : bias_mode == exec::kBiasRow    ? cols
                                  : bias_mode == exec::kBiasColumn ? rows
                                                                   : rows * cols;
            fields.push_back({c_off, static_cast<uint64_t>(count) * es});
          }
          l.computeSet().vertices.push_back(exec::makeVertex(tile, dt, std::move(fields), params));
          if (split)
            split_blocks.back().partials.emplace_back(tile, out_field.offset);
          else
            place(bi, m0, n0, cols, 0, rows * cols, tile, out_field.offset);
          tile = l.nextTile(tile);
        }
      }
    }
  }
  if (split) {
    l.nextSuperstep();
    for (const SplitBlock& sb : split_blocks)
      reducePartials(l, sb.partials, sb.rows * sb.cols, dt, act, [&](int64_t first, int64_t len, uint32_t t, uint64_t offset) {
        place(sb.bi, sb.m0, sb.n0, sb.cols, first, len, t, offset);
      });
  }
  std::sort(out.regions.begin(), out.regions.end(), [](const Region& x, const Region& y) { return x.begin < y.begin; });
  l.setMapping(y, std::move(out));
  return okStatus();
}

}  // namespace poprt::codegen
