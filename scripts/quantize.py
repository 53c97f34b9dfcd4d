#!/usr/bin/python3
"""The project's own post-training quantizer, for the quantized zoo (scripts/zoo.py): writes a
float ONNX model's Conv, MatMul and Gemm (constant weights) in the three forms deployment
pipelines produce, the way ONNX Runtime's quantization tool writes them:

- qdq: QuantizeLinear -> DequantizeLinear pairs on each quantized node's activation input and
  output (uint8, scale and zero point from calibration; after a Relu that follows a conv), its
  weight as int8 with a scale per output channel (per tensor below opset 13) and its bias as
  int32 at scale x_scale * w_scale, each behind a DequantizeLinear; the node itself stays float.
- qoperator: QLinearConv / QLinearMatMul (uint8 activations, int8 weights, int32 conv bias),
  chained on the uint8 tensors where one quantized node feeds another (through MaxPool, Reshape,
  Flatten and Transpose too), a Relu after a conv folded into its output range, and
  QuantizeLinear / DequantizeLinear where float ops read or write them.
- dynamic: DynamicQuantizeLinear on the activations, ConvInteger (uint8 weights, ONNX Runtime's
  CPU kernel takes no int8) / MatMulInteger (int8 weights), Cast to float and a Mul by the
  scales, then the bias.

Activation ranges come from calibration: the float model run once by ONNX Runtime with every
tensor a quantized node reads or writes made an output (`calibrate`, inputs from another seed
than the zoo's reference run).

    /usr/bin/python3 scripts/quantize.py MODEL.onnx OUT.onnx --format qdq|qoperator|dynamic
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FORMATS = ("qdq", "qoperator", "dynamic")
VERSION = 3  # bumped when what this script writes changes (the zoo then quantizes again)
# int8 weights use 7 bits, [-63, 63], like ONNX Runtime's quantizer with reduce_range: on x86 CPUs
# without VNNI (AVX-VNNI or AVX512-VNNI) its uint8 x int8 kernels add pairs of products in int16
# with saturation (VPMADDUBSW), 255 x 127 x 2 overflowing it, so its results, the zoo's reference,
# would depend on the CPU (resnet18 QDQ: cosine 0.9918 on an AVX2 machine, 1.000000 on one with
# VNNI).
INT8_WEIGHT_MAX = 63
PASS_THROUGH = {"MaxPool", "Reshape", "Flatten", "Transpose"}  # qoperator: run on the uint8 values


def _initializers(graph):
    return {t.name: numpy_helper.to_array(t) for t in graph.initializer}


def quantizable(node, inits):
    """Whether `node` is a Conv, MatMul (2-D constant B) or Gemm (alpha = beta = 1, transA = 0)
    with constant weights that this quantizer takes."""
    if node.op_type == "Conv":
        return len(node.input) > 1 and node.input[1] in inits
    if node.op_type == "MatMul":
        return node.input[1] in inits and inits[node.input[1]].ndim == 2
    if node.op_type == "Gemm":
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        return (node.input[1] in inits and attrs.get("alpha", 1.0) == 1.0 and attrs.get("beta", 1.0) == 1.0
                and not attrs.get("transA", 0))
    return False


def _consumers(graph):
    uses = {}
    for n in graph.node:
        for i in n.input:
            uses.setdefault(i, []).append(n)
    return uses


def fused_relu(node, uses, outputs):
    """The Relu a qoperator conv folds into its output range (its output's only reader), or None."""
    readers = uses.get(node.output[0], [])
    if node.op_type == "Conv" and len(readers) == 1 and readers[0].op_type == "Relu" and node.output[0] not in outputs:
        return readers[0]
    return None


def calibration_tensors(model):
    """The tensors whose ranges the static formats need: each quantized node's activation input
    and output (a fused Relu's output instead)."""
    g = model.graph
    inits, uses, outputs = _initializers(g), _consumers(g), {o.name for o in g.output}
    names = []
    for n in g.node:
        if quantizable(n, inits):
            relu = fused_relu(n, uses, outputs)
            names += [n.input[0], (relu or n).output[0]]
    return list(dict.fromkeys(names))


def calibrate(model_path, node_env, ort_dir, run_args):
    """name -> (min, max) of calibration_tensors over one ONNX Runtime run (`run_args`: its input
    flags) of the model with those tensors as outputs."""
    model = onnx.load(model_path)
    names = calibration_tensors(model)
    present = {o.name for o in model.graph.output}
    for name in names:
        if name not in present:
            model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    with tempfile.TemporaryDirectory(prefix="poprt-calibrate-") as tmp:
        path = os.path.join(tmp, "calibrate.onnx")
        onnx.save(model, path)
        subprocess.run(["node", os.path.join(ort_dir, "ort_run.js"), path, "--outdir", os.path.join(tmp, "out"), "--runs", "1",
                        "--warmup", "0", "--threads", "1"] + run_args, check=True, env=node_env, stdout=subprocess.DEVNULL,
                       timeout=1800)
        ranges = {}
        for i, o in enumerate(model.graph.output):
            if o.name in names:
                v = np.load(glob.glob(os.path.join(tmp, "out", "output_%d_*.npy" % i))[0])
                ranges[o.name] = (float(v.min()), float(v.max()))
    return ranges


def activation_params(lo, hi):
    """uint8 asymmetric: the range widened to hold 0, scale (max - min) / 255, zero point."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    return np.float32(scale), np.uint8(np.clip(np.round(-lo / scale), 0, 255))


def weight_params(w, axis, per_channel, levels=INT8_WEIGHT_MAX):
    """Symmetric scales (max |w| / levels) per slice along `axis`, or one for the tensor."""
    if per_channel:
        amax = np.abs(np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)).max(axis=1)
    else:
        amax = np.array([np.abs(w).max()])
    return np.where(amax > 0, amax / float(levels), 1.0).astype(np.float32)


def quantize_weight(w, scales, axis, dtype=np.int8, zero_point=0):
    shape = [1] * w.ndim
    shape[axis] = -1
    s = scales.reshape(shape) if scales.size > 1 else scales[0]
    lo, hi = (-INT8_WEIGHT_MAX, INT8_WEIGHT_MAX) if dtype == np.int8 else (0, 255)
    return np.clip(np.round(w / s) + zero_point, lo, hi).astype(dtype)


class Builder:
    """The quantized graph's nodes and initializers, added in order."""

    def __init__(self, graph):
        self.nodes, self.inits, self.count = [], [], 0
        self.names = {n for node in graph.node for n in list(node.input) + list(node.output)}

    def name(self, base):
        self.count += 1
        while "%s_q%d" % (base, self.count) in self.names:
            self.count += 1
        return "%s_q%d" % (base, self.count)

    def const(self, base, value):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, outputs=None, **attrs):
        outputs = outputs or [self.name(op.lower())]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=self.name(op), **attrs))
        return outputs


