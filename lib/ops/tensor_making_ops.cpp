// Tensor ops that make tensors from shapes and counts (see registry.h): Shape, Size,
// ConstantOfShape, Range, Trilu, EyeLike, DepthToSpace/SpaceToDepth and Dropout (inference: the
// identity, and a mask of ones).
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lib/ops/registry.h"
#include "lib/ops/tensor_util.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace {

using namespace tensor_detail;

// ---- Shape, Size, ConstantOfShape, Range -------------------------------------------------

Outputs evalShape(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  const int64_t r = rankOf(*x);
  auto clampDim = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  const int64_t start = clampDim(node.attrInt("start", 0));
  const int64_t end = node.hasAttr("end") ? clampDim(node.attrInt("end", r)) : r;
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(x->shape()[static_cast<size_t>(d)]);
  return single(int64Tensor(dims, {static_cast<int64_t>(dims.size())}));
}

Outputs evalSize(const ir::Node&, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  return single(int64Tensor({x->numElements()}, {}));
}

Outputs evalConstantOfShape(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* s, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, intList(*s, "shape"));
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedElementCount(shape));
  Tensor value(DType::Float, {1});
  if (auto it = node.attributes.find("value"); it != node.attributes.end()) {
    auto* t = std::get_if<Tensor>(&it->second.value);
    if (!t || t->numElements() != 1) return Error("attribute 'value' must be a one-element tensor");
    value = *t;
  }
  return single(takeElements(value, shape, std::vector<int64_t>(static_cast<size_t>(n), 0)));
}

Outputs evalRange(const ir::Node&, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* ts, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* tl, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(const Tensor* td, requireInput(in, 2));
  const DType dt = ts->dtype();
  if (tl->dtype() != dt || td->dtype() != dt) return Error("start, limit and delta must have the same dtype");
  if (ts->numElements() != 1 || tl->numElements() != 1 || td->numElements() != 1)
    return Error("start, limit and delta must be scalars");
  if (dt == DType::Bool || dt == DType::String) return Error("dtype " + std::string(dtypeName(dt)) + " is not supported");
  Tensor y;
  Status inner = okStatus();
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      if constexpr (std::is_integral_v<T>) {
        const __int128 s = ts->data<T>()[0], l = tl->data<T>()[0], d = td->data<T>()[0];
        if (d == 0) {
          inner = Error("delta must not be 0");
          return;
        }
        __int128 count = d > 0 ? (l > s ? (l - s + d - 1) / d : 0) : (s > l ? (s - l - d - 1) / -d : 0);
        if (count > kMaxElements) {
          inner = Error("range has too many elements");
          return;
        }
        y = Tensor(dt, {static_cast<int64_t>(count)});
        auto p = y.data<T>();
        for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) p[static_cast<size_t>(i)] = static_cast<T>(s + d * i);
      } else {
        const double s = static_cast<double>(toCompute(ts->data<T>()[0]));
        const double l = static_cast<double>(toCompute(tl->data<T>()[0]));
        const double d = static_cast<double>(toCompute(td->data<T>()[0]));
        if (d == 0) {
          inner = Error("delta must not be 0");
          return;
        }
        const double count = std::max(std::ceil((l - s) / d), 0.0);
        if (!(count <= static_cast<double>(kMaxElements))) {
          inner = Error("range has too many (or undefined) elements");
          return;
        }
        y = Tensor(dt, {static_cast<int64_t>(count)});
        auto p = y.data<T>();
        using C = typename ComputeType<T>::type;
        for (size_t i = 0; i < p.size(); ++i) p[i] = fromCompute<T>(static_cast<C>(s + static_cast<double>(i) * d));
      }
    }
  }));
  POPRT_TRY(inner);
  return single(std::move(y));
}

// ---- Trilu, EyeLike ----------------------------------------------------------------------

