// Sequence ops (SequenceConstruct/Empty/At/Insert/Erase/Length, SplitToSequence,
// ConcatFromSequence) and optional ops (Optional, OptionalHasElement, OptionalGetElement).
// A present optional is its tensor or sequence; an empty one is RtValue::none().
#include "lib/ops/control_flow_util.h"

namespace poprt::ops::cf {
namespace {

using Values = std::vector<const RtValue*>;
using Result = Expected<std::vector<RtValue>>;

std::vector<RtValue> one(RtValue v) {
  std::vector<RtValue> out;
  out.push_back(std::move(v));
  return out;
}

Expected<const RtValue*> sequenceInput(const Values& in, size_t i) {
  if (i >= in.size() || !in[i]) return Error("input " + std::to_string(i) + " (a sequence) is required");
  if (in[i]->kind != RtValue::Kind::Sequence)
    return Error("input " + std::to_string(i) + " must be a sequence, got a " + kindName(*in[i]));
  return in[i];
}

Expected<const Tensor*> tensorInput(const Values& in, size_t i) {
  if (i >= in.size() || !in[i]) return Error("input " + std::to_string(i) + " is required");
  if (!in[i]->isTensor()) return Error("input " + std::to_string(i) + " must be a tensor, got a " + kindName(*in[i]));
  return &in[i]->tensor;
}

DType elemType(const RtValue& seq) { return seq.sequence.empty() ? seq.elem_type : seq.sequence[0].dtype(); }

Status checkElemType(const RtValue& seq, const Tensor& t) {
  DType want = elemType(seq);
  if (want != DType::Undefined && want != t.dtype())
    return Error("tensor of dtype " + std::string(dtypeName(t.dtype())) + " does not match the sequence's " +
                 std::string(dtypeName(want)));
  return okStatus();
}

// The optional `position` input i: a one-element int32/int64 tensor, in [-size, size) (or up to
// size inclusive when `allow_end`), made non-negative.
Expected<int64_t> position(const Values& in, size_t i, int64_t size, bool allow_end, int64_t fallback) {
  if (i >= in.size() || !in[i]) return fallback;
  if (!in[i]->isTensor()) return Error("'position' must be a tensor, got a " + kindName(*in[i]));
  const Tensor& p = in[i]->tensor;
  if (p.dtype() != DType::Int32 && p.dtype() != DType::Int64)
    return Error("'position' must be int32 or int64, got " + std::string(dtypeName(p.dtype())));
  POPRT_ASSIGN_OR_RETURN(int64_t pos, scalarInt(p, "'position'"));
  const int64_t hi = allow_end ? size : size - 1;
  if (pos < -size || pos > hi)
    return Error("position " + std::to_string(pos) + " is out of range for a sequence of " + std::to_string(size) + " items");
  return pos < 0 ? pos + size : pos;
}

Result evalSequenceEmpty(const ir::Node& node, const Values&, EvalContext&) {
  auto dtype = dtypeFromOnnx(node.attrInt("dtype", static_cast<int64_t>(DType::Float)));
  if (!dtype || *dtype == DType::Undefined) return Error("attribute 'dtype' is not a valid tensor type");
  return one(RtValue::seq({}, *dtype));
}

Result evalSequenceConstruct(const ir::Node&, const Values& in, EvalContext&) {
  if (in.empty()) return Error("expects at least one input");
  std::vector<Tensor> items;
  for (size_t i = 0; i < in.size(); ++i) {
    POPRT_ASSIGN_OR_RETURN(const Tensor* t, tensorInput(in, i));
    if (!items.empty() && t->dtype() != items[0].dtype())
      return Error("inputs differ in dtype: " + std::string(dtypeName(items[0].dtype())) + " and " +
                   std::string(dtypeName(t->dtype())));
    items.push_back(*t);
  }
  if (static_cast<int64_t>(items.size()) > kMaxSequenceItems) return Error("sequence is too long");
  DType elem = items[0].dtype();
  return one(RtValue::seq(std::move(items), elem));
}

Result evalSequenceAt(const ir::Node&, const Values& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const RtValue* seq, sequenceInput(in, 0));
  if (in.size() < 2 || !in[1]) return Error("input 'position' is required");
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  POPRT_ASSIGN_OR_RETURN(int64_t pos, position(in, 1, n, false, 0));
  return one(RtValue::of(seq->sequence[static_cast<size_t>(pos)]));
}

Result evalSequenceInsert(const ir::Node&, const Values& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const RtValue* seq, sequenceInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* t, tensorInput(in, 1));
  POPRT_TRY(checkElemType(*seq, *t));
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  if (n + 1 > kMaxSequenceItems) return Error("sequence is too long");
  POPRT_ASSIGN_OR_RETURN(int64_t pos, position(in, 2, n, true, n));
  std::vector<Tensor> items = seq->sequence;
  items.insert(items.begin() + pos, *t);
  return one(RtValue::seq(std::move(items), t->dtype()));
}

Result evalSequenceErase(const ir::Node&, const Values& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const RtValue* seq, sequenceInput(in, 0));
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  if (n == 0) return Error("cannot erase from an empty sequence");
  POPRT_ASSIGN_OR_RETURN(int64_t pos, position(in, 1, n, false, n - 1));
  std::vector<Tensor> items = seq->sequence;
  items.erase(items.begin() + pos);
  return one(RtValue::seq(std::move(items), elemType(*seq)));
}

