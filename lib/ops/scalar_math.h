// Scalar functions shared by the reference evaluator and the simulator's codelets, so both agree
// on the maths while staying separate implementations of the loops around it.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace poprt::ops {

// Gelu and GeluTanh are ai.graphcore Gelu (approximate "none" / "tanh", see graphcore_ops.h).
enum class UnaryFn : int32_t { Relu, Neg, Abs, Exp, Log, Sqrt, Sigmoid, Tanh, Reciprocal, Floor, Ceil, Gelu, GeluTanh };
inline constexpr UnaryFn kLastUnaryFn = UnaryFn::GeluTanh;
enum class BinaryFn : int32_t { Add, Sub, Mul, Div, Max, Min, Pow };

inline double applyUnary(UnaryFn fn, double x) {
  switch (fn) {
    case UnaryFn::Relu: return x > 0 ? x : (x == x ? 0.0 : x);
    case UnaryFn::Neg: return -x;
    case UnaryFn::Abs: return std::fabs(x);
    case UnaryFn::Exp: return std::exp(x);
    case UnaryFn::Log: return std::log(x);
    case UnaryFn::Sqrt: return std::sqrt(x);
    case UnaryFn::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case UnaryFn::Tanh: return std::tanh(x);
    case UnaryFn::Reciprocal: return 1.0 / x;
    case UnaryFn::Floor: return std::floor(x);
    case UnaryFn::Ceil: return std::ceil(x);
    case UnaryFn::Gelu: return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440));  // x / sqrt(2)
    case UnaryFn::GeluTanh: return 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
  }
  return x;
}

inline float applyUnaryF(UnaryFn fn, float x) {
  switch (fn) {
    case UnaryFn::Relu: return x > 0.f ? x : (x == x ? 0.f : x);
    case UnaryFn::Neg: return -x;
    case UnaryFn::Abs: return std::fabs(x);
    case UnaryFn::Exp: return std::exp(x);
    case UnaryFn::Log: return std::log(x);
    case UnaryFn::Sqrt: return std::sqrt(x);
    case UnaryFn::Sigmoid: return 1.f / (1.f + std::exp(-x));
    case UnaryFn::Tanh: return std::tanh(x);
    case UnaryFn::Reciprocal: return 1.f / x;
    case UnaryFn::Floor: return std::floor(x);
    case UnaryFn::Ceil: return std::ceil(x);
    case UnaryFn::Gelu:
    case UnaryFn::GeluTanh: return static_cast<float>(applyUnary(fn, x));  // erf/tanh in double, as the evaluator
  }
  return x;
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

}  // namespace poprt::ops

#include <string>
namespace poprt::ops {
// The function id of an elementwise op type (defined beside the op table in elementwise.cpp).
std::optional<UnaryFn> unaryFnOf(const std::string& op_type);
std::optional<BinaryFn> binaryFnOf(const std::string& op_type);
}  // namespace poprt::ops
