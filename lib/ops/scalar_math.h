// Scalar functions shared by the reference evaluator and the simulator's codelets, so both agree
// on the maths while staying separate implementations of the loops around it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace poprt::ops {

// Every function the Unary codelet computes, defined once:
//   X(name, id, op_type, fp16, cost, value)
// name, id:  the UnaryFn and its number, stored in PopEFs (docs/POPEF.md): ids never change, a new
//            function takes the next one (tests/unit/sim/format_pins_test.cpp);
// op_type:   the default-domain op that computes it ("" for the two forms of ai.graphcore Gelu,
//            approximate "none" / "tanh", see graphcore_ops.h), registered by elementwise.cpp;
// fp16:      that op's Fp16Policy;
// cost:      device cycles per float32 vector (sim/elementwise_codelets.cpp): transcendentals 4;
// value:     the result at `x` of type T (double in the evaluator, float in the codelet); Round's
//            nearbyint rounds halves to even in the default rounding mode, as ONNX's Round does.
// A new unary op is one row here plus its test (tests/unit/sim/scalar_table_test.cpp sweeps them all).
// clang-format off
#define POPRT_UNARY_FUNCTIONS(X)                                               \
  X(Relu, 0, "Relu", Convert, 1, scalar::relu(x))                              \
  X(Neg, 1, "Neg", Convert, 1, -x)                                             \
  X(Abs, 2, "Abs", Convert, 1, std::fabs(x))                                   \
  X(Exp, 3, "Exp", KeepFp32, 4, std::exp(x))                                   \
  X(Log, 4, "Log", KeepFp32, 4, std::log(x))                                   \
  X(Sqrt, 5, "Sqrt", Convert, 1, std::sqrt(x))                                 \
  X(Sigmoid, 6, "Sigmoid", Convert, 4, scalar::sigmoid(x))                     \
  X(Tanh, 7, "Tanh", Convert, 4, std::tanh(x))                                 \
  X(Reciprocal, 8, "Reciprocal", Convert, 1, T(1) / x)                         \
  X(Floor, 9, "Floor", Convert, 1, std::floor(x))                              \
  X(Ceil, 10, "Ceil", Convert, 1, std::ceil(x))                                \
  X(Gelu, 11, "", Convert, 4, static_cast<T>(scalar::gelu(x)))                 \
  X(GeluTanh, 12, "", Convert, 4, static_cast<T>(scalar::geluTanh(x)))         \
  X(Softsign, 13, "Softsign", Convert, 2, static_cast<T>(scalar::softsign(x))) \
  X(Softplus, 14, "Softplus", KeepFp32, 4, static_cast<T>(scalar::softplus(x))) \
  X(Sin, 15, "Sin", Convert, 4, std::sin(x))                                   \
  X(Cos, 16, "Cos", Convert, 4, std::cos(x))                                   \
  X(Round, 17, "Round", Convert, 1, std::nearbyint(x))
// clang-format on

enum class UnaryFn : int32_t {
#define POPRT_UNARY_ENUM(name, id, op_type, fp16, cost, value) name = id,
  POPRT_UNARY_FUNCTIONS(POPRT_UNARY_ENUM)
#undef POPRT_UNARY_ENUM
};
inline constexpr UnaryFn kLastUnaryFn = [] {
  int32_t last = 0;
#define POPRT_UNARY_LAST(name, id, op_type, fp16, cost, value) last = (id) > last ? (id) : last;
  POPRT_UNARY_FUNCTIONS(POPRT_UNARY_LAST)
#undef POPRT_UNARY_LAST
  return static_cast<UnaryFn>(last);
}();
// The numbers are stored in PopEFs (Binary vertex params, docs/POPEF.md): they never change, new
// functions take the next number.
enum class BinaryFn : int32_t { Add = 0, Sub = 1, Mul = 2, Div = 3, Max = 4, Min = 5, Pow = 6 };
inline constexpr BinaryFn kLastBinaryFn = BinaryFn::Pow;

