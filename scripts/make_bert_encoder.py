#!/usr/bin/env python3
"""Writes a BERT encoder (no embeddings) as torch.onnx exports HF BertModel's encoder at opset 13.

The graph mirrors the export node for node, so poprt's fusions see what they would see in a real
model: fuse_attention, fuse_layernorm and fuse_gelu should all fire (the convert summary's pass
counters tell). tests/unit/passes/fuse_attention_test.cpp builds the same pattern in C++.

Inputs: hidden_states float32 [batch, seq, hidden] and attention_mask float32 [batch, seq] (1 keeps
a position, 0 masks it), which becomes HF's additive mask (1 - mask[:, None, None, :]) * -10000.
Weights are random (normal * 0.02, LayerNorm gamma 1, beta 0), small enough that activations stay
in float16's range; the cost model does not look at values, only shapes.

Example (BERT-Base, seq 128, batch 16):
  /usr/bin/python3 scripts/make_bert_encoder.py --out bert_base.onnx
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Protobuf's hard limit; bigger models keep their weights in an external data file.
PROTO_LIMIT = 2 * 1024**3


class Graph:
    """Collects nodes and initializers with unique names, the way the exporter numbers them."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []
        self.counter = 0

    def name(self, stem):
        self.counter += 1
        return f"{stem}_{self.counter}"

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=self.name(op_type), **attrs))
        return out

    def const(self, array, stem="const"):
        # torch.onnx writes literals as Constant nodes, parameters as initializers.
        out = self.name(stem)
        self.nodes.append(helper.make_node("Constant", [], [out], name=self.name("Constant"),
                                           value=numpy_helper.from_array(np.asarray(array))))
        return out

    def weight(self, shape, name, fill=None):
        # Named like the module's parameter (encoder.layer.0.attention.self.query.weight), as the
        # exporter names them when it keeps parameters as initializers.
        data = np.full(shape, fill, np.float32) if fill is not None else \
            (self.rng.standard_normal(shape) * 0.02).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name


def scalar(g, v):
    return g.const(np.array(v, np.float32))


def ints(g, values):
    return g.const(np.array(values, np.int64))


def dim_of(g, x, i):
    # x.size(i) as a 1-D tensor: Shape -> Gather -> Unsqueeze.
    gathered = g.op("Gather", [g.op("Shape", [x]), g.const(np.array(i, np.int64))], axis=0)
    return g.op("Unsqueeze", [gathered, ints(g, [0])])


def linear(g, x, n_in, n_out, stem):
    # nn.Linear on a 3-D input: MatMul by the transposed weight, then Add the bias.
    mm = g.op("MatMul", [x, g.weight([n_in, n_out], stem + ".weight")])
    return g.op("Add", [g.weight([n_out], stem + ".bias"), mm])


def split_heads(g, x, heads, head_size, perm):
    # transpose_for_scores: view(B, S, H, D).permute(0, 2, 1, 3); the key's .transpose(-1, -2)
    # folds into the same Transpose (the exporter merges consecutive transposes): perm [0,2,3,1].
    shape = g.op("Concat", [dim_of(g, x, 0), dim_of(g, x, 1), ints(g, [heads]), ints(g, [head_size])], axis=0)
    return g.op("Transpose", [g.op("Reshape", [x, shape])], perm=perm)


def layer_norm(g, x, hidden, stem):
    # nn.LayerNorm below opset 17.
    d = g.op("Sub", [x, g.op("ReduceMean", [x], axes=[-1])])
    var = g.op("ReduceMean", [g.op("Pow", [d, scalar(g, 2.0)])], axes=[-1])
    y = g.op("Div", [d, g.op("Sqrt", [g.op("Add", [var, scalar(g, 1e-12)])])])
    y = g.op("Mul", [y, g.weight([hidden], stem + ".weight", fill=1.0)])
    return g.op("Add", [y, g.weight([hidden], stem + ".bias", fill=0.0)])


def bert_layer(g, h, ext_mask, hidden, heads, stem):
    head_size = hidden // heads
    q = split_heads(g, linear(g, h, hidden, hidden, stem + ".attention.self.query"), heads, head_size, [0, 2, 1, 3])
    k = split_heads(g, linear(g, h, hidden, hidden, stem + ".attention.self.key"), heads, head_size, [0, 2, 3, 1])
    v = split_heads(g, linear(g, h, hidden, hidden, stem + ".attention.self.value"), heads, head_size, [0, 2, 1, 3])
    scores = g.op("Div", [g.op("MatMul", [q, k]), scalar(g, math.sqrt(head_size))])
    probs = g.op("Softmax", [g.op("Add", [scores, ext_mask])], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    merged_shape = g.op("Concat", [dim_of(g, ctx, 0), dim_of(g, ctx, 1), ints(g, [hidden])], axis=0)
    merged = g.op("Reshape", [ctx, merged_shape])
    attn = linear(g, merged, hidden, hidden, stem + ".attention.output.dense")
    h1 = layer_norm(g, g.op("Add", [attn, h]), hidden, stem + ".attention.output.LayerNorm")
    inter = linear(g, h1, hidden, 4 * hidden, stem + ".intermediate.dense")
    # erf GELU: x * 0.5 * (1 + erf(x / sqrt(2))), as the exporter orders it.
    erf = g.op("Erf", [g.op("Div", [inter, scalar(g, 1.4142135)])])
    gelu = g.op("Mul", [g.op("Mul", [inter, g.op("Add", [erf, scalar(g, 1.0)])]), scalar(g, 0.5)])
    out = linear(g, gelu, 4 * hidden, hidden, stem + ".output.dense")
    return layer_norm(g, g.op("Add", [out, h1]), hidden, stem + ".output.LayerNorm")


def make_model(layers, hidden, heads, seq, batch, seed):
    g = Graph(np.random.default_rng(seed))
    # (1.0 - attention_mask[:, None, None, :]) * -10000.0
    m4 = g.op("Unsqueeze", [g.op("Unsqueeze", ["attention_mask", ints(g, [1])]), ints(g, [2])])
    ext = g.op("Mul", [g.op("Sub", [scalar(g, 1.0), m4]), scalar(g, -10000.0)])
    h = "hidden_states"
    for layer in range(layers):
        h = bert_layer(g, h, ext, hidden, heads, f"encoder.layer.{layer}")
    g.nodes[-1].output[0] = "last_hidden_state"  # the last LayerNorm's Add is the graph output
    graph = helper.make_graph(
        g.nodes, "bert_encoder",
        [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [batch, seq, hidden]),
         helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [batch, seq])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [batch, seq, hidden])],
        initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_bert_encoder")
    model.ir_version = 7
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="the ONNX file to write")
    a = p.parse_args()
    for flag in ("layers", "hidden", "heads", "seq", "batch"):
        if getattr(a, flag) < 1:
            p.error(f"--{flag} must be at least 1")
    if a.hidden % a.heads:
        p.error(f"--hidden ({a.hidden}) must be a multiple of --heads ({a.heads})")

    model = make_model(a.layers, a.hidden, a.heads, a.seq, a.batch, a.seed)
    onnx.checker.check_model(model)
    external = model.ByteSize() >= PROTO_LIMIT
    # Write next to the target and rename, so a failed run leaves no half-written model.
    tmp = a.out + ".tmp"
    try:
        if external:
            onnx.save(model, tmp, save_as_external_data=True, location=os.path.basename(a.out) + ".data")
        else:
            onnx.save(model, tmp)
        os.replace(tmp, a.out)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        print(f"make_bert_encoder.py: error: cannot write {a.out}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
