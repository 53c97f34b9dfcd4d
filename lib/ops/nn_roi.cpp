// Box ops: RoiAlign (avg/max, half_pixel/output_half_pixel), MaxRoiPool and NonMaxSuppression.
// Their details follow ONNX Runtime, which generated the ONNX test data.
#include <algorithm>
#include <numeric>

#include "lib/ops/nn_util.h"

namespace poprt::ops::nn {
namespace {

// Cap on the bilinear samples of one RoiAlign output bin (adaptive sampling on huge boxes).
constexpr int64_t kMaxSamplesPerBin = int64_t{1} << 16;
// Box coordinates beyond this magnitude are rejected (they would overflow index arithmetic).
constexpr double kMaxCoordinate = 1e12;

Expected<std::vector<int64_t>> batchIndices(const Tensor& t, int64_t rois, int64_t batch) {
  if (t.shape() != Shape{rois}) return Error("batch_indices must have shape [" + std::to_string(rois) + "]");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> b, toInt64s(t));
  for (int64_t v : b)
    if (v < 0 || v >= batch)
      return Error("batch index " + std::to_string(v) + " is out of range [0, " + std::to_string(batch) + ")");
  return b;
}

Expected<std::vector<Tensor>> evalRoiAlign(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* rois_t, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(const Tensor* bi_t, requireInput(in, 2));
  POPRT_TRY(requireFloat(*x, "X"));
  POPRT_TRY(requireFloat(*rois_t, "rois"));
  const Shape& xs = x->shape();
  if (xs.size() != 4) return Error("X must have shape [N, C, H, W], got " + shapeToString(xs));
  if (rois_t->shape().size() != 2 || rois_t->shape()[1] != 4)
    return Error("rois must have shape [num_rois, 4], got " + shapeToString(rois_t->shape()));
  const int64_t R = rois_t->shape()[0], N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> batch, batchIndices(*bi_t, R, N));
  const std::string mode = node.attrString("mode", "avg");
  if (mode != "avg" && mode != "max") return Error("mode '" + mode + "' is not avg or max");
  const int64_t oh = node.attrInt("output_height", 1), ow = node.attrInt("output_width", 1);
  const int64_t sampling = node.attrInt("sampling_ratio", 0);
  if (oh < 1 || ow < 1 || oh > kMaxDim || ow > kMaxDim) return Error("output_height and output_width must be >= 1");
  if (sampling < 0 || sampling > kMaxSamplesPerBin) return Error("sampling_ratio is out of range");
  const double spatial_scale = node.attrFloat("spatial_scale", 1.0f);
  const std::string ctm =
      node.attrString("coordinate_transformation_mode", ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return Error("coordinate_transformation_mode '" + ctm + "' is not supported");
  const bool half_pixel = ctm == "half_pixel";
  const Shape ys{R, C, oh, ow};
  POPRT_ASSIGN_OR_RETURN(int64_t ny, checkedElementCount(ys));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xv, toDoubles(*x));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> rv, toDoubles(*rois_t));
  std::vector<double> y(static_cast<size_t>(ny), 0.0);
  const double offset = half_pixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < R; ++r) {
    const double* box = rv.data() + r * 4;
    double coords[4];
    for (int i = 0; i < 4; ++i) {
      coords[i] = box[i] * spatial_scale - offset;
      if (!(std::fabs(coords[i]) < kMaxCoordinate)) return Error("roi coordinates must be finite and of sane magnitude");
    }
    const double x0 = coords[0], y0 = coords[1];
    double rw = coords[2] - x0, rh = coords[3] - y0;
    if (!half_pixel) {  // legacy behaviour: boxes are at least 1x1
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bin_h = rh / static_cast<double>(oh), bin_w = rw / static_cast<double>(ow);
    const int64_t gh = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(std::max(rh, 0.0) / static_cast<double>(oh)));
    const int64_t gw = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(std::max(rw, 0.0) / static_cast<double>(ow)));
    if (gh > kMaxSamplesPerBin || gw > kMaxSamplesPerBin || gh * gw > kMaxSamplesPerBin)
      return Error("roi is too large for adaptive sampling");
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const double* img = xv.data() + (batch[r] * C + c) * H * W;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            double sy = y0 + ph * bin_h + (iy + 0.5) * bin_h / static_cast<double>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              double sx = x0 + pw * bin_w + (ix + 0.5) * bin_w / static_cast<double>(gw);
              // Bilinear sample; points more than one pixel outside the image contribute zero.
              double w[4] = {0, 0, 0, 0}, v[4] = {0, 0, 0, 0};
              if (!(sy < -1.0 || sy > static_cast<double>(H) || sx < -1.0 || sx > static_cast<double>(W)) && H > 0 && W > 0) {
                double yy = std::max(sy, 0.0), xx = std::max(sx, 0.0);
                int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh, xh;
                if (yl >= H - 1) {
                  yl = yh = H - 1;
                  yy = static_cast<double>(yl);
                } else {
                  yh = yl + 1;
                }
                if (xl >= W - 1) {
                  xl = xh = W - 1;
                  xx = static_cast<double>(xl);
                } else {
                  xh = xl + 1;
                }
                const double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
                w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
                v[0] = img[yl * W + xl], v[1] = img[yl * W + xh], v[2] = img[yh * W + xl], v[3] = img[yh * W + xh];
              }
              if (mode == "avg") {
                acc += w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
              } else {
                // As ONNX Runtime: the largest weighted corner value of each sample, max over samples.
                const double m = std::max({w[0] * v[0], w[1] * v[1], w[2] * v[2], w[3] * v[3]});
                acc = first ? m : std::max(acc, m);
                first = false;
              }
            }
          }
          y[((r * C + c) * oh + ph) * ow + pw] = mode == "avg" ? acc / count : acc;
        }
    }
  }
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(x->dtype(), ys, y, IntRounding::Nearest));
  return single(std::move(yt));
}