Outputs evalTrilu(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  const int64_t r = rankOf(*x);
  if (r < 2) return Error("input must have rank >= 2");
  int64_t k = 0;
  if (const Tensor* kt = optionalInput(in, 1)) { POPRT_ASSIGN_OR_RETURN(k, scalarInt(*kt, "k")); }
  const bool upper = node.attrInt("upper", 1) != 0;
  const int64_t rows = x->shape()[static_cast<size_t>(r - 2)], cols = x->shape()[static_cast<size_t>(r - 1)];
  const int64_t n = x->numElements();
  std::vector<int64_t> src(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t col = i % cols, row = (i / cols) % rows;
    const int64_t diff = col - row;  // element kept when diff >= k (upper) or diff <= k (lower)
    src[static_cast<size_t>(i)] = (upper ? diff >= k : diff <= k) ? i : -1;
  }
  return single(takeElements(*x, x->shape(), src));
}

Outputs evalEyeLike(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  if (rankOf(*x) != 2) return Error("input must be 2-D, got shape " + shapeToString(x->shape()));
  DType dt = x->dtype();
  if (node.hasAttr("dtype")) {
    auto d = dtypeFromOnnx(node.attrInt("dtype", 0));
    if (!d) return Error("attribute 'dtype' is not a known data type");
    dt = *d;
  }
  const int64_t k = node.attrInt("k", 0);
  Tensor y(dt, x->shape());
  const int64_t rows = x->shape()[0], cols = x->shape()[1];
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    auto p = y.data<T>();
    for (int64_t row = 0; row < rows; ++row) {
      if (k > cols || k < -cols) break;  // the diagonal misses the matrix (and row + k cannot overflow)
      const int64_t col = row + k;
      if (col >= 0 && col < cols) p[static_cast<size_t>(row * cols + col)] = fromCompute<T>(1);
    }
  }));
  return single(std::move(y));
}

// ---- DepthToSpace, SpaceToDepth ----------------------------------------------------------

Outputs evalDepthToSpace(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  if (rankOf(*x) != 4) return Error("input must be 4-D (NCHW), got shape " + shapeToString(x->shape()));
  const int64_t b = node.attrInt("blocksize", 0);
  const int64_t N = x->shape()[0], C = x->shape()[1], H = x->shape()[2], W = x->shape()[3];
  // In 128 bits: b comes from the model and b * b, H * b must not overflow.
  if (b <= 0 || C % (static_cast<__int128>(b) * b) != 0 || static_cast<__int128>(H) * b > kMaxElements ||
      static_cast<__int128>(W) * b > kMaxElements)
    return Error("blocksize " + std::to_string(b) + " does not fit input shape " + shapeToString(x->shape()));
  const std::string mode = node.attrString("mode", "DCR");
  Tensor tmp;
  if (mode == "DCR") {
    POPRT_ASSIGN_OR_RETURN(Tensor r6, reshaped(*x, {N, b, b, C / (b * b), H, W}));
    POPRT_ASSIGN_OR_RETURN(tmp, transposeTensor(r6, {0, 3, 4, 1, 5, 2}));
  } else if (mode == "CRD") {
    POPRT_ASSIGN_OR_RETURN(Tensor r6, reshaped(*x, {N, C / (b * b), b, b, H, W}));
    POPRT_ASSIGN_OR_RETURN(tmp, transposeTensor(r6, {0, 1, 4, 2, 5, 3}));
  } else {
    return Error("mode '" + mode + "' is not DCR or CRD");
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, reshaped(tmp, {N, C / (b * b), H * b, W * b}));
  return single(std::move(y));
}

Outputs evalSpaceToDepth(const ir::Node& node, const Inputs& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  if (rankOf(*x) != 4) return Error("input must be 4-D (NCHW), got shape " + shapeToString(x->shape()));
  const int64_t b = node.attrInt("blocksize", 0);
  const int64_t N = x->shape()[0], C = x->shape()[1], H = x->shape()[2], W = x->shape()[3];
  if (b <= 0 || H % b != 0 || W % b != 0 || static_cast<__int128>(C) * b * b > kMaxElements)
    return Error("blocksize " + std::to_string(b) + " does not divide the spatial dims of " + shapeToString(x->shape()));
  POPRT_ASSIGN_OR_RETURN(Tensor r6, reshaped(*x, {N, C, H / b, b, W / b, b}));
  POPRT_ASSIGN_OR_RETURN(Tensor t, transposeTensor(r6, {0, 3, 5, 1, 2, 4}));
  POPRT_ASSIGN_OR_RETURN(Tensor y, reshaped(t, {N, C * b * b, H / b, W / b}));
  return single(std::move(y));
}