// The scalar functions with parameters, defined once for everything that computes them: the
// evaluator's elementwise ops (elementwise.cpp), the recurrent ops' activations (rnn_ops.cpp), the
// ConvAct/GemmAct epilogues (graphcore_ops.h) and, through applyUnary/applyActivation, the
// codelets. A NaN input gives NaN in every one of them.
namespace scalar {
template <class T>
T clamp01(T v) {
  return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
}
template <class T>
T relu(T x) {
  return x > T(0) ? x : (x == x ? T(0) : x);
}
template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}
template <class T>
T swish(T x) {  // x * sigmoid(x), SiLU
  return x / (T(1) + std::exp(-x));
}
template <class T>
T leakyRelu(T x, T alpha) {
  return x < T(0) ? alpha * x : x;
}
template <class T>
T thresholdedRelu(T x, T alpha) {
  return x > alpha ? x : (x == x ? T(0) : x);
}
template <class T>
T hardSigmoid(T x, T alpha, T beta) {
  return clamp01(alpha * x + beta);
}
template <class T>
T hardSwish(T x) {
  return x * clamp01(x / T(6) + T(0.5));
}
template <class T>
T clip(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
inline double elu(double x, double alpha) { return x < 0 ? alpha * std::expm1(x) : x; }
inline double selu(double x, double alpha, double gamma) { return x > 0 ? gamma * x : gamma * (alpha * std::exp(x) - alpha); }
// max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
inline double celu(double x, double alpha) {
  return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha)) + (x == x ? 0.0 : x);
}
// log(1 + exp(x)) without overflowing for large x.
inline double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
inline double softsign(double x) { return x / (1 + std::fabs(x)); }
inline double affine(double x, double alpha, double beta) { return alpha * x + beta; }
inline double scaledTanh(double x, double alpha, double beta) { return alpha * std::tanh(beta * x); }
inline double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440)); }  // x / sqrt(2)
inline double geluTanh(double x) { return 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))); }
}  // namespace scalar

// The function's value at x: in double for the evaluator, in float for the codelet (Gelu's forms
// in double for both, as the evaluator computes them).
template <class T>
T applyUnaryAs(UnaryFn fn, T x) {
  switch (fn) {
#define POPRT_UNARY_CASE(name, id, op_type, fp16, cost, value) \
  case UnaryFn::name: return value;
    POPRT_UNARY_FUNCTIONS(POPRT_UNARY_CASE)
#undef POPRT_UNARY_CASE
  }
  return x;
}
inline double applyUnary(UnaryFn fn, double x) { return applyUnaryAs<double>(fn, x); }
inline float applyUnaryF(UnaryFn fn, float x) { return applyUnaryAs<float>(fn, x); }

// Device cycles per float32 vector of the function (its table row's cost).
inline uint64_t unaryCyclesPerVector(UnaryFn fn) {
  switch (fn) {
#define POPRT_UNARY_COST(name, id, op_type, fp16, cost, value) \
  case UnaryFn::name: return cost;
    POPRT_UNARY_FUNCTIONS(POPRT_UNARY_COST)
#undef POPRT_UNARY_COST
  }
  return 1;
}

template <class T>
T applyBinary(BinaryFn fn, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Integer division by zero and MIN/-1 trap on x86; ONNX leaves them undefined, we give 0 / a.
    if (fn == BinaryFn::Div && (b == 0 || (std::is_signed_v<T> && b == T(-1)))) {
      using U = std::make_unsigned_t<T>;
      return b == 0 ? T(0) : static_cast<T>(U(0) - static_cast<U>(a));  // wraps for MIN / -1
    }
    // Signed overflow is undefined in C++; ONNX Runtime wraps. Unsigned arithmetic (at least as
    // wide as unsigned int, so small types do not promote to a signed int) wraps the same way.
    using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    if (fn == BinaryFn::Add) return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    if (fn == BinaryFn::Sub) return static_cast<T>(static_cast<W>(a) - static_cast<W>(b));
    if (fn == BinaryFn::Mul) return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
  }
  switch (fn) {
    case BinaryFn::Add: return a + b;
    case BinaryFn::Sub: return a - b;
    case BinaryFn::Mul: return a * b;
    case BinaryFn::Div: return a / b;
    case BinaryFn::Max: return (a > b || a != a) ? a : b;  // NaN wins, as ONNX Max/Min
    case BinaryFn::Min: return (a < b || a != a) ? a : b;
    case BinaryFn::Pow: return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
  return a;
}

// f(fn) with fn a compile-time constant (std::integral_constant), so a loop calling
// applyBinary(fn, ...) inside f has no switch per element.
template <class F>
void withBinaryFn(BinaryFn fn, F&& f) {
  switch (fn) {
    case BinaryFn::Add: return f(std::integral_constant<BinaryFn, BinaryFn::Add>{});
    case BinaryFn::Sub: return f(std::integral_constant<BinaryFn, BinaryFn::Sub>{});
    case BinaryFn::Mul: return f(std::integral_constant<BinaryFn, BinaryFn::Mul>{});
    case BinaryFn::Div: return f(std::integral_constant<BinaryFn, BinaryFn::Div>{});
    case BinaryFn::Max: return f(std::integral_constant<BinaryFn, BinaryFn::Max>{});
    case BinaryFn::Min: return f(std::integral_constant<BinaryFn, BinaryFn::Min>{});
    case BinaryFn::Pow: return f(std::integral_constant<BinaryFn, BinaryFn::Pow>{});
  }
}

}  // namespace poprt::ops

#include <string>
namespace poprt::ops {
// The function id of an elementwise op type (defined beside the op table in elementwise.cpp).
std::optional<UnaryFn> unaryFnOf(const std::string& op_type);
std::optional<BinaryFn> binaryFnOf(const std::string& op_type);
}  // namespace poprt::ops
