#include "lib/onnx/inference_guard.h"

#include <map>
#include <memory>
#include <mutex>

#include "lib/onnx/inference_rules.h"

namespace poprt::onnxio {
namespace {

// Both kinds of context libonnx hands an op's functions.
template <typename Context>
class ContextInputs final : public RuleInputs {
 public:
  explicit ContextInputs(Context& ctx) : ctx_(ctx) {}
  size_t count() const override { return ctx_.getNumInputs(); }
  const onnx::TypeProto* type(size_t i) const override { return i < ctx_.getNumInputs() ? ctx_.getInputType(i) : nullptr; }
  const onnx::AttributeProto* attribute(const std::string& name) const override { return ctx_.getAttribute(name); }

 private:
  Context& ctx_;
};

template <typename Context>
void enforce(const InferenceRule& rule, Context& ctx) {
  if (auto broken = checkRule(rule, ContextInputs<Context>(ctx))) fail_shape_inference(*broken);
}

class GuardedRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_version, const std::string& domain) const override {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(key, max_version, domain);
    if (!schema) return nullptr;
    const InferenceRule* rule = inferenceRule(schema->domain(), schema->Name(), schema->SinceVersion());
    if (!rule) return schema;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& guarded = guarded_[schema];
    if (!guarded) {
      guarded = std::make_unique<onnx::OpSchema>(*schema);
      auto infer = schema->GetTypeAndShapeInferenceFunction();
      guarded->TypeAndShapeInferenceFunction([rule, infer](onnx::InferenceContext& ctx) {
        enforce(*rule, ctx);
        infer(ctx);
      });
      if (schema->has_data_propagation_function()) {
        auto propagate = schema->GetDataPropagationFunction();
        guarded->PartialDataPropagationFunction([rule, propagate](onnx::DataPropagationContext& ctx) {
          enforce(*rule, ctx);
          propagate(ctx);
        });
      }
    }
    return guarded.get();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

}  // namespace

const onnx::ISchemaRegistry& guardedSchemas() {
  static const GuardedRegistry registry;
  return registry;
}

}  // namespace poprt::onnxio
