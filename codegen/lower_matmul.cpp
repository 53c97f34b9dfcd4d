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
  const uint64_t slice = u(reductionSlice(rows * cols, k_splits, cols));
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
        const double slice = static_cast<double>(reductionSlice(rows * cols, k_splits, cols)),
                     parts = static_cast<double>(k_splits);
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

namespace {

// A MatMul or Gemm as the lowering sees it: numpy semantics (1-D operands promoted, batch dims
// broadcast), and a B shared by every batch entry folded into M.
struct MatMulOp {
  const ir::Value *a = nullptr, *b = nullptr, *c = nullptr;
  bool trans_a = false, trans_b = false;
  float alpha = 1, beta = 1;
  int64_t M = 0, K = 0, N = 0, batches = 1;
  std::vector<int64_t> stride_a, stride_b, batch_strides;  // batch entry -> operand entry
  exec::BiasMode bias_mode = exec::kBiasNone;              // how Gemm's C broadcasts to [M, N]
};

Expected<MatMulOp> matMulOp(const ir::Node& node) {
  MatMulOp op;
  const bool gemm = node.opType() == "Gemm" || node.opType() == "GemmAct";
  op.a = node.input(0);
  op.b = node.input(1);
  op.c = gemm ? node.input(2) : nullptr;
  op.trans_a = gemm && node.attrInt("transA", 0) != 0;
  op.trans_b = gemm && node.attrInt("transB", 0) != 0;
  op.alpha = gemm ? node.attrFloat("alpha", 1.0f) : 1.0f;
  op.beta = gemm ? node.attrFloat("beta", 1.0f) : 1.0f;
  Shape sa = op.a->type.staticShape(), sb = op.b->type.staticShape();
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  op.M = op.trans_a ? sa[sa.size() - 1] : sa[sa.size() - 2];
  op.K = op.trans_a ? sa[sa.size() - 2] : sa[sa.size() - 1];
  op.N = op.trans_b ? sb[sb.size() - 2] : sb[sb.size() - 1];
  Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  POPRT_ASSIGN_OR_RETURN(Shape batch, ops::broadcastShapes(batch_a, batch_b));
  op.stride_a = ops::broadcastStrides(batch_a, batch);
  op.stride_b = ops::broadcastStrides(batch_b, batch);
  op.batch_strides = ops::contiguousStrides(batch);
  int64_t batches_a = 1;
  for (int64_t d : batch) op.batches *= d;
  for (int64_t d : batch_a) batches_a *= d;
  // A B shared by every batch entry (a 2-D weight, say): the entries' rows of A are one matrix of
  // batches x M rows, split over all the tiles, not each entry over its own share of them.
  if (!op.trans_a && op.batches > 1 && batches_a == op.batches &&
      std::all_of(op.stride_b.begin(), op.stride_b.end(), [](int64_t s) { return s == 0; })) {
    op.M *= op.batches;
    op.batches = 1;
  }
  if (op.c) {
    Shape sc = op.c->type.staticShape();
    while (sc.size() < 2) sc.insert(sc.begin(), 1);
    op.bias_mode =
        sc[0] == 1 ? (sc[1] == 1 ? exec::kBiasScalar : exec::kBiasRow) : (sc[1] == 1 ? exec::kBiasColumn : exec::kBiasFull);
  }
  return op;
}

// A block of the output: rows [m0, m0 + rows) x columns [n0, n0 + cols) of batch entry bi, over
// K [k0, k0 + kb).
struct MatMulBlock {
  int64_t bi, m0, rows, n0, cols, k0, kb;
};

// The block's vertex on `tile`. Split (K in several blocks), it writes float32 partial sums
// added up in the next superstep, and its activation waits for the sum; else Y's block.
exec::Vertex blockVertex(Lowering& l, const MatMulOp& op, const MatMulBlock& blk, uint32_t tile, DType dt, bool split,
                         const std::optional<exec::VertexActivation>& act) {
  const uint64_t es = dtypeSize(dt);
  const int64_t M = op.M, K = op.K, N = op.N, rows = blk.rows, cols = blk.cols, kb = blk.kb, k0 = blk.k0;
  const int64_t oa = ops::broadcastOffset(blk.bi, op.batch_strides, op.stride_a) * M * K;
  const int64_t ob = ops::broadcastOffset(blk.bi, op.batch_strides, op.stride_b) * K * N;
  // An operand block of `reps` runs of `count` elements, `stride` apart.
  auto block = [&](const ir::Value* v, int64_t begin, int64_t count, int64_t reps, int64_t stride) {
    return l.operandRows(v, begin, count, reps, stride, tile);
  };
  // A block: rows of A, or with trans_a one run of `rows` per k (whole rows: one run).
  const uint64_t a_off = op.trans_a ? block(op.a, oa + k0 * M + blk.m0, rows, kb, M)
                         : kb == K  ? block(op.a, oa + blk.m0 * K, rows * K, 1, 0)
                                    : block(op.a, oa + blk.m0 * K + k0, kb, rows, K);
  // B block: with trans_b rows n0.. of B (whole rows: one run); else one run of `cols` per k.
  const uint64_t b_off = !op.trans_b ? block(op.b, ob + k0 * N + blk.n0, cols, kb, N)
                         : kb == K   ? block(op.b, ob + blk.n0 * K, cols * K, 1, 0)
                                     : block(op.b, ob + blk.n0 * K + k0, kb, cols, K);
  const uint64_t outputs = static_cast<uint64_t>(rows * cols);
  const exec::Field out_field =
      split ? exec::Field{l.scratch(tile, outputs * kPartialBytes), outputs * kPartialBytes, partialFieldDtype(dt)}
            : exec::Field{l.allocator().allocate(tile, outputs * es), outputs * es};
  const bool first = k0 == 0;  // Gemm's C is added once, by the first K block
  std::vector<exec::Field> fields = {
      out_field, {a_off, static_cast<uint64_t>(rows * kb) * es}, {b_off, static_cast<uint64_t>(kb * cols) * es}};
  const exec::MatMulParams params{rows,       kb,         cols,
                                  op.trans_a, op.trans_b, first ? op.bias_mode : exec::kBiasNone,
                                  op.alpha,   op.beta,    split ? std::nullopt : act};
  if (op.c && first) {
    const exec::BiasMode mode = op.bias_mode;
    const uint64_t c_off = mode == exec::kBiasScalar   ? block(op.c, 0, 1, 1, 0)
                           : mode == exec::kBiasRow    ? block(op.c, blk.n0, cols, 1, 0)
                           : mode == exec::kBiasColumn ? block(op.c, blk.m0, rows, 1, 0)
                                                       : block(op.c, blk.m0 * N + blk.n0, cols, rows, N);
    const int64_t count = mode == exec::kBiasScalar   ? 1
                          : mode == exec::kBiasRow    ? cols
                          : mode == exec::kBiasColumn ? rows
                                                      : rows * cols;
    fields.push_back({c_off, static_cast<uint64_t>(count) * es});
  }
  return exec::makeVertex(tile, dt, std::move(fields), params);
}

}  // namespace

