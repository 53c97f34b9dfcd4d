// Elementwise ops from one table each: a new unary op is one line. The first two tables (kUnary,
// kBinary) are the ops the codegen lowers to the device; the rest are evaluator-only (host engine).
#include <algorithm>
#include <cmath>
#include <functional>

#include "lib/ops/broadcast.h"
#include "lib/ops/elementwise_util.h"
#include "lib/ops/registry.h"
#include "lib/ops/scalar_math.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace {

struct UnaryEntry {
  const char* op_type;
  UnaryFn fn;
  Fp16Policy fp16;
};
// The unary functions' table (scalar_math.h) with an op of their own; Gelu's forms ("") are
// ai.graphcore Gelu's.
constexpr UnaryEntry kUnary[] = {
#define POPRT_UNARY_ENTRY(name, id, op_type, fp16, cost, value) {op_type, UnaryFn::name, Fp16Policy::fp16},
    POPRT_UNARY_FUNCTIONS(POPRT_UNARY_ENTRY)
#undef POPRT_UNARY_ENTRY
};

struct BinaryEntry {
  const char* op_type;
  BinaryFn fn;
};
constexpr BinaryEntry kBinary[] = {
    {"Add", BinaryFn::Add},
    {"Sub", BinaryFn::Sub},
    {"Mul", BinaryFn::Mul},
    {"Div", BinaryFn::Div},
};

Expected<std::vector<Tensor>> evalUnary(UnaryFn fn, const std::vector<const Tensor*>& in) {
  if (in.size() != 1 || !in[0]) return Error("expects 1 input");
  const Tensor& x = *in[0];
  POPRT_TRY(checkStorage(x));
  if (!isFloatingPoint(x.dtype()) && fn != UnaryFn::Relu && fn != UnaryFn::Neg && fn != UnaryFn::Abs)
    return Error("dtype " + std::string(dtypeName(x.dtype())) + " is not supported");
  Tensor y(x.dtype(), x.shape());
  POPRT_TRY(dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto src = x.data<T>();
    auto dst = y.data<T>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = castFromDouble<T>(applyUnary(fn, static_cast<double>(toCompute(src[i]))));
  }));
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalBinary(BinaryFn fn, const std::vector<const Tensor*>& in) {
  if (in.size() != 2 || !in[0] || !in[1]) return Error("expects 2 inputs");
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (a.dtype() != b.dtype())
    return Error("input dtypes differ: " + std::string(dtypeName(a.dtype())) + " and " + std::string(dtypeName(b.dtype())));
  if (a.dtype() == DType::Bool) return Error("dtype bool is not supported");
  POPRT_TRY(checkStorage(a));
  POPRT_TRY(checkStorage(b));
  POPRT_ASSIGN_OR_RETURN(Shape out_shape, broadcastShapes(a.shape(), b.shape()));
  POPRT_ASSIGN_OR_RETURN(Tensor y, makeOutput(a.dtype(), out_shape));
  std::vector<int64_t> sa = broadcastStrides(a.shape(), out_shape);
  std::vector<int64_t> sb = broadcastStrides(b.shape(), out_shape);
  const size_t rank = out_shape.size();
  POPRT_TRY(dispatchNumeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    if constexpr (std::is_same_v<T, bool>)
      return;  // rejected above
    else {
      auto pa = a.data<T>();
      auto pb = b.data<T>();
      auto py = y.data<T>();
      if (py.empty()) return;
      // A row (the innermost dim) at a time, with the function fixed for the loop: an odometer
      // step and a switch per element made the fp16 range check's glue ops a tenth of its time.
      const int64_t row = rank == 0 ? 1 : out_shape.back();
      const int64_t step_a = rank == 0 ? 0 : sa.back(), step_b = rank == 0 ? 0 : sb.back();
      withBinaryFn(fn, [&](auto f) {
        std::vector<int64_t> index(rank, 0);
        int64_t ia = 0, ib = 0;
        for (size_t i = 0; i < py.size(); i += static_cast<size_t>(row)) {
          for (int64_t j = 0; j < row; ++j)
            py[i + static_cast<size_t>(j)] =
                fromCompute<T>(applyBinary<C>(f, toCompute(pa[ia + j * step_a]), toCompute(pb[ib + j * step_b])));
          // Odometer increment of the output index over the outer dims, moving both offsets along.
          for (size_t d = rank > 0 ? rank - 1 : 0; d-- > 0;) {
            ia += sa[d];
            ib += sb[d];
            if (++index[d] < out_shape[d]) break;
            ia -= sa[d] * out_shape[d];
            ib -= sb[d] * out_shape[d];
            index[d] = 0;
          }
        }
      });
    }
  }));
  return single(std::move(y));
}

