#include "lib/onnx/inference_rules.h"

#include <map>
#include <utility>

#include "lib/ir/graph.h"

namespace poprt::onnxio {
namespace {

// The rank of a typed input with a known shape, or -1.
int rankOf(const onnx::TypeProto* t) {
  if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return -1;
  return t->tensor_type().shape().dim_size();
}

using Rules = std::map<std::string, InferenceRule>;  // "domain:op" -> rule

constexpr int64_t kMaxDim = int64_t{1} << 31;  // libonnx loops over dims this size (auto_pad SAME)
constexpr int64_t kMaxRank = 64;

// Conv and pools with auto_pad SAME_* subtract the stride from a dim in a loop: bounded dims.
std::string windowDims(const RuleInputs& in) {
  const onnx::TypeProto* t = in.type(0);
  if (rankOf(t) < 0) return "";
  for (const auto& d : t->tensor_type().shape().dim())
    if (d.has_dim_value() && d.dim_value() > kMaxDim)
      return "input 0 has the dim " + std::to_string(d.dim_value()) + ", beyond 2^31";
  return "";
}

// Expand's and ConstantOfShape's shape input: its length is the output's rank, and libonnx adds
// that many dims when the values are unknown.
std::string shapeInputLength(const RuleInputs& in, size_t i) {
  const onnx::TypeProto* t = in.type(i);
  if (rankOf(t) != 1) return "";
  const auto& d = t->tensor_type().shape().dim(0);
  if (d.has_dim_value() && d.dim_value() > kMaxRank)
    return "input " + std::to_string(i) + " (the shape) has " + std::to_string(d.dim_value()) + " values, more than " +
           std::to_string(kMaxRank) + " dims";
  return "";
}

// Data propagation of Add/Sub/Mul-14 broadcasts a 1-element value against an empty one and
// then reads the empty one.
std::string propagatedBroadcast(const RuleInputs& in) {
  const onnx::TensorShapeProto *a = in.propagated(0), *b = in.propagated(1);
  if (a && b && ((a->dim_size() == 0) != (b->dim_size() == 0)))
    return "inputs 0 and 1 hold " + std::to_string(a->dim_size()) + " and " + std::to_string(b->dim_size()) +
           " shape values, which do not broadcast";
  return "";
}

const Rules& rules() {
  static const Rules table = [] {
    Rules r;
    auto add = [&](const char* domain, std::initializer_list<const char*> ops, const InferenceRule& rule) {
      for (const char* op : ops) r[std::string(domain) + ":" + op] = rule;
    };
    const InferenceRule no_rule;
    // Convolutions: W is indexed by X's spatial dims (convPoolShapeInference,
    // convTransposeShapeInference); X needs batch, channels and a spatial dim.
    InferenceRule conv{{{0, 3}, {1, 3, INT_MAX, 0}}};
    conv.extra = windowDims;
    add("", {"Conv", "ConvTranspose", "ConvInteger", "DeformConv"}, conv);
    InferenceRule qconv{{{0, 3}, {3, 3, INT_MAX, 0}}};
    qconv.extra = windowDims;
    add("", {"QLinearConv"}, qconv);
    InferenceRule pool = no_rule;
    pool.extra = windowDims;
    add("", {"AveragePool", "MaxPool", "LpPool"}, pool);
    add("", {"MaxRoiPool"}, {{{0, 4}}});
    // The indices have X's shape; the function reads their dims as X's.
    InferenceRule unpool{{{0, 3}, {1, 0, INT_MAX, 0}}};
    unpool.need_inputs = {1};
    unpool.extra = windowDims;
    add("", {"MaxUnpool"}, unpool);
    // [seq, batch, input] and the weights [directions, gates x hidden, ...].
    add("", {"RNN", "GRU", "LSTM"}, {{{0, 3, 3}, {1, 3, 3}, {2, 3, 3}}});
    add("", {"Gemm"}, {{{0, 2, 2}, {1, 2, 2}}});
    // signal [batch][length][1 or 2], frame_step and frame_length scalars, window 1-D.
    add("", {"STFT"}, {{{0, 3, 3}, {1, 0, 0}, {2, 1, 1}, {3, 0, 0}}});
    add("", {"LayerNormalization"}, {{}, {{"axis", 0}}});
    // batch_dims leading dims shared by data and indices, indexed from 0.
    add("", {"GatherND"}, {{}, {{"batch_dims", 0, false, true}, {"batch_dims", 1, false, true}}});
    // blocksize squared divides a dim: it must not overflow to 0.
    add("", {"DepthToSpace", "SpaceToDepth"}, {{}, {}, {}, {{"blocksize", 1, 1 << 16}}});
    InferenceRule einsum;
    einsum.extra = [](const RuleInputs& in) -> std::string {
      // Without "->" libonnx counts letters in an array of 26 lower-case ones.
      const onnx::AttributeProto* eq = in.attribute("equation");
      if (!eq || eq->s().find("->") != std::string::npos) return "";
      for (char c : eq->s())
        if (!(c >= 'a' && c <= 'z') && c != ',' && c != '.' && c != ' ')
          return "equation '" + eq->s() +
                 "' has no '->' and a character other than a-z, ',' and '.' (hint: give the "
                 "output's letters after '->')";
      return "";
    };
    add("", {"Einsum"}, einsum);
    InferenceRule reshape;
    reshape.extra = [](const RuleInputs& in) -> std::string {
      if (auto v = in.values(1))
        for (int64_t d : *v)
          if (d < -1) return "input 1 (the shape) holds " + std::to_string(d) + "; a dim is -1, 0 or positive";
      return "";
    };
    add("", {"Reshape"}, reshape);
    InferenceRule split_seq;
    split_seq.extra = [](const RuleInputs& in) -> std::string {
      if (auto v = in.values(1))
        for (int64_t d : *v)
          if (d <= 0) return "input 1 (split) holds " + std::to_string(d) + "; each length must be positive";
      return "";
    };
    add("", {"SplitToSequence"}, split_seq);
    InferenceRule scan;
    scan.extra = [](const RuleInputs& in) -> std::string {
      const onnx::AttributeProto* n = in.attribute("num_scan_inputs");
      if (!n) return "attribute 'num_scan_inputs' is missing";
      const int64_t inputs = static_cast<int64_t>(in.count());
      if (n->i() < 1 || n->i() > inputs)
        return "attribute 'num_scan_inputs' is " + std::to_string(n->i()) + ", expected 1 to " + std::to_string(inputs);
      if (static_cast<int64_t>(in.outputs()) < inputs - n->i() - 1)
        return std::to_string(in.outputs()) + " outputs are fewer than the loop state variables";
      return "";
    };
    add("", {"Scan"}, scan);
    InferenceRule expand;
    expand.extra = [](const RuleInputs& in) { return shapeInputLength(in, 1); };
    add("", {"Expand"}, expand);
    InferenceRule const_of_shape;
    const_of_shape.extra = [](const RuleInputs& in) { return shapeInputLength(in, 0); };
    add("", {"ConstantOfShape"}, const_of_shape);
    InferenceRule slice;
    slice.extra = [](const RuleInputs& in) -> std::string {
      if (auto v = in.values(4))
        for (int64_t step : *v)
          if (step == 0 || step > kMaxDim || step < -kMaxDim)
            return "input 4 (steps) holds " + std::to_string(step) + "; a step is nonzero and within 2^31";
      return "";
    };
    add("", {"Slice"}, slice);
    InferenceRule broadcast;
    broadcast.extra = propagatedBroadcast;
    add("", {"Add", "Sub", "Mul"}, broadcast);
    // Functions that read input 0's type without testing that it has one.
    InferenceRule typed_input;
    typed_input.need_inputs = {0};
    add("", {"EyeLike"}, typed_input);
    InferenceRule shape;  // Shape-15's data propagation reads its input's type unchecked
    shape.extra = [](const RuleInputs& in) -> std::string {
      return in.propagating() && !in.type(0) ? "input 0 has no type" : "";
    };
    add("", {"Shape"}, shape);
    add("ai.onnx.ml", {"CategoryMapper", "DictVectorizer", "LabelEncoder"}, typed_input);
    return r;
  }();
  return table;
}

}  // namespace

const InferenceRule* inferenceRule(const std::string& domain, const std::string& op) {
  const std::string d = ir::canonicalDomain(domain);
  auto it = rules().find(d + ":" + op);
  return it == rules().end() ? nullptr : &it->second;
}

std::optional<std::string> checkRule(const InferenceRule& rule, const RuleInputs& inputs) {
  for (const RangeRule& r : rule.ranges)
    if (const onnx::AttributeProto* attr = inputs.attribute(r.attribute)) {
      std::vector<int64_t> values(attr->ints().begin(), attr->ints().end());
      if (attr->has_i()) values.push_back(attr->i());
      for (int64_t v : values)
        if (v < r.min || v > r.max)
          return "attribute '" + std::string(r.attribute) + "' has " + std::to_string(v) + ", outside [" + std::to_string(r.min) +
                 ", " + std::to_string(r.max) + "]";
    }
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
        return "attribute '" + std::string(a.attribute) + "' has " + std::to_string(v) + ", outside [" + std::to_string(lo) +
               ", " + std::to_string(hi) + "] for input " + std::to_string(a.input) + " of rank " + std::to_string(rank);
  }
  if (rule.extra)
    if (std::string broken = rule.extra(inputs); !broken.empty()) return broken;
  return std::nullopt;
}

}  // namespace poprt::onnxio
