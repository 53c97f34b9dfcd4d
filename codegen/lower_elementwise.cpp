// Elementwise ops — unary, binary (variadic too), chains of them, activations, inference
// BatchNormalization: the output is spread over the tiles; each tile's vertex reads its operands
// in place where they already live there, else from buffers the exchange fills. A broadcast
// operand is read through strides from a copy of the elements the tile's outputs reach
// (exec::broadcastSpan).
#include <algorithm>

#include "codegen/lowering.h"
#include "lib/exec/vertex_params.h"
#include "lib/ops/broadcast.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/ops/op_util.h"
#include "lib/ops/scalar_math.h"

namespace poprt::codegen {

namespace {

Expected<ops::UnaryFn> unaryFnOfNode(const ir::Node& node) {
  if (node.domain() == ops::graphcore::kDomain && node.opType() == "Gelu") return ops::graphcore::geluFn(node);
  auto fn = ops::unaryFnOf(node.opType());
  if (!fn) return Error("no unary function for " + node.opType());
  return *fn;
}

// The skeleton of an op over one input of its output's shape and dtype: the output spread like
// the input, and vertex(run, bytes) the vertex of each run of it (Unary, ElementwiseChain,
// Activation).
template <class MakeVertex>
void lowerOverRuns(Lowering& l, const ir::Node& node, const MakeVertex& vertex) {
  const ir::Value* x = node.input(0);
  const uint64_t es = dtypeSize(x->type.dtype);
  TileMapping out = l.spreadLike(x, es);
  for (const Lowering::Run& r : l.elementwiseRuns(out, es, {x}))
    l.computeSet().vertices.push_back(vertex(r, static_cast<uint64_t>(r.count) * es));
  l.setMapping(node.output(0), std::move(out));
}

}  // namespace

Status lowerUnary(Lowering& l, const ir::Node& node) {
  POPRT_ASSIGN_OR_RETURN(ops::UnaryFn fn, unaryFnOfNode(node));
  const ir::Value* x = node.input(0);
  lowerOverRuns(l, node, [&](const Lowering::Run& r, uint64_t bytes) {
    return exec::makeVertex(r.tile, x->type.dtype, {{r.offset, bytes}, {l.operandOnTile(x, r), bytes}},
                            exec::UnaryParams{fn, r.count});
  });
  return okStatus();
}

// Cast between float32 and float16 (deviceBlocker allows no other): each tile converts the
// elements of its output region, reading the input in the input's own element size.
Status lowerCast(Lowering& l, const ir::Node& node) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  const DType from = x->type.dtype, to = y->type.dtype;
  TileMapping out = l.spreadLike(x, dtypeSize(to));
  for (const Lowering::Run& r : l.elementwiseRuns(out, dtypeSize(to), {x})) {
    uint64_t in = l.operandOnTile(x, r);
    const auto count = static_cast<uint64_t>(r.count);
    l.computeSet().vertices.push_back(exec::makeVertex(
        r.tile, to, {{r.offset, count * dtypeSize(to)}, {in, count * dtypeSize(from)}}, exec::CastParams{r.count, from}));
  }
  l.setMapping(y, std::move(out));
  return okStatus();
}

