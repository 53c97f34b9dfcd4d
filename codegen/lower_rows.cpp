// Reductions, Softmax/LogSoftmax, CumSum and the row normalisations (LayerNormalization,
// ai.graphcore LayerNorm, InstanceNormalization). Each sees its input as [outer][extent][inner], `extent` being
// the elements one result depends on. The outer x inner positions are split into blocks over the
// tiles: a block covers whole outer rows (its input is one contiguous range) or part of one outer
// row (gathered with a stride of `inner`). Each block's tile gathers its input into node scratch
// and runs one vertex; the results stay on that tile.
#include <algorithm>

#include "codegen/lowering.h"
#include "lib/exec/vertex_params.h"
#include "lib/ops/op_util.h"

namespace poprt::codegen {
namespace {

struct RowsView {
  int64_t outer = 1, extent = 1, inner = 1;
};

// Outer rows [o0, o0+on) and inner columns [i0, i0+in) of a rows view, on one tile.
struct RowBlock {
  int64_t o0 = 0, on = 0, i0 = 0, in = 0;
  uint32_t tile = 0;
};

constexpr int64_t kMinBlockElements = 16;  // smaller blocks cost more in vertex overhead than they save

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks spreading the positions evenly over the tiles, each at most `max_positions` positions.
std::vector<RowBlock> rowBlocks(Lowering& l, const RowsView& v, int64_t max_positions) {
  std::vector<RowBlock> blocks;
  const int64_t positions = v.outer * v.inner;
  if (positions == 0) return blocks;
  const int64_t tiles = l.tileCount();
  int64_t per = std::max(ceilDiv(positions, tiles), ceilDiv(kMinBlockElements, std::max<int64_t>(v.extent, 1)));
  per = std::max<int64_t>(1, std::min(per, max_positions));
  uint32_t tile = l.startTile(ceilDiv(positions, per));
  for (int64_t p = 0; p < positions; p += per, tile = l.nextTile(tile)) {
    const int64_t end = std::min(positions, p + per);
    for (int64_t q = p; q < end;) {
      const int64_t o = q / v.inner, i = q % v.inner;
      if (i != 0 || end - q < v.inner) {
        const int64_t n = std::min(v.inner - i, end - q);
        blocks.push_back({o, 1, i, n, tile});
        q += n;
      } else {
        const int64_t rows = (end - q) / v.inner;
        blocks.push_back({o, rows, 0, v.inner, tile});
        q += rows * v.inner;
      }
    }
  }
  return blocks;
}

// The block's input [on][extent][in], contiguous on its tile: in place or gathered into scratch.
uint64_t blockInput(Lowering& l, const ir::Value* x, const RowsView& v, const RowBlock& b) {
  const int64_t base = b.o0 * v.extent * v.inner;
  if (b.in == v.inner) return l.operandInScratch(x, base, b.on * v.extent * v.inner, b.tile);
  const uint64_t es = dtypeSize(x->type.dtype);
  const uint64_t offset = l.scratch(b.tile, static_cast<uint64_t>(v.extent * b.in) * es);
  l.gather(x, base + b.i0, b.in, v.extent, v.inner, b.tile, offset, static_cast<uint64_t>(b.in) * es);
  return offset;
}

// Allocates the block's result of `extent` elements per position (1 for a reduction, v.extent for
// an op that keeps the input's shape) and records where its elements go in `out`.
uint64_t blockOutput(Lowering& l, const RowsView& v, const RowBlock& b, int64_t extent, uint64_t es, TileMapping& out) {
  const uint64_t offset = l.allocator().allocate(b.tile, static_cast<uint64_t>(b.on * extent * b.in) * es);
  const int64_t base = b.o0 * extent * v.inner;
  if (b.in == v.inner) {
    out.regions.push_back({base, b.on * extent * v.inner, b.tile, offset});
  } else {
    for (int64_t e = 0; e < extent; ++e)
      out.regions.push_back({base + e * v.inner + b.i0, b.in, b.tile, offset + static_cast<uint64_t>(e * b.in) * es});
  }
  return offset;
}

void sortRegions(TileMapping& m) {
  std::sort(m.regions.begin(), m.regions.end(), [](const Region& a, const Region& b) { return a.begin < b.begin; });
}

// ---- what each op sees --------------------------------------------------------------------------

struct ReduceOp {
  RowsView view;
  exec::ReduceKind kind = exec::kReduceSum;
};

Expected<ReduceOp> reduceOp(const ir::Node& node, int64_t opset) {
  static const std::pair<const char*, exec::ReduceKind> kinds[] = {{"ReduceSum", exec::kReduceSum},
                                                                   {"ReduceMean", exec::kReduceMean},
                                                                   {"ReduceMax", exec::kReduceMax},
                                                                   {"ReduceMin", exec::kReduceMin},
                                                                   {"ReduceProd", exec::kReduceProd},
                                                                   {"ReduceL1", exec::kReduceL1},
                                                                   {"ReduceL2", exec::kReduceL2},
                                                                   {"ReduceLogSum", exec::kReduceLogSum},
                                                                   {"ReduceLogSumExp", exec::kReduceLogSumExp},
                                                                   {"ReduceSumSquare", exec::kReduceSumSquare}};
  ReduceOp op;
  bool known = false;
  for (const auto& [name, kind] : kinds)
    if (node.opType() == name) op.kind = kind, known = true;
  if (!known) return Error("no device reduction for " + node.opType());
  // Axes are an input from opset 13 for ReduceSum and from 18 for the others.
  const bool axes_input = opset >= (node.opType() == "ReduceSum" ? 13 : 18);
  std::vector<int64_t> axes;
  if (axes_input && node.inputs().size() > 1 && node.input(1)) {
    const Tensor* t = node.input(1)->initializer();
    if (!t) return Error("its axes are computed at run time");
    POPRT_ASSIGN_OR_RETURN(axes, ops::toInt64s(*t));
  } else if (!axes_input) {
    axes = node.attrInts("axes");
  }
  if (axes.empty() && axes_input && node.attrInt("noop_with_empty_axes", 0) != 0) return Error("it reduces no axes");
  const Shape xs = node.input(0)->type.staticShape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<bool> reduced(xs.size(), axes.empty());
  for (int64_t a : axes) {
    POPRT_ASSIGN_OR_RETURN(int64_t d, ops::normalizeAxis(a, rank));
    reduced[d] = true;
  }
  // The reduced dims (size-1 dims aside) must be adjacent: outer x extent x inner.
  int64_t first = rank, last = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d] && xs[d] != 1) first = std::min(first, d), last = d;
  if (last < 0) first = last = rank;  // nothing of extent > 1 reduced: each output reads one element
  for (int64_t d = first; d <= last && d < rank; ++d)
    if (!reduced[d] && xs[d] != 1) return Error("its reduced axes are not adjacent");
  op.view.outer = ops::shapeProduct(xs, 0, static_cast<size_t>(std::min(first, rank)));
  op.view.extent = last < rank ? ops::shapeProduct(xs, static_cast<size_t>(first), static_cast<size_t>(last + 1)) : 1;
  op.view.inner = last < rank ? ops::shapeProduct(xs, static_cast<size_t>(last + 1), xs.size()) : 1;
  return op;
}

