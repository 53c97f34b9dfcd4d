// Cast and CastLike: every numeric dtype, bool and string, with one rounding to the target
// (16-bit floats from double or integers are rounded once, never float-then-half).
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "lib/ops/tensor_cast.h"
#include "lib/ops/tensor_util.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace tensor_detail {

namespace {

template <class T>
constexpr bool kHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// x rounded to float with round-to-odd: a later round-to-nearest to a format with at most 22
// significand bits (half, bfloat16) then gives the correctly rounded result of x itself.
float roundToOddFloat(long double x) {
  if (std::isnan(x)) return std::signbit(x) ? -std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::quiet_NaN();
  float f = static_cast<float>(x);
  if (std::isinf(x) || static_cast<long double>(f) == x) return f;
  if (std::fabs(static_cast<long double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

// Truncation toward zero; values outside int64 wrap like C++ integer conversion of the int64
// (so -1.0 -> 255 as uint8, as numpy does); NaN -> 0; beyond int64 saturates.
template <class D>
D floatToInt(double x) {
  if (std::isnan(x)) return D(0);
  const double t = std::trunc(x);
  if constexpr (std::is_same_v<D, uint64_t>)
    if (t >= 0 && t < 18446744073709551616.0) return static_cast<uint64_t>(t);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<D>(static_cast<int64_t>(t));
  return t < 0 ? std::numeric_limits<D>::min() : std::numeric_limits<D>::max();
}

template <class D, class S>
D convertValue(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (kHalfLike<S>) {
    return convertValue<D>(static_cast<float>(s));
  } else if constexpr (std::is_same_v<D, bool>) {
    return s != S(0);
  } else if constexpr (kHalfLike<D>) {
    if constexpr (std::is_same_v<S, float>)
      return D(s);
    else
      return D(roundToOddFloat(static_cast<long double>(s)));
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(s);  // correctly rounded from any integer or wider float
  } else if constexpr (std::is_floating_point_v<S>) {
    return floatToInt<D>(static_cast<double>(s));
  } else {
    return static_cast<D>(s);  // integer to integer: two's complement wrap
  }
}

// The shortest decimal digits of `v` that read back as the same value of its type:
// digits (no dot) and the decimal exponent of the first digit.
template <class T>
void shortestDigits(T v, std::string& digits, int& exp10) {
  char buf[64];
  std::string sci;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    sci.assign(buf, r.ptr);
  } else {  // 16-bit floats: the fewest digits that round-trip (exactly printed decimal, nearest first)
    const float f = static_cast<float>(v);
    for (int p = 0; p < 17; ++p) {
      std::snprintf(buf, sizeof buf, "%.*e", p, static_cast<double>(f));
      if (T(std::strtof(buf, nullptr)).bits == v.bits) break;
    }
    sci = buf;
  }
  size_t pos = 0;
  if (sci[pos] == '-') ++pos;
  digits.clear();
  for (; pos < sci.size() && sci[pos] != 'e'; ++pos)
    if (sci[pos] != '.') digits += sci[pos];
  exp10 = pos + 1 < sci.size() ? std::atoi(sci.c_str() + pos + 1) : 0;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
}

}  // namespace

// numpy's str() of a float scalar: positional for 1e-4 <= |v| < 1e16 ("0.5", "3.0"),
// scientific otherwise ("1e-05", "1.5e+20"); "nan", "inf", "-inf".
template <class T>
std::string formatFloat(T v) {
  const double d = static_cast<double>(static_cast<typename ComputeType<T>::type>(v));
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  std::string sign = std::signbit(d) ? "-" : "";
  if (d == 0) return sign + "0.0";
  std::string digits;
  int e = 0;
  shortestDigits(v, digits, e);
  const double a = std::fabs(d);
  if (a >= 1e-4 && a < 1e16) {
    std::string s;
    if (e >= 0) {
      const size_t int_len = static_cast<size_t>(e) + 1;
      std::string ip = digits.substr(0, std::min(int_len, digits.size()));
      if (ip.size() < int_len) ip.append(int_len - ip.size(), '0');
      std::string fp = digits.size() > int_len ? digits.substr(int_len) : "0";
      s = ip + "." + fp;
    } else {
      s = "0." + std::string(static_cast<size_t>(-e - 1), '0') + digits;
    }
    return sign + s;
  }
  std::string s = digits.substr(0, 1);
  if (digits.size() > 1) s += "." + digits.substr(1);
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", e < 0 ? '-' : '+', std::abs(e));
  return sign + s + eb;
}

namespace {

template <class T>
std::string toText(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? "True" : "False";
  else if constexpr (std::is_floating_point_v<T> || kHalfLike<T>)
    return formatFloat(v);
  else
    return std::to_string(v);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// "1.5", "-2e-3", "1E8", "INF", "+inf", "-Infinity", "NaN" (case-insensitive).
template <class F>
Expected<F> parseFloat(std::string_view text) {
  std::string_view s = trim(text);
  bool neg = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  F v{};
  auto r = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (s.empty() || s.front() == '+' || s.front() == '-' || r.ec == std::errc::invalid_argument || r.ptr != s.data() + s.size())
    return Error("cannot parse '" + std::string(text) + "' as a number");
  if (r.ec == std::errc::result_out_of_range) {  // from_chars leaves v alone: let strtod give inf or 0
    const std::string tmp(s);
    v = std::is_same_v<F, float> ? static_cast<F>(std::strtof(tmp.c_str(), nullptr))
                                 : static_cast<F>(std::strtod(tmp.c_str(), nullptr));
  }
  return neg ? -v : v;
}

template <class T>
Expected<T> fromText(const std::string& text) {
  if constexpr (std::is_same_v<T, bool>) {
    std::string_view s = trim(text);
    if (s == "True" || s == "true" || s == "TRUE") return true;
    if (s == "False" || s == "false" || s == "FALSE" || s.empty()) return false;
    POPRT_ASSIGN_OR_RETURN(double d, parseFloat<double>(s));
    return d != 0;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return parseFloat<T>(text);
  } else if constexpr (kHalfLike<T>) {
    POPRT_ASSIGN_OR_RETURN(double d, parseFloat<double>(text));
    return convertValue<T>(d);
  } else {
    std::string_view s = trim(text);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    T v{};
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size()) return v;
    if (r.ec == std::errc::result_out_of_range) return Error("'" + text + "' is out of range for the target integer type");
    POPRT_ASSIGN_OR_RETURN(double d, parseFloat<double>(text));  // "1e3", "2.5"
    return convertValue<T>(d);
  }
}

}  // namespace

Expected<Tensor> castTensor(const Tensor& in, DType to) {
  if (to == DType::Undefined || to == DType::Complex64 || to == DType::Complex128)
    return Error("cast to " + std::string(dtypeName(to)) + " is not supported");
  const DType from = in.dtype();
  if (from == to) return in;
  Tensor out(to, in.shape());
  const size_t n = static_cast<size_t>(in.numElements());
  if (from == DType::String) {
    Status inner = okStatus();
    POPRT_TRY(dispatchNumeric(to, [&](auto dtag) {
      using D = decltype(dtag);
      auto dst = out.data<D>();
      for (size_t i = 0; i < n && inner.ok(); ++i) {
        auto v = fromText<D>(in.strings()[i]);
        if (!v.ok())
          inner = v.error();
        else
          dst[i] = *v;
      }
    }));
    POPRT_TRY(inner);
    return out;
  }
  if (to == DType::String) {
    POPRT_TRY(dispatchNumeric(from, [&](auto stag) {
      using S = decltype(stag);
      auto src = in.data<S>();
      for (size_t i = 0; i < n; ++i) out.strings()[i] = toText(src[i]);
    }));
    return out;
  }
  Status st = okStatus();
  POPRT_TRY(dispatchNumeric(from, [&](auto stag) {
    using S = decltype(stag);
    st = dispatchNumeric(to, [&](auto dtag) {
      using D = decltype(dtag);
      auto src = in.data<S>();
      auto dst = out.data<D>();
      for (size_t i = 0; i < n; ++i) dst[i] = convertValue<D>(src[i]);
    });
  }));
  POPRT_TRY(st);
  return out;
}

template std::string formatFloat<float>(float);
template std::string formatFloat<double>(double);
template std::string formatFloat<Half>(Half);
template std::string formatFloat<BFloat16>(BFloat16);

}  // namespace tensor_detail

namespace {

using namespace tensor_detail;

Expected<std::vector<Tensor>> evalCast(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  if (!node.hasAttr("to")) return Error("attribute 'to' is required");
  auto to = dtypeFromOnnx(node.attrInt("to", 0));
  if (!to) return Error("attribute 'to' is not a known data type: " + std::to_string(node.attrInt("to", 0)));
  POPRT_ASSIGN_OR_RETURN(Tensor y, castTensor(*x, *to));
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalCastLike(const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* like, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(Tensor y, castTensor(*x, like->dtype()));
  return single(std::move(y));
}

}  // namespace

void registerCastOps(std::vector<OpDef>& ops) {
  ops.push_back({"Cast", Fp16Policy::TypeAgnostic, LoweringFamily::Cast, evalCast});
  ops.push_back({"CastLike", Fp16Policy::TypeAgnostic, LoweringFamily::None, evalCastLike});
}

}  // namespace poprt::ops
