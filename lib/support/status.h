// Status and Expected<T>: how every input-driven failure travels back to the caller.
// Internal invariants use POPRT_CHECK, which throws InternalError ("internal error: ...").
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace poprt {

// A user-facing error: one line that says what, where, expected vs actual, and a hint.
class Error {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string& message() const { return message_; }
  // Returns a copy with "context: " in front, so callers add where the error happened.
  Error withContext(const std::string& context) const { return Error(context + ": " + message_); }

 private:
  std::string message_;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_{""};
  bool ok_ = true;
};

using Status = Expected<void>;
inline Status okStatus() { return {}; }

// A usage error found after a command line or an options object was read (a missing required
// option, options that conflict): the CLIs print "<tool>: usage error: ..." and exit 2, the
// Python package raises ValueError.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error("internal error: " + what) {}
};

}  // namespace poprt

#define POPRT_CONCAT_INNER(a, b) a##b
#define POPRT_CONCAT(a, b) POPRT_CONCAT_INNER(a, b)

// Returns the error of a Status/Expected expression from the enclosing function.
#define POPRT_TRY(expr)                                            \
  do {                                                             \
    auto&& poprt_try_result_ = (expr);                             \
    if (!poprt_try_result_.ok()) return poprt_try_result_.error(); \
  } while (0)

// `POPRT_ASSIGN_OR_RETURN(auto x, f())` binds the value or returns the error.
#define POPRT_ASSIGN_OR_RETURN(lhs, expr) POPRT_ASSIGN_OR_RETURN_IMPL(POPRT_CONCAT(poprt_expected_, __LINE__), lhs, expr)
#define POPRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.error();                \
  lhs = std::move(tmp).value()

#define POPRT_CHECK(cond, msg)                                                                                                   \
  do {                                                                                                                           \
    if (!(cond)) throw ::poprt::InternalError(std::string(msg) + " (" #cond ", " __FILE__ ":" + std::to_string(__LINE__) + ")"); \
  } while (0)
