// Conv/ConvAct and pooling: planConv splits the output over batch x channel blocks x row blocks
// (rows of the first spatial dim) within the tile memory budget. Each block's tile gathers, into
// node-local scratch, the input rows its windows read (the halo included; padding is never stored,
// the codelet clips windows to the rows it holds) for its groups' input channels, plus its weights
// and bias, and runs one ConvPartial (or Pool) vertex that writes its output block. A float32 Conv
// may also split its input channels (see conv_planner.h): its blocks then write partial sums, and
// a second superstep of Reduce vertices adds each block's partials up, a slice per tile.
#include <algorithm>

#include "codegen/conv_planner.h"
#include "codegen/lowering.h"
#include "codegen/partial_sums.h"
#include "lib/exec/codelets.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/ops/nn_util.h"

namespace poprt::codegen {
namespace {

// A Conv or pool node as the device sees it.
struct WindowOp {
  ConvProblem problem;
  ops::nn::Window win;       // spatial geometry (pads, strides...) from the evaluator's own helper
  int64_t channels = 0;      // input channels in all (C)
  int64_t out_channels = 0;  // output channels in all (M; C for pools)
  bool pool_max = false, count_include_pad = false;
};

bool isGlobalPool(const std::string& op) { return op == "GlobalMaxPool" || op == "GlobalAveragePool"; }

Status checkExtents(const ops::nn::Window& w) {
  const int64_t cap = exec::kMaxWindowExtent;
  for (size_t d = 0; d < w.rank(); ++d)
    if (w.in[d] > cap || w.out[d] > cap || w.kernel[d] > cap || w.strides[d] > cap || w.dilations[d] > cap ||
        w.pad_begin[d] > cap || w.pad_end[d] > cap)
      return Error("its window geometry exceeds the device's limit of " + std::to_string(cap) + " per dim");
  return okStatus();
}

Expected<WindowOp> convOp(const ir::Node& node) {
  const Shape xs = node.input(0)->type.staticShape(), ws = node.input(1)->type.staticShape();
  if (xs.size() < 3 || xs.size() > 2 + static_cast<size_t>(exec::kMaxWindowRank) || ws.size() != xs.size())
    return Error("the device runs 1-D, 2-D and 3-D convolutions (X " + shapeToString(xs) + ", W " + shapeToString(ws) + ")");
  const int64_t group = node.attrInt("group", 1);
  const int64_t C = xs[1], M = ws[0];
  if (group < 1 || M % group != 0 || ws[1] * group != C) return Error("X, W and group do not match");
  const Shape kernel(ws.begin() + 2, ws.end());
  if (node.hasAttr("kernel_shape") && node.attrInts("kernel_shape") != kernel)
    return Error("kernel_shape does not match the spatial dims of W");
  if (node.inputs().size() > 2 && node.input(2)) {
    const Shape bs = node.input(2)->type.staticShape();
    if (bs != Shape{M}) return Error("B does not have shape [" + std::to_string(M) + "]");
  }
  WindowOp op;
  POPRT_ASSIGN_OR_RETURN(op.win, ops::nn::windowGeometry(node, Shape(xs.begin() + 2, xs.end()), kernel, false));
  POPRT_TRY(checkExtents(op.win));
  op.channels = C;
  op.out_channels = M;
  ConvProblem& p = op.problem;
  p.batch = xs[0];
  p.groups = group;
  p.in_channels = C / group;
  p.out_channels = M / group;
  p.in = op.win.in;
  p.out = op.win.out;
  p.kernel = op.win.kernel;
  p.strides = op.win.strides;
  p.dilations = op.win.dilations;
  p.has_bias = node.inputs().size() > 2 && node.input(2) != nullptr;
  // Partial sums are float32: a float16 vertex would round each one (the IPU keeps them in float).
  p.split_inputs = node.output(0)->type.dtype == DType::Float;
  if (node.opType() == "ConvAct") {
    POPRT_ASSIGN_OR_RETURN(ops::graphcore::Activation act, ops::graphcore::activationOf(node));
    (void)act;
  }
  return op;
}

Expected<WindowOp> poolOp(const ir::Node& node) {
  const Shape xs = node.input(0)->type.staticShape();
  const bool global = isGlobalPool(node.opType());
  if (xs.size() < (global ? 2u : 3u) || xs.size() > 2 + static_cast<size_t>(exec::kMaxWindowRank))
    return Error("the device pools over 1 to 3 spatial dims (X " + shapeToString(xs) + ")");
  WindowOp op;
  const Shape in(xs.begin() + 2, xs.end());
  if (global) {
    const size_t r = in.size();
    op.win.in = in;
    op.win.kernel = in;
    op.win.out.assign(r, 1);
    op.win.strides.assign(r, 1);
    op.win.dilations.assign(r, 1);
    op.win.pad_begin.assign(r, 0);
    op.win.pad_end.assign(r, 0);
  } else {
    if (!node.hasAttr("kernel_shape")) return Error("attribute kernel_shape is required");
    POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ops::intsAttr(node, "kernel_shape", in.size(), 1, 1, ops::nn::kMaxDim));
    POPRT_ASSIGN_OR_RETURN(op.win, ops::nn::windowGeometry(node, in, kernel, node.attrInt("ceil_mode", 0) != 0));
  }
  POPRT_TRY(checkExtents(op.win));
  op.pool_max = node.opType() == "MaxPool" || node.opType() == "GlobalMaxPool";
  op.count_include_pad = node.opType() == "AveragePool" && node.attrInt("count_include_pad", 0) != 0;
  op.channels = op.out_channels = xs[1];
  ConvProblem& p = op.problem;
  p.batch = xs[0];
  p.groups = xs[1];
  p.in_channels = p.out_channels = 1;
  p.in = op.win.in;
  p.out = op.win.out;
  p.kernel = op.win.kernel;
  p.strides = op.win.strides;
  p.dilations = op.win.dilations;
  p.has_weights = false;
  return op;
}

bool isPool(const ir::Node& node) { return node.opType() != "Conv" && node.opType() != "ConvAct"; }

ConvPlan planFor(const WindowOp& op, const CompileOptions& options) {
  return planConv(op.problem, options.target.tiles_per_ipu, options.tileBudget(), options.target.fp32_macs_per_cycle);
}

int64_t product(const Shape& s, size_t first) {
  int64_t p = 1;
  for (size_t i = first; i < s.size(); ++i) p *= s[i];
  return p;
}

// Emits the vertices of a planned Conv or pool and sets the output's mapping.
Status lowerWindow(Lowering& l, const ir::Node& node, const WindowOp& op) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  const DType dt = y->type.dtype;
  const uint64_t es = dtypeSize(dt);
  const bool pool = isPool(node);
  const ir::Value* w = pool ? nullptr : node.input(1);
  const ir::Value* b = !pool && node.inputs().size() > 2 ? node.input(2) : nullptr;
  const ConvProblem& p = op.problem;
  const ops::nn::Window& win = op.win;
  const ConvPlan plan = planFor(op, l.options());
  if (plan.blocks == 0) {  // an empty output
    l.setMapping(y, {});
    return okStatus();
  }
  if (!plan.fits)
    return Error(node.describe() + ": no split fits in " + std::to_string(l.options().tileBudget()) + " bytes per tile (hint: " +
                 halfPrecisionHint(y->type.dtype) + "raise --available_memory_proportion or use more IPUs)");
  const int64_t rank = static_cast<int64_t>(win.rank());
  const int64_t in_rows_all = rank ? win.in[0] : 1, out_rows_all = rank ? win.out[0] : 1;
  const int64_t inner_in = product(win.in, 1), inner_out = product(win.out, 1);
  const int64_t plane_in = in_rows_all * inner_in, plane_out = out_rows_all * inner_out;
  const int64_t K = product(win.kernel, 0);
  const int64_t stride0 = rank ? win.strides[0] : 1, dil0 = rank ? win.dilations[0] : 1;
  const int64_t pad0 = rank ? win.pad_begin[0] : 0, kernel0 = rank ? win.kernel[0] : 1;

