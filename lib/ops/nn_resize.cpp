// Resize (opset 10 / 11 / 13), Upsample (7 / 9) and GridSample (16).
// Resize is separable: each axis gets a table of (input index, weight) taps per output index, and
// the axes are resized one after the other (shrinking axes first, so intermediates stay small).
#include "lib/ops/nn_util.h"

namespace poprt::ops::nn {
namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN, TfCropAndResize };
enum class Rounding { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct ResizeSpec {
  Mode mode = Mode::Nearest;
  Coord coord = Coord::HalfPixel;
  Rounding rounding = Rounding::RoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

struct Tap {
  int64_t index;
  double weight;
};

struct AxisPlan {
  std::vector<std::vector<Tap>> taps;  // per output index; empty = extrapolation value
  bool identity = true;
};

// The cubic convolution kernel with coefficient a.
double cubicWeight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Taps of one axis: in -> out elements, `scale` the axis scale, `len_resized` the resized length
// the coordinate transforms use (in * scale, or the requested size), roi for tf_crop_and_resize.
AxisPlan planAxis(int64_t in, int64_t out, double scale, double len_resized, double roi_start, double roi_end,
                  const ResizeSpec& spec) {
  AxisPlan plan;
  plan.taps.resize(static_cast<size_t>(out));
  plan.identity = in == out;
  const double fin = static_cast<double>(in);
  for (int64_t o = 0; o < out; ++o) {
    const double xo = static_cast<double>(o);
    double x = 0;
    switch (spec.coord) {
      case Coord::HalfPixel: x = (xo + 0.5) / scale - 0.5; break;
      case Coord::PytorchHalfPixel: x = out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0; break;
      case Coord::AlignCorners: x = out > 1 ? xo * (fin - 1) / (len_resized - 1) : 0.0; break;
      case Coord::Asymmetric: x = xo / scale; break;
      case Coord::TfHalfPixelForNN: x = (xo + 0.5) / scale; break;
      case Coord::TfCropAndResize:
        x = out > 1 ? roi_start * (fin - 1) + xo * (roi_end - roi_start) * (fin - 1) / (len_resized - 1)
                    : 0.5 * (roi_start + roi_end) * (fin - 1);
        break;
    }
    std::vector<Tap>& taps = plan.taps[o];
    if (!std::isfinite(x) || (spec.coord == Coord::TfCropAndResize && (x < 0 || x > fin - 1))) {
      plan.identity = false;
      continue;  // extrapolation value
    }
    x = std::clamp(x, -4.0, fin + 4.0);
    const double x0 = std::floor(x), t = x - x0;
    const int64_t i0 = static_cast<int64_t>(x0);
    switch (spec.mode) {
      case Mode::Nearest: {
        int64_t i = i0;
        if (t != 0) {
          switch (spec.rounding) {
            case Rounding::RoundPreferFloor: i = t <= 0.5 ? i0 : i0 + 1; break;
            case Rounding::RoundPreferCeil: i = t < 0.5 ? i0 : i0 + 1; break;
            case Rounding::Floor: i = i0; break;
            case Rounding::Ceil: i = i0 + 1; break;
            case Rounding::Simple: i = scale < 1 ? i0 + 1 : i0; break;
          }
        }
        taps.push_back({i, 1.0});
        break;
      }
      case Mode::Linear:
        taps.push_back({i0, 1 - t});
        taps.push_back({i0 + 1, t});
        break;
      case Mode::Cubic:
        for (int64_t k = -1; k <= 2; ++k) taps.push_back({i0 + k, cubicWeight(t - static_cast<double>(k), spec.cubic_a)});
        break;
    }
    if (spec.exclude_outside) {
      double sum = 0;
      for (Tap& tp : taps) {
        if (tp.index < 0 || tp.index >= in) tp.weight = 0;
        sum += tp.weight;
      }
      if (sum != 0)
        for (Tap& tp : taps) tp.weight /= sum;
    }
    std::vector<Tap> kept;
    for (Tap tp : taps) {
      if (tp.weight == 0) continue;
      tp.index = std::clamp<int64_t>(tp.index, 0, in - 1);
      kept.push_back(tp);
    }
    taps = std::move(kept);
    if (taps.size() != 1 || taps[0].index != o || taps[0].weight != 1.0) plan.identity = false;
  }
  return plan;
}

// Resizes axis `axis` of `data` (shape `shape`) per `plan`; updates shape.
Expected<std::vector<double>> resizeAxis(const std::vector<double>& data, Shape& shape, size_t axis, int64_t out,
                                         const AxisPlan& plan, double extrapolation) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t len = shape[axis];
  Shape next = shape;
  next[axis] = out;
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedElementCount(next));
  std::vector<double> res(static_cast<size_t>(n));
  if (inner == 1) {  // the last axis: one sum per output element, the same as below
    for (int64_t a = 0; a < outer; ++a) {
      const double* src = data.data() + a * len;
      double* dst = res.data() + a * out;
      for (int64_t o = 0; o < out; ++o) {
        const auto& taps = plan.taps[static_cast<size_t>(o)];
        double acc = taps.empty() ? extrapolation : 0.0;
        for (const Tap& tp : taps) acc += tp.weight * src[tp.index];
        dst[o] = acc;
      }
    }
    shape = std::move(next);
    return res;
  }
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t o = 0; o < out; ++o) {
      double* dst = res.data() + (a * out + o) * inner;
      const auto& taps = plan.taps[o];
      if (taps.empty()) {
        std::fill(dst, dst + inner, extrapolation);
        continue;
      }
      std::fill(dst, dst + inner, 0.0);
      for (const Tap& tp : taps) {
        const double* src = data.data() + (a * len + tp.index) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] += tp.weight * src[i];
      }
    }
  shape = std::move(next);
  return res;
}

