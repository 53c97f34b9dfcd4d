// Conv/ConvAct and pooling: planConv splits the output over batch x channel blocks x row blocks
// (rows of the first spatial dim) within the tile memory budget. Each block's tile gathers, into
// node-local scratch, the input rows its windows read (the halo included; padding is never stored,
// the codelet clips windows to the rows it holds) for its groups' input channels, plus its weights
// and bias, and runs one ConvPartial (or Pool) vertex that writes its output block. A Conv may
// also split its input channels (see conv_planner.h): its blocks then write float32 partial sums
// (float16 ones too), and a second superstep of Reduce vertices adds each block's partials up, a
// slice per tile, rounding once to the output's dtype.
#include <algorithm>

#include "codegen/conv_planner.h"
#include "codegen/lowering.h"
#include "codegen/partial_sums.h"
#include "lib/exec/vertex_params.h"
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
  p.element_bytes = static_cast<int64_t>(dtypeSize(node.output(0)->type.dtype));
  // Split blocks write float32 partial sums (a float16 vertex through float32 fields, as the
  // IPU's AMP accumulates), so a float16 conv rounds once, after the sum, as an unsplit one does.
  p.split_inputs = true;
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
  p.element_bytes = static_cast<int64_t>(dtypeSize(node.output(0)->type.dtype));
  return op;
}

bool isPool(const ir::Node& node) { return node.opType() != "Conv" && node.opType() != "ConvAct"; }

ConvPlan planFor(const WindowOp& op, const CompileOptions& options) {
  const exec::Target& t = options.target;
  ConvPlan plan = planConv(op.problem, t.tiles_per_ipu, options.preferredTileBudget(), t.fp32_macs_per_cycle, t.sync_cycles);
  if (plan.fits || options.temporaries_scale == 1.0) return plan;
  return planConv(op.problem, t.tiles_per_ipu, options.tileBudget(), t.fp32_macs_per_cycle, t.sync_cycles);
}

int64_t product(const Shape& s, size_t first) {
  int64_t p = 1;
  for (size_t i = first; i < s.size(); ++i) p *= s[i];
  return p;
}

// Emits the vertices of a planned Conv or pool and sets the output's mapping: a vertex per block
// (batch entry x channel block x row block x input-channel block), then with the input channels
// split a superstep that adds up each block's partial sums.
class WindowLowering {
 public:
  WindowLowering(Lowering& l, const ir::Node& node, const WindowOp& op, const ConvPlan& plan)
      : l_(l), node_(node), op_(op), p_(op.problem), win_(op.win), plan_(plan), pool_(isPool(node)) {
    x_ = node.input(0);
    w_ = pool_ ? nullptr : node.input(1);
    b_ = !pool_ && node.inputs().size() > 2 ? node.input(2) : nullptr;
    dt_ = node.output(0)->type.dtype;
    es_ = dtypeSize(dt_);
    rank_ = static_cast<int64_t>(win_.rank());
    in_rows_all_ = rank_ ? win_.in[0] : 1;
    out_rows_all_ = rank_ ? win_.out[0] : 1;
    inner_in_ = product(win_.in, 1);
    inner_out_ = product(win_.out, 1);
    plane_in_ = in_rows_all_ * inner_in_;
    plane_out_ = out_rows_all_ * inner_out_;
    K_ = product(win_.kernel, 0);
    split_ = plan.in_splits > 1;  // one group only (the planner's rule)
  }

  Status run() {
    if (node_.opType() == "ConvAct") {  // the activation ConvAct applies in the vertex
      POPRT_ASSIGN_OR_RETURN(ops::graphcore::Activation a, ops::graphcore::activationOf(node_));
      act_ = exec::vertexActivation(a);
    }
    tile_ = l_.startTile(plan_.blocks);
    for (int64_t n = 0; n < p_.batch; ++n)
      for (const ChannelBlock& cb : channelBlocks())
        for (int64_t o0 = 0; o0 < out_rows_all_; o0 += plan_.row_block) rowBlock(n, cb, o0);
    if (split_) reduceSplitBlocks();
    std::sort(out_.regions.begin(), out_.regions.end(), [](const Region& a, const Region& c) { return a.begin < c.begin; });
    l_.setMapping(node_.output(0), std::move(out_));
    return okStatus();
  }

 private:
  // (first group, groups, first output channel within the group, channels).
  struct ChannelBlock {
    int64_t group, groups, channel, channels;
  };
  // A block's rows: output rows [o0, o0 + rows), input rows [r_lo, r_lo + in_rows) held, and the
  // vertex's dims and window starts in the rows held.
  struct Rows {
    int64_t o0, rows, r_lo, in_rows;
    Shape in_dims, out_dims, starts;
  };
  // An output block with its input channels split: where each input-channel block left its partial sums.
  struct SplitBlock {
    int64_t n, out_ch0, out_chs, o0, rows;
    std::vector<std::pair<uint32_t, uint64_t>> partials;  // (tile, offset)
  };