namespace {

// A Binary vertex's share of the output: `rows` runs of `count` elements (one region each), the
// first at `run`'s start and each `step` elements of the output after the one before. Each
// broadcast operand's rows read spans of one length, `delta` apart, from `lo` on.
struct RowGroup {
  struct Reads {
    __int128 lo = 0, length = 0, delta = 0;
  };
  Lowering::Run run;
  int64_t rows = 1, step = 0;
  std::vector<Reads> reads;  // per broadcast operand
};

// A run of output regions cut into groups a vertex with row runs covers: regions of one size,
// evenly spaced in the output, whose reads of each broadcast operand are spans of one length,
// evenly spaced too. The vertex's copy of such an operand then holds each row's span once (their
// union where they overlap), never more than a vertex per region would copy.
std::vector<RowGroup> rowGroups(const Lowering::Run& run, const Shape& out_shape,
                                const std::vector<std::vector<int64_t>>& broadcast_strides) {
  const auto rank = static_cast<int64_t>(out_shape.size());
  std::vector<RowGroup> groups;
  std::vector<exec::IndexSpan> spans(broadcast_strides.size());
  for (const Region& r : run.regions) {
    for (size_t k = 0; k < broadcast_strides.size(); ++k)
      spans[k] = exec::broadcastSpan(out_shape.data(), broadcast_strides[k].data(), rank, r.begin, r.count);
    bool extend = !groups.empty() && r.count > 0;
    if (extend) {
      const RowGroup& g = groups.back();
      const Region& last = g.run.regions.back();
      const int64_t step = r.begin - last.begin;
      extend = r.count == last.count && step > 0 && (g.rows == 1 || step == g.step);
      for (size_t k = 0; extend && k < spans.size(); ++k) {
        const RowGroup::Reads& reads = g.reads[k];
        const __int128 delta = spans[k].lo - (reads.lo + reads.delta * (g.rows - 1));  // from the last row's
        extend = spans[k].hi - spans[k].lo + 1 == reads.length && delta >= 0 && (g.rows == 1 || delta == reads.delta);
      }
    }
    if (extend) {
      RowGroup& g = groups.back();
      g.step = r.begin - g.run.regions.back().begin;
      if (g.rows == 1)  // the second row sets the spacing the others keep
        for (size_t k = 0; k < spans.size(); ++k) g.reads[k].delta = spans[k].lo - g.reads[k].lo;
      ++g.rows;
      g.run.regions.push_back(r);
      g.run.count += r.count;
      continue;
    }
    RowGroup g{{run.tile, r.offset, r.count, {r}}, 1, 0, {}};
    for (const exec::IndexSpan& span : spans) g.reads.push_back({span.lo, span.hi - span.lo + 1, 0});
    groups.push_back(std::move(g));
  }
  return groups;
}

// One superstep of a binary op: out = fn(a, b) over the output's mapping. A null `a` means the
// output itself (the running result of a variadic op), read in place.
void binaryStep(Lowering& l, ops::BinaryFn fn, const ir::Value* a, const ir::Value* b, const Shape& out_shape,
                const TileMapping& out) {
  const auto rank = static_cast<int64_t>(out_shape.size());
  const Shape sa = a ? a->type.staticShape() : out_shape, sb = b->type.staticShape();
  std::vector<int64_t> stride_a = ops::broadcastStrides(sa, out_shape), stride_b = ops::broadcastStrides(sb, out_shape);
  const bool a_aligned = sa == out_shape, b_aligned = sb == out_shape;
  const DType dt = b->type.dtype;  // the device runs binary ops on operands of one dtype
  const uint64_t es = dtypeSize(dt);
  // Aligned operands read element i for output i: a vertex may cover a run of regions. With a
  // broadcast operand, a vertex covers a group of a run's regions as row runs (rowGroups), each
  // row indexed from its first element.
  std::vector<RowGroup> groups;
  const std::vector<Lowering::Run> runs = l.elementwiseRuns(out, es, {a_aligned ? a : nullptr, b_aligned ? b : nullptr});
  if (a_aligned && b_aligned) {
    for (const Lowering::Run& r : runs) groups.push_back({r, 1, 0});
  } else {
    std::vector<std::vector<int64_t>> broadcast_strides;
    if (!a_aligned) broadcast_strides.push_back(stride_a);
    if (!b_aligned) broadcast_strides.push_back(stride_b);
    // A one-element operand (a scalar scale, say) is element 0 for every output: a run's outputs
    // need not be one range of the output, nor rows, for the vertex to read it right.
    const bool one_element = std::all_of(broadcast_strides.begin(), broadcast_strides.end(), [](const std::vector<int64_t>& s) {
      return std::all_of(s.begin(), s.end(), [](int64_t x) { return x == 0; });
    });
    for (const Lowering::Run& r : runs) {
      if (one_element) {
        groups.push_back({r, 1, 0, std::vector<RowGroup::Reads>(broadcast_strides.size(), RowGroup::Reads{0, 1, 0})});
        continue;
      }
      for (RowGroup& g : rowGroups(r, out_shape, broadcast_strides)) groups.push_back(std::move(g));
    }
  }
  for (const RowGroup& g : groups) {
    const Lowering::Run& r = g.run;
    // Only broadcast operands are indexed from `begin`; a run's elements are not one range of it.
    const int64_t begin = a_aligned && b_aligned ? 0 : r.regions.front().begin;
    const int64_t count = r.count / g.rows;  // per row
    uint64_t bytes = static_cast<uint64_t>(r.count) * es;
    // A broadcast operand: the tile gets only the elements its output reads (a bias's columns of
    // its rows, not the whole bias), from `base` on: each row's span once, `skip` elements after
    // the row before's end, or their union where they overlap.
    int64_t bases[2] = {0, 0}, skips[2] = {0, 0};
    size_t next_reads = 0;
    auto operand = [&](const ir::Value* v, bool aligned, int k) -> exec::Field {
      if (!v) return {r.offset, bytes};
      if (aligned) return {l.operandOnTile(v, r), bytes};
      const RowGroup::Reads& reads = g.reads[next_reads++];
      if (reads.length == 0) return {l.operandOnTile(v, 0, 0, r.tile), 0};  // no outputs here
      const auto lo = static_cast<int64_t>(reads.lo), length = static_cast<int64_t>(reads.length);
      const auto delta = static_cast<int64_t>(reads.delta);
      bases[k] = lo;
      if (g.rows > 1 && delta > length) {
        skips[k] = delta - length;
        return {l.operandRows(v, lo, length, g.rows, delta, r.tile), static_cast<uint64_t>(g.rows * length) * es};
      }
      const int64_t n = (g.rows - 1) * delta + length;
      return {l.operandOnTile(v, lo, n, r.tile), static_cast<uint64_t>(n) * es};
    };
    std::vector<exec::Field> fields = {{r.offset, bytes}, operand(a, a_aligned, 0), operand(b, b_aligned, 1)};
    exec::BinaryParams params{fn,
                              count,
                              a_aligned ? exec::kAligned : exec::kBroadcast,
                              b_aligned ? exec::kAligned : exec::kBroadcast,
                              begin,
                              rank,
                              out_shape,
                              stride_a,
                              stride_b,
                              exec::OperandBases{bases[0], bases[1]}};
    if (g.rows > 1) params.row_runs = exec::RowRuns{g.rows, g.step, skips[0], skips[1]};
    l.computeSet().vertices.push_back(exec::makeVertex(r.tile, dt, std::move(fields), params));
  }
}

}  // namespace

