// quantized_to_float: the integer ops of quantized models become float32 ops carrying the same
// integers, so they compile to device vertices instead of running on the host's evaluator:
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (QDQ and dynamic quantization),
// ConvInteger and MatMulInteger (dynamic), QLinearConv and QLinearMatMul (QOperator), and the
// layout ops and max pools between them. In QDQ models, a Conv, MatMul or Gemm of dequantized
// operands becomes the op on their integers times the scales, and a QuantizeLinear of it (after a
// Relu or not) one rounding of the sums times scale / y_scale, as a quantized op computes it.
// It runs before constant_folding, which would turn the dequantized weights into floats.
//
// A quantized tensor q with zero point z is carried as the float32 tensor q - z (its "centered"
// form): QuantizeLinear is Clip(Round(x / scale), lo - z, hi - z), a Conv or MatMul reads the
// centered tensors directly (padding is 0 there, as the zero point is in q), and the zero point
// never needs adding back unless an integer tensor itself is wanted (a graph output, an op this
// pass leaves alone: a Cast to the integer type makes it, from the centered values).
//
// Exactness: products of 8-bit values (at most 255 * 128) are exact in float32, and so is every
// sum of them below 2^24; a ConvInteger/MatMulInteger whose int32 accumulators pass 2^24 (a
// reduction over thousands of full-range products) rounds like the float Cast ONNX models apply to
// them next. QLinearConv/QLinearMatMul scale by x_scale * w_scale / y_scale in float as the
// evaluator and ONNX Runtime do, and round halves to even. NaN inputs of QuantizeLinear give NaN
// here, where the evaluator gives the zero point. Forms this pass does not take (weights that are
// not constants, per-row zero points of a MatMul's A, non-float32 scales) stay on the host, each
// reported as a near miss.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <type_traits>

#include "lib/ops/op_util.h"
#include "passes/fp16_options.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

// A quantized value in its centered form: `centered` = q - zero_point (float32); `zero_point`
// null means 0 (int32 accumulators, and a zero point's own values).
struct Centered {
  ir::Value* centered = nullptr;
  ir::Value* zero_point = nullptr;
};

// The value range of an 8-bit quantized type (int32 accumulators have none here).
std::optional<std::pair<double, double>> range8(DType t) {
  if (t == DType::UInt8) return std::make_pair(0.0, 255.0);
  if (t == DType::Int8) return std::make_pair(-128.0, 127.0);
  return std::nullopt;
}

bool isFloat32(const ir::Value* v) { return v && v->type.dtype == DType::Float; }

// Values of a constant as doubles (nullopt unless a constant).
std::optional<std::vector<double>> constantValues(const ir::Value* v) {
  const Tensor* t = v ? constantOf(v) : nullptr;
  if (!t) return std::nullopt;
  auto d = ops::toDoubles(*t);
  if (!d.ok()) return std::nullopt;
  return std::move(*d);
}

// Whether every value equals the first (a per-axis zero point that is one value in effect).
bool uniform(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [&](double x) { return x == v[0]; });
}

// out[i] = in[i] minus its zero point (in double, then out's type), `in` a tensor of `shape`: one
// zero point, or one per slice along `axis`. False when the zero points fit neither. In place
// (in and out the same vector) or from integers straight to floats.
template <class In, class Out>
bool subtractZeroPoints(const In& in, Out&& out, const std::vector<double>& zero_point, const Shape& shape, int64_t axis) {
  size_t inner = in.size(), channels = 1;  // runs of `inner` elements, run r's zero point r % channels
  if (zero_point.size() != 1) {
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()) ||
        static_cast<int64_t>(zero_point.size()) != shape[static_cast<size_t>(axis)])
      return false;
    channels = zero_point.size();
    inner = static_cast<size_t>(ops::shapeProduct(shape, static_cast<size_t>(axis) + 1));
  }
  using T = std::decay_t<decltype(out[0])>;
  // A run at a time: a division per element took most of the pass on a ViT's 86 million weights.
  for (size_t begin = 0, r = 0; begin < in.size() && inner > 0; begin += inner, ++r) {
    const double zp = zero_point[r % channels];
    for (size_t i = begin, end = std::min(begin + inner, in.size()); i < end; ++i)
      out[i] = static_cast<T>(static_cast<double>(in[i]) - zp);
  }
  return true;
}