Status lowerMatMul(Lowering& l, const ir::Node& node) {
  POPRT_ASSIGN_OR_RETURN(const MatMulOp op, matMulOp(node));
  const int64_t M = op.M, K = op.K, N = op.N;
  const ir::Value* y = node.output(0);
  if (M == 0 || N == 0 || op.batches == 0) {  // an empty output: nothing to compute
    l.setMapping(y, {});
    return okStatus();
  }
  const uint64_t budget = l.options().tileBudget();
  const DType dt = y->type.dtype;
  const uint64_t es = dtypeSize(dt);
  MatMulPlan plan = planMatMul(op.batches, M, K, N, l.tileCount(), l.options().preferredTileBudget(), es);
  if (!plan.fits) plan = planMatMul(op.batches, M, K, N, l.tileCount(), budget, es);
  if (!plan.fits)
    return Error(node.describe() + ": no split of the " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) +
                 " matmul fits in " + std::to_string(budget) + " bytes per tile (hint: " + halfPrecisionHint(dt) +
                 serializeHint(node) + "raise --available_memory_proportion or use more IPUs)");

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
    MatMulBlock block;
    std::vector<std::pair<uint32_t, uint64_t>> partials;  // (tile, offset) of each K block's
  };
  std::vector<SplitBlock> split_blocks;
  uint32_t tile = l.ipu() * l.tileCount();  // every matmul starts at its IPU's first tile
  for (int64_t bi = 0; bi < op.batches; ++bi)
    for (int64_t m0 = 0; m0 < M; m0 += plan.rows)
      for (int64_t n0 = 0; n0 < N; n0 += plan.cols) {
        MatMulBlock blk{bi, m0, std::min(plan.rows, M - m0), n0, std::min(plan.cols, N - n0), 0, K};
        if (split) split_blocks.push_back({blk, {}});
        for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += std::max<int64_t>(plan.k_block, 1)) {
          blk.k0 = k0;
          blk.kb = split ? std::min(plan.k_block, K - k0) : K;
          exec::Vertex v = blockVertex(l, op, blk, tile, dt, split, act);
          const uint64_t out_offset = v.fields[0].offset;
          l.computeSet().vertices.push_back(std::move(v));
          if (split)
            split_blocks.back().partials.emplace_back(tile, out_offset);
          else
            place(bi, m0, n0, blk.cols, 0, blk.rows * blk.cols, tile, out_offset);
          tile = l.nextTile(tile);
        }
      }
  if (split) {
    l.nextSuperstep();
    for (const SplitBlock& sb : split_blocks) {
      const MatMulBlock& b = sb.block;
      reducePartials(l, sb.partials, b.rows * b.cols, b.cols, dt, act,
                     [&](int64_t first, int64_t len, uint32_t t, uint64_t offset) {
                       place(b.bi, b.m0, b.n0, b.cols, first, len, t, offset);
                     });
    }
  }
  std::sort(out.regions.begin(), out.regions.end(), [](const Region& x, const Region& y) { return x.begin < y.begin; });
  l.setMapping(y, std::move(out));
  return okStatus();
}

}  // namespace poprt::codegen