// ---------------------------------------------------------------------------------------------
// Evaluator-only elementwise ops (LoweringFamily::None, save the activations): they run on the host.
// The unary functions with parameters are in elementwise_math.cpp.

// Bool tensors are read as bytes (any non-zero byte is true) and written as 0/1.
Expected<std::vector<Tensor>> evalNot(const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_TRY(checkStorage(*x));
  if (x->dtype() != DType::Bool) return Error(ew::typeError(x->dtype()));
  Tensor y(DType::Bool, x->shape());
  auto src = x->data<uint8_t>();
  auto dst = y.data<uint8_t>();
  for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i] == 0;
  return single(std::move(y));
}

// IsNaN and IsInf: a float test giving bool.
Expected<std::vector<Tensor>> evalFloatTest(const std::vector<const Tensor*>& in, const std::function<bool(double)>& test) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_TRY(checkStorage(*x));
  if (!isFloatingPoint(x->dtype())) return Error(ew::typeError(x->dtype()));
  Tensor y(DType::Bool, x->shape());
  auto dst = y.data<uint8_t>();
  POPRT_TRY(dispatchNumeric(x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto src = x->data<T>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = test(static_cast<double>(toCompute(src[i])));
  }));
  return single(std::move(y));
}

// Two broadcast inputs, checked; `same_dtype` requires equal dtypes.
struct BinaryArgs {
  const Tensor* a;
  const Tensor* b;
  Shape out;
};
Expected<BinaryArgs> binaryArgs(const std::vector<const Tensor*>& in, bool same_dtype) {
  if (in.size() != 2 || !in[0] || !in[1]) return Error("expects 2 inputs");
  POPRT_TRY(checkStorage(*in[0]));
  POPRT_TRY(checkStorage(*in[1]));
  if (same_dtype && in[0]->dtype() != in[1]->dtype())
    return Error("input dtypes differ: " + std::string(dtypeName(in[0]->dtype())) + " and " +
                 std::string(dtypeName(in[1]->dtype())));
  POPRT_ASSIGN_OR_RETURN(Shape out, broadcastShapes(in[0]->shape(), in[1]->shape()));
  POPRT_TRY(checkedElementCount(out));
  return BinaryArgs{in[0], in[1], std::move(out)};
}

// y[i] = f(a[..], b[..]) over the broadcast shape, for typed element spans.
template <class A, class B, class Y, class F>
void binaryLoop(std::span<const A> a, std::span<const B> b, std::span<Y> y, const BinaryArgs& args, F&& f) {
  ew::forEachBroadcast(args.out, {args.a->shape(), args.b->shape()},
                       [&](int64_t i, const int64_t* o) { y[i] = f(a[o[0]], b[o[1]]); });
}

enum class Cmp { Equal, Less, Greater, LessOrEqual, GreaterOrEqual };

template <class C>
bool compareValues(Cmp c, C a, C b) {
  switch (c) {
    case Cmp::Equal: return a == b;
    case Cmp::Less: return a < b;
    case Cmp::Greater: return a > b;
    case Cmp::LessOrEqual: return a <= b;
    case Cmp::GreaterOrEqual: return a >= b;
  }
  return false;
}

Expected<std::vector<Tensor>> evalCompare(Cmp c, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(BinaryArgs args, binaryArgs(in, true));
  Tensor y(DType::Bool, args.out);
  auto py = y.data<uint8_t>();
  DType dt = args.a->dtype();
  if (dt == DType::String) {
    if (c != Cmp::Equal) return Error("dtype string is only supported by Equal");
    const auto& sa = args.a->strings();
    const auto& sb = args.b->strings();
    ew::forEachBroadcast(args.out, {args.a->shape(), args.b->shape()},
                         [&](int64_t i, const int64_t* o) { py[i] = sa[o[0]] == sb[o[1]]; });
    return single(std::move(y));
  }
  if (dt == DType::Bool) {
    binaryLoop(args.a->data<uint8_t>(), args.b->data<uint8_t>(), py, args,
               [c](uint8_t a, uint8_t b) -> uint8_t { return compareValues<int>(c, a != 0, b != 0); });
    return single(std::move(y));
  }
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    binaryLoop(args.a->data<T>(), args.b->data<T>(), py, args,
               [c](T a, T b) -> uint8_t { return compareValues(c, toCompute(a), toCompute(b)); });
  }));
  return single(std::move(y));
}