// The layout ops and max pools that commute with subtracting a scalar zero point: run on the
// centered values, they give the centered result.
bool passesCentered(const ir::Node& n) {
  static const std::set<std::string> kOps = {"Reshape",      "Flatten", "Squeeze", "Unsqueeze",     "Transpose",
                                             "Identity",     "MaxPool", "Slice",   "GlobalMaxPool", "DepthToSpace",
                                             "SpaceToDepth", "Expand",  "Tile"};
  return n.domain().empty() && kOps.count(n.opType()) && n.outputs().size() == 1;
}

// DynamicQuantizeLinear's min and max reduce rows of at most this many elements (32 KiB), each on
// one tile, then the rows' results.
constexpr int64_t kReductionRow = 8192;

class Rewriter {
 public:
  Rewriter(ir::Graph& g, PassContext& ctx) : g_(g), ctx_(ctx) {}
  bool changed() const { return changed_; }

  // Rewrites `n` if it is a quantized op of a form this pass takes; the reason when it is one
  // this pass leaves on the host, empty when done or not a quantized op at all.
  std::string visit(ir::Node* n) {
    if (!n->domain().empty() || n->outputs().empty() || !n->output(0)) return "";
    const std::string& op = n->opType();
    // The inputs each rewrite reads unconditionally (the checker lets a model leave any out).
    static const std::map<std::string, std::vector<size_t>> kRequired = {{"QuantizeLinear", {0, 1}},
                                                                         {"DequantizeLinear", {0, 1}},
                                                                         {"DynamicQuantizeLinear", {0}},
                                                                         {"ConvInteger", {0, 1}},
                                                                         {"MatMulInteger", {0, 1}},
                                                                         {"QLinearConv", {0, 1, 3, 4, 6, 7}},
                                                                         {"QLinearMatMul", {0, 1, 3, 4, 6, 7}},
                                                                         {"Cast", {0}},
                                                                         {"Conv", {0, 1}},
                                                                         {"MatMul", {0, 1}},
                                                                         {"Gemm", {0, 1}}};
    if (auto it = kRequired.find(op); it != kRequired.end())
      for (size_t i : it->second)
        if (!n->input(i)) return "";
    if (op == "DynamicQuantizeLinear" && (n->outputs().size() != 3 || !n->output(1) || !n->output(2))) return "";
    if (op == "QuantizeLinear") return quantize(n);
    if (op == "DequantizeLinear") return dequantize(n);
    if (op == "DynamicQuantizeLinear") return dynamicQuantize(n);
    if (op == "ConvInteger" || op == "MatMulInteger") return integerProduct(n, false);
    if (op == "QLinearConv" || op == "QLinearMatMul") return integerProduct(n, true);
    if (op == "Cast") return castToFloat(n);
    if (op == "Conv" || op == "MatMul" || op == "Gemm") return dequantizedProduct(n);
    if (passesCentered(*n)) return passThrough(n);
    return "";
  }

 private:
  ir::Graph& g_;
  PassContext& ctx_;
  std::map<const ir::Value*, Centered> centered_;  // integer value -> its centered form
  // DequantizeLinear outputs this pass made: value -> the centered input and its one scale (QDQ
  // activations, which a Conv or MatMul then reads as integers).
  struct Dequantized {
    ir::Value* centered;
    float scale;
  };
  std::map<const ir::Value*, Dequantized> dequantized_;
  // Products of integers this pass made from QDQ patterns: value = acc * scale[channel], the
  // channel on `axis` (-1 for the last); a QuantizeLinear of it folds the scales into one.
  struct Scaled {
    ir::Value* acc;
    std::vector<double> scale;
    int64_t axis;
  };
  std::map<const ir::Value*, Scaled> scaled_;
  bool changed_ = false;

  // ---- building blocks --------------------------------------------------------------------------

  ir::TensorType floatLike(const ir::Value* v) {
    ir::TensorType t = v->type;
    t.dtype = DType::Float;
    return t;
  }

  ir::Value* node(const std::string& op, const std::vector<ir::Value*>& inputs, ir::TensorType type, const std::string& base,
                  ir::Value* out = nullptr) {
    if (!out) out = g_.addValue(g_.uniqueName(base + "/" + fusion::counterName(op)), std::move(type));
    g_.addNode(op, inputs, {out}, g_.uniqueName(base + "/" + op));
    return out;
  }