// Resizes x to out_shape. scales[d] is the axis scale; len_resized[d] the length coordinate
// transforms use; roi has 2 * rank values (starts then ends) or is empty.
Expected<Tensor> resize(const Tensor& x, const Shape& out_shape, const std::vector<double>& scales,
                        const std::vector<double>& len_resized, const std::vector<double>& roi, const ResizeSpec& spec) {
  const Shape& xs = x.shape();
  const size_t r = xs.size();
  POPRT_TRY(checkedElementCount(out_shape));
  for (size_t d = 0; d < r; ++d)
    if (xs[d] == 0 && out_shape[d] != 0) return Error("cannot resize an empty axis to a non-empty one");
  POPRT_ASSIGN_OR_RETURN(std::vector<double> data, toDoubles(x));
  Shape shape = xs;
  // Shrinking axes first, then growing ones.
  std::vector<size_t> order(r);
  for (size_t d = 0; d < r; ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return static_cast<double>(out_shape[a]) * static_cast<double>(std::max<int64_t>(xs[b], 1)) <
           static_cast<double>(out_shape[b]) * static_cast<double>(std::max<int64_t>(xs[a], 1));
  });
  for (size_t d : order) {
    const double rs = roi.empty() ? 0.0 : roi[d], re = roi.empty() ? 1.0 : roi[d + r];
    AxisPlan plan = planAxis(xs[d], out_shape[d], scales[d], len_resized[d], rs, re, spec);
    if (plan.identity) continue;
    POPRT_ASSIGN_OR_RETURN(data, resizeAxis(data, shape, d, out_shape[d], plan, spec.extrapolation));
  }
  return fromDoubles(x.dtype(), out_shape, data, IntRounding::Nearest);
}

