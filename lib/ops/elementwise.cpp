// Elementwise ops from one table each: a new unary op is one line.
#include "lib/ops/broadcast.h"
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
constexpr UnaryEntry kUnary[] = {
    {"Relu", UnaryFn::Relu, Fp16Policy::Convert},       {"Neg", UnaryFn::Neg, Fp16Policy::Convert},
    {"Abs", UnaryFn::Abs, Fp16Policy::Convert},         {"Exp", UnaryFn::Exp, Fp16Policy::KeepFp32},
    {"Log", UnaryFn::Log, Fp16Policy::KeepFp32},        {"Sqrt", UnaryFn::Sqrt, Fp16Policy::Convert},
    {"Sigmoid", UnaryFn::Sigmoid, Fp16Policy::Convert}, {"Tanh", UnaryFn::Tanh, Fp16Policy::Convert},
    {"Reciprocal", UnaryFn::Reciprocal, Fp16Policy::Convert}, {"Floor", UnaryFn::Floor, Fp16Policy::Convert},
    {"Ceil", UnaryFn::Ceil, Fp16Policy::Convert},
};

struct BinaryEntry {
  const char* op_type;
  BinaryFn fn;
};
constexpr BinaryEntry kBinary[] = {
    {"Add", BinaryFn::Add}, {"Sub", BinaryFn::Sub}, {"Mul", BinaryFn::Mul}, {"Div", BinaryFn::Div},
};

Expected<std::vector<Tensor>> evalUnary(UnaryFn fn, const std::vector<const Tensor*>& in) {
  if (in.size() != 1 || !in[0]) return Error("expects 1 input");
  const Tensor& x = *in[0];
  if (!isFloatingPoint(x.dtype()) && fn != UnaryFn::Relu && fn != UnaryFn::Neg && fn != UnaryFn::Abs)
    return Error("dtype " + std::string(dtypeName(x.dtype())) + " is not supported");
  Tensor y(x.dtype(), x.shape());
  POPRT_TRY(dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto src = x.data<T>();
    auto dst = y.data<T>();
    for (size_t i = 0; i < src.size(); ++i)
      dst[i] = fromCompute<T>(static_cast<typename ComputeType<T>::type>(applyUnary(fn, static_cast<double>(toCompute(src[i])))));
  }));
  return std::vector<Tensor>{std::move(y)};
}

Expected<std::vector<Tensor>> evalBinary(BinaryFn fn, const std::vector<const Tensor*>& in) {
  if (in.size() != 2 || !in[0] || !in[1]) return Error("expects 2 inputs");
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (a.dtype() != b.dtype())
    return Error("input dtypes differ: " + std::string(dtypeName(a.dtype())) + " and " + std::string(dtypeName(b.dtype())));
  if (a.dtype() == DType::Bool) return Error("dtype bool is not supported");
  POPRT_ASSIGN_OR_RETURN(Shape out_shape, broadcastShapes(a.shape(), b.shape()));
  Tensor y(a.dtype(), out_shape);
  std::vector<int64_t> sa = broadcastStrides(a.shape(), out_shape);
  std::vector<int64_t> sb = broadcastStrides(b.shape(), out_shape);
  const size_t rank = out_shape.size();
  POPRT_TRY(dispatchNumeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeType<T>::type;
    if constexpr (std::is_same_v<T, bool>) return;  // rejected above
    else {
    auto pa = a.data<T>();
    auto pb = b.data<T>();
    auto py = y.data<T>();
    std::vector<int64_t> index(rank, 0);
    int64_t ia = 0, ib = 0;
    for (size_t i = 0; i < py.size(); ++i) {
      py[i] = fromCompute<T>(applyBinary<C>(fn, toCompute(pa[ia]), toCompute(pb[ib])));
      // Odometer increment of the output index, moving both input offsets along.
      for (size_t d = rank; d-- > 0;) {
        ia += sa[d];
        ib += sb[d];
        if (++index[d] < out_shape[d]) break;
        ia -= sa[d] * out_shape[d];
        ib -= sb[d] * out_shape[d];
        index[d] = 0;
      }
    }
    }
  }));
  return std::vector<Tensor>{std::move(y)};
}

}  // namespace

void registerElementwiseOps(std::vector<OpDef>& ops) {
  for (const auto& u : kUnary)
    ops.push_back({u.op_type, u.fp16, LoweringFamily::Unary,
                   [fn = u.fn](const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) { return evalUnary(fn, in); }});
  for (const auto& b : kBinary)
    ops.push_back({b.op_type, Fp16Policy::Convert, LoweringFamily::Binary,
                   [fn = b.fn](const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) { return evalBinary(fn, in); }});
}

// The codegen needs the function id of an elementwise node.
std::optional<UnaryFn> unaryFnOf(const std::string& op_type) {
  for (const auto& u : kUnary)
    if (op_type == u.op_type) return u.fn;
  return std::nullopt;
}

std::optional<BinaryFn> binaryFnOf(const std::string& op_type) {
  for (const auto& b : kBinary)
    if (op_type == b.op_type) return b.fn;
  return std::nullopt;
}

}  // namespace poprt::ops