  ir::Value* constant(const std::string& base, const std::vector<double>& values, Shape shape) {
    Tensor t(DType::Float, std::move(shape));
    auto d = t.data<float>();
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>(values[values.size() == 1 ? 0 : i]);
    return fusion::addConstant(g_, base, std::move(t));
  }
  ir::Value* scalar(const std::string& base, double v) { return constant(base, {v}, {}); }

  // Takes `n` out of the graph, leaving its outputs without a producer (their uses stay).
  void remove(ir::Node* n) {
    for (size_t i = 0; i < n->outputs().size(); ++i)
      if (n->output(i)) g_.setNodeOutput(n, i, g_.addValue(g_.uniqueName(n->name() + "/removed")));
    g_.removeNode(n);
    changed_ = true;
  }

  // Records `c` as the centered form of integer value `v` (whose producer was removed) and makes v
  // again from it, for readers this pass leaves alone: Cast(c + zero point); dead code otherwise.
  void define(ir::Value* v, Centered c, const std::string& base) {
    centered_[v] = c;
    ir::Value* absolute =
        c.zero_point ? node("Add", {c.centered, asFloat(c.zero_point, base)}, c.centered->type, base) : c.centered;
    ir::Node* cast = g_.addNode("Cast", {absolute}, {v}, g_.uniqueName(base + "/Cast"));
    cast->attributes["to"].value = static_cast<int64_t>(v->type.dtype);
  }

  // The float32 values of integer value `v` (a zero point, say): a constant, v's own centered
  // form when its zero point is 0, else a Cast.
  ir::Value* asFloat(ir::Value* v, const std::string& base) {
    if (auto c = constantValues(v)) return constant(base + "/f", *c, constantOf(v)->shape());
    auto it = centered_.find(v);
    if (it != centered_.end() && !it->second.zero_point) return it->second.centered;
    ir::Value* out = g_.addValue(g_.uniqueName(base + "/cast"), floatLike(v));
    ir::Node* cast = g_.addNode("Cast", {v}, {out}, g_.uniqueName(base + "/Cast"));
    cast->attributes["to"].value = static_cast<int64_t>(DType::Float);
    return out;
  }

  // Whether two zero points (null: 0) are known to be equal.
  static bool sameZeroPoint(const ir::Value* a, const ir::Value* b) {
    if (a == b) return true;
    auto values = [](const ir::Value* v) -> std::optional<std::vector<double>> {
      if (!v) return std::vector<double>{0.0};
      return constantValues(v);
    };
    auto va = values(a), vb = values(b);
    if (!va || !vb) return false;
    if (*va == *vb) return true;
    return uniform(*va) && uniform(*vb) && (*va)[0] == (*vb)[0];
  }

  // q - zero_point for an activation q (zero point scalar or null), as float32.
  ir::Value* centeredInput(ir::Value* q, ir::Value* zero_point, const std::string& base) {
    auto it = centered_.find(q);
    if (it != centered_.end()) {
      const Centered& c = it->second;
      if (sameZeroPoint(c.zero_point, zero_point)) return c.centered;
      ir::Value* shift = node("Sub",
                              {c.zero_point ? asFloat(c.zero_point, base) : scalar(base + "/zero", 0.0),
                               zero_point ? asFloat(zero_point, base) : scalar(base + "/zero", 0.0)},
                              ir::TensorType::of(DType::Float, {}), base);
      return node("Add", {c.centered, shift}, c.centered->type, base);
    }
    ir::Value* f = asFloat(q, base);
    return zero_point ? node("Sub", {f, asFloat(zero_point, base)}, f->type, base) : f;
  }

  // A constant integer weight minus its zero point (one value, or one per slice along `axis`).
  std::optional<ir::Value*> centeredWeight(ir::Value* w, ir::Value* zero_point, int64_t axis, const std::string& base) {
    auto zp = zero_point ? constantValues(zero_point) : std::vector<double>{0.0};
    const Tensor* t = constantOf(w);
    if (!t || !zp) return std::nullopt;
    const Shape shape = t->shape();
    if (shape.empty() || axis >= static_cast<int64_t>(shape.size())) return std::nullopt;
    // 8-bit weights (all a quantizer writes) straight to floats: a ViT's 86 million through
    // doubles took most of this pass's half second. The same values: small integers, exact.
    if (t->dtype() == DType::Int8 || t->dtype() == DType::UInt8) {
      Tensor out(DType::Float, shape);
      const bool ok = t->dtype() == DType::Int8 ? subtractZeroPoints(t->data<int8_t>(), out.data<float>(), *zp, shape, axis)
                                                : subtractZeroPoints(t->data<uint8_t>(), out.data<float>(), *zp, shape, axis);
      if (!ok) return std::nullopt;
      return fusion::addConstant(g_, base + "/w", std::move(out));
    }
    auto values = constantValues(w);
    if (!values || !subtractZeroPoints(*values, *values, *zp, shape, axis)) return std::nullopt;
    return constant(base + "/w", *values, shape);
  }