enum class Logic { And, Or, Xor };

Expected<std::vector<Tensor>> evalLogic(Logic l, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(BinaryArgs args, binaryArgs(in, true));
  if (args.a->dtype() != DType::Bool) return Error(ew::typeError(args.a->dtype()));
  Tensor y(DType::Bool, args.out);
  binaryLoop(args.a->data<uint8_t>(), args.b->data<uint8_t>(), y.data<uint8_t>(), args, [l](uint8_t a, uint8_t b) -> uint8_t {
    bool x = a != 0, z = b != 0;
    return l == Logic::And ? (x && z) : l == Logic::Or ? (x || z) : (x != z);
  });
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalBitShift(const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(BinaryArgs args, binaryArgs(in, true));
  std::string dir = node.attrString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") return Error("attribute direction must be LEFT or RIGHT, got '" + dir + "'");
  bool left = dir == "LEFT";
  DType dt = args.a->dtype();
  if (dt != DType::UInt8 && dt != DType::UInt16 && dt != DType::UInt32 && dt != DType::UInt64) return Error(ew::typeError(dt));
  Tensor y(dt, args.out);
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
      binaryLoop(args.a->data<T>(), args.b->data<T>(), y.data<T>(), args, [left](T a, T b) -> T {
        if (b >= sizeof(T) * 8) return T(0);  // shifting out every bit (a C++ shift this wide is undefined)
        uint64_t v = a;
        return static_cast<T>(left ? v << b : v >> b);
      });
    }
  }));
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalMod(const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(BinaryArgs args, binaryArgs(in, true));
  bool fmod = node.attrInt("fmod", 0) != 0;
  DType dt = args.a->dtype();
  if (!ew::isNumeric(dt)) return Error(ew::typeError(dt));
  if (isFloatingPoint(dt) && !fmod) return Error("fmod must be 1 for floating-point inputs");
  Tensor y(dt, args.out);
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    if constexpr (std::is_floating_point_v<C>) {
      binaryLoop(args.a->data<T>(), args.b->data<T>(), y.data<T>(), args,
                 [](T a, T b) { return fromCompute<T>(static_cast<C>(std::fmod(toCompute(a), toCompute(b)))); });
    } else if constexpr (!std::is_same_v<T, bool>) {
      binaryLoop(args.a->data<T>(), args.b->data<T>(), y.data<T>(), args, [fmod](T a, T b) -> T {
        // x % 0 is undefined in C++ (numpy gives 0); MIN % -1 traps on x86 (the result is 0).
        if (b == 0) return T(0);
        if constexpr (std::is_signed_v<T>) {
          if (b == T(-1)) return T(0);
          T r = static_cast<T>(a % b);
          if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);  // sign of the divisor
          return r;
        } else {
          return static_cast<T>(a % b);
        }
      });
    }
  }));
  return single(std::move(y));
}

// Integer power modulo 2^bits, by squaring; negative exponents truncate 1/base^-e toward zero.
template <class T>
T intPow(T base, int64_t e) {
  if (e < 0) {
    if (base == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (base == T(-1)) return (e % 2) ? T(-1) : T(1);
    }
    return T(0);
  }
  uint64_t r = 1, b = static_cast<uint64_t>(static_cast<int64_t>(base));
  if constexpr (std::is_unsigned_v<T>) b = static_cast<uint64_t>(base);
  for (uint64_t k = static_cast<uint64_t>(e); k; k >>= 1) {
    if (k & 1) r *= b;
    b *= b;
  }
  return static_cast<T>(r);
}