  // The activation ConvAct applies in the vertex.
  std::vector<int64_t> act_params;
  std::vector<float> act_fparams;
  if (node.opType() == "ConvAct") {
    POPRT_ASSIGN_OR_RETURN(ops::graphcore::Activation act, ops::graphcore::activationOf(node));
    act_params = {static_cast<int64_t>(act.kind)};
    act_fparams = {static_cast<float>(act.alpha), static_cast<float>(act.beta), static_cast<float>(act.min),
                   static_cast<float>(act.max)};
  }

  // The channel blocks: (first group, groups, first output channel within the group, channels).
  struct ChannelBlock {
    int64_t group, groups, channel, channels;
  };
  std::vector<ChannelBlock> channel_blocks;
  if (plan.channel_block < p.out_channels) {
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t c = 0; c < p.out_channels; c += plan.channel_block)
        channel_blocks.push_back({g, 1, c, std::min(plan.channel_block, p.out_channels - c)});
  } else {
    for (int64_t g = 0; g < p.groups; g += plan.group_block)
      channel_blocks.push_back({g, std::min(plan.group_block, p.groups - g), 0, p.out_channels});
  }

  // Output elements [begin, begin+count) of Y at `offset` on `tile`, joined to the region before
  // when it continues it.
  TileMapping out;
  auto addRegion = [&](int64_t begin, int64_t count, uint32_t t, uint64_t offset) {
    if (!out.regions.empty()) {
      Region& last = out.regions.back();
      if (last.tile == t && last.begin + last.count == begin && last.offset + static_cast<uint64_t>(last.count) * es == offset) {
        last.count += count;
        return;
      }
    }
    out.regions.push_back({begin, count, t, offset});
  };
  // An output block with its input channels split: where each input-channel block left its partial sums.
  struct SplitBlock {
    int64_t n, out_ch0, out_chs, o0, rows;
    std::vector<std::pair<uint32_t, uint64_t>> partials;  // (tile, offset)
  };
  std::vector<SplitBlock> split_blocks;
  const bool split = plan.in_splits > 1;  // one group only (the planner's rule)

  uint32_t tile = l.startTile(plan.blocks);
  for (int64_t n = 0; n < p.batch; ++n) {
    for (const ChannelBlock& cb : channel_blocks) {
      const int64_t out_ch0 = cb.group * p.out_channels + cb.channel, out_chs = cb.groups * cb.channels;
      for (int64_t o0 = 0; o0 < out_rows_all; o0 += plan.row_block) {
        const int64_t rows = std::min(plan.row_block, out_rows_all - o0);
        // The input rows the block's windows read, clipped to the input (padding is not stored).
        int64_t r_lo = 0, r_hi = in_rows_all;
        if (rank) {
          const int64_t first = o0 * stride0 - pad0, last = (o0 + rows - 1) * stride0 - pad0 + (kernel0 - 1) * dil0;
          r_lo = std::clamp<int64_t>(first, 0, in_rows_all);
          r_hi = std::clamp<int64_t>(last + 1, r_lo, in_rows_all);
        }
        const int64_t in_rows = r_hi - r_lo;
        const uint64_t out_bytes = static_cast<uint64_t>(out_chs * rows * inner_out) * es;
        // Per dim: in extent, out extent, kernel, stride, dilation, start (in the rows held).
        Shape in_dims = win.in, out_dims = win.out, starts(win.rank());
        for (size_t d = 0; d < win.rank(); ++d) starts[d] = -win.pad_begin[d];
        if (rank) {
          in_dims[0] = in_rows;
          out_dims[0] = rows;
          starts[0] = o0 * stride0 - pad0 - r_lo;
        }
        if (split) split_blocks.push_back({n, out_ch0, out_chs, o0, rows, {}});
        // Its input channels: all of its groups', or one input-channel block at a time.
        const int64_t group_in0 = cb.group * p.in_channels, group_ins = cb.groups * p.in_channels;
        const int64_t in_step = split ? plan.in_channel_block : std::max<int64_t>(group_ins, 1);
        for (int64_t c0 = 0; c0 == 0 || c0 < group_ins; c0 += in_step) {
          const int64_t in_ch0 = group_in0 + c0, in_chs = split ? std::min(plan.in_channel_block, group_ins - c0) : group_ins;
          const uint64_t in_bytes = static_cast<uint64_t>(in_chs * in_rows * inner_in) * es;
          uint64_t in_off;
          if (in_rows == in_rows_all) {  // whole planes: one contiguous range, maybe in place
            in_off = l.operandInScratch(x, (n * op.channels + in_ch0) * plane_in, in_chs * plane_in, tile);
          } else {
            // Rows [r_lo, r_hi) of each channel: one strided gather.
            in_off = l.scratch(tile, in_bytes);
            l.gather(x, ((n * op.channels + in_ch0) * in_rows_all + r_lo) * inner_in, in_rows * inner_in, in_chs, plane_in, tile,
                     in_off, static_cast<uint64_t>(in_rows * inner_in) * es);
          }
          // Partial sums (float32) live until the reduction; an unsplit block's output is Y's.
          const uint64_t partial_bytes = out_bytes / es * kPartialBytes;
          const exec::Field out_field = split ? exec::Field{l.scratch(tile, partial_bytes), partial_bytes, partialFieldDtype(dt)}
                                              : exec::Field{l.allocator().allocate(tile, out_bytes), out_bytes};
          const uint64_t out_off = out_field.offset;
          exec::Vertex v;
          v.tile = tile;
          v.dtype = dt;
          if (pool) {
            v.codelet = exec::Codelet::Pool;
            v.fields = {out_field, {in_off, in_bytes}};
            v.params = {rank, out_chs, op.pool_max ? exec::kPoolMax : exec::kPoolAvg, op.count_include_pad ? 1 : 0};
          } else {
            v.codelet = exec::Codelet::ConvPartial;
            const int64_t ins = split ? in_chs : p.in_channels;  // per group
            const int64_t w_count = out_chs * ins * K;
            const uint64_t w_off =
                split ? l.operandRows(w, out_ch0 * p.in_channels * K + c0 * K, ins * K, out_chs, p.in_channels * K, tile)
                      : l.operandInScratch(w, out_ch0 * p.in_channels * K, w_count, tile);
            v.fields = {out_field, {in_off, in_bytes}, {w_off, static_cast<uint64_t>(w_count) * es}};
            const bool bias = b && c0 == 0;  // added once, by the first partial
            if (bias) v.fields.push_back({l.operandInScratch(b, out_ch0, out_chs, tile), static_cast<uint64_t>(out_chs) * es});
            v.params = {rank, cb.groups, ins, cb.channels, bias ? 1 : 0};
          }
          for (const Shape* s :
               std::initializer_list<const Shape*>{&in_dims, &out_dims, &win.kernel, &win.strides, &win.dilations, &starts})
            v.params.insert(v.params.end(), s->begin(), s->end());
          if (pool) {
            for (size_t d = 0; d < win.rank(); ++d)  // the end of the padded input, in the rows held
              v.params.push_back(win.in[d] + win.pad_end[d] - (d == 0 ? r_lo : 0));
          } else if (!split) {  // a split block's activation waits for the sum
            v.params.insert(v.params.end(), act_params.begin(), act_params.end());
            v.fparams = act_fparams;
          }
          l.computeSet().vertices.push_back(std::move(v));
          if (split) {
            split_blocks.back().partials.emplace_back(tile, out_off);
          } else {
            // Output channel j's rows are consecutive in the tile buffer and in Y.
            const int64_t run = rows * inner_out;
            for (int64_t j = 0; j < out_chs; ++j)
              addRegion((n * op.out_channels + out_ch0 + j) * plane_out + o0 * inner_out, run, tile,
                        out_off + static_cast<uint64_t>(j * run) * es);
          }
          tile = l.nextTile(tile);
        }
      }
    }
  }
  if (split) {
    // The next superstep adds up the partials and applies the activation: each tile that made one
    // holds a slice of its block of Y.
    l.nextSuperstep();
    for (const SplitBlock& sb : split_blocks) {
      const int64_t run = sb.rows * inner_out;
      reducePartials(l, sb.partials, sb.out_chs * run, dt, act_params, act_fparams,
                     [&](int64_t first, int64_t len, uint32_t t, uint64_t offset) {
                       for (int64_t e = first; e < first + len;) {  // the slice's pieces of each output channel
                         const int64_t j_ch = e / run, end = std::min(first + len, (j_ch + 1) * run);
                         addRegion(
                             (sb.n * op.out_channels + sb.out_ch0 + j_ch) * plane_out + sb.o0 * inner_out + (e - j_ch * run),
                             end - e, t, offset + static_cast<uint64_t>(e - first) * es);
                         e = end;
                       }
                     });
    }
  }
  std::sort(out.regions.begin(), out.regions.end(), [](const Region& a, const Region& c) { return a.begin < c.begin; });
  l.setMapping(y, std::move(out));
  return okStatus();
}

}  // namespace

std::string windowBlocker(const ir::Node& node, const CompileOptions& options) {
  auto op = isPool(node) ? poolOp(node) : convOp(node);
  if (!op.ok()) return op.error().message();
  for (const ir::Value* v : node.inputs())
    if (v && v->type.numElements() == 0) return "its input '" + v->name() + "' is empty";
  const ConvPlan plan = planFor(*op, options);
  if (!plan.fits)
    return "no split of it fits in " + std::to_string(options.tileBudget()) + " bytes per tile (the smallest needs " +
           std::to_string(plan.bytes_per_tile) + "; hint: " + halfPrecisionHint(node.output(0)->type.dtype) +
           "raise --available_memory_proportion)";
  return "";
}

Status lowerConv(Lowering& l, const ir::Node& node) {
  auto op = convOp(node);
  if (!op.ok()) return Error(node.describe() + ": " + op.error().message());
  return lowerWindow(l, node, *op);
}

Status lowerPool(Lowering& l, const ir::Node& node) {
  auto op = poolOp(node);
  if (!op.ok()) return Error(node.describe() + ": " + op.error().message());
  return lowerWindow(l, node, *op);
}

}  // namespace poprt::codegen