  // A scale (or per-channel multiplier) shaped to broadcast against a tensor of `rank` along
  // `axis`: a scalar stays one, C values become [C, 1, ...].
  Shape channelShape(size_t count, int64_t axis, size_t rank) {
    if (count == 1) return {};
    Shape s(rank - static_cast<size_t>(axis), 1);
    s[0] = static_cast<int64_t>(count);
    return s;
  }

  // ---- the ops ----------------------------------------------------------------------------------

  // QuantizeLinear(x, scale, zp): Clip(Round(x / scale), lo - zp, hi - zp), centered on zp.
  std::string quantize(ir::Node* n) {
    ir::Value *x = n->input(0), *scale = n->input(1), *zp = n->input(2), *y = n->output(0);
    if (!isFloat32(x) || !isFloat32(scale)) return "its input or scale is not float32";
    const auto range = range8(y->type.dtype);
    if (!range) return "its output is not int8 or uint8";
    auto zps = zp ? constantValues(zp) : std::vector<double>{0.0};
    if (!zps) return "its zero point is not a constant";
    if (!uniform(*zps)) return "its zero points differ by channel";
    if (!x->type.hasRank()) return "its input has no known rank";
    auto scale_in = broadcastScale(*n, scale, x->type.dims->size());
    if (!scale_in) return "its per-axis scale is not a constant";
    const std::string base = n->name();
    // Of a QDQ product, through a Relu or not: acc * (scale / y_scale), rounded once, as a
    // quantized op computes it (the Relu is the clip at the zero point).
    const ir::Node* relu =
        x->producer() && x->producer()->domain().empty() && x->producer()->opType() == "Relu" ? x->producer() : nullptr;
    const auto product = scaled_.find(relu ? relu->input(0) : x);
    const auto y_scale = constantValues(scale);
    double lowest = range->first - (*zps)[0];
    ir::Value* r = nullptr;
    if (product != scaled_.end() && y_scale && y_scale->size() == 1) {
      const Scaled& p = product->second;
      std::vector<double> multiplier;
      for (double v : p.scale) multiplier.push_back(static_cast<float>(v) / static_cast<float>((*y_scale)[0]));
      const size_t rank = x->type.dims->size();
      const Shape shape = multiplier.size() == 1 ? Shape{}
                          : p.axis == 1          ? channelShape(multiplier.size(), 1, rank)
                                                 : Shape{static_cast<int64_t>(multiplier.size())};
      remove(n);
      r = node("Round", {node("Mul", {p.acc, constant(base + "/multiplier", multiplier, shape)}, floatLike(x), base)},
               floatLike(x), base);
      if (relu) lowest = std::max(lowest, 0.0);
      ctx_.count("requantized_products");
    } else {
      remove(n);
      r = node("Round", {node("Div", {x, *scale_in}, floatLike(x), base)}, floatLike(x), base);
    }
    ir::Value* lo = scalar(base + "/lo", lowest);
    ir::Value* hi = scalar(base + "/hi", range->second - (*zps)[0]);
    // Per axis, the zero points are all equal (checked above): one of them stands for all.
    if (zp && constantOf(zp)->numElements() != 1) {
      const Tensor& all = *constantOf(zp);
      const size_t size = dtypeSize(all.dtype());
      zp = fusion::addConstant(g_, base + "/zero_point",
                               Tensor(all.dtype(), {}, std::vector<uint8_t>(all.bytes().begin(), all.bytes().begin() + size)));
    }
    define(y, {node("Clip", {r, lo, hi}, floatLike(x), base), zp}, base);
    ctx_.count("quantize_linear");
    return "";
  }