def _weight(node, inits):
    """The node's weight as [output channels, ...] for a conv, [K, N] for a matmul, its axis of
    output channels, and the bias (Gemm's C, a conv's B) or None."""
    w = inits[node.input[1]]
    bias = inits.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if node.op_type == "Conv":
        return w, 0, bias
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Gemm" and attrs.get("transB", 0):
        w = w.T
    return np.ascontiguousarray(w), 1, bias


def _linear_attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute} if node.op_type == "Conv" else {}


def _bias_add(b, node, acc, bias, out):
    """out = acc + bias, the bias shaped to the output's channels (axis 1 of a conv's output)."""
    shape = [-1, 1, 1] if node.op_type == "Conv" else [-1]
    b.node("Add", [acc, b.const("bias", bias.reshape(shape).astype(np.float32))], [out])


def quantize(model, fmt, ranges=None):
    """The model with its quantizable nodes in format `fmt` (ranges: calibrate()'s, for qdq and
    qoperator)."""
    g = model.graph
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    inits, uses, outputs = _initializers(g), _consumers(g), {o.name for o in g.output}
    b = Builder(g)
    quantized = {}      # float tensor -> (uint8 tensor, scale, zero point): qdq/qoperator
    dynamic = {}        # float tensor -> DynamicQuantizeLinear's three outputs
    float_ready = {i.name for i in g.input} | set(inits)
    skipped = set()     # Relus folded into a conv

    def act_params(name):
        """The initializers of a tensor's scale and zero point, and the scale's value."""
        scale, zp = activation_params(*ranges[name])
        return b.const(name + "_scale", scale), b.const(name + "_zero_point", zp), scale

    def quantized_input(name):
        if name not in quantized:
            s, z, scale = act_params(name)
            quantized[name] = (b.node("QuantizeLinear", [name, s, z])[0], s, z, scale)
        return quantized[name]

    def need_float(name):
        if name not in float_ready and name in quantized:
            q, s, z, _ = quantized[name]
            b.node("DequantizeLinear", [q, s, z], [name])
            float_ready.add(name)

    for node in g.node:
        if node.name in skipped:
            continue
        if not quantizable(node, inits):
            integer_op = node.op_type in PASS_THROUGH and (node.op_type != "MaxPool" or opset >= 12)  # uint8 MaxPool: 12
            if fmt == "qoperator" and integer_op and node.input[0] in quantized and node.input[0] not in float_ready:
                q, s, z, scale = quantized[node.input[0]]
                out = b.node(node.op_type, [q] + list(node.input[1:]), [b.name(node.output[0])],
                             **{a.name: helper.get_attribute_value(a) for a in node.attribute})[0]
                quantized[node.output[0]] = (out, s, z, scale)
                continue
            for i in node.input:
                need_float(i)
            b.nodes.append(node)
            float_ready.update(node.output)
            continue
        x, y = node.input[0], node.output[0]
        w, axis, bias = _weight(node, inits)
        conv = node.op_type == "Conv"
        if fmt == "qdq":  # as ONNX Runtime's quantizer writes it: the output quantized too
            relu = fused_relu(node, uses, outputs)
            out = (relu or node).output[0]
            q, s, z, x_scale = quantized_input(x)
            per_channel = conv and opset >= 13  # per-axis DequantizeLinear needs opset 13
            axis_attr = {"axis": 0} if per_channel else {}
            ws = weight_params(w, axis, per_channel)
            wq = quantize_weight(inits[node.input[1]], ws, 0)  # as stored: a Gemm's B may be transposed
            inputs = [b.node("DequantizeLinear", [q, s, z])[0],
                      b.node("DequantizeLinear", [b.const("w", wq), b.const("w_scale", ws if per_channel else ws[0]),
                                                  b.const("w_zero_point", np.zeros(ws.shape if per_channel else (), np.int8))],
                             **axis_attr)[0]]
            if bias is not None:  # int32 at scale x_scale * w_scale
                bs = (np.float32(x_scale) * ws).astype(np.float32)
                inputs.append(b.node("DequantizeLinear", [
                    b.const("bias", np.round(bias / bs).astype(np.int32)), b.const("bias_scale", bs if per_channel else bs[0]),
                    b.const("bias_zero_point", np.zeros(bs.shape if per_channel else (), np.int32))], **axis_attr)[0])
            result = b.node(node.op_type, inputs, **{a.name: helper.get_attribute_value(a) for a in node.attribute})[0]
            if relu is not None:
                skipped.add(relu.name)
                result = b.node("Relu", [result])[0]
            ys, yz, y_scale = act_params(out)
            quantized[out] = (b.node("QuantizeLinear", [result, ys, yz])[0], ys, yz, y_scale)
        elif fmt == "qoperator":
            relu = fused_relu(node, uses, outputs)
            out = (relu or node).output[0]
            if relu is not None:
                skipped.add(relu.name)
            q, s, z, x_scale = quantized_input(x)
            ys, yz, y_scale = act_params(out)
            ws = weight_params(w, axis, conv)
            wq = quantize_weight(w, ws, axis)
            yq = b.name(out)
            if conv:
                inputs = [q, s, z, b.const("w", wq), b.const("w_scale", ws), b.const("w_zero_point", np.zeros(ws.shape, np.int8)),
                          ys, yz]
                if bias is not None:
                    inputs.append(b.const("bias", np.round(bias / (x_scale * ws)).astype(np.int32)))
                b.node("QLinearConv", inputs, [yq], **_linear_attrs(node))
                quantized[out] = (yq, ys, yz, y_scale)
            else:
                acc = b.name(out)
                b.node("QLinearMatMul", [q, s, z, b.const("w", wq), b.const("w_scale", ws[0]), b.const("w_zero_point", np.int8(0)),
                                         ys, yz], [acc])
                if bias is None:
                    quantized[out] = (acc, ys, yz, y_scale)
                else:  # the bias in float, after the product
                    b.node("DequantizeLinear", [acc, ys, yz], [out + "_nobias"])
                    _bias_add(b, node, out + "_nobias", bias, out)
                    float_ready.add(out)
        else:  # dynamic
            need_float(x)
            if x not in dynamic:
                dynamic[x] = b.node("DynamicQuantizeLinear", [x], [b.name(x), b.name(x + "_scale"), b.name(x + "_zero_point")])
            xq, xs, xz = dynamic[x]
            if conv:  # uint8 weights around 128, one scale
                ws = weight_params(w, axis, False, 127)  # uint8 x uint8: no pairs saturate
                wq = quantize_weight(w, ws, axis, np.uint8, 128)
                acc = b.node("ConvInteger", [xq, b.const("w", wq), xz, b.const("w_zero_point", np.uint8(128))],
                             **_linear_attrs(node))[0]
            else:  # int8 weights, a scale per column
                ws = weight_params(w, axis, True)
                wq = quantize_weight(w, ws, axis)
                acc = b.node("MatMulInteger", [xq, b.const("w", wq), xz, b.const("w_zero_point", np.int8(0))])[0]
            f = b.node("Cast", [acc], to=TensorProto.FLOAT)[0]
            scale = b.node("Mul", [xs, b.const("w_scale", ws.reshape([-1, 1, 1]) if conv and ws.size > 1 else ws)])[0]
            if bias is None:
                b.node("Mul", [f, scale], [y])
            else:
                _bias_add(b, node, b.node("Mul", [f, scale])[0], bias, y)
            float_ready.add(y)
    for o in g.output:
        need_float(o.name)
    used = {i for n in b.nodes for i in n.input}  # the float weights quantized away are dropped
    new_graph = helper.make_graph(b.nodes, g.name, list(g.input), list(g.output),
                                  [t for t in list(g.initializer) + b.inits if t.name in used])
    out = helper.make_model(new_graph, opset_imports=list(model.opset_import), producer_name="poprt-quantize")
    out.ir_version = model.ir_version
    onnx.checker.check_model(out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--format", choices=FORMATS, required=True)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
    from test_roundtrip_shared_models import ORT_DIR, ort_env
    ranges = None
    if a.format != "dynamic":
        node_env, why = ort_env()
        if node_env is None:
            raise SystemExit("quantize: ONNX Runtime is unavailable for calibration: %s" % why)
        ranges = calibrate(a.model, node_env, ORT_DIR, ["--range", "-1,1", "--seed", "7", "--default-dim", "1"])
    onnx.save(quantize(onnx.load(a.model), a.format, ranges), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
