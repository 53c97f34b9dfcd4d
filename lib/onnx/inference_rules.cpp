#include "lib/onnx/inference_rules.h"

#include <map>
#include <utility>

namespace poprt::onnxio {
namespace {

// The rank of a typed input with a known shape, or -1.
int rankOf(const onnx::TypeProto* t) {
  if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return -1;
  return t->tensor_type().shape().dim_size();
}

using Rules = std::map<std::string, InferenceRule>;  // "domain:op" -> rule

// The table. Each entry says what the op's inference function reads without checking; a family
// shares an entry. (Ranks the functions do check are left to them, so their own errors stay.)
const Rules& rules() {
  static const Rules table = [] {
    Rules r;
    auto add = [&](std::initializer_list<const char*> ops, const InferenceRule& rule) {
      for (const char* op : ops) r[std::string(":") + op] = rule;
    };
    // Convolutions: W is indexed by X's spatial dims (convPoolShapeInference,
    // convTransposeShapeInference); X needs batch, channels and a spatial dim.
    add({"Conv", "ConvTranspose", "ConvInteger", "DeformConv"}, {{{0, 3}, {1, 3, INT_MAX, 0}}, {}, {}});
    add({"QLinearConv"}, {{{0, 3}, {3, 3, INT_MAX, 0}}, {}, {}});
    // The indices have X's shape; the function reads their dims as X's.
    add({"MaxUnpool"}, {{{0, 3}, {1, 0, INT_MAX, 0}}, {}, {}});
    // batch_dims leading dims shared by data and indices, indexed from 0.
    add({"GatherND"}, {{}, {{"batch_dims", 0, false, true}, {"batch_dims", 1, false, true}}, {}});
    // signal [batch][length][1 or 2], frame_step and frame_length scalars, window 1-D.
    add({"STFT"}, {{{0, 3, 3}, {1, 0, 0}, {2, 1, 1}, {3, 0, 0}}, {}, {}});
    return r;
  }();
  return table;
}

}  // namespace

const InferenceRule* inferenceRule(const std::string& domain, const std::string& op, int /*since_version*/) {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = rules().find(d + ":" + op);
  return it == rules().end() ? nullptr : &it->second;
}

std::optional<std::string> checkRule(const InferenceRule& rule, const RuleInputs& inputs) {
  for (int i : rule.need_inputs)
    if (!inputs.type(static_cast<size_t>(i))) return "input " + std::to_string(i) + " is missing or untyped";
  for (const RankRule& r : rule.ranks) {
    const int rank = rankOf(inputs.type(static_cast<size_t>(r.input)));
    if (rank < 0) continue;
    const std::string which = "input " + std::to_string(r.input) + " has rank " + std::to_string(rank);
    if (r.same_as >= 0) {
      const int other = rankOf(inputs.type(static_cast<size_t>(r.same_as)));
      if (other >= 0 && rank != other)
        return which + ", expected " + std::to_string(other) + " (the rank of input " + std::to_string(r.same_as) + ")";
    }
    if (rank < r.min) return which + ", expected at least " + std::to_string(r.min);
    if (rank > r.max) return which + ", expected at most " + std::to_string(r.max);
  }
  for (const AxisRule& a : rule.axes) {
    const onnx::AttributeProto* attr = inputs.attribute(a.attribute);
    const int rank = rankOf(inputs.type(static_cast<size_t>(a.input)));
    if (!attr || rank < 0) continue;
    std::vector<int64_t> values(attr->ints().begin(), attr->ints().end());
    if (attr->has_i()) values.push_back(attr->i());
    const int64_t lo = a.non_negative ? 0 : -rank, hi = a.end_inclusive ? rank : rank - 1;
    for (int64_t v : values)
      if (v < lo || v > hi)
        return "attribute '" + std::string(a.attribute) + "' has " + std::to_string(v) + ", outside [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "] for input " + std::to_string(a.input) + " of rank " +
               std::to_string(rank);
  }
  return std::nullopt;
}

}  // namespace poprt::onnxio