// Pow: the output has the base's dtype; the exponent may have another numeric dtype (opset 12+).
Expected<std::vector<Tensor>> evalPow(const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(BinaryArgs args, binaryArgs(in, ctx.opset() < 12));
  DType dt = args.a->dtype(), et = args.b->dtype();
  if (!ew::isNumeric(dt)) return Error(ew::typeError(dt));
  if (!ew::isNumeric(et)) return Error(ew::typeError(et));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> exp_d, toDoubles(*args.b));
  std::vector<int64_t> exp_i;
  if (isInteger(et)) { POPRT_ASSIGN_OR_RETURN(exp_i, toInt64s(*args.b)); }
  Tensor y(dt, args.out);
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      auto pa = args.a->data<T>();
      auto py = y.data<T>();
      ew::forEachBroadcast(args.out, {args.a->shape(), args.b->shape()}, [&](int64_t i, const int64_t* o) {
        if constexpr (std::is_integral_v<T>) {
          if (!exp_i.empty()) {
            py[i] = intPow<T>(pa[o[0]], exp_i[o[1]]);
            return;
          }
        }
        py[i] = castFromDouble<T>(std::pow(static_cast<double>(toCompute(pa[o[0]])), exp_d[o[1]]));
      });
    }
  }));
  return single(std::move(y));
}

// PRelu: slope broadcasts to X's shape (unidirectionally).
Expected<std::vector<Tensor>> evalPRelu(const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(BinaryArgs args, binaryArgs(in, true));
  if (args.out != args.a->shape())
    return Error("slope of shape " + shapeToString(args.b->shape()) + " does not broadcast to X of shape " +
                 shapeToString(args.a->shape()));
  DType dt = args.a->dtype();
  if (!ew::isNumeric(dt)) return Error(ew::typeError(dt));
  Tensor y(dt, args.out);
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    if constexpr (!std::is_same_v<T, bool>) {
      binaryLoop(args.a->data<T>(), args.b->data<T>(), y.data<T>(), args, [](T x, T s) -> T {
        C xv = toCompute(x);
        return xv < C(0) ? fromCompute<T>(ew::wrapMul<C>(toCompute(s), xv)) : x;
      });
    }
  }));
  return single(std::move(y));
}

enum class Var { Sum, Mean, Max, Min };

// Sum, Mean, Max, Min of one or more inputs with multidirectional broadcasting. Max and Min
// propagate NaN; floats accumulate in double.
Expected<std::vector<Tensor>> evalVariadic(Var v, const std::vector<const Tensor*>& in) {
  if (in.empty()) return Error("expects at least 1 input");
  std::vector<Shape> shapes;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!in[k]) return Error("input " + std::to_string(k) + " is missing");
    POPRT_TRY(checkStorage(*in[k]));
    if (in[k]->dtype() != in[0]->dtype()) return Error("input dtypes differ");
    shapes.push_back(in[k]->shape());
  }
  DType dt = in[0]->dtype();
  if (v == Var::Mean ? !isFloatingPoint(dt) : !ew::isNumeric(dt)) return Error(ew::typeError(dt));
  POPRT_ASSIGN_OR_RETURN(Shape out, ew::broadcastAll(shapes));
  POPRT_ASSIGN_OR_RETURN(Tensor y, makeOutput(dt, out));
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    using Acc = std::conditional_t<std::is_floating_point_v<C>, double, C>;
    if constexpr (!std::is_same_v<T, bool>) {
      std::vector<std::span<const T>> src;
      for (const Tensor* t : in) src.push_back(t->data<T>());
      auto py = y.data<T>();
      const double n = static_cast<double>(in.size());
      // The op fixed for the loop (no switch per element).
      auto each = [&](auto op) {
        constexpr Var kOp = decltype(op)::value;
        ew::forEachBroadcast(out, shapes, [&](int64_t i, const int64_t* o) {
          Acc acc = static_cast<Acc>(toCompute(src[0][o[0]]));
          for (size_t k = 1; k < src.size(); ++k) {
            Acc x = static_cast<Acc>(toCompute(src[k][o[k]]));
            if constexpr (kOp == Var::Sum || kOp == Var::Mean)
              acc = ew::wrapAdd(acc, x);
            else if (ew::isNaNValue(acc))
              continue;
            else if (ew::isNaNValue(x) || (kOp == Var::Max ? x > acc : x < acc))
              acc = x;
          }
          if constexpr (std::is_floating_point_v<Acc>) {
            py[i] = castFromDouble<T>(kOp == Var::Mean ? acc / n : acc);
          } else {
            py[i] = static_cast<T>(acc);
          }
        });
      };
      switch (v) {
        case Var::Sum: return each(std::integral_constant<Var, Var::Sum>{});
        case Var::Mean: return each(std::integral_constant<Var, Var::Mean>{});
        case Var::Max: return each(std::integral_constant<Var, Var::Max>{});
        case Var::Min: return each(std::integral_constant<Var, Var::Min>{});
      }
    }
  }));
  return single(std::move(y));
}