  // `scale` of a QuantizeLinear/DequantizeLinear shaped to broadcast against its rank-`rank`
  // input: a one-value scale as it is, a per-axis one reshaped (when constant).
  std::optional<ir::Value*> broadcastScale(const ir::Node& n, ir::Value* scale, size_t rank) {
    const Tensor* t = constantOf(scale);
    if (scale->type.hasStaticShape() && scale->type.numElements() == 1) return scale;
    if (!t) return std::nullopt;
    if (t->numElements() == 1) return scale;
    int64_t axis = n.attrInt("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(rank);
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) return std::nullopt;
    return constant(n.name() + "/scale", *constantValues(scale), channelShape(static_cast<size_t>(t->numElements()), axis, rank));
  }

  // DequantizeLinear(q, scale, zp) of an activation: (q - zp) * scale. Constant q is folded by
  // constant_folding instead.
  std::string dequantize(ir::Node* n) {
    ir::Value *q = n->input(0), *scale = n->input(1), *zp = n->input(2), *y = n->output(0);
    if (constantOf(q)) return "";
    if (!isFloat32(scale)) return "its scale is not float32";
    if (!range8(q->type.dtype) && q->type.dtype != DType::Int32) return "its input is not int8, uint8 or int32";
    if (!q->type.hasRank()) return "its input has no known rank";
    if (zp && !(zp->type.hasStaticShape() && zp->type.numElements() == 1)) return "its zero points are per axis";
    auto scale_in = broadcastScale(*n, scale, q->type.dims->size());
    if (!scale_in) return "its per-axis scale is not a constant";
    const std::string base = n->name();
    const std::optional<std::vector<double>> one_scale = constantValues(scale);
    remove(n);
    ir::Value* c = centeredInput(q, zp, base);
    node("Mul", {c, *scale_in}, y->type, base, y);
    if (one_scale && one_scale->size() == 1) dequantized_[y] = {c, static_cast<float>((*one_scale)[0])};
    ctx_.count("dequantize_linear");
    return "";
  }

  // DynamicQuantizeLinear(x) -> y, scale, zp (uint8): scale = (max(x, 0) - min(x, 0)) / 255,
  // zp = Clip(Round(-min / scale), 0, 255), y centered = Clip(Round(x / scale), -zp, 255 - zp).
  // An all-zero x has scale 0: dividing by the smallest float instead gives zp 0 and y 0, as the
  // evaluator does.
  std::string dynamicQuantize(ir::Node* n) {
    ir::Value *x = n->input(0), *y = n->output(0), *scale = n->output(1), *zp = n->output(2);
    if (!isFloat32(x)) return "its input is not float32";
    const std::string base = n->name();
    remove(n);
    const ir::TensorType one = ir::TensorType::of(DType::Float, {});
    // The whole tensor's min and max in two steps, over rows of `row` elements and then over the
    // rows' results: one row of every element would not fit a tile.
    const int64_t count = x->type.hasStaticShape() ? x->type.numElements() : 0;
    int64_t row = 1;
    for (int64_t k = std::min<int64_t>(count, kReductionRow); k > 1 && row == 1; --k)
      if (count % k == 0) row = k;
    ir::Value* rows = nullptr;
    if (row >= 64 && row < count) {
      rows = node("Reshape", {x, fusion::addConstant(g_, base + "/rows", ops::int64Tensor({count / row, row}, {2}))},
                  ir::TensorType::of(DType::Float, {count / row, row}), base);
    }
    auto reduce = [&](const char* op) {
      ir::Value* in = x;
      if (rows) {
        in = node(op, {rows}, ir::TensorType::of(DType::Float, {count / row}), base);
        in->producer()->attributes["axes"].value = std::vector<int64_t>{1};
        in->producer()->attributes["keepdims"].value = int64_t{0};
      }
      ir::Value* out = node(op, {in}, one, base);
      out->producer()->attributes["keepdims"].value = int64_t{0};
      return out;
    };
    ir::Value* zero = scalar(base + "/zero", 0.0);
    ir::Value* lo = node("Min", {reduce("ReduceMin"), zero}, one, base);
    ir::Value* hi = node("Max", {reduce("ReduceMax"), zero}, one, base);
    node("Div", {node("Sub", {hi, lo}, one, base), scalar(base + "/255", 255.0)}, one, base, scale);
    ir::Value* divisor = node("Max", {scale, scalar(base + "/tiny", std::numeric_limits<float>::denorm_min())}, one, base);
    ir::Value* zpf = node("Round", {node("Div", {node("Neg", {lo}, one, base), divisor}, one, base)}, one, base);
    zpf = node("Clip", {zpf, zero, scalar(base + "/255", 255.0)}, one, base);
    define(zp, {zpf, nullptr}, base);
    ir::Value* r = node("Round", {node("Div", {x, divisor}, floatLike(x), base)}, floatLike(x), base);
    r = node("Max", {r, node("Neg", {zpf}, one, base)}, floatLike(x), base);
    r = node("Min", {r, node("Sub", {scalar(base + "/255", 255.0), zpf}, one, base)}, floatLike(x), base);
    define(y, {r, zp}, base);
    ctx_.count("dynamic_quantize_linear");
    return "";
  }

