// What libonnx's inference functions assume of a node's inputs without checking it: input ranks
// and attributes used as dim indices. One rule per op family (inference_rules.cpp), found by
// reading the functions (onnx 1.12's defs) and by fuzzing them; inference_guard.h checks each
// rule before the op's own function runs.
#pragma once

#include <climits>
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

struct InferenceRule {
  std::vector<RankRule> ranks;
  std::vector<AxisRule> axes;
  std::vector<int> need_inputs;  // inputs the function reads the type of, present or not
};

// The inputs a rule is checked against (an inference or data-propagation context).
class RuleInputs {
 public:
  virtual ~RuleInputs() = default;
  virtual size_t count() const = 0;
  virtual const onnx::TypeProto* type(size_t i) const = 0;  // nullptr: absent or beyond count()
  virtual const onnx::AttributeProto* attribute(const std::string& name) const = 0;
};

// The rule of the schema `domain`.`op` since `since_version`, or nullptr when its functions need none.
const InferenceRule* inferenceRule(const std::string& domain, const std::string& op, int since_version);

// What `inputs` break of `rule`, in one line ("input 1 has rank 1, expected 5 (the rank of
// input 0)"), or nothing.
std::optional<std::string> checkRule(const InferenceRule& rule, const RuleInputs& inputs);

}  // namespace poprt::onnxio
