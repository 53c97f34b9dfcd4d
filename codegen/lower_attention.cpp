// ai.graphcore MultiHeadAttention (semantics in lib/ops/graphcore_ops.h): one Attention vertex per
// (batch, head, block of queries). The block's tile gathers the head's D columns of its query
// rows, the head's keys and values (whole: every query needs every key), and its mask rows, into
// node scratch; its output rows land in Y's columns of that head. Blocks are sized so that there
// are about as many as tiles and each fits the tile budget.
#include <algorithm>
#include <cmath>
#include <map>

#include "codegen/lowering.h"
#include "lib/exec/vertex_params.h"
#include "lib/ops/broadcast.h"

namespace poprt::codegen {
namespace {

struct AttentionOp {
  int64_t B = 0, Sq = 0, Sk = 0, H = 0, D = 0, Dv = 0;
  float scale = 1;
  const ir::Value* mask = nullptr;
  std::vector<int64_t> mask_strides;  // over [B, H, Sq, Sk]; 0 on broadcast dims
};

Expected<AttentionOp> attentionOp(const ir::Node& node) {
  const Shape qs = node.input(0)->type.staticShape(), ks = node.input(1)->type.staticShape(),
              vs = node.input(2)->type.staticShape();
  if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3) return Error("Q, K and V are not [batch, sequence, hidden]");
  AttentionOp op;
  op.H = node.attrInt("num_heads", 0);
  if (op.H < 1 || qs[2] % op.H != 0 || vs[2] % op.H != 0) return Error("its hidden sizes do not split into num_heads");
  op.B = qs[0], op.Sq = qs[1], op.Sk = ks[1], op.D = qs[2] / op.H, op.Dv = vs[2] / op.H;
  if (ks[0] != op.B || vs[0] != op.B || vs[1] != op.Sk || ks[2] != qs[2]) return Error("Q, K and V do not match");
  op.scale =
      node.hasAttr("scale") ? node.attrFloat("scale", 1.0f) : static_cast<float>(1.0 / std::sqrt(static_cast<double>(op.D)));
  if (node.inputs().size() > 3 && node.input(3)) {
    op.mask = node.input(3);
    const Shape ms = op.mask->type.staticShape();
    if (ms.size() > 4) return Error("its mask has rank > 4");
    if (op.Sk > 1 && (ms.empty() || ms.back() != op.Sk)) return Error("its mask is broadcast along the keys");
    op.mask_strides = ops::broadcastStrides(ms, {op.B, op.H, op.Sq, op.Sk});
  }
  return op;
}

// Bytes one block of `rows` queries needs: its keys and values, query rows, mask rows and output.
uint64_t blockBytes(const AttentionOp& op, int64_t rows) {
  return 4 * static_cast<uint64_t>(op.Sk * (op.D + op.Dv) + rows * (op.D + op.Dv + (op.mask ? op.Sk : 0)));
}

}  // namespace

std::string attentionBlocker(const ir::Node& node, const Lowering& l) {
  auto op = attentionOp(node);
  if (!op.ok()) return op.error().message();
  if (blockBytes(*op, 1) > l.options().tileBudget())
    return "one head's keys and values (" + std::to_string(blockBytes(*op, 1)) + " bytes) do not fit the tile budget";
  return "";
}

Status lowerAttention(Lowering& l, const ir::Node& node) {
  POPRT_ASSIGN_OR_RETURN(AttentionOp op, attentionOp(node));
  const ir::Value *q = node.input(0), *k = node.input(1), *v = node.input(2);
  const int64_t heads = op.B * op.H, tiles = l.tileCount();
  int64_t rows = std::max<int64_t>(1, (heads * op.Sq + tiles - 1) / tiles);
  while (rows > 1 && blockBytes(op, rows) > l.options().tileBudget()) rows = (rows + 1) / 2;
  const int64_t qcols = op.H * op.D, vcols = op.H * op.Dv;
  TileMapping out;
  if (heads * op.Sq == 0) {
    l.setMapping(node.output(0), std::move(out));
    return okStatus();
  }
  const int64_t blocks_per_head = (op.Sq + rows - 1) / rows;
  uint32_t tile = l.startTile(heads * blocks_per_head);
  const DType dt = q->type.dtype;
  const uint64_t es = dtypeSize(dt);
  std::map<std::pair<uint32_t, int64_t>, std::pair<uint64_t, uint64_t>> keys_on_tile;  // (tile, b*H+h) -> K, V
  for (int64_t b = 0; b < op.B; ++b)
    for (int64_t h = 0; h < op.H; ++h)
      for (int64_t i0 = 0; i0 < op.Sq; i0 += rows, tile = l.nextTile(tile)) {
        const int64_t n = std::min(rows, op.Sq - i0);
        auto [kv, added] = keys_on_tile.try_emplace({tile, b * op.H + h});
        if (added) {  // the head's keys and values, once per tile
          kv->second.first = l.scratch(tile, static_cast<uint64_t>(op.Sk * op.D) * es);
          l.gather(k, b * op.Sk * qcols + h * op.D, op.D, op.Sk, qcols, tile, kv->second.first, static_cast<uint64_t>(op.D) * es);
          kv->second.second = l.scratch(tile, static_cast<uint64_t>(op.Sk * op.Dv) * es);
          l.gather(v, b * op.Sk * vcols + h * op.Dv, op.Dv, op.Sk, vcols, tile, kv->second.second,
                   static_cast<uint64_t>(op.Dv) * es);
        }
        const uint64_t q_off = l.scratch(tile, static_cast<uint64_t>(n * op.D) * es);
        l.gather(q, (b * op.Sq + i0) * qcols + h * op.D, op.D, n, qcols, tile, q_off, static_cast<uint64_t>(op.D) * es);
        const uint64_t y_off = l.allocator().allocate(tile, static_cast<uint64_t>(n * op.Dv) * es);
        for (int64_t r = 0; r < n; ++r)
          out.regions.push_back(
              {(b * op.Sq + i0 + r) * vcols + h * op.Dv, op.Dv, tile, y_off + static_cast<uint64_t>(r * op.Dv) * es});
        std::vector<exec::Field> fields = {{y_off, static_cast<uint64_t>(n * op.Dv) * es},
                                           {q_off, static_cast<uint64_t>(n * op.D) * es},
                                           {kv->second.first, static_cast<uint64_t>(op.Sk * op.D) * es},
                                           {kv->second.second, static_cast<uint64_t>(op.Sk * op.Dv) * es}};
        if (op.mask) {
          const auto& s = op.mask_strides;
          const uint64_t m_off = l.scratch(tile, static_cast<uint64_t>(n * op.Sk) * es);
          l.gather(op.mask, b * s[0] + h * s[1] + i0 * s[2], op.Sk, n, s[2], tile, m_off, static_cast<uint64_t>(op.Sk) * es);
          fields.push_back({m_off, static_cast<uint64_t>(n * op.Sk) * es});
        }
        l.computeSet().vertices.push_back(exec::makeVertex(
            tile, dt, std::move(fields), exec::AttentionParams{n, op.Sk, op.D, op.Dv, op.mask != nullptr, op.scale}));
      }
  std::sort(out.regions.begin(), out.regions.end(), [](const Region& a, const Region& b) { return a.begin < b.begin; });
  l.setMapping(node.output(0), std::move(out));
  return okStatus();
}

}  // namespace poprt::codegen