  // ConvInteger/MatMulInteger -> Conv/MatMul of the centered operands (the int32 accumulators);
  // QLinearConv/QLinearMatMul also scale them by x_scale * w_scale / y_scale and quantize:
  // Clip(Round(acc * multiplier), lo - y_zp, hi - y_zp).
  std::string integerProduct(ir::Node* n, bool qlinear) {
    const bool conv = n->opType() == "ConvInteger" || n->opType() == "QLinearConv";
    // Inputs: x, [x_scale], x_zp, w, [w_scale], w_zp, [y_scale, y_zp, bias].
    const size_t wi = qlinear ? 3 : 1, wzi = qlinear ? 5 : 3;
    ir::Value *x = n->input(0), *x_zp = n->input(2), *w = n->input(wi), *w_zp = n->input(wzi), *y = n->output(0);
    ir::Value* y_zp_value = qlinear ? n->input(7) : nullptr;
    if (!y->type.hasRank() || !x->type.hasRank()) return "its input or output has no known rank";
    if (x_zp && !(x_zp->type.hasStaticShape() && x_zp->type.numElements() == 1)) return "x's zero point is not one value";
    const Tensor* wt = constantOf(w);
    if (!wt) return "its weight is not a constant";
    if (conv ? wt->shape().size() < 3 : wt->shape().size() != 2)
      return conv ? "its weight has rank < 3" : "its weight is not 2-D";
    // A conv's output channels are the weight's axis 0, a matmul's its columns (axis 1).
    const int64_t w_axis = conv ? 0 : 1;
    const int64_t channels = wt->shape()[static_cast<size_t>(w_axis)];
    const size_t rank = y->type.dims->size();
    std::vector<double> multiplier;
    std::optional<std::pair<double, double>> out_range;
    std::optional<std::vector<double>> y_zp, bias;
    if (qlinear) {
      auto xs = constantValues(n->input(1)), ws = constantValues(n->input(4)), ys = constantValues(n->input(6));
      y_zp = constantValues(n->input(7));
      if (!xs || !ws || !ys || !y_zp) return "its scales or output zero point are not constants";
      if (!isFloat32(n->input(1)) || !isFloat32(n->input(4)) || !isFloat32(n->input(6))) return "its scales are not float32";
      if (xs->size() != 1 || ys->size() != 1 || y_zp->size() != 1) return "x's or y's scale or zero point is not one value";
      if (ws->size() != 1 && static_cast<int64_t>(ws->size()) != channels)
        return "w's scale has neither 1 nor a value per channel";
      out_range = range8(n->input(7)->type.dtype);
      if (!out_range) return "its output is not int8 or uint8";
      for (double s : *ws)  // in float, in the evaluator's order
        multiplier.push_back(static_cast<float>(static_cast<float>((*xs)[0]) * static_cast<float>(s)) /
                             static_cast<float>((*ys)[0]));
      if (conv && n->input(8)) {
        bias = constantValues(n->input(8));
        if (!bias) return "its bias is not a constant";
      }
    }
    const std::string base = n->name();
    auto w_centered = centeredWeight(w, w_zp, w_axis, base);
    if (!w_centered) return "its weight's zero point is not a constant with one value or one per output channel";
    const auto attributes = n->attributes;
    remove(n);
    std::vector<ir::Value*> inputs = {centeredInput(x, x_zp, base), *w_centered};
    if (bias) inputs.push_back(constant(base + "/bias", *bias, {static_cast<int64_t>(bias->size())}));
    ir::Value* acc = node(conv ? "Conv" : "MatMul", inputs, floatLike(y), base);
    if (conv) acc->producer()->attributes = attributes;
    if (!qlinear) {
      define(y, {acc, nullptr}, base);
      ctx_.count(conv ? "conv_integer" : "matmul_integer");
      return "";
    }
    // The multiplier per output channel: axis 1 of a conv's output, the last of a matmul's.
    const Shape m_shape = multiplier.size() == 1 ? Shape{} : conv ? channelShape(multiplier.size(), 1, rank) : Shape{channels};
    ir::Value* m = constant(base + "/multiplier", multiplier, m_shape);
    ir::Value* r = node("Round", {node("Mul", {acc, m}, floatLike(y), base)}, floatLike(y), base);
    ir::Value* lo = scalar(base + "/lo", out_range->first - (*y_zp)[0]);
    ir::Value* hi = scalar(base + "/hi", out_range->second - (*y_zp)[0]);
    define(y, {node("Clip", {r, lo, hi}, floatLike(y), base), y_zp_value}, base);
    ctx_.count(conv ? "qlinear_conv" : "qlinear_matmul");
    return "";
  }

