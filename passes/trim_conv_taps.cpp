// trim_conv_taps: a Conv's kernel loses the leading and trailing taps (per spatial dim) that read
// only padding for every output, its pads shrinking to match. DeepLabV3's ASPP runs 3x3 convs at
// dilations 12, 24 and 36 over a 20x20 map: at 24 and 36 only the centre tap ever reads the
// input, so the device would multiply eight zeros for every product that counts. The output is
// the same: each dropped term is a weight times a padding zero. A dim is left alone when its new
// pads would be negative (ONNX pads are not); only explicit pads (auto_pad NOTSET), a constant
// weight and static input dims.
#include <algorithm>

#include "lib/ops/op_util.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

// Whether tap k of a dim reads the input for some output: o*stride - pad_begin + k*dilation in
// [0, in) for an o in [0, out).
bool tapReadsInput(int64_t k, int64_t in, int64_t out, int64_t stride, int64_t dilation, int64_t pad_begin) {
  const int64_t offset = k * dilation - pad_begin;                          // input position of output 0
  const int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;  // first o at or past position 0
  return first < out && first * stride + offset < in;
}

class TrimConvTaps : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    bool changed = false;
    for (const auto& node : graph.nodes()) {
      ir::Node& n = *node;
      if (n.opType() != "Conv" || !n.domain().empty() || n.inputs().size() < 2) continue;
      if (n.attrString("auto_pad", "NOTSET") != "NOTSET") continue;
      const Tensor* w = constantOf(n.input(1));
      auto in_dims = fusion::dimsOf(n.input(0));
      auto out_dims = fusion::dimsOf(n.output(0));
      if (!w || !in_dims || !out_dims || in_dims->size() != w->shape().size() || out_dims->size() != in_dims->size()) continue;
      const size_t rank = w->shape().size() - 2;
      std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * rank, 0));
      const std::vector<int64_t> strides = n.attrInts("strides", std::vector<int64_t>(rank, 1));
      const std::vector<int64_t> dilations = n.attrInts("dilations", std::vector<int64_t>(rank, 1));
      if (pads.size() != 2 * rank || strides.size() != rank || dilations.size() != rank) continue;
      Tensor trimmed = *w;
      int64_t dropped = 0;  // kernel rows, over the dims
      for (size_t d = 0; d < rank; ++d) {
        const ir::Dim &in = (*in_dims)[d + 2], &out = (*out_dims)[d + 2];
        if (!in.isStatic() || !out.isStatic()) continue;
        const int64_t kernel = w->shape()[d + 2];
        auto reads = [&](int64_t k) { return tapReadsInput(k, in.value, out.value, strides[d], dilations[d], pads[d]); };
        int64_t lo = 0, hi = kernel;
        while (lo < hi && !reads(lo)) ++lo;
        while (hi > lo && !reads(hi - 1)) --hi;
        const int64_t pad_begin = pads[d] - lo * dilations[d], pad_end = pads[d + rank] - (kernel - hi) * dilations[d];
        if (lo == hi || (lo == 0 && hi == kernel) || pad_begin < 0 || pad_end < 0) continue;
        trimmed = ops::sliceAxis(trimmed, static_cast<int64_t>(d + 2), lo, hi - lo);
        pads[d] = pad_begin;
        pads[d + rank] = pad_end;
        dropped += kernel - (hi - lo);
      }
      if (dropped == 0) continue;
      const std::vector<int64_t> kernel_shape(trimmed.shape().begin() + 2, trimmed.shape().end());
      const int64_t taps_before = w->numElements() / std::max<int64_t>(1, w->shape()[0] * w->shape()[1]);
      const int64_t taps_after = ops::shapeProduct(kernel_shape);
      n.setInput(1, fusion::addConstant(graph, n.input(1)->name() + "/trimmed", std::move(trimmed)));
      n.attributes["pads"].value = pads;
      if (n.hasAttr("kernel_shape")) n.attributes["kernel_shape"].value = kernel_shape;
      ctx.count("convs_trimmed");
      ctx.count("taps_dropped", taps_before - taps_after);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> makeTrimConvTaps() { return std::make_unique<TrimConvTaps>(); }

}  // namespace poprt::passes
