// Hostile inputs for the nn op family: random small shapes, out-of-range or absurd attributes and
// NaN/Inf/huge values must give a result or an Error, never a crash, hang or huge allocation.
// (Deterministic: a fixed-seed generator; run it under ASan/UBSan when changing nn_*.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

class Fuzzer {
 public:
  explicit Fuzzer(uint32_t seed) : rng_(seed) {}

  int64_t pick(const std::vector<int64_t>& v) { return v[index(v.size())]; }
  size_t index(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool coin() { return index(2) == 0; }

  // A small dim, sometimes 0.
  int64_t dim() { return pick({0, 1, 1, 2, 3, 4, 5}); }
  // An attribute value: mostly sane, sometimes hostile.
  int64_t attrValue() {
    if (index(8) == 0) return pick({-5, -1, 7, int64_t{1} << 40, INT64_MAX, INT64_MIN});
    return pick({0, 1, 1, 1, 2, 2, 3});
  }
  std::vector<int64_t> attrInts(size_t n) {
    std::vector<int64_t> v(index(8) != 0 ? n : index(2 * n + 2));
    for (auto& x : v) x = attrValue();
    return v;
  }

  Tensor floats(Shape shape) {
    Tensor t(DType::Float, std::move(shape));
    for (float& x : t.data<float>()) x = value();
    return t;
  }
  float value() {
    switch (index(12)) {
      case 0: return NAN;
      case 1: return INFINITY;
      case 2: return -INFINITY;
      case 3: return 1e30f;
      case 4: return -1e30f;
      default: return std::uniform_real_distribution<float>(-3, 3)(rng_);
    }
  }
  Tensor ints(Shape shape, int64_t lo, int64_t hi) {
    Tensor t(DType::Int64, std::move(shape));
    for (int64_t& x : t.data<int64_t>()) x = std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
    return t;
  }
  Shape shape(size_t rank) {
    Shape s(rank);
    for (auto& d : s) d = dim();
    return s;
  }

 private:
  std::mt19937 rng_;
};

// Runs op_type on the inputs with the attributes; only checks that it returns.
void runOne(const std::string& op_type, const std::vector<const Tensor*>& in, size_t n_out,
            const std::map<std::string, ir::AttributeValue>& attrs, int64_t opset) {
  OneNode n(op_type, in.size(), n_out);
  for (const auto& [k, v] : attrs) n.attr(k, v);
  auto r = n.run(in, opset);
  if (r.ok()) {
    for (const Tensor& t : *r) EXPECT_LE(t.numElements(), int64_t{1} << 28) << op_type;
  } else {
    EXPECT_FALSE(r.error().message().empty());
  }
}

TEST(NnFuzz, ConvAndPoolsSurviveHostileAttributes) {
  Fuzzer f(1234);
  for (int iter = 0; iter < 1500; ++iter) {
    const size_t r = 1 + f.index(3);
    Shape xs{f.pick({0, 1, 2}), f.pick({1, 2, 4})};
    for (size_t d = 0; d < r; ++d) xs.push_back(f.pick({0, 1, 2, 3, 4, 5, 6, 7}));
    Tensor x = f.floats(xs);
    const int64_t group = f.index(4) == 0 ? f.attrValue() : f.pick({1, 1, 2});
    Shape ws{f.pick({1, 2, 4}), group > 0 && xs[1] % group == 0 && f.index(4) != 0 ? xs[1] / group : f.pick({1, 2})};
    for (size_t d = 0; d < r; ++d) ws.push_back(f.pick({1, 1, 2, 3}));
    Tensor w = f.floats(ws), b = f.floats({ws[0]});
    std::map<std::string, ir::AttributeValue> attrs;
    attrs["group"] = group;
    if (f.coin()) attrs["strides"] = f.attrInts(r);
    if (f.coin()) attrs["dilations"] = f.attrInts(r);
    if (f.coin()) attrs["pads"] = f.attrInts(2 * r);
    if (f.coin()) attrs["auto_pad"] = std::string(f.coin() ? "SAME_UPPER" : (f.coin() ? "SAME_LOWER" : "VALID"));
    if (f.coin()) attrs["output_padding"] = f.attrInts(r);
    if (f.index(4) == 0) attrs["output_shape"] = f.attrInts(r);
    runOne("Conv", {&x, &w, &b}, 1, attrs, 17);
    runOne("ConvTranspose", {&x, &w, f.coin() ? &b : nullptr}, 1, attrs, 17);
    attrs["kernel_shape"] = f.coin() ? std::vector<int64_t>(ws.begin() + 2, ws.end()) : f.attrInts(r);
    if (f.coin()) attrs["ceil_mode"] = int64_t{1};
    if (f.coin()) attrs["count_include_pad"] = int64_t{1};
    if (f.coin()) attrs["storage_order"] = f.attrValue();
    if (f.coin()) attrs["p"] = f.attrValue();
    runOne("MaxPool", {&x}, 2, attrs, 12);
    runOne("AveragePool", {&x}, 1, attrs, 17);
    runOne("LpPool", {&x}, 1, attrs, 17);
    runOne("GlobalMaxPool", {&x}, 1, attrs, 17);
    runOne("GlobalLpPool", {&x}, 1, attrs, 17);
    Tensor idx = f.ints(xs, -2, 40);
    Tensor oshape = f.ints({static_cast<int64_t>(xs.size())}, -1, 9);
    runOne("MaxUnpool", {&x, &idx, f.coin() ? &oshape : nullptr}, 1, attrs, 11);
  }
}

TEST(NnFuzz, NormsResizeSamplingBoxesSurviveHostileInputs) {
  Fuzzer f(99);
  for (int iter = 0; iter < 1500; ++iter) {
    const size_t rank = f.index(5);
    Shape xs = f.shape(rank);
    Tensor x = f.floats(xs);
    const int64_t c = rank > 1 ? xs[1] : 1;
    Tensor p1 = f.floats({f.coin() ? c : f.dim()}), p2 = f.floats({c}), p3 = f.floats({c}), p4 = f.floats({c});
    std::map<std::string, ir::AttributeValue> attrs;
    if (f.coin()) attrs["axis"] = f.attrValue();
    if (f.coin()) attrs["axes"] = f.attrInts(2);
    if (f.coin()) attrs["size"] = f.attrValue();
    if (f.coin()) attrs["p"] = f.attrValue();
    if (f.coin()) attrs["training_mode"] = int64_t{1};
    if (f.coin()) attrs["epsilon"] = f.value();
    if (f.coin()) attrs["stash_type"] = f.attrValue();
    runOne("BatchNormalization", {&x, &p1, &p2, &p3, &p4}, 3, attrs, 15);
    runOne("InstanceNormalization", {&x, &p1, &p2}, 1, attrs, 17);
    runOne("LayerNormalization", {&x, &p1, f.coin() ? &p2 : nullptr}, 3, attrs, 17);
    runOne("LRN", {&x}, 1, attrs, 17);
    runOne("MeanVarianceNormalization", {&x}, 1, attrs, 17);
    runOne("LpNormalization", {&x}, 1, attrs, 17);
    // Resize / Upsample with random scales, sizes and roi.
    Tensor scales = f.floats({static_cast<int64_t>(f.coin() ? rank : f.index(6))});
    for (float& s : scales.data<float>())
      if (f.coin()) s = std::fabs(s);
    Tensor sizes = f.ints({static_cast<int64_t>(f.coin() ? rank : f.index(6))}, -2, 9);
    Tensor roi = f.floats({static_cast<int64_t>(2 * rank)});
    std::map<std::string, ir::AttributeValue> ra;
    const char* modes[] = {"nearest", "linear", "cubic", "bogus"};
    const char* coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                            "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"};
    const char* nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    ra["mode"] = std::string(modes[f.index(4)]);
    ra["coordinate_transformation_mode"] = std::string(coords[f.index(6)]);
    ra["nearest_mode"] = std::string(nearest[f.index(4)]);
    if (f.coin()) ra["exclude_outside"] = int64_t{1};
    if (f.coin()) ra["cubic_coeff_a"] = f.value();
    const bool use_sizes = f.coin();
    runOne("Resize", {&x, &roi, use_sizes ? nullptr : &scales, use_sizes ? &sizes : nullptr}, 1, ra, f.coin() ? 11 : 13);
    runOne("Resize", {&x, &scales}, 1, ra, 10);
    runOne("Upsample", {&x, &scales}, 1, ra, 9);
    // GridSample on a 4-D input with a random grid.
    Shape gx{f.pick({1, 2}), f.pick({1, 2}), f.dim(), f.dim()};
    Tensor gi = f.floats(gx);
    Tensor grid = f.floats({f.coin() ? gx[0] : 3, f.dim(), f.dim(), f.coin() ? 2 : 3});
    std::map<std::string, ir::AttributeValue> ga;
    const char* gmodes[] = {"bilinear", "nearest", "bicubic"};
    const char* pads[] = {"zeros", "border", "reflection"};
    ga["mode"] = std::string(gmodes[f.index(3)]);
    ga["padding_mode"] = std::string(pads[f.index(3)]);
    ga["align_corners"] = static_cast<int64_t>(f.index(2));
    runOne("GridSample", {&gi, &grid}, 1, ga, 16);
    // Boxes.
    const int64_t nr = f.dim();
    Tensor rois4 = f.floats({nr, 4}), rois5 = f.floats({nr, 5}), bidx = f.ints({nr}, -1, 2);
    for (float& v : rois5.data<float>())
      if (f.coin()) v = std::fabs(std::fmod(v, 3.0f));
    std::map<std::string, ir::AttributeValue> roa;
    if (f.coin()) roa["output_height"] = f.attrValue();
    if (f.coin()) roa["output_width"] = f.attrValue();
    if (f.coin()) roa["sampling_ratio"] = f.attrValue();
    if (f.coin()) roa["spatial_scale"] = f.value();
    roa["mode"] = std::string(f.coin() ? "avg" : "max");
    roa["pooled_shape"] = f.attrInts(2);
    runOne("RoiAlign", {&gi, &rois4, &bidx}, 1, roa, 16);
    runOne("MaxRoiPool", {&gi, &rois5}, 1, roa, 17);
    const int64_t nb = f.dim();
    Tensor boxes = f.floats({f.pick({1, 2}), nb, 4}), scores = f.floats({boxes.shape()[0], f.pick({1, 2}), nb});
    Tensor maxo = f.ints({1}, -3, 5), iou = f.floats({1}), sth = f.floats({1});
    std::map<std::string, ir::AttributeValue> na;
    na["center_point_box"] = static_cast<int64_t>(f.index(3));
    runOne("NonMaxSuppression", {&boxes, &scores, &maxo, &iou, f.coin() ? &sth : nullptr}, 1, na, 11);
  }
}

}  // namespace
}  // namespace poprt::ops