// Binary ops, and variadic Sum/Max/Min as a chain: out = fn(in0, in1), then out = fn(out, in_k)
// one superstep per further input (the running result is read and written in place).
Status lowerBinary(Lowering& l, const ir::Node& node) {
  const ir::Value* y = node.output(0);
  auto fn = ops::binaryFnOf(node.opType());
  POPRT_CHECK(fn.has_value(), "no binary function for " + node.opType());
  POPRT_CHECK(node.inputs().size() >= 2, node.opType() + " needs two inputs on the device");
  const Shape out_shape = y->type.staticShape();
  // Laid out like an operand of the output's shape that is not a weight (the activation).
  const ir::Value* like = node.input(0);
  if (like->type.staticShape() != out_shape || like->isInitializer()) like = node.input(1);
  TileMapping out = like->type.staticShape() == out_shape ? l.spreadLike(like, dtypeSize(y->type.dtype))
                                                          : l.spreadLinear(y->type.numElements(), dtypeSize(y->type.dtype));
  binaryStep(l, *fn, node.input(0), node.input(1), out_shape, out);
  for (size_t k = 2; k < node.inputs().size(); ++k) {
    l.nextSuperstep();
    binaryStep(l, *fn, nullptr, node.input(k), out_shape, out);
  }
  l.setMapping(y, std::move(out));
  return okStatus();
}

std::string elementwiseChainBlocker(const ir::Node& node) {
  auto steps = ops::graphcore::chainSteps(node);
  if (!steps.ok()) return steps.error().message();
  for (size_t j = 1; j < node.inputs().size(); ++j)
    if (node.input(j) && node.input(j)->type.numElements() != 1)
      return "its operand '" + node.input(j)->name() + "' is not one value";
  return "";
}

// Each run's vertex reads its piece of X and a copy of each operand the steps name (field 1 + its
// place among them, in the order the steps first read them).
Status lowerElementwiseChain(Lowering& l, const ir::Node& node) {
  POPRT_ASSIGN_OR_RETURN(std::vector<ops::graphcore::ChainStep> steps, ops::graphcore::chainSteps(node));
  std::vector<const ir::Value*> operands;
  std::vector<int64_t> program;
  for (const ops::graphcore::ChainStep& step : steps) {
    if (step.unary) {
      program.insert(program.end(), {exec::kStepUnary, static_cast<int64_t>(step.unary_fn), 0});
      continue;
    }
    const ir::Value* v = node.input(static_cast<size_t>(step.operand < 0 ? -step.operand : step.operand));
    auto at = std::find(operands.begin(), operands.end(), v);
    if (at == operands.end()) at = operands.insert(operands.end(), v);
    const auto field = static_cast<int64_t>(at - operands.begin()) + 1;
    program.insert(program.end(), {exec::kStepBinary, static_cast<int64_t>(step.binary_fn), step.operand < 0 ? -field : field});
  }
  const ir::Value* x = node.input(0);
  const DType dt = x->type.dtype;
  lowerOverRuns(l, node, [&](const Lowering::Run& r, uint64_t bytes) {
    std::vector<exec::Field> fields = {{r.offset, bytes}, {l.operandOnTile(x, r), bytes}};
    for (const ir::Value* v : operands) fields.push_back({l.operandOnTile(v, 0, 1, r.tile), dtypeSize(dt)});
    return exec::makeVertex(r.tile, dt, std::move(fields),
                            exec::ElementwiseChainParams{r.count, static_cast<int64_t>(steps.size()), program});
  });
  return okStatus();
}

