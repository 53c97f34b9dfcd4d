// A runtime value of the reference evaluator: a tensor, a sequence of tensors, or an empty
// optional. (A present optional is just its tensor or sequence.)
#pragma once

#include <vector>

#include "lib/support/tensor.h"

namespace poprt::ops {

struct RtValue {
  enum class Kind { Tensor, Sequence, None };
  Kind kind = Kind::Tensor;
  Tensor tensor;
  std::vector<Tensor> sequence;
  DType elem_type = DType::Undefined;  // of an empty sequence or optional, when known

  static RtValue of(Tensor t) {
    RtValue v;
    v.tensor = std::move(t);
    return v;
  }
  static RtValue seq(std::vector<Tensor> items, DType elem = DType::Undefined) {
    RtValue v;
    v.kind = Kind::Sequence;
    v.sequence = std::move(items);
    v.elem_type = elem;
    return v;
  }
  static RtValue none(DType elem = DType::Undefined) {
    RtValue v;
    v.kind = Kind::None;
    v.elem_type = elem;
    return v;
  }
  bool isTensor() const { return kind == Kind::Tensor; }
};

}  // namespace poprt::ops