Expected<std::vector<Tensor>> evalMaxRoiPool(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* rois_t, requireInput(in, 1));
  POPRT_TRY(requireFloat(*x, "X"));
  POPRT_TRY(requireFloat(*rois_t, "rois"));
  const Shape& xs = x->shape();
  if (xs.size() != 4) return Error("X must have shape [N, C, H, W], got " + shapeToString(xs));
  if (rois_t->shape().size() != 2 || rois_t->shape()[1] != 5)
    return Error("rois must have shape [num_rois, 5], got " + shapeToString(rois_t->shape()));
  if (!node.hasAttr("pooled_shape")) return Error("attribute pooled_shape is required");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> pooled, intsAttr(node, "pooled_shape", 2, 1, 1, kMaxDim));
  const double scale = node.attrFloat("spatial_scale", 1.0f);
  const int64_t R = rois_t->shape()[0], N = xs[0], C = xs[1], H = xs[2], W = xs[3], PH = pooled[0], PW = pooled[1];
  const Shape ys{R, C, PH, PW};
  POPRT_ASSIGN_OR_RETURN(int64_t ny, checkedElementCount(ys));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xv, toDoubles(*x));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> rv, toDoubles(*rois_t));
  std::vector<double> y(static_cast<size_t>(ny), 0.0);
  for (int64_t r = 0; r < R; ++r) {
    const double* roi = rv.data() + r * 5;
    if (!(roi[0] >= 0 && roi[0] < static_cast<double>(N)) || roi[0] != std::floor(roi[0]))
      return Error("roi batch index " + std::to_string(roi[0]) + " is out of range");
    const int64_t b = static_cast<int64_t>(roi[0]);
    int64_t q[4];
    for (int i = 0; i < 4; ++i) {
      const double v = std::round(roi[i + 1] * scale);
      if (!(std::fabs(v) < kMaxCoordinate)) return Error("roi coordinates must be finite and of sane magnitude");
      q[i] = static_cast<int64_t>(v);
    }
    const int64_t sw = q[0], sh = q[1], ew = q[2], eh = q[3];
    const double bin_h = static_cast<double>(std::max<int64_t>(eh - sh + 1, 1)) / static_cast<double>(PH);
    const double bin_w = static_cast<double>(std::max<int64_t>(ew - sw + 1, 1)) / static_cast<double>(PW);
    for (int64_t c = 0; c < C; ++c) {
      const double* img = xv.data() + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < PH; ++ph)
        for (int64_t pw = 0; pw < PW; ++pw) {
          auto bound = [](double v, int64_t start, int64_t size) {
            return static_cast<int64_t>(std::clamp(v + static_cast<double>(start), 0.0, static_cast<double>(size)));
          };
          const int64_t hs = bound(std::floor(ph * bin_h), sh, H), he = bound(std::ceil((ph + 1) * bin_h), sh, H);
          const int64_t ws = bound(std::floor(pw * bin_w), sw, W), we = bound(std::ceil((pw + 1) * bin_w), sw, W);
          double m = 0;
          if (he > hs && we > ws) {
            m = -std::numeric_limits<double>::infinity();
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) m = std::max(m, img[h * W + w]);
          }
          y[((r * C + c) * PH + ph) * PW + pw] = m;
        }
    }
  }
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(x->dtype(), ys, y, IntRounding::Nearest));
  return single(std::move(yt));
}