namespace {

// Clip whose bounds are computed at run time (one-element tensors): out = Min(Max(x, lo), hi).
bool isClipWithRuntimeBounds(const ir::Node& node, const Lowering& l) {
  if (node.opType() != "Clip" || l.opset() < 11) return false;
  bool runtime = false;
  for (size_t i = 1; i < node.inputs().size(); ++i)
    if (node.input(i) && !node.input(i)->isInitializer()) runtime = true;
  return runtime;
}

Status lowerClipWithRuntimeBounds(Lowering& l, const ir::Node& node) {
  const ir::Value* y = node.output(0);
  const Shape shape = y->type.staticShape();
  TileMapping out = l.spreadLinear(y->type.numElements(), dtypeSize(y->type.dtype));
  const ir::Value* x = node.input(0);
  const ir::Value* lo = node.inputs().size() > 1 ? node.input(1) : nullptr;
  const ir::Value* hi = node.inputs().size() > 2 ? node.input(2) : nullptr;
  if (lo) binaryStep(l, ops::BinaryFn::Max, x, lo, shape, out);
  if (hi) {
    if (lo) l.nextSuperstep();
    binaryStep(l, ops::BinaryFn::Min, lo ? nullptr : x, hi, shape, out);
  }
  l.setMapping(y, std::move(out));
  return okStatus();
}

}  // namespace

std::string activationBlocker(const ir::Node& node, const Lowering& l) {
  if (isClipWithRuntimeBounds(node, l)) {
    for (size_t i = 1; i < node.inputs().size(); ++i)
      if (node.input(i) && node.input(i)->type.numElements() != 1) return "its bounds are not scalars";
    return "";
  }
  auto act = ops::graphcore::activationOfOp(node, l.opset());
  return act.ok() ? "" : act.error().message();
}

Status lowerActivation(Lowering& l, const ir::Node& node) {
  if (isClipWithRuntimeBounds(node, l)) return lowerClipWithRuntimeBounds(l, node);
  POPRT_ASSIGN_OR_RETURN(ops::graphcore::Activation act, ops::graphcore::activationOfOp(node, l.opset()));
  const ir::Value* x = node.input(0);
  lowerOverRuns(l, node, [&](const Lowering::Run& r, uint64_t bytes) {
    return exec::makeVertex(r.tile, x->type.dtype, {{r.offset, bytes}, {l.operandInScratch(x, r), bytes}},
                            exec::ActivationParams{r.count, exec::vertexActivation(act)});
  });
  return okStatus();
}

std::string batchNormBlocker(const ir::Node& node, const Lowering& l) {
  const bool training = l.opset() >= 14 ? node.attrInt("training_mode", 0) != 0 : node.outputs().size() > 1;
  if (training) return "it runs in training mode";
  const Shape xs = node.input(0)->type.staticShape();
  if (xs.size() < 2) return "its input has rank < 2";
  for (size_t i = 1; i < 5; ++i)
    if (i >= node.inputs().size() || !node.input(i) || node.input(i)->type.numElements() != xs[1])
      return "its parameters are not per channel";
  return "";
}

// Inference BatchNormalization: elementwise over the output's mapping; each region's tile holds
// the parameters of the channels its elements belong to (a slice, or all when it wraps around).
Status lowerBatchNorm(Lowering& l, const ir::Node& node) {
  const ir::Value* x = node.input(0);
  const Shape xs = x->type.staticShape();
  const int64_t C = xs[1], inner = ops::shapeProduct(xs, 2, xs.size());
  const float eps = node.attrFloat("epsilon", 1e-5f);
  const DType dt = x->type.dtype;
  const uint64_t es = dtypeSize(dt);
  TileMapping out = l.spreadLike(x, es);
  for (const Region& r : out.regions) {
    const int64_t first = r.begin / inner, last = (r.begin + r.count - 1) / inner;
    int64_t c0 = 0, cn = C;
    if (inner > 0 && last - first + 1 < C && first % C <= last % C) c0 = first % C, cn = last % C - c0 + 1;
    const uint64_t bytes = static_cast<uint64_t>(r.count) * es;
    std::vector<exec::Field> fields = {{r.offset, bytes}, {l.operandInScratch(x, r.begin, r.count, r.tile), bytes}};
    for (size_t i = 1; i < 5; ++i)
      fields.push_back({l.operandInScratch(node.input(i), c0, cn, r.tile), static_cast<uint64_t>(cn) * es});
    l.computeSet().vertices.push_back(
        exec::makeVertex(r.tile, dt, std::move(fields), exec::BatchNormParams{r.count, r.begin, C, inner, c0, cn, eps}));
  }
  l.setMapping(node.output(0), std::move(out));
  return okStatus();
}

}  // namespace poprt::codegen