Result evalSequenceLength(const ir::Node&, const Values& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const RtValue* seq, sequenceInput(in, 0));
  return one(RtValue::of(int64Tensor({static_cast<int64_t>(seq->sequence.size())}, {})));
}

Result evalSplitToSequence(const ir::Node& node, const Values& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, tensorInput(in, 0));
  const int64_t rank = static_cast<int64_t>(x->shape().size());
  if (rank == 0) return Error("input must have rank >= 1");
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), rank));
  const int64_t dim = x->shape()[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (in.size() > 1 && in[1]) {
    POPRT_ASSIGN_OR_RETURN(const Tensor* split, tensorInput(in, 1));
    if (split->dtype() != DType::Int32 && split->dtype() != DType::Int64)
      return Error("'split' must be int32 or int64, got " + std::string(dtypeName(split->dtype())));
    POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> v, toInt64s(*split));
    if (split->shape().empty()) {  // a scalar: equal chunks, the last one smaller
      if (v[0] <= 0) return Error("'split' must be positive, got " + std::to_string(v[0]));
      if (dim / v[0] >= kMaxSequenceItems) return Error("sequence is too long");
      for (int64_t begin = 0; begin < dim; begin += v[0]) sizes.push_back(std::min(v[0], dim - begin));
    } else {
      if (split->shape().size() != 1) return Error("'split' must be a scalar or 1-D");
      int64_t sum = 0;
      for (int64_t s : v) {
        if (s < 0) return Error("'split' has a negative size " + std::to_string(s));
        if (s > dim - sum) {
          sum = -1;
          break;
        }
        sum += s;
      }
      if (sum != dim)
        return Error("'split' sizes do not add up to dimension " + std::to_string(dim) + " of axis " + std::to_string(axis));
      sizes = std::move(v);
    }
  } else {
    if (dim > kMaxSequenceItems) return Error("sequence is too long");
    sizes.assign(static_cast<size_t>(dim), 1);
    squeeze = node.attrInt("keepdims", 1) == 0;
  }
  if (static_cast<int64_t>(sizes.size()) > kMaxSequenceItems) return Error("sequence is too long");
  std::vector<Tensor> items;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    if (squeeze) {
      POPRT_ASSIGN_OR_RETURN(Tensor t, sliceAxis(*x, axis, begin));
      items.push_back(std::move(t));
    } else {
      POPRT_ASSIGN_OR_RETURN(Tensor t, rangeAxis(*x, axis, begin, s));
      items.push_back(std::move(t));
    }
    begin += s;
  }
  return one(RtValue::seq(std::move(items), x->dtype()));
}

Result evalConcatFromSequence(const ir::Node& node, const Values& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const RtValue* seq, sequenceInput(in, 0));
  if (!node.hasAttr("axis")) return Error("attribute 'axis' is required");
  if (seq->sequence.empty()) return Error("cannot concatenate an empty sequence");
  const bool new_axis = node.attrInt("new_axis", 0) != 0;
  const int64_t rank = static_cast<int64_t>(seq->sequence[0].shape().size());
  if (new_axis) {
    POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), rank + 1));
    POPRT_ASSIGN_OR_RETURN(Tensor t, stackAxis(seq->sequence, axis));
    return one(RtValue::of(std::move(t)));
  }
  if (rank == 0) return Error("cannot concatenate rank-0 tensors without 'new_axis'");
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", 0), rank));
  POPRT_ASSIGN_OR_RETURN(Tensor t, concatAxis(seq->sequence, axis));
  return one(RtValue::of(std::move(t)));
}

// Optional(input) wraps its input; Optional() with no input is empty. (The element type of an
// empty optional comes from the TYPE_PROTO attribute 'type', which the evaluator does not need.)
Result evalOptional(const ir::Node&, const Values& in, EvalContext&) {
  if (in.empty() || !in[0]) return one(RtValue::none());
  if (in[0]->kind == RtValue::Kind::None) return Error("input must be a tensor or a sequence, got an empty optional");
  return one(*in[0]);
}

Result evalOptionalHasElement(const ir::Node&, const Values& in, EvalContext&) {
  bool has = !in.empty() && in[0] && in[0]->kind != RtValue::Kind::None;
  return one(RtValue::of(boolScalar(has)));
}

Result evalOptionalGetElement(const ir::Node&, const Values& in, EvalContext&) {
  if (in.empty() || !in[0]) return Error("input is required");
  if (in[0]->kind == RtValue::Kind::None) return Error("the optional input is empty");
  return one(*in[0]);
}

}  // namespace

void registerSequenceOps(std::vector<OpDef>& ops) {
  struct Entry {
    const char* op_type;
    ValueEvalFn fn;
  };
  const Entry entries[] = {
      {"SequenceEmpty", evalSequenceEmpty},
      {"SequenceConstruct", evalSequenceConstruct},
      {"SequenceAt", evalSequenceAt},
      {"SequenceInsert", evalSequenceInsert},
      {"SequenceErase", evalSequenceErase},
      {"SequenceLength", evalSequenceLength},
      {"SplitToSequence", evalSplitToSequence},
      {"ConcatFromSequence", evalConcatFromSequence},
      {"Optional", evalOptional},
      {"OptionalHasElement", evalOptionalHasElement},
      {"OptionalGetElement", evalOptionalGetElement},
  };
  for (const auto& e : entries) ops.push_back({e.op_type, Fp16Policy::TypeAgnostic, LoweringFamily::None, nullptr, e.fn});
}

}  // namespace poprt::ops::cf
