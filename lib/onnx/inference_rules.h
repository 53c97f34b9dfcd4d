// What libonnx's inference functions assume of a node's inputs without checking it: input ranks
// and attributes used as dim indices. One rule per op family (inference_rules.cpp), found by
// reading the functions (onnx 1.12's defs) and by fuzzing them; inference_guard.h checks each
// rule before the op's own function runs.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace poprt::onnxio {

// The rank an input must have when its shape is known (an input without a shape, or absent, is
// not checked: the functions test for that themselves).
struct RankRule {
  int input = 0;
  int min = 0;
  int max = INT_MAX;
  int same_as = -1;  // >= 0: the same rank as that input
};

// An INT or INTS attribute whose values index the dims of input `input` of rank r: each in
// [-r, r), [-r, r] with `end_inclusive`, [0, r) with `non_negative` (a count of leading dims).
struct AxisRule {
  const char* attribute;
  int input = 0;
  bool end_inclusive = false;
  bool non_negative = false;
};

// An INT or INTS attribute (when given) whose values must lie in [min, max].
struct RangeRule {
  const char* attribute;
  int64_t min, max;
};

class RuleInputs;

struct InferenceRule {
  std::vector<RankRule> ranks;
  std::vector<AxisRule> axes;
  std::vector<int> need_inputs;  // inputs the function reads the type of, present or not
  std::vector<RangeRule> ranges;
  // What the table cannot say (the values of constant inputs, an equation's letters): "" when fine.
  std::string (*extra)(const RuleInputs&) = nullptr;
};

// The inputs a rule is checked against (an inference or data-propagation context).
class RuleInputs {
 public:
  virtual ~RuleInputs() = default;
  virtual size_t count() const = 0;
  virtual size_t outputs() const = 0;
  virtual const onnx::TypeProto* type(size_t i) const = 0;  // nullptr: absent or beyond count()
  virtual const onnx::AttributeProto* attribute(const std::string& name) const = 0;
  // A constant input's values (inference: an initializer or Constant; data propagation: the
  // propagated shape values), as integers; nullopt when unknown or not integers.
  virtual std::optional<std::vector<int64_t>> values(size_t i) const = 0;
  // Data propagation's own values of input i (nullptr in inference, or when none).
  virtual const onnx::TensorShapeProto* propagated(size_t i) const = 0;
  virtual bool propagating() const = 0;  // a data-propagation context, not inference
};

// The rule of op `domain`.`op` (every version at opsets 7-17), or nullptr when its functions need none.
const InferenceRule* inferenceRule(const std::string& domain, const std::string& op);

// What `inputs` break of `rule`, in one line ("input 1 has rank 1, expected 5 (the rank of
// input 0)"), or nothing.
std::optional<std::string> checkRule(const InferenceRule& rule, const RuleInputs& inputs);

}  // namespace poprt::onnxio