struct Box {
  double y0, x0, y1, x1;
};

Box boxAt(const double* b, bool center) {
  if (center) {  // [x_center, y_center, width, height]
    return {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
  }
  // [y1, x1, y2, x2] with either diagonal pair of corners
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// True if the IoU of a and b exceeds the threshold (boxes of no area never suppress).
bool suppresses(const Box& a, const Box& b, double iou_threshold) {
  const double iy0 = std::max(a.y0, b.y0), iy1 = std::min(a.y1, b.y1);
  const double ix0 = std::max(a.x0, b.x0), ix1 = std::min(a.x1, b.x1);
  if (!(iy1 > iy0) || !(ix1 > ix0)) return false;
  const double area_a = (a.y1 - a.y0) * (a.x1 - a.x0), area_b = (b.y1 - b.y0) * (b.x1 - b.x0);
  if (!(area_a > 0) || !(area_b > 0)) return false;
  const double inter = (iy1 - iy0) * (ix1 - ix0);
  return inter / (area_a + area_b - inter) > iou_threshold;
}

Expected<std::vector<Tensor>> evalNms(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* boxes_t, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* scores_t, requireInput(in, 1));
  POPRT_TRY(requireFloat(*boxes_t, "boxes"));
  POPRT_TRY(requireFloat(*scores_t, "scores"));
  const Shape& bs = boxes_t->shape();
  const Shape& ss = scores_t->shape();
  if (bs.size() != 3 || bs[2] != 4) return Error("boxes must have shape [batch, boxes, 4], got " + shapeToString(bs));
  if (ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    return Error("scores of shape " + shapeToString(ss) + " do not match boxes " + shapeToString(bs));
  const int64_t B = bs[0], NB = bs[1], NC = ss[1];
  POPRT_ASSIGN_OR_RETURN(int64_t max_out, optionalScalarInt(in, 2, "max_output_boxes_per_class", 0));
  POPRT_ASSIGN_OR_RETURN(double iou_threshold, optionalScalarDouble(in, 3, "iou_threshold", 0.0));
  const bool has_score_threshold = in.size() > 4 && in[4] && in[4]->numElements() > 0;
  POPRT_ASSIGN_OR_RETURN(double score_threshold, optionalScalarDouble(in, 4, "score_threshold", 0.0));
  const int64_t cpb = node.attrInt("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return Error("center_point_box must be 0 or 1");
  max_out = std::clamp<int64_t>(max_out, 0, NB);
  POPRT_ASSIGN_OR_RETURN(std::vector<double> bv, toDoubles(*boxes_t));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> sv, toDoubles(*scores_t));
  std::vector<int64_t> selected;
  std::vector<int64_t> order;
  std::vector<Box> kept;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < NC; ++c) {
      const double* sc = sv.data() + (b * NC + c) * NB;
      order.clear();
      for (int64_t i = 0; i < NB; ++i)
        if (!std::isnan(sc[i]) && (!has_score_threshold || sc[i] > score_threshold)) order.push_back(i);
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return sc[i] > sc[j]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Box box = boxAt(bv.data() + (b * NB + i) * 4, cpb == 1);
        bool drop = false;
        for (const Box& k : kept)
          if (suppresses(k, box, iou_threshold)) {
            drop = true;
            break;
          }
        if (drop) continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  const int64_t n = static_cast<int64_t>(selected.size() / 3);
  return single(int64Tensor(selected, {n, 3}));
}

}  // namespace

void registerNnRoiOps(std::vector<OpDef>& ops) {
  ops.push_back({"RoiAlign", Fp16Policy::KeepFp32, LoweringFamily::None, evalRoiAlign});
  ops.push_back({"MaxRoiPool", Fp16Policy::Convert, LoweringFamily::None, evalMaxRoiPool});
  ops.push_back({"NonMaxSuppression", Fp16Policy::KeepFp32, LoweringFamily::None, evalNms});
}

}  // namespace poprt::ops::nn