// ---- Dropout -----------------------------------------------------------------------------

Outputs evalDropout(const ir::Node& node, const Inputs& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 12) {
    ratio = node.attrFloat("ratio", 0.5f);
  } else {
    if (const Tensor* rt = optionalInput(in, 1)) {
      if (rt->numElements() != 1) return Error("ratio must be a scalar");
      POPRT_ASSIGN_OR_RETURN(std::vector<double> rv, toDoubles(*rt));
      ratio = rv[0];
    }
    if (const Tensor* tm = optionalInput(in, 2)) {
      if (tm->numElements() != 1) return Error("training_mode must be a scalar");
      POPRT_ASSIGN_OR_RETURN(std::vector<double> tv, toDoubles(*tm));
      training = tv[0] != 0;
    }
  }
  const DType mask_type = ctx.opset() < 10 ? x->dtype() : DType::Bool;
  std::vector<Tensor> outs;
  if (!training || ratio == 0) {
    outs.push_back(*x);
    Tensor mask(mask_type, x->shape());
    POPRT_TRY(dispatchNumeric(mask_type, [&](auto tag) {
      using T = decltype(tag);
      for (auto& m : mask.data<T>()) m = fromCompute<T>(1);
    }));
    outs.push_back(std::move(mask));
    return outs;
  }
  if (!(ratio >= 0 && ratio < 1)) return Error("ratio must be in [0, 1)");
  if (!isFloatingPoint(x->dtype())) return Error("training mode needs a floating-point input");
  // The mask draws numpy's legacy generator (MT19937 seeded by init_genrand, 53-bit doubles from
  // two 32-bit draws), so a given seed reproduces numpy.random.seed(seed); uniform(0, 1) >= ratio.
  const uint64_t seed = node.hasAttr("seed") ? static_cast<uint64_t>(node.attrInt("seed", 0)) : ctx.seed();
  std::mt19937 gen(static_cast<uint32_t>(seed));
  auto uniform = [&gen]() {
    const uint32_t a = gen() >> 5, b = gen() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  };
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xv, toDoubles(*x));
  std::vector<double> yv(xv.size());
  Tensor mask(DType::Bool, x->shape());
  auto m = mask.data<bool>();
  const double scale = 1.0 / (1.0 - ratio);
  for (size_t i = 0; i < xv.size(); ++i) {
    m[i] = uniform() >= ratio;
    yv[i] = m[i] ? xv[i] * scale : 0.0;
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(x->dtype(), x->shape(), yv));
  outs.push_back(std::move(y));
  outs.push_back(std::move(mask));
  return outs;
}

}  // namespace

void registerTensorMakingOps(std::vector<OpDef>& ops) {
  auto add = [&](const char* name, Fp16Policy policy, EvalFn fn, LoweringFamily lowering = LoweringFamily::None) {
    ops.push_back({name, policy, lowering, std::move(fn)});
  };
  const auto agnostic = Fp16Policy::TypeAgnostic;
  add("Shape", agnostic, evalShape);
  add("Size", agnostic, evalSize);
  add("ConstantOfShape", agnostic, evalConstantOfShape);
  // Range makes positions and indices: float16 counts exactly only up to 2048.
  add("Range", Fp16Policy::KeepFp32, evalRange);
  add("Trilu", agnostic, evalTrilu);
  add("EyeLike", agnostic, evalEyeLike);
  add("DepthToSpace", agnostic, evalDepthToSpace, LoweringFamily::Rearrange);
  add("SpaceToDepth", agnostic, evalSpaceToDepth, LoweringFamily::Rearrange);
  add("Dropout", Fp16Policy::Convert, evalDropout);
}

}  // namespace poprt::ops