  // A constant DequantizeLinear (a QDQ weight or bias, which constant_folding has not folded yet):
  // its integers minus the zero point, its scales and its axis.
  struct ConstantDequantized {
    std::vector<double> centered, scale;
    int64_t axis = 0;
    Shape shape;
  };
  static std::optional<ConstantDequantized> constantDequantized(const ir::Value* v) {
    const ir::Node* p = v ? v->producer() : nullptr;
    if (!p || !p->domain().empty() || p->opType() != "DequantizeLinear" || !isFloat32(v)) return std::nullopt;
    auto q = constantValues(p->input(0)), scale = constantValues(p->input(1));
    auto zp = p->input(2) ? constantValues(p->input(2)) : std::vector<double>{0.0};
    if (!q || !scale || !zp || (zp->size() != 1 && zp->size() != scale->size())) return std::nullopt;
    ConstantDequantized d{std::move(*q), std::move(*scale), p->attrInt("axis", 1), constantOf(p->input(0))->shape()};
    if (d.axis < 0) d.axis += static_cast<int64_t>(d.shape.size());
    if (d.scale.size() > 1 && (d.axis < 0 || d.axis >= static_cast<int64_t>(d.shape.size()))) return std::nullopt;
    if (!subtractZeroPoints(d.centered, d.centered, *zp, d.shape, d.axis)) return std::nullopt;
    return d;
  }

  // QDQ: Conv/MatMul/Gemm of a dequantized activation (one constant scale) and a constant
  // dequantized weight (a scale per tensor or per output channel) -> the same op on the integers,
  // times scale_x * scale_w per channel (in float, as ONNX Runtime's QLinearConv computes it); a
  // bias dequantized from int32 at exactly those scales (as quantizers write it) joins the
  // integer sums, any other is added after scaling. The float op summed rounded products instead.
  std::string dequantizedProduct(ir::Node* n) {
    auto xi = dequantized_.find(n->input(0));
    if (xi == dequantized_.end()) return "";
    const auto w = constantDequantized(n->input(1));
    if (!w) return "";                   // a float weight: the op stays a float op
    const std::string op = n->opType();  // a copy: n is removed below
    const bool conv = op == "Conv", trans_b = op == "Gemm" && n->attrInt("transB", 0) != 0;
    if (op == "Gemm" && (n->attrInt("transA", 0) != 0 || n->attrFloat("alpha", 1.f) != 1.f || n->attrFloat("beta", 1.f) != 1.f))
      return "a Gemm with transA, alpha or beta of dequantized operands";
    if (conv ? w->shape.size() < 3 : w->shape.size() != 2)
      return conv ? "its dequantized weight has rank < 3" : "its dequantized weight is not 2-D";
    ir::Value* y = n->output(0);
    if (!y->type.hasRank()) return "its output has no known rank";
    const int64_t w_axis = conv || trans_b ? 0 : 1;  // the weight's output-channel axis
    if (w->scale.size() > 1 && w->axis != w_axis) return "its weight's scales are not per output channel";
    const int64_t channels = w->shape[static_cast<size_t>(w_axis)];
    std::vector<double> scale;
    for (double s : w->scale) scale.push_back(static_cast<float>(xi->second.scale * static_cast<float>(s)));
    // The bias: integers at exactly these scales, or float values added after scaling.
    ir::Value* b = n->input(2);
    std::optional<std::vector<double>> int_bias, float_bias;
    if (b) {
      auto bd = constantDequantized(b);
      if (bd && bd->scale.size() == scale.size() && std::equal(scale.begin(), scale.end(), bd->scale.begin()))
        int_bias = bd->centered;
      else if (bd)
        float_bias = [&] {
          std::vector<double> v(bd->centered.size());
          for (size_t i = 0; i < v.size(); ++i)
            v[i] = static_cast<float>(bd->centered[i]) * static_cast<float>(bd->scale[bd->scale.size() == 1 ? 0 : i]);
          return v;
        }();
      else
        float_bias = constantValues(b);
      if (int_bias ? static_cast<int64_t>(int_bias->size()) != channels
                   : !float_bias || (float_bias->size() != 1 && static_cast<int64_t>(float_bias->size()) != channels))
        return "its bias is not a constant per output channel";
    }
    const std::string base = n->name();
    const auto attributes = n->attributes;
    const Shape w_shape = w->shape;
    ir::Value* w_centered = constant(base + "/w", w->centered, w_shape);
    std::vector<ir::Value*> inputs = {xi->second.centered, w_centered};
    if (int_bias) inputs.push_back(constant(base + "/bias", *int_bias, {channels}));
    remove(n);
    ir::Value* acc = node(op, inputs, floatLike(y), base);
    acc->producer()->attributes = attributes;
    const size_t rank = y->type.dims->size();
    auto channelConstant = [&](const std::string& name, const std::vector<double>& v) {
      return constant(base + name, v, v.size() == 1 ? Shape{} : conv ? channelShape(v.size(), 1, rank) : Shape{channels});
    };
    if (!float_bias) {
      node("Mul", {acc, channelConstant("/scale", scale)}, y->type, base, y);
    } else {
      ir::Value* scaled = node("Mul", {acc, channelConstant("/scale", scale)}, floatLike(y), base);
      node("Add", {scaled, channelConstant("/bias", *float_bias)}, y->type, base, y);
    }
    if (!float_bias) scaled_[y] = {acc, scale, conv ? 1 : -1};
    ctx_.count("qdq_" + fusion::counterName(op));
    return "";
  }

