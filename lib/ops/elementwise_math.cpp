// The elementwise ops of one unary function with parameters (Elu, Selu, LeakyRelu, HardSigmoid,
// Celu, Shrink...) and the trigonometric ones, computed in double by the reference evaluator from
// the functions of scalar_math.h. LeakyRelu, HardSigmoid and HardSwish also lower to Activation
// vertices; the rest run on the host.
#include <cmath>
#include <functional>

#include "lib/ops/elementwise_util.h"
#include "lib/ops/registry.h"
#include "lib/ops/scalar_math.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace {

using ScalarFn = std::function<double(double)>;
enum class Types { Float, Numeric };

bool allowed(Types t, DType d) { return t == Types::Float ? isFloatingPoint(d) : ew::isNumeric(d); }

// A unary op computed in double from its attributes: `make` reads them and returns the function.
struct MathEntry {
  const char* op_type;
  Types types;
  Fp16Policy fp16;
  ScalarFn (*make)(const ir::Node&);
};

#define POPRT_FIXED(expr) [](const ir::Node&) -> ScalarFn { return [](double x) -> double { return expr; }; }

const MathEntry kMath[] = {
    {"Acos", Types::Float, Fp16Policy::Convert, POPRT_FIXED(std::acos(x))},
    {"Acosh", Types::Float, Fp16Policy::Convert, POPRT_FIXED(std::acosh(x))},
    {"Asin", Types::Float, Fp16Policy::Convert, POPRT_FIXED(std::asin(x))},
    {"Asinh", Types::Float, Fp16Policy::Convert, POPRT_FIXED(std::asinh(x))},
    {"Atan", Types::Float, Fp16Policy::Convert, POPRT_FIXED(std::atan(x))},
    {"Atanh", Types::Float, Fp16Policy::Convert, POPRT_FIXED(std::atanh(x))},
    {"Cosh", Types::Float, Fp16Policy::KeepFp32, POPRT_FIXED(std::cosh(x))},
    {"Sinh", Types::Float, Fp16Policy::KeepFp32, POPRT_FIXED(std::sinh(x))},
    {"Tan", Types::Float, Fp16Policy::Convert, POPRT_FIXED(std::tan(x))},
    {"Erf", Types::Numeric, Fp16Policy::Convert, POPRT_FIXED(std::erf(x))},
    {"Sign", Types::Numeric, Fp16Policy::Convert, POPRT_FIXED(x > 0 ? 1.0 : (x < 0 ? -1.0 : x))},
    {"HardSwish", Types::Float, Fp16Policy::Convert, POPRT_FIXED(scalar::hardSwish(x))},
    {"Elu", Types::Float, Fp16Policy::Convert,
     [](const ir::Node& n) -> ScalarFn {
       double a = n.attrFloat("alpha", 1.0f);
       return [a](double x) { return scalar::elu(x, a); };
     }},
    {"Selu", Types::Float, Fp16Policy::Convert,
     [](const ir::Node& n) -> ScalarFn {
       double a = n.attrFloat("alpha", 1.67326319217681884765625f), g = n.attrFloat("gamma", 1.05070102214813232421875f);
       return [a, g](double x) { return scalar::selu(x, a, g); };
     }},
    {"LeakyRelu", Types::Float, Fp16Policy::Convert,
     [](const ir::Node& n) -> ScalarFn {
       double a = n.attrFloat("alpha", 0.01f);
       return [a](double x) { return scalar::leakyRelu(x, a); };
     }},
    {"ThresholdedRelu", Types::Float, Fp16Policy::Convert,
     [](const ir::Node& n) -> ScalarFn {
       double a = n.attrFloat("alpha", 1.0f);
       return [a](double x) { return scalar::thresholdedRelu(x, a); };
     }},
    {"HardSigmoid", Types::Float, Fp16Policy::Convert,
     [](const ir::Node& n) -> ScalarFn {
       double a = n.attrFloat("alpha", 0.2f), b = n.attrFloat("beta", 0.5f);
       return [a, b](double x) { return scalar::hardSigmoid(x, a, b); };
     }},
    {"Celu", Types::Float, Fp16Policy::Convert,
     [](const ir::Node& n) -> ScalarFn {
       double a = n.attrFloat("alpha", 1.0f);
       return [a](double x) { return scalar::celu(x, a); };
     }},
    {"Shrink", Types::Numeric, Fp16Policy::Convert,
     [](const ir::Node& n) -> ScalarFn {
       double b = n.attrFloat("bias", 0.0f), l = n.attrFloat("lambd", 0.5f);
       return [b, l](double x) { return x < -l ? x + b : (x > l ? x - b : (x == x ? 0.0 : x)); };
     }},
};
#undef POPRT_FIXED

Expected<std::vector<Tensor>> evalMath(const MathEntry& e, const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  POPRT_TRY(checkStorage(x));
  if (!allowed(e.types, x.dtype())) return Error(ew::typeError(x.dtype()));
  ScalarFn f = e.make(node);
  Tensor y(x.dtype(), x.shape());
  POPRT_TRY(dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto src = x.data<T>();
    auto dst = y.data<T>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = castFromDouble<T>(f(static_cast<double>(toCompute(src[i]))));
  }));
  return single(std::move(y));
}

}  // namespace

void registerElementwiseMathOps(std::vector<OpDef>& ops) {
  for (const auto& m : kMath)
    ops.push_back(
        {m.op_type, m.fp16, ew::loweringOf(m.op_type),
         [e = &m](const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) { return evalMath(*e, node, in); }});
}

}  // namespace poprt::ops
