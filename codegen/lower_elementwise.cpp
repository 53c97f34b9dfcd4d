// Unary and binary elementwise ops: the output is spread over the tiles; each tile's vertex reads
// its operands in place where they already live there, else from buffers the exchange fills.
// A broadcast operand is copied whole to the tile and read through strides.
#include "codegen/lowering.h"
#include "lib/exec/codelets.h"
#include "lib/ops/broadcast.h"
#include "lib/ops/scalar_math.h"

namespace poprt::codegen {

Status lowerUnary(Lowering& l, const ir::Node& node) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  auto fn = ops::unaryFnOf(node.opType());
  POPRT_CHECK(fn.has_value(), "no unary function for " + node.opType());
  TileMapping out = l.spreadLinear(x->type.numElements(), 4);
  for (const Region& r : out.regions) {
    uint64_t in = l.operandOnTile(x, r.begin, r.count, r.tile);
    uint64_t bytes = static_cast<uint64_t>(r.count) * 4;
    l.computeSet().vertices.push_back({r.tile, exec::Codelet::Unary, DType::Float, {{r.offset, bytes}, {in, bytes}},
                                       {static_cast<int64_t>(*fn), r.count}, {}});
  }
  l.setMapping(y, std::move(out));
  return okStatus();
}

Status lowerBinary(Lowering& l, const ir::Node& node) {
  const ir::Value* a = node.input(0);
  const ir::Value* b = node.input(1);
  const ir::Value* y = node.output(0);
  auto fn = ops::binaryFnOf(node.opType());
  POPRT_CHECK(fn.has_value(), "no binary function for " + node.opType());
  const Shape out_shape = y->type.staticShape();
  const Shape sa = a->type.staticShape(), sb = b->type.staticShape();
  const int64_t numel = y->type.numElements();
  const auto rank = static_cast<int64_t>(out_shape.size());
  std::vector<int64_t> stride_a = ops::broadcastStrides(sa, out_shape), stride_b = ops::broadcastStrides(sb, out_shape);
  const bool a_aligned = sa == out_shape, b_aligned = sb == out_shape;
  TileMapping out = l.spreadLinear(numel, 4);
  for (const Region& r : out.regions) {
    uint64_t bytes = static_cast<uint64_t>(r.count) * 4;
    auto operand = [&](const ir::Value* v, bool aligned) -> exec::Field {
      if (aligned) return {l.operandOnTile(v, r.begin, r.count, r.tile), bytes};
      int64_t n = v->type.numElements();
      return {l.operandOnTile(v, 0, n, r.tile), static_cast<uint64_t>(n) * 4};
    };
    exec::Vertex v{r.tile, exec::Codelet::Binary, DType::Float,
                   {{r.offset, bytes}, operand(a, a_aligned), operand(b, b_aligned)},
                   {static_cast<int64_t>(*fn), r.count, a_aligned ? exec::kAligned : exec::kBroadcast,
                    b_aligned ? exec::kAligned : exec::kBroadcast, r.begin, rank},
                   {}};
    v.params.insert(v.params.end(), out_shape.begin(), out_shape.end());
    v.params.insert(v.params.end(), stride_a.begin(), stride_a.end());
    v.params.insert(v.params.end(), stride_b.begin(), stride_b.end());
    l.computeSet().vertices.push_back(std::move(v));
  }
  l.setMapping(y, std::move(out));
  return okStatus();
}

}  // namespace poprt::codegen