// Where(condition, X, Y): any dtype for X and Y (strings too), all three broadcast.
Expected<std::vector<Tensor>> evalWhere(const std::vector<const Tensor*>& in) {
  if (in.size() != 3 || !in[0] || !in[1] || !in[2]) return Error("expects 3 inputs");
  for (const Tensor* t : in) POPRT_TRY(checkStorage(*t));
  const Tensor &c = *in[0], &x = *in[1], &z = *in[2];
  if (c.dtype() != DType::Bool) return Error("condition must be bool, got " + std::string(dtypeName(c.dtype())));
  if (x.dtype() != z.dtype())
    return Error("X and Y dtypes differ: " + std::string(dtypeName(x.dtype())) + " and " + std::string(dtypeName(z.dtype())));
  std::vector<Shape> shapes{c.shape(), x.shape(), z.shape()};
  POPRT_ASSIGN_OR_RETURN(Shape out, ew::broadcastAll(shapes));
  POPRT_ASSIGN_OR_RETURN(Tensor y, makeOutput(x.dtype(), out));
  auto pc = c.data<uint8_t>();
  if (x.dtype() == DType::String) {
    ew::forEachBroadcast(out, shapes,
                         [&](int64_t i, const int64_t* o) { y.strings()[i] = pc[o[0]] ? x.strings()[o[1]] : z.strings()[o[2]]; });
  } else {
    const size_t es = dtypeSize(x.dtype());
    if (es == 0) return Error(ew::typeError(x.dtype()));
    auto px = x.bytes();
    auto pz = z.bytes();
    auto py = y.bytes();
    ew::forEachBroadcast(out, shapes, [&](int64_t i, const int64_t* o) {
      const uint8_t* src = pc[o[0]] ? &px[o[1] * es] : &pz[o[2] * es];
      std::copy(src, src + es, &py[i * es]);
    });
  }
  return single(std::move(y));
}

// Clip: bounds are attributes before opset 11, optional scalar inputs from 11. A missing bound
// does not clip; when min > max every element becomes max (as numpy.clip).
Expected<std::vector<Tensor>> evalClip(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  POPRT_TRY(checkStorage(x));
  DType dt = x.dtype();
  if (!ew::isNumeric(dt)) return Error(ew::typeError(dt));
  const Tensor* bounds[2] = {optionalInput(in, 1), optionalInput(in, 2)};
  for (const Tensor* b : bounds) {
    if (!b) continue;
    if (ctx.opset() < 11) return Error("min and max are attributes before opset 11, not inputs");
    POPRT_TRY(checkStorage(*b));
    if (b->dtype() != dt) return Error("min/max dtype differs from the input's");
    if (b->numElements() != 1) return Error("min/max must be scalars, got shape " + shapeToString(b->shape()));
  }
  Tensor y(dt, x.shape());
  POPRT_TRY(dispatchNumeric(dt, [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    if constexpr (!std::is_same_v<T, bool>) {
      C lo, hi;
      if constexpr (std::is_floating_point_v<C>) {
        lo = -std::numeric_limits<C>::infinity();
        hi = std::numeric_limits<C>::infinity();
      } else {
        lo = std::numeric_limits<C>::lowest();
        hi = std::numeric_limits<C>::max();
      }
      if (ctx.opset() < 11) {
        double a = node.attrFloat("min", -std::numeric_limits<float>::infinity());
        double b = node.attrFloat("max", std::numeric_limits<float>::infinity());
        if constexpr (std::is_floating_point_v<C>) {
          lo = static_cast<C>(a);
          hi = static_cast<C>(b);
        } else {
          lo = castFromDouble<C>(std::ceil(a));
          hi = castFromDouble<C>(std::floor(b));
        }
      }
      if (bounds[0]) lo = toCompute(bounds[0]->data<T>()[0]);
      if (bounds[1]) hi = toCompute(bounds[1]->data<T>()[0]);
      auto src = x.data<T>();
      auto dst = y.data<T>();
      for (size_t i = 0; i < src.size(); ++i) {
        C v = toCompute(src[i]);
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        dst[i] = fromCompute<T>(v);
      }
    }
  }));
  return single(std::move(y));
}

using Eval = Expected<std::vector<Tensor>> (*)(const ir::Node&, const std::vector<const Tensor*>&, EvalContext&);

struct HostEntry {
  const char* op_type;
  Fp16Policy fp16;
  Eval eval;
};

