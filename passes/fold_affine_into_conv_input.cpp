// fold_affine_into_conv_input: a scalar affine x · a + b right before a Conv that pads nothing
// (every tap reads the input) folds into the Conv: Conv(x · a + b) = Conv with weights a · W of x,
// plus b times the sum of each output channel's weights on its bias. PP-OCRv4's learnable affine
// blocks (a ConvAct's output times a scalar plus a scalar) before its pointwise convs are 24 of
// ppocr_v4_rec's elementwise nodes. The Mul (or Div by a constant) and the Add (or Sub) may come
// alone or Mul first; each interior value has no other use. A padded Conv would see b where its
// padding reads zeros: not a candidate.
#include <cmath>

#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

using namespace fusion;

struct InputAffine {
  ir::Node* conv = nullptr;
  ir::Value* x = nullptr;  // the value before the affine
  double scale = 1, shift = 0;
};

// x · scale (Mul, or Div by a constant) when n is one, with `x` set.
std::optional<double> scaleOf(const ir::Node* n, ir::Value*& x) {
  if (isOp(n, "Mul"))
    for (size_t i = 0; i < 2; ++i)
      if (auto c = scalarOperand(*n, n->input(i)); c) {  // the constant beside input i
        x = n->input(i);
        return c;
      }
  if (isOp(n, "Div"))
    if (auto c = scalarOperand(*n, n->input(0)); c && *c != 0) {
      x = n->input(0);
      return 1.0 / *c;
    }
  return std::nullopt;
}

// x + shift (Add, or Sub of a constant) when n is one, with `x` set.
std::optional<double> shiftOf(const ir::Node* n, ir::Value*& x) {
  if (isOp(n, "Add"))
    for (size_t i = 0; i < 2; ++i)
      if (auto c = scalarOperand(*n, n->input(i)); c) {
        x = n->input(i);
        return c;
      }
  if (isOp(n, "Sub"))
    if (auto c = scalarOperand(*n, n->input(0)); c) {
      x = n->input(0);
      return -*c;
    }
  return std::nullopt;
}

class FoldAffineIntoConvInput : public RewriteRule<InputAffine> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"Conv"}; }

  Found<InputAffine> match(ir::Graph&, ir::Node& conv, PassContext&) override {
    using F = Found<InputAffine>;
    if (conv.inputs().size() < 2 || !conv.input(0)) return F::none();
    InputAffine m{&conv, conv.input(0)};
    // The affine's last step feeds only the Conv; a Mul before an Add feeds only the Add.
    if (!singleUser(m.x)) return F::none();
    ir::Value* before = nullptr;
    if (auto shift = shiftOf(m.x->producer(), before)) {
      m.shift = *shift;
      m.x = before;
      if (singleUser(m.x))
        if (auto scale = scaleOf(m.x->producer(), before)) {
          m.scale = *scale;
          m.x = before;
        }
    } else if (auto scale = scaleOf(m.x->producer(), before)) {
      m.scale = *scale;
      m.x = before;
    } else {
      return F::none();
    }
    if (!std::isfinite(m.scale) || !std::isfinite(m.shift)) return F::nearMiss("its input's affine is not finite");
    const Tensor* w = constantOf(conv.input(1));
    if (!w || !isFloatingPoint(w->dtype())) return F::nearMiss("its weight is not a floating-point constant");
    if (conv.inputs().size() > 2 && conv.input(2) && !constantOf(conv.input(2))) return F::nearMiss("its bias is not a constant");
    const std::vector<int64_t> pads = conv.attrInts("pads");
    const std::string auto_pad = conv.attrString("auto_pad", "NOTSET");
    if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }) || (auto_pad != "NOTSET" && auto_pad != "VALID"))
      return F::nearMiss("it pads: its padding would read the affine's shift, not zeros");
    return m;
  }

  Status rewrite(ir::Graph& graph, InputAffine& m, PassContext& ctx) override {
    ir::Node& conv = *m.conv;
    const Tensor& w = *constantOf(conv.input(1));
    const Shape ws = w.shape();
    const DType dtype = w.dtype();
    std::vector<double> wv = doubles(w);
    const int64_t M = ws.empty() ? 0 : ws[0];
    const size_t per = M > 0 ? wv.size() / static_cast<size_t>(M) : 0;
    std::vector<double> bias(static_cast<size_t>(M), 0.0);
    if (conv.inputs().size() > 2 && conv.input(2)) bias = doubles(*constantOf(conv.input(2)));
    for (int64_t j = 0; j < M; ++j) {
      double sum = 0;
      for (size_t k = 0; k < per; ++k) sum += wv[static_cast<size_t>(j) * per + k];
      bias[static_cast<size_t>(j)] += m.shift * sum;
    }
    for (double& v : wv) v *= m.scale;
    conv.setInput(1, addConstant(graph, conv.input(1)->name() + "_input_affine", tensorOf(dtype, ws, wv)));
    ir::Value* b = addConstant(graph, conv.name() + "_bias_input_affine", tensorOf(dtype, {M}, bias));
    if (conv.inputs().size() > 2)
      conv.setInput(2, b);
    else
      conv.addInput(b);  // a Conv's inputs: x, W, then its bias
    conv.setInput(0, m.x);
    ctx.count("affines_into_conv_inputs");
    return okStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldAffineIntoConvInput() { return std::make_unique<FoldAffineIntoConvInput>(); }

}  // namespace poprt::passes
