// ONNX's schemas with a guard in front of their inference functions. libonnx's type-and-shape
// inference (and data propagation) functions were written for trusted models: many index an
// input's dims, or use an attribute as a dim index, without checking the rank first, and a
// release build then reads wild memory (protobuf's dim(i) is unchecked). Every shape inference
// poprt runs goes through this registry: before an op's own function, its rule (the input ranks
// and attribute ranges that function assumes, inference_rules.cpp) is checked against the types
// actually inferred so far, and a node that breaks it fails inference with a one-line error
// naming what is wrong, like any other inference error.
#pragma once

#include <onnx/defs/schema.h>

namespace poprt::onnxio {

// The registry to hand to onnx::shape_inference::InferShapes. Schemas without a rule are ONNX's
// own; the guarded copies are made once and live as long as the process.
const onnx::ISchemaRegistry& guardedSchemas();

// Adds the schema of an op ONNX does not define (a plugin's, lib/plugin) to guardedSchemas(),
// version 1 of its domain; the schema must be finalized. libonnx's own registry is left alone (it
// is not safe to change while another thread reads it). False when (domain, name) already has one.
bool addCustomSchema(onnx::OpSchema schema);

}  // namespace poprt::onnxio