  std::vector<ChannelBlock> channelBlocks() const {
    std::vector<ChannelBlock> blocks;
    if (plan_.channel_block < p_.out_channels) {
      for (int64_t g = 0; g < p_.groups; ++g)
        for (int64_t c = 0; c < p_.out_channels; c += plan_.channel_block)
          blocks.push_back({g, 1, c, std::min(plan_.channel_block, p_.out_channels - c)});
    } else {
      for (int64_t g = 0; g < p_.groups; g += plan_.group_block)
        blocks.push_back({g, std::min(plan_.group_block, p_.groups - g), 0, p_.out_channels});
    }
    return blocks;
  }

  // The input rows the block's windows read, clipped to the input (padding is not stored).
  Rows rowsOf(int64_t o0) const {
    Rows r{o0, std::min(plan_.row_block, out_rows_all_ - o0), 0, in_rows_all_, win_.in, win_.out, Shape(win_.rank())};
    for (size_t d = 0; d < win_.rank(); ++d) r.starts[d] = -win_.pad_begin[d];
    if (rank_) {
      const int64_t stride0 = win_.strides[0], pad0 = win_.pad_begin[0];
      const int64_t first = o0 * stride0 - pad0,
                    last = (o0 + r.rows - 1) * stride0 - pad0 + (win_.kernel[0] - 1) * win_.dilations[0];
      r.r_lo = std::clamp<int64_t>(first, 0, in_rows_all_);
      r.in_rows = std::clamp<int64_t>(last + 1, r.r_lo, in_rows_all_) - r.r_lo;
      r.in_dims[0] = r.in_rows;
      r.out_dims[0] = r.rows;
      r.starts[0] = first - r.r_lo;
    }
    return r;
  }

  // Output elements [begin, begin+count) of Y at `offset` on `tile`, joined to the region before
  // when it continues it.
  void addRegion(int64_t begin, int64_t count, uint32_t t, uint64_t offset) {
    if (!out_.regions.empty()) {
      Region& last = out_.regions.back();
      if (last.tile == t && last.begin + last.count == begin && last.offset + static_cast<uint64_t>(last.count) * es_ == offset) {
        last.count += count;
        return;
      }
    }
    out_.regions.push_back({begin, count, t, offset});
  }

  // The vertices of one output block: one, or one per input-channel block when split.
  void rowBlock(int64_t n, const ChannelBlock& cb, int64_t o0) {
    const Rows r = rowsOf(o0);
    const int64_t out_ch0 = cb.group * p_.out_channels + cb.channel, out_chs = cb.groups * cb.channels;
    if (split_) split_blocks_.push_back({n, out_ch0, out_chs, o0, r.rows, {}});
    // Its input channels: all of its groups', or one input-channel block at a time.
    const int64_t group_in0 = cb.group * p_.in_channels, group_ins = cb.groups * p_.in_channels;
    const int64_t in_step = split_ ? plan_.in_channel_block : std::max<int64_t>(group_ins, 1);
    for (int64_t c0 = 0; c0 == 0 || c0 < group_ins; c0 += in_step) {
      const int64_t in_chs = split_ ? std::min(plan_.in_channel_block, group_ins - c0) : group_ins;
      const exec::Field in_field = inputWindow(n, group_in0 + c0, in_chs, r);
      // Partial sums (float32) live until the reduction; an unsplit block's output is Y's.
      const uint64_t out_bytes = static_cast<uint64_t>(out_chs * r.rows * inner_out_) * es_;
      const uint64_t partial_bytes = out_bytes / es_ * kPartialBytes;
      const exec::Field out_field = split_ ? exec::Field{l_.scratch(tile_, partial_bytes), partial_bytes, partialFieldDtype(dt_)}
                                           : exec::Field{l_.allocator().allocate(tile_, out_bytes), out_bytes};
      l_.computeSet().vertices.push_back(pool_ ? poolVertex(out_chs, r, out_field, in_field)
                                               : convVertex(cb, out_ch0, c0, in_chs, r, out_field, in_field));
      if (split_) {
        split_blocks_.back().partials.emplace_back(tile_, out_field.offset);
      } else {
        // Output channel j's rows are consecutive in the tile buffer and in Y.
        const int64_t run = r.rows * inner_out_;
        for (int64_t j = 0; j < out_chs; ++j)
          addRegion((n * op_.out_channels + out_ch0 + j) * plane_out_ + o0 * inner_out_, run, tile_,
                    out_field.offset + static_cast<uint64_t>(j * run) * es_);
      }
      tile_ = l_.nextTile(tile_);
    }
  }

  // Input channels [in_ch0, in_ch0 + in_chs) of batch entry n, the rows the block holds.
  exec::Field inputWindow(int64_t n, int64_t in_ch0, int64_t in_chs, const Rows& r) {
    const uint64_t in_bytes = static_cast<uint64_t>(in_chs * r.in_rows * inner_in_) * es_;
    if (r.in_rows == in_rows_all_)  // whole planes: one contiguous range, maybe in place
      return {l_.operandInScratch(x_, (n * op_.channels + in_ch0) * plane_in_, in_chs * plane_in_, tile_), in_bytes};
    // Rows [r_lo, r_lo + in_rows) of each channel: one strided gather.
    const uint64_t in_off = l_.scratch(tile_, in_bytes);
    l_.gather(x_, ((n * op_.channels + in_ch0) * in_rows_all_ + r.r_lo) * inner_in_, r.in_rows * inner_in_, in_chs, plane_in_,
              tile_, in_off, static_cast<uint64_t>(r.in_rows * inner_in_) * es_);
    return {in_off, in_bytes};
  }