// Softmax before opset 13 coerces the input to 2-D at `axis` (default 1); from 13 it works along
// the one axis (default -1).
Expected<RowsView> softmaxView(const ir::Node& node, int64_t opset) {
  const Shape xs = node.input(0)->type.staticShape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  RowsView v;
  if (opset >= 13) {
    POPRT_ASSIGN_OR_RETURN(int64_t axis, ops::normalizeAxis(node.attrInt("axis", -1), rank));
    v = {ops::shapeProduct(xs, 0, axis), xs[axis], ops::shapeProduct(xs, axis + 1, xs.size())};
  } else {
    int64_t axis = node.attrInt("axis", 1);
    if (axis < -rank || axis > rank) return Error("its axis is out of range");
    if (axis < 0) axis += rank;
    v = {ops::shapeProduct(xs, 0, axis), ops::shapeProduct(xs, axis, xs.size()), 1};
  }
  return v;
}

// CumSum along its axis (a constant input).
struct CumSumOp {
  RowsView view;
  bool exclusive = false, reverse = false;
};

Expected<CumSumOp> cumSumOp(const ir::Node& node) {
  const Tensor* axis = node.inputs().size() > 1 ? ir::constantOf(node.input(1)) : nullptr;
  if (!axis) return Error("its axis is not a constant");
  POPRT_ASSIGN_OR_RETURN(const std::vector<int64_t> values, ops::toInt64s(*axis));
  if (values.size() != 1) return Error("its axis is not one value");
  const Shape xs = node.input(0)->type.staticShape();
  POPRT_ASSIGN_OR_RETURN(const int64_t a, ops::normalizeAxis(values[0], static_cast<int64_t>(xs.size())));
  CumSumOp op;
  op.view = {ops::shapeProduct(xs, 0, a), xs[a], ops::shapeProduct(xs, a + 1, xs.size())};
  op.exclusive = node.attrInt("exclusive", 0) != 0;
  op.reverse = node.attrInt("reverse", 0) != 0;
  return op;
}

