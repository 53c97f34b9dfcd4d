#include "passes/pass_list.h"

namespace poprt::passes {

const std::vector<PassInfo>& allPasses() {
  // The default pipeline runs them in this order.
  static const std::vector<PassInfo> passes = {
      {"infer_shapes", "propagate static shapes and types through the graph (ONNX shape inference)", makeInferShapes},
      // Before constant_folding, which would fold a QDQ model's dequantized weights to floats.
      {"quantized_to_float",
       "QuantizeLinear/DequantizeLinear/DynamicQuantizeLinear, ConvInteger/MatMulInteger, QLinearConv/QLinearMatMul and "
       "QDQ Conv/MatMul/Gemm -> float32 ops on the same integers (q - zero point), so quantized models run on the device",
       makeQuantizedToFloat},
      {"constant_folding", "evaluate nodes with constant inputs (and Shape/Size of static tensors) into initializers",
       makeConstantFolding},
      {"identity_elimination",
       "remove Identity, inference Dropout, same-type Cast and no-op Reshape/Transpose/Expand/Pad; merge Reshape "
       "chains, Transpose pairs and Squeeze/Unsqueeze pairs",
       makeIdentityElimination},
      {"einsum_to_matmul",
       "a two-input Einsum that is a batched matrix product (one contracted label) -> Transposes around a MatMul",
       makeEinsumToMatMul},
      // Fusions match on static shapes: first infer/fold/simplify again until nothing changes.
      {"shape_fixpoint",
       "re-infer types, fold and remove no-ops again until nothing changes (Shape chains of values typed only "
       "after the first folding), for the fusions that follow",
       makeShapeFixpoint},
      {"conv_transpose_to_conv",
       "a ConvTranspose whose kernel is its strides (no pads, dilations or groups: UNet's up-conv) -> a 1x1 Conv and "
       "depth-to-space (Reshape, Transpose, Reshape), which the device runs",
       makeConvTransposeToConv},
      {"trim_conv_taps",
       "drop the kernel taps of a Conv (constant weight, static dims) that read only padding for every output, "
       "shrinking its pads: dilated convs over small maps (DeepLabV3's ASPP)",
       makeTrimConvTaps},
      // Before the folds, which would take the + 3 of a Gemm's hard sigmoid into its bias.
      {"fuse_hard_sigmoid",
       "Clip(x + 3, 0, 6) / 6 -> HardSigmoid, and x * that -> HardSwish (opset >= 14; before, fuse_conv_activation "
       "takes it after a Conv/Gemm)",
       makeFuseHardSigmoid},
      // Folding fusions. BN first: it also folds through a constant bias Add (Conv -> Add -> BN,
      // MatMul -> Add -> BN); MatMul + Add -> Gemm last, after the Mul/Add folds made their biases.
      {"fuse_batchnorm",
       "fold inference BatchNormalization into the Conv, ConvTranspose, Gemm or MatMul (constant weight) before it",
       makeFuseBatchNorm},
      {"fuse_mul_add_into_conv_matmul",
       "fold a per-channel constant Mul/Div/Add/Sub after a Conv, ConvTranspose, Gemm or MatMul into its weights and bias",
       makeFuseMulAddIntoConvMatMul},
      {"fold_affine_into_conv_input",
       "fold a scalar Mul/Div and Add/Sub right before a Conv that pads nothing into its weights and bias",
       makeFoldAffineIntoConvInput},
      {"fuse_matmul_add_into_gemm",
       "MatMul by a constant [K,N] weight + bias -> Gemm (of A's rows between Reshapes when A has batch dims)",
       makeFuseMatMulAddIntoGemm},
      // Fusions into ai.graphcore ops (LayerNormalization itself from opset 17). Conv/Gemm +
      // activation last, after BatchNormalization and Mul/Add have been folded into the Conv.
      {"fuse_layernorm",
       "ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] over the last axis -> LayerNormalization (opset >= 17) "
       "or ai.graphcore LayerNorm",
       makeFuseLayerNorm},
      {"fuse_gelu", "the erf and tanh GELU chains -> ai.graphcore Gelu", makeFuseGelu},
      {"fuse_attention",
       "multi-head attention (head-split Reshape/Transpose, MatMul, scale, mask, Softmax, MatMul, merge) -> "
       "ai.graphcore MultiHeadAttention",
       makeFuseAttention},
      {"fuse_conv_activation", "Conv/Gemm followed by its only use, an activation -> ai.graphcore ConvAct/GemmAct",
       makeFuseConvActivation},
      {"serialize_matmul",
       "--serialize_matmul NODE=FACTOR: split that Conv, MatMul or Gemm (constant weight) into FACTOR nodes over "
       "slices of its output channels, joined by a Concat (each needs about 1/FACTOR of the temporaries)",
       makeSerializeMatMul},
      // Precision after the fusions (they match float32 patterns; the fused ops have fp16 policies).
      {"float_to_half",
       "--precision fp16: float32 weights and activations -> float16 as each op's fp16 policy says (KeepFp32 ops, "
       "--fp16_skip_op_types/--fp16_skip_node_names and overflow-prone paths stay float32, with Casts around them; "
       "constants beyond ±65504 clamped; model inputs/outputs keep float32 unless --fp16_io)",
       makeFloatToHalf, /*fp16_only=*/true},
      {"fold_casts",
       "fold Cast chains where exact (f16->f32->f16 is an identity, f32->f16->f32 is not), merge duplicate Casts, move "
       "Casts through layout ops (widening ones down, narrowing ones up); counts the Casts left",
       makeFoldCasts},
      // After the precision pass, whose overflow rules look at single ops.
      {"fuse_elementwise_chain",
       "an elementwise op and the ops after it whose other operands are one value each (a dynamic quantizer's Div, "
       "Round, Max and Min by run-time scalars) -> ai.graphcore ElementwiseChain, one pass on the device",
       makeFuseElementwiseChain},
      {"common_subexpression_elimination",
       "merge initializers with equal contents, then nodes with the same op, attributes and inputs", makeCommonSubexpressions},
      {"dead_code_elimination", "remove nodes and initializers nothing uses", makeDeadCode},
      {"infer_shapes_final", "re-infer types after the rewrites", makeInferShapes},
  };
  return passes;
}

}  // namespace poprt::passes