  exec::Vertex poolVertex(int64_t out_chs, const Rows& r, const exec::Field& out_field, const exec::Field& in_field) const {
    Shape padded_ends(win_.rank());
    for (size_t d = 0; d < win_.rank(); ++d)  // the end of the padded input, in the rows held
      padded_ends[d] = win_.in[d] + win_.pad_end[d] - (d == 0 ? r.r_lo : 0);
    const exec::PoolParams params{rank_,
                                  out_chs,
                                  op_.pool_max ? exec::kPoolMax : exec::kPoolAvg,
                                  op_.count_include_pad,
                                  r.in_dims,
                                  r.out_dims,
                                  win_.kernel,
                                  win_.strides,
                                  win_.dilations,
                                  r.starts,
                                  padded_ends};
    return exec::makeVertex(tile_, dt_, {out_field, in_field}, params);
  }

  exec::Vertex convVertex(const ChannelBlock& cb, int64_t out_ch0, int64_t c0, int64_t in_chs, const Rows& r,
                          const exec::Field& out_field, const exec::Field& in_field) {
    const int64_t ins = split_ ? in_chs : p_.in_channels;  // per group
    const int64_t w_count = cb.groups * cb.channels * ins * K_, out_chs = cb.groups * cb.channels;
    const uint64_t w_off =
        split_ ? l_.operandRows(w_, out_ch0 * p_.in_channels * K_ + c0 * K_, ins * K_, out_chs, p_.in_channels * K_, tile_)
               : l_.operandInScratch(w_, out_ch0 * p_.in_channels * K_, w_count, tile_);
    std::vector<exec::Field> fields = {out_field, in_field, {w_off, static_cast<uint64_t>(w_count) * es_}};
    const bool bias = b_ && c0 == 0;  // added once, by the first partial
    if (bias) fields.push_back({l_.operandInScratch(b_, out_ch0, out_chs, tile_), static_cast<uint64_t>(out_chs) * es_});
    // A split block's activation waits for the sum.
    const exec::ConvPartialParams params{rank_,        cb.groups,      ins,        cb.channels,
                                         bias,         r.in_dims,      r.out_dims, win_.kernel,
                                         win_.strides, win_.dilations, r.starts,   split_ ? std::nullopt : act_};
    return exec::makeVertex(tile_, dt_, std::move(fields), params);
  }

  // The next superstep adds up the partials and applies the activation: each tile that made one
  // holds a slice of its block of Y.
  void reduceSplitBlocks() {
    l_.nextSuperstep();
    for (const SplitBlock& sb : split_blocks_) {
      const int64_t run = sb.rows * inner_out_;
      reducePartials(
          l_, sb.partials, sb.out_chs * run, 1, dt_, act_, [&](int64_t first, int64_t len, uint32_t t, uint64_t offset) {
            for (int64_t e = first; e < first + len;) {  // the slice's pieces of each output channel
              const int64_t j_ch = e / run, end = std::min(first + len, (j_ch + 1) * run);
              addRegion((sb.n * op_.out_channels + sb.out_ch0 + j_ch) * plane_out_ + sb.o0 * inner_out_ + (e - j_ch * run),
                        end - e, t, offset + static_cast<uint64_t>(e - first) * es_);
              e = end;
            }
          });
    }
  }

  Lowering& l_;
  const ir::Node& node_;
  const WindowOp& op_;
  const ConvProblem& p_;
  const ops::nn::Window& win_;
  const ConvPlan& plan_;
  const bool pool_;
  const ir::Value *x_, *w_, *b_;
  DType dt_;
  uint64_t es_;
  int64_t rank_, in_rows_all_, out_rows_all_, inner_in_, inner_out_, plane_in_, plane_out_, K_;
  bool split_;
  std::optional<exec::VertexActivation> act_;
  uint32_t tile_ = 0;
  TileMapping out_;
  std::vector<SplitBlock> split_blocks_;
};

Status lowerWindow(Lowering& l, const ir::Node& node, const WindowOp& op) {
  const ConvPlan plan = planFor(op, l.options());
  if (plan.blocks == 0) {  // an empty output
    l.setMapping(node.output(0), {});
    return okStatus();
  }
  if (!plan.fits)
    return Error(node.describe() + ": no split fits in " + std::to_string(l.options().tileBudget()) +
                 " bytes per tile (hint: " + halfPrecisionHint(node.output(0)->type.dtype) + serializeHint(node) +
                 "raise --available_memory_proportion or use more IPUs)");
  return WindowLowering(l, node, op, plan).run();
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
           serializeHint(node) + "raise --available_memory_proportion)";
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
