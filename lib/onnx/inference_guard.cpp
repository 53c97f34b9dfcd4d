#include "lib/onnx/inference_guard.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "lib/onnx/inference_rules.h"

namespace poprt::onnxio {
namespace {

// An integer constant's values, read without libonnx's ParseData (which trusts raw_data's length).
std::optional<std::vector<int64_t>> intValues(const onnx::TensorProto* t) {
  if (!t) return std::nullopt;
  std::vector<int64_t> v;
  auto raw = [&](size_t size, auto read) -> bool {
    const std::string& r = t->raw_data();
    if (r.size() % size) return false;
    for (size_t at = 0; at < r.size(); at += size) v.push_back(read(r.data() + at));
    return true;
  };
  if (t->data_type() == onnx::TensorProto::INT64) {
    if (t->has_raw_data()) {
      if (!raw(8, [](const char* p) {
            int64_t x;
            std::memcpy(&x, p, 8);
            return x;
          }))
        return std::nullopt;
    } else {
      v.assign(t->int64_data().begin(), t->int64_data().end());
    }
  } else if (t->data_type() == onnx::TensorProto::INT32) {
    if (t->has_raw_data()) {
      if (!raw(4, [](const char* p) {
            int32_t x;
            std::memcpy(&x, p, 4);
            return int64_t{x};
          }))
        return std::nullopt;
    } else {
      v.assign(t->int32_data().begin(), t->int32_data().end());
    }
  } else {
    return std::nullopt;
  }
  return v;
}

class InferenceInputs final : public RuleInputs {
 public:
  explicit InferenceInputs(onnx::InferenceContext& ctx) : ctx_(ctx) {}
  size_t count() const override { return ctx_.getNumInputs(); }
  size_t outputs() const override { return ctx_.getNumOutputs(); }
  const onnx::TypeProto* type(size_t i) const override { return i < count() ? ctx_.getInputType(i) : nullptr; }
  const onnx::AttributeProto* attribute(const std::string& name) const override { return ctx_.getAttribute(name); }
  std::optional<std::vector<int64_t>> values(size_t i) const override {
    return i < count() ? intValues(ctx_.getInputData(i)) : std::nullopt;
  }
  const onnx::TensorShapeProto* propagated(size_t) const override { return nullptr; }
  bool propagating() const override { return false; }

 private:
  onnx::InferenceContext& ctx_;
};

class PropagationInputs final : public RuleInputs {
 public:
  explicit PropagationInputs(onnx::DataPropagationContext& ctx) : ctx_(ctx) {}
  size_t count() const override { return ctx_.getNumInputs(); }
  size_t outputs() const override { return ctx_.getNumOutputs(); }
  const onnx::TypeProto* type(size_t i) const override { return i < count() ? ctx_.getInputType(i) : nullptr; }
  const onnx::AttributeProto* attribute(const std::string& name) const override { return ctx_.getAttribute(name); }
  std::optional<std::vector<int64_t>> values(size_t i) const override {
    const onnx::TensorShapeProto* p = propagated(i);
    if (!p) return std::nullopt;
    std::vector<int64_t> v;
    for (const auto& d : p->dim()) {
      if (!d.has_dim_value()) return std::nullopt;
      v.push_back(d.dim_value());
    }
    return v;
  }
  const onnx::TensorShapeProto* propagated(size_t i) const override { return i < count() ? ctx_.getInputData(i) : nullptr; }
  bool propagating() const override { return true; }

 private:
  onnx::DataPropagationContext& ctx_;
};

// The inputs whose formal parameter takes tensors only: the functions read their
// tensor_type().shape(), which for a sequence or optional is an empty shape of rank 0.
std::vector<bool> tensorOnlyInputs(const onnx::OpSchema& schema) {
  std::vector<bool> only;
  for (const auto& formal : schema.inputs()) {
    std::vector<std::string> allowed{formal.GetTypeStr()};
    for (const auto& c : schema.typeConstraintParams())
      if (c.type_param_str == formal.GetTypeStr()) allowed = c.allowed_type_strs;
    bool tensors = true;
    for (const auto& a : allowed) tensors = tensors && a.rfind("tensor(", 0) == 0;
    only.push_back(tensors);
  }
  return only;
}

struct Guard {
  const InferenceRule* rule;  // nullptr: the generic checks only
  std::vector<bool> tensor_only;

  void check(const RuleInputs& in) const {
    for (size_t i = 0; i < in.count() && !tensor_only.empty(); ++i) {
      const onnx::TypeProto* t = in.type(i);
      const bool only = tensor_only[std::min(i, tensor_only.size() - 1)];  // the last formal may be variadic
      if (only && t && t->value_case() != onnx::TypeProto::kTensorType && t->value_case() != onnx::TypeProto::VALUE_NOT_SET)
        fail_shape_inference("input ", i, " is not a tensor");
    }
    if (rule)
      if (auto broken = checkRule(*rule, in)) fail_shape_inference(*broken);
  }
};

class GuardedRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_version, const std::string& domain) const override {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(key, max_version, domain);
    if (!schema) return max_version >= 1 ? customSchema(key, domain) : nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& guarded = guarded_[schema];
    if (!guarded) {
      auto guard = std::make_shared<Guard>(Guard{inferenceRule(schema->domain(), schema->Name()), tensorOnlyInputs(*schema)});
      guarded = std::make_unique<onnx::OpSchema>(*schema);
      if (schema->has_type_and_shape_inference_function()) {
        guarded->TypeAndShapeInferenceFunction(
            [guard, infer = schema->GetTypeAndShapeInferenceFunction()](onnx::InferenceContext& ctx) {
              guard->check(InferenceInputs(ctx));
              infer(ctx);
            });
      }
      if (schema->has_data_propagation_function()) {
        guarded->PartialDataPropagationFunction(
            [guard, propagate = schema->GetDataPropagationFunction()](onnx::DataPropagationContext& ctx) {
              guard->check(PropagationInputs(ctx));
              propagate(ctx);
            });
      }
    }
    return guarded.get();
  }

  bool addCustom(onnx::OpSchema schema) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = std::make_pair(schema.domain(), schema.Name());
    return custom_.emplace(std::move(key), std::make_unique<onnx::OpSchema>(std::move(schema))).second;
  }

 private:
  // Plugin schemas carry their own checks (lib/plugin validates what the plugin's inference says).
  const onnx::OpSchema* customSchema(const std::string& name, const std::string& domain) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = custom_.find({domain, name});
    return it == custom_.end() ? nullptr : it->second.get();
  }

  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<onnx::OpSchema>> custom_;
};

GuardedRegistry& registry() {
  static GuardedRegistry registry;
  return registry;
}

}  // namespace

const onnx::ISchemaRegistry& guardedSchemas() { return registry(); }

bool addCustomSchema(onnx::OpSchema schema) { return registry().addCustom(std::move(schema)); }

}  // namespace poprt::onnxio