Expected<ResizeSpec> resizeSpec(const ir::Node& node, int64_t opset, bool legacy) {
  ResizeSpec spec;
  const std::string mode = node.attrString("mode", "nearest");
  if (mode == "nearest")
    spec.mode = Mode::Nearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear")
    spec.mode = Mode::Linear;
  else if (mode == "cubic" && !legacy)
    spec.mode = Mode::Cubic;
  else
    return Error("mode '" + mode + "' is not supported");
  if (legacy) {  // Upsample and Resize-10: asymmetric coordinates, nearest rounds down (up when shrinking)
    spec.coord = Coord::Asymmetric;
    spec.rounding = Rounding::Simple;
    return spec;
  }
  const std::string coord = node.attrString("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel")
    spec.coord = Coord::HalfPixel;
  else if (coord == "pytorch_half_pixel")
    spec.coord = Coord::PytorchHalfPixel;
  else if (coord == "align_corners")
    spec.coord = Coord::AlignCorners;
  else if (coord == "asymmetric")
    spec.coord = Coord::Asymmetric;
  else if (coord == "tf_half_pixel_for_nn" && opset < 13)
    spec.coord = Coord::TfHalfPixelForNN;
  else if (coord == "tf_crop_and_resize")
    spec.coord = Coord::TfCropAndResize;
  else
    return Error("coordinate_transformation_mode '" + coord + "' is not supported");
  const std::string nearest = node.attrString("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    spec.rounding = Rounding::RoundPreferFloor;
  else if (nearest == "round_prefer_ceil")
    spec.rounding = Rounding::RoundPreferCeil;
  else if (nearest == "floor")
    spec.rounding = Rounding::Floor;
  else if (nearest == "ceil")
    spec.rounding = Rounding::Ceil;
  else
    return Error("nearest_mode '" + nearest + "' is not supported");
  spec.cubic_a = node.attrFloat("cubic_coeff_a", -0.75f);
  spec.exclude_outside = node.attrInt("exclude_outside", 0) != 0;
  spec.extrapolation = node.attrFloat("extrapolation_value", 0.0f);
  return spec;
}

Status checkScales(const std::vector<double>& scales, size_t rank) {
  if (scales.size() != rank)
    return Error("scales has " + std::to_string(scales.size()) + " values, expected " + std::to_string(rank));
  for (double s : scales)
    if (!(s > 0) || !std::isfinite(s)) return Error("scales must be positive and finite");
  return okStatus();
}

// Output extent floor(in * scale), checked.
Expected<Shape> scaledShape(const Shape& xs, const std::vector<double>& scales) {
  Shape out(xs.size());
  for (size_t d = 0; d < xs.size(); ++d) {
    const double v = std::floor(static_cast<double>(xs[d]) * scales[d]);
    if (!(v >= 0) || v > static_cast<double>(kMaxDim)) return Error("output size is out of range");
    out[d] = static_cast<int64_t>(v);
  }
  return out;
}

Expected<std::vector<Tensor>> evalResize(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  const int64_t opset = ctx.opset();
  const bool legacy = opset > 0 && opset < 11;
  POPRT_ASSIGN_OR_RETURN(ResizeSpec spec, resizeSpec(node, opset, legacy));
  const Shape& xs = x->shape();
  const size_t r = xs.size();
  const Tensor* roi_t = legacy ? nullptr : optionalInput(in, 1);
  const Tensor* scales_t = legacy ? optionalInput(in, 1) : optionalInput(in, 2);
  const Tensor* sizes_t = legacy ? nullptr : optionalInput(in, 3);
  if (scales_t && scales_t->numElements() == 0) scales_t = nullptr;
  if (sizes_t && sizes_t->numElements() == 0) sizes_t = nullptr;
  if (scales_t && sizes_t) return Error("only one of scales and sizes may be given");
  if (!scales_t && !sizes_t) return Error("one of scales and sizes is required");
  std::vector<double> roi;
  if (spec.coord == Coord::TfCropAndResize) {
    if (!roi_t || roi_t->numElements() == 0) return Error("tf_crop_and_resize needs the roi input");
    POPRT_ASSIGN_OR_RETURN(roi, toDoubles(*roi_t));
    if (roi.size() != 2 * r) return Error("roi must have " + std::to_string(2 * r) + " values");
  }
  std::vector<double> scales(r), len(r);
  Shape out;
  if (scales_t) {
    POPRT_ASSIGN_OR_RETURN(scales, toDoubles(*scales_t));
    POPRT_TRY(checkScales(scales, r));
    // floor(in * scale), the roi of tf_crop_and_resize aside, as ONNX's shape inference and ONNX
    // Runtime have it (the spec's text scales by the roi's extent too: the two would disagree).
    POPRT_ASSIGN_OR_RETURN(out, scaledShape(xs, scales));
    // The length align_corners divides by is in * scale, as the ONNX test data has it (ONNX
    // Runtime divides by the floored output length there, and fails those tests); that
    // tf_crop_and_resize divides by has no test data, and follows ONNX Runtime: the output length.
    for (size_t d = 0; d < r; ++d)
      len[d] = spec.coord == Coord::TfCropAndResize ? static_cast<double>(out[d]) : static_cast<double>(xs[d]) * scales[d];
  } else {
    POPRT_ASSIGN_OR_RETURN(out, toInt64s(*sizes_t));
    if (out.size() != r) return Error("sizes has " + std::to_string(out.size()) + " values, expected " + std::to_string(r));
    for (size_t d = 0; d < r; ++d) {
      if (out[d] < 0 || out[d] > kMaxDim) return Error("sizes value " + std::to_string(out[d]) + " is out of range");
      scales[d] = xs[d] > 0 ? static_cast<double>(out[d]) / static_cast<double>(xs[d]) : 1.0;
      if (scales[d] == 0) scales[d] = 1.0;  // an empty output axis has no coordinates to compute
      len[d] = static_cast<double>(out[d]);
    }
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, resize(*x, out, scales, len, roi, spec));
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalUpsample(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(ResizeSpec spec, resizeSpec(node, ctx.opset(), true));
  const size_t r = x->shape().size();
  std::vector<double> scales;
  if (in.size() > 1 && in[1]) {
    POPRT_ASSIGN_OR_RETURN(scales, toDoubles(*in[1]));
  } else {
    for (float s : node.attrFloats("scales")) scales.push_back(s);
  }
  POPRT_TRY(checkScales(scales, r));
  for (double s : scales)
    if (s < 1) return Error("Upsample scales must be >= 1");
  POPRT_ASSIGN_OR_RETURN(Shape out, scaledShape(x->shape(), scales));
  std::vector<double> len(r);
  for (size_t d = 0; d < r; ++d) len[d] = static_cast<double>(out[d]);
  POPRT_ASSIGN_OR_RETURN(Tensor y, resize(*x, out, scales, len, {}, spec));
  return single(std::move(y));
}

// ---- GridSample ----

enum class Padding { Zeros, Border, Reflection };

double reflect(double x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  const double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  x = std::fabs(x - lo);
  const double extra = std::fmod(x, span);
  const double flips = std::floor(x / span);
  return std::fmod(flips, 2.0) == 0 ? extra + lo : span - extra + lo;
}

// The source coordinate after border/reflection padding (unchanged for zeros).
double padCoordinate(double x, int64_t size, Padding padding, bool align) {
  const double hi = static_cast<double>(size - 1);
  if (padding == Padding::Border) return std::clamp(x, 0.0, hi);
  if (padding == Padding::Reflection) {
    x = align ? reflect(x, 0, 2.0 * hi) : reflect(x, -1, 2.0 * static_cast<double>(size) - 1);
    return std::clamp(x, 0.0, hi);
  }
  return x;
}

Expected<std::vector<Tensor>> evalGridSample(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* grid, requireInput(in, 1));
  POPRT_TRY(requireFloat(*x, "X"));
  POPRT_TRY(requireFloat(*grid, "grid"));
  const Shape& xs = x->shape();
  const Shape& gs = grid->shape();
  if (xs.size() < 3) return Error("X must have rank >= 3 (N, C, spatial...), got " + shapeToString(xs));
  const size_t r = xs.size() - 2;
  if (gs.size() != xs.size() || gs[0] != xs[0] || gs.back() != static_cast<int64_t>(r))
    return Error("grid of shape " + shapeToString(gs) + " does not match X " + shapeToString(xs));
  const std::string mode = node.attrString("mode", "bilinear");
  Mode m;
  if (mode == "bilinear" || mode == "linear")
    m = Mode::Linear;
  else if (mode == "nearest")
    m = Mode::Nearest;
  else if (mode == "bicubic" || mode == "cubic")
    m = Mode::Cubic;
  else
    return Error("mode '" + mode + "' is not supported");
  const std::string pm = node.attrString("padding_mode", "zeros");
  Padding padding;
  if (pm == "zeros")
    padding = Padding::Zeros;
  else if (pm == "border")
    padding = Padding::Border;
  else if (pm == "reflection")
    padding = Padding::Reflection;
  else
    return Error("padding_mode '" + pm + "' is not supported");
  const bool align = node.attrInt("align_corners", 0) != 0;
  const int64_t N = xs[0], C = xs[1];
  Shape ys{N, C};
  ys.insert(ys.end(), gs.begin() + 1, gs.end() - 1);
  POPRT_TRY(checkedElementCount(ys));
  int64_t P = 1, plane = 1;
  for (size_t d = 0; d < r; ++d) {
    P *= gs[d + 1];
    plane *= xs[d + 2];
  }
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xv, toDoubles(*x));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> gv, toDoubles(*grid));
  std::vector<double> y(static_cast<size_t>(N * C * P), 0.0);
  std::vector<std::vector<Tap>> axis_taps(r);
  std::vector<Tap> combined, next;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p) {
      const double* g = gv.data() + (n * P + p) * static_cast<int64_t>(r);
      for (size_t d = 0; d < r; ++d) {
        const int64_t size = xs[d + 2];
        const double gc = g[r - 1 - d];  // the grid lists x (the last axis) first
        double c = align ? (gc + 1) / 2 * static_cast<double>(size - 1) : ((gc + 1) * static_cast<double>(size) - 1) / 2;
        auto& taps = axis_taps[d];
        taps.clear();
        if (size == 0 || !(std::fabs(c) < 1e15)) continue;  // non-finite or absurd: contributes nothing
        auto add = [&](double pos, double w) {
          if (!(std::fabs(pos) < 1e15)) return;
          const double f = std::floor(pos);
          if (f >= 0 && f < static_cast<double>(size)) taps.push_back({static_cast<int64_t>(f), w});
        };
        if (m == Mode::Nearest) {
          add(std::nearbyint(padCoordinate(c, size, padding, align)), 1.0);
        } else if (m == Mode::Linear) {
          c = padCoordinate(c, size, padding, align);
          const double c0 = std::floor(c), t = c - c0;
          add(c0, 1 - t);
          add(c0 + 1, t);
        } else {
          const double c0 = std::floor(c), t = c - c0;
          for (int k = -1; k <= 2; ++k) add(padCoordinate(c0 + k, size, padding, align), cubicWeight(t - k, -0.75));
        }
      }
      // The product of the per-axis taps: flat offsets in the plane and weights.
      combined.assign(1, {0, 1.0});
      for (size_t d = 0; d < r; ++d) {
        next.clear();
        for (const Tap& a : combined)
          for (const Tap& b : axis_taps[d]) next.push_back({a.index * xs[d + 2] + b.index, a.weight * b.weight});
        combined.swap(next);
      }
      for (int64_t c = 0; c < C; ++c) {
        const double* src = xv.data() + (n * C + c) * plane;
        double acc = 0;
        for (const Tap& t : combined) acc += t.weight * src[t.index];
        y[(n * C + c) * P + p] = acc;
      }
    }
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(x->dtype(), ys, y, IntRounding::Nearest));
  return single(std::move(yt));
}

}  // namespace

void registerNnResizeOps(std::vector<OpDef>& ops) {
  // Nearest-neighbour resizing only moves elements: the device does it with copies.
  ops.push_back({"Resize", Fp16Policy::Convert, LoweringFamily::Rearrange, evalResize});
  ops.push_back({"Upsample", Fp16Policy::Convert, LoweringFamily::Rearrange, evalUpsample});
  ops.push_back({"GridSample", Fp16Policy::Convert, LoweringFamily::None, evalGridSample});
}

}  // namespace poprt::ops::nn