#define POPRT_EVAL(body)                                                                                              \
  [](const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) -> Expected<std::vector<Tensor>> { \
    (void)node;                                                                                                       \
    (void)ctx;                                                                                                        \
    return body;                                                                                                      \
  }

const HostEntry kHost[] = {
    {"Not", Fp16Policy::TypeAgnostic, POPRT_EVAL(evalNot(in))},
    {"IsNaN", Fp16Policy::Convert, POPRT_EVAL(evalFloatTest(in, [](double x) { return std::isnan(x); }))},
    {"IsInf", Fp16Policy::Convert,
     POPRT_EVAL(evalFloatTest(in, [neg = node.attrInt("detect_negative", 1) != 0, pos = node.attrInt("detect_positive", 1) != 0](
                                      double x) { return std::isinf(x) && (x < 0 ? neg : pos); }))},
    {"Equal", Fp16Policy::Convert, POPRT_EVAL(evalCompare(Cmp::Equal, in))},
    {"Less", Fp16Policy::Convert, POPRT_EVAL(evalCompare(Cmp::Less, in))},
    {"Greater", Fp16Policy::Convert, POPRT_EVAL(evalCompare(Cmp::Greater, in))},
    {"LessOrEqual", Fp16Policy::Convert, POPRT_EVAL(evalCompare(Cmp::LessOrEqual, in))},
    {"GreaterOrEqual", Fp16Policy::Convert, POPRT_EVAL(evalCompare(Cmp::GreaterOrEqual, in))},
    {"And", Fp16Policy::TypeAgnostic, POPRT_EVAL(evalLogic(Logic::And, in))},
    {"Or", Fp16Policy::TypeAgnostic, POPRT_EVAL(evalLogic(Logic::Or, in))},
    {"Xor", Fp16Policy::TypeAgnostic, POPRT_EVAL(evalLogic(Logic::Xor, in))},
    {"BitShift", Fp16Policy::TypeAgnostic, POPRT_EVAL(evalBitShift(node, in))},
    {"Mod", Fp16Policy::Convert, POPRT_EVAL(evalMod(node, in))},
    {"Pow", Fp16Policy::KeepFp32, POPRT_EVAL(evalPow(in, ctx))},
    {"PRelu", Fp16Policy::Convert, POPRT_EVAL(evalPRelu(in))},
    {"Sum", Fp16Policy::Convert, POPRT_EVAL(evalVariadic(Var::Sum, in))},
    {"Mean", Fp16Policy::Convert, POPRT_EVAL(evalVariadic(Var::Mean, in))},
    {"Max", Fp16Policy::Convert, POPRT_EVAL(evalVariadic(Var::Max, in))},
    {"Min", Fp16Policy::Convert, POPRT_EVAL(evalVariadic(Var::Min, in))},
    {"Where", Fp16Policy::TypeAgnostic, POPRT_EVAL(evalWhere(in))},
    {"Clip", Fp16Policy::Convert, POPRT_EVAL(evalClip(node, in, ctx))},
};
#undef POPRT_EVAL

}  // namespace

void registerElementwiseOps(std::vector<OpDef>& ops) {
  for (const auto& u : kUnary)
    if (*u.op_type)
      ops.push_back(
          {u.op_type, u.fp16, LoweringFamily::Unary,
           [fn = u.fn](const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) { return evalUnary(fn, in); }});
  for (const auto& b : kBinary)
    ops.push_back(
        {b.op_type, Fp16Policy::Convert, LoweringFamily::Binary,
         [fn = b.fn](const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) { return evalBinary(fn, in); }});
  registerElementwiseMathOps(ops);
  for (const auto& h : kHost) ops.push_back({h.op_type, h.fp16, ew::loweringOf(h.op_type), h.eval});
}

// The codegen needs the function id of an elementwise node.
std::optional<UnaryFn> unaryFnOf(const std::string& op_type) {
  for (const auto& u : kUnary)
    if (*u.op_type && op_type == u.op_type) return u.fn;
  return std::nullopt;
}

std::optional<BinaryFn> binaryFnOf(const std::string& op_type) {
  for (const auto& b : kBinary)
    if (op_type == b.op_type) return b.fn;
  if (op_type == "Sum") return BinaryFn::Add;
  if (op_type == "Max") return BinaryFn::Max;
  if (op_type == "Min") return BinaryFn::Min;
  if (op_type == "Pow") return BinaryFn::Pow;
  return std::nullopt;
}

}  // namespace poprt::ops