// Shape without its leading 1s: how a unidirectionally broadcast parameter lines up with a suffix.
Shape withoutLeadingOnes(Shape s) {
  while (!s.empty() && s.front() == 1) s.erase(s.begin());
  return s;
}

struct NormOp {
  RowsView view;  // inner is always 1: [rows][N]
  bool per_row = false;
  int64_t channels = 1;
  float epsilon = 1e-5f;
  const ir::Value* scale = nullptr;
  const ir::Value* bias = nullptr;
};

// A parameter that is absent or, without leading 1s, has the shape `want` (also without them).
Status checkParam(const ir::Value* p, const Shape& want, const char* what) {
  if (p && withoutLeadingOnes(p->type.staticShape()) != withoutLeadingOnes(want))
    return Error(std::string("its ") + what + " " + p->type.toString() + " is broadcast within the normalised dims");
  return okStatus();
}

Expected<NormOp> normOp(const ir::Node& node) {
  for (size_t i = 1; i < node.outputs().size(); ++i)
    if (node.output(i) && (!node.output(i)->uses().empty() || node.output(i)->isGraphOutput()))
      return Error("its output '" + node.output(i)->name() + "' is used");
  const Shape xs = node.input(0)->type.staticShape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  NormOp op;
  op.epsilon = node.attrFloat("epsilon", 1e-5f);
  op.scale = node.inputs().size() > 1 ? node.input(1) : nullptr;
  op.bias = node.inputs().size() > 2 ? node.input(2) : nullptr;
  if (!op.scale) return Error("it has no scale");
  if (node.opType() == "InstanceNormalization") {
    if (rank < 3) return Error("its input has rank < 3");
    op.per_row = true;
    op.channels = xs[1];
    op.view = {xs[0] * xs[1], ops::shapeProduct(xs, 2, xs.size()), 1};
    POPRT_TRY(checkParam(op.scale, {xs[1]}, "scale"));
    POPRT_TRY(checkParam(op.bias, {xs[1]}, "bias"));
    return op;
  }
  POPRT_ASSIGN_OR_RETURN(int64_t axis, ops::normalizeAxis(node.attrInt("axis", -1), rank));
  const Shape norm(xs.begin() + axis, xs.end());
  op.view = {ops::shapeProduct(xs, 0, axis), ops::shapeProduct(norm, 0, norm.size()), 1};
  POPRT_TRY(checkParam(op.scale, norm, "scale"));
  POPRT_TRY(checkParam(op.bias, norm, "bias"));
  return op;
}

// Positions a block may hold when each needs `bytes_per_position` of the node's memory budget.
int64_t maxPositions(const Lowering& l, uint64_t bytes_per_position) {
  return static_cast<int64_t>(l.options().tileBudget() / std::max<uint64_t>(bytes_per_position, 1));
}

Status lowerReduce(Lowering& l, const ir::Node& node) {
  POPRT_ASSIGN_OR_RETURN(ReduceOp op, reduceOp(node, l.opset()));
  const RowsView& v = op.view;
  const DType dt = node.input(0)->type.dtype;
  const uint64_t es = dtypeSize(dt);
  TileMapping out;
  for (const RowBlock& b : rowBlocks(l, v, maxPositions(l, static_cast<uint64_t>(v.extent + 1) * 4))) {
    const uint64_t in = blockInput(l, node.input(0), v, b);
    const uint64_t y = blockOutput(l, v, b, 1, es, out);
    const uint64_t n = static_cast<uint64_t>(b.on * b.in);
    l.computeSet().vertices.push_back(
        exec::makeVertex(b.tile, dt, {{y, n * es}, {in, n * v.extent * es}}, exec::ReduceParams{op.kind, b.on, v.extent, b.in}));
  }
  sortRegions(out);
  l.setMapping(node.output(0), std::move(out));
  return okStatus();
}