  // Cast(int32 accumulators -> float) of a value this pass made: the centered values themselves.
  std::string castToFloat(ir::Node* n) {
    auto it = centered_.find(n->input(0));
    if (it == centered_.end() || it->second.zero_point || n->attrInt("to", 0) != static_cast<int64_t>(DType::Float)) return "";
    ir::Value *src = it->second.centered, *y = n->output(0);
    const std::string base = n->name();
    remove(n);
    node("Identity", {src}, y->type, base, y);
    ctx_.count("casts_to_float");
    return "";
  }

  // A layout op or max pool of a centered value with a scalar zero point: the same op on the
  // centered values.
  std::string passThrough(ir::Node* n) {
    auto it = centered_.find(n->input(0));
    if (it == centered_.end()) return "";
    const Centered c = it->second;
    if (c.zero_point && !(c.zero_point->type.hasStaticShape() && c.zero_point->type.numElements() == 1))
      return "its input's zero points are per axis";
    ir::Value* y = n->output(0);
    if (!y->type.hasRank()) return "its output has no known rank";
    std::vector<ir::Value*> inputs = n->inputs();
    inputs[0] = c.centered;
    const auto attributes = n->attributes;
    const std::string op = n->opType(), base = n->name();
    remove(n);
    ir::Value* out = g_.addValue(g_.uniqueName(base + "/centered"), floatLike(y));
    g_.addNode(op, inputs, {out}, g_.uniqueName(base + "/centered"))->attributes = attributes;
    define(y, {out, c.zero_point}, base);
    ctx_.count("layout_ops_centered");
    return "";
  }
};

class QuantizedToFloat : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    Rewriter rewriter(graph, ctx);
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph.nodes()) nodes.push_back(n.get());
    std::set<std::string> before;  // by name: a removed node's memory may hold a new one
    for (const ir::Node* n : nodes) before.insert(n->name());
    for (ir::Node* n : nodes) {
      const std::string why = rewriter.visit(n);
      if (!why.empty()) ctx.nearMiss(*n, "stays on the host: " + why);
    }
    if (!rewriter.changed()) return false;
    for (const auto& n : graph.nodes())
      if (!before.count(n->name())) markIntegerArithmetic(*n);
    POPRT_TRY(fusion::finishRewrites(graph));
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> makeQuantizedToFloat() { return std::make_unique<QuantizedToFloat>(); }

}  // namespace poprt::passes
