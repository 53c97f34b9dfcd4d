// A vertex kind's params between its typed struct (lib/exec/codelets.h) and the int64 `params`
// and float `fparams` a PopEF stores: one encoder for codegen (makeVertex) and one decoder for
// the simulator (decodeParams), both walking the struct's `members` list, so the two sides
// cannot disagree on a position.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lib/exec/executable.h"
#include "lib/support/status.h"

namespace poprt::exec {

namespace params_detail {

// Appends the members to the vertex's lists.
class Writer {
 public:
  Writer(std::vector<int64_t>& params, std::vector<float>& fparams) : params_(params), fparams_(fparams) {}
  template <class T>
  void param(const T& x) {
    params_.push_back(static_cast<int64_t>(x));
  }
  void fparam(float x) { fparams_.push_back(x); }
  void array(std::span<const int64_t> s, int64_t n) {
    POPRT_CHECK(static_cast<int64_t>(s.size()) == n, "a vertex param array does not have its declared length");
    params_.insert(params_.end(), s.begin(), s.end());
  }
  template <class M>
  void optional(std::optional<M>& tail) {
    if (tail) tail->members(*this);
  }

 private:
  std::vector<int64_t>& params_;
  std::vector<float>& fparams_;
};

// Reads the members back from an untrusted vertex: the counts must match the list exactly, a
// flag must be 0 or 1 and an enum's value must fit its type (its range is the kind's check).
// Arrays are views of the vertex's params, valid while the vertex is.
class Reader {
 public:
  explicit Reader(const Vertex& v) : v_(v) {}
  template <class T>
  void param(T& x) {
    if (at_ >= v_.params.size()) return fail();
    const int64_t raw = v_.params[at_++];
    if constexpr (std::is_same_v<T, bool>) {
      if (raw != 0 && raw != 1) return fail("has a flag other than 0 or 1");
      x = raw != 0;
    } else if constexpr (std::is_enum_v<T>) {
      using U = std::underlying_type_t<T>;
      if (raw < std::numeric_limits<U>::min() || raw > std::numeric_limits<U>::max()) return fail("has an out-of-range kind");
      x = static_cast<T>(raw);
    } else {
      x = raw;
    }
  }
  void fparam(float& x) {
    if (fat_ >= v_.fparams.size()) return fail();
    x = v_.fparams[fat_++];
  }
  void array(std::span<const int64_t>& s, int64_t n) {
    if (n < 0 || static_cast<uint64_t>(n) > v_.params.size() - std::min(at_, v_.params.size())) return fail();
    s = {v_.params.data() + at_, static_cast<size_t>(n)};
    at_ += static_cast<size_t>(n);
  }
  template <class M>
  void optional(std::optional<M>& tail) {
    if (at_ >= v_.params.size()) return tail.reset();
    tail.emplace().members(*this);
  }
  Status finish(const char* kind) const {
    if (!error_.empty()) return Error(std::string(kind) + " vertex " + error_);
    if (at_ != v_.params.size() || fat_ != v_.fparams.size())
      return Error(std::string(kind) + " vertex has " + std::to_string(v_.params.size()) + " params and " +
                   std::to_string(v_.fparams.size()) + " fparams, not its layout's");
    return okStatus();
  }

 private:
  void fail(const char* why = "has too few params for its layout") {
    if (error_.empty()) error_ = why;
    at_ = v_.params.size() + 1;  // nothing further is read; finish() reports the first failure
  }
  const Vertex& v_;
  size_t at_ = 0, fat_ = 0;
  std::string error_;
};

}  // namespace params_detail

// A vertex of the kind of `P` with its params encoded.
template <class P>
Vertex makeVertex(uint32_t tile, DType dtype, std::vector<Field> fields, P params) {
  std::vector<int64_t> ints;
  std::vector<float> floats;
  params_detail::Writer writer(ints, floats);
  params.members(writer);
  return Vertex{tile, P::kCodelet, dtype, std::move(fields), std::move(ints), std::move(floats)};
}

// The params of `v` (of P's kind) as the struct, or which part of the layout they break. The
// struct's arrays view v.params.
template <class P>
Expected<P> decodeParams(const Vertex& v) {
  P p;
  params_detail::Reader reader(v);
  p.members(reader);
  POPRT_TRY(reader.finish(codeletName(P::kCodelet).data()));
  return p;
}

}  // namespace poprt::exec