// Ops whose output has the input's shape, a vertex per row block (Softmax, CumSum): paramsOf(b)
// gives the block's vertex params.
template <class ParamsOf>
Status lowerSameShapeRows(Lowering& l, const ir::Node& node, const RowsView& v, const ParamsOf& paramsOf) {
  const DType dt = node.input(0)->type.dtype;
  const uint64_t es = dtypeSize(dt);
  TileMapping out;
  for (const RowBlock& b : rowBlocks(l, v, maxPositions(l, static_cast<uint64_t>(v.extent) * 8))) {
    const uint64_t in = blockInput(l, node.input(0), v, b);
    const uint64_t y = blockOutput(l, v, b, v.extent, es, out);
    const uint64_t bytes = static_cast<uint64_t>(b.on * v.extent * b.in) * es;
    l.computeSet().vertices.push_back(exec::makeVertex(b.tile, dt, {{y, bytes}, {in, bytes}}, paramsOf(b)));
  }
  sortRegions(out);
  l.setMapping(node.output(0), std::move(out));
  return okStatus();
}

Status lowerSoftmax(Lowering& l, const ir::Node& node) {
  POPRT_ASSIGN_OR_RETURN(const RowsView v, softmaxView(node, l.opset()));
  const bool log = node.opType() == "LogSoftmax";
  return lowerSameShapeRows(l, node, v, [&](const RowBlock& b) { return exec::SoftmaxParams{log, b.on, v.extent, b.in}; });
}

Status lowerCumSum(Lowering& l, const ir::Node& node) {
  POPRT_ASSIGN_OR_RETURN(const CumSumOp op, cumSumOp(node));
  return lowerSameShapeRows(l, node, op.view, [&](const RowBlock& b) {
    return exec::CumSumParams{op.exclusive, op.reverse, b.on, op.view.extent, b.in};
  });
}

Status lowerRowNorm(Lowering& l, const ir::Node& node) {
  POPRT_ASSIGN_OR_RETURN(NormOp op, normOp(node));
  const RowsView& v = op.view;
  const int64_t affine = op.per_row ? op.channels : v.extent;
  const DType dt = node.input(0)->type.dtype;
  const uint64_t es = dtypeSize(dt);
  TileMapping out;
  for (const RowBlock& b : rowBlocks(l, v, maxPositions(l, static_cast<uint64_t>(v.extent) * 8))) {
    const uint64_t bytes = static_cast<uint64_t>(b.on * v.extent) * es;
    const uint64_t in = blockInput(l, node.input(0), v, b);
    std::vector<exec::Field> fields = {{blockOutput(l, v, b, v.extent, es, out), bytes}, {in, bytes}};
    for (const ir::Value* p : {op.scale, op.bias})
      if (p) fields.push_back({l.operandInScratch(p, 0, affine, b.tile), static_cast<uint64_t>(affine) * es});
    l.computeSet().vertices.push_back(exec::makeVertex(
        b.tile, dt, std::move(fields), exec::NormParams{b.on, v.extent, op.per_row, op.channels, b.o0, op.epsilon}));
  }
  sortRegions(out);
  l.setMapping(node.output(0), std::move(out));
  return okStatus();
}

}  // namespace

std::string rowsBlocker(const ir::Node& node, const Lowering& l) {
  const uint64_t budget = l.options().tileBudget();
  auto fits = [&](int64_t extent, int64_t copies) -> std::string {
    if (static_cast<uint64_t>(extent) * 4 * static_cast<uint64_t>(copies) > budget)
      return "a row of " + std::to_string(extent) + " elements does not fit the " + std::to_string(budget) + "-byte tile budget";
    return "";
  };
  const auto family = ops::findOp(node.domain(), node.opType())->lowering;
  if (family == ops::LoweringFamily::Reduce) {
    auto op = reduceOp(node, l.opset());
    return op.ok() ? fits(op->view.extent, 1) : op.error().message();
  }
  if (family == ops::LoweringFamily::Softmax) {
    auto v = softmaxView(node, l.opset());
    return v.ok() ? fits(v->extent, 2) : v.error().message();
  }
  if (family == ops::LoweringFamily::CumSum) {
    auto op = cumSumOp(node);
    return op.ok() ? fits(op->view.extent, 2) : op.error().message();
  }
  if (node.opType() == "BatchNormalization") return batchNormBlocker(node, l);
  auto op = normOp(node);
  return op.ok() ? fits(op->view.extent, 3) : op.error().message();
}

Status lowerRows(Lowering& l, const ir::Node& node) {
  const auto family = ops::findOp(node.domain(), node.opType())->lowering;
  if (family == ops::LoweringFamily::Reduce) return lowerReduce(l, node);
  if (family == ops::LoweringFamily::Softmax) return lowerSoftmax(l, node);
  if (family == ops::LoweringFamily::CumSum) return lowerCumSum(l, node);
  if (node.opType() == "BatchNormalization") return lowerBatchNorm(l, node);
  return lowerRowNorm(l, node);
}

}  // namespace poprt::codegen
