#!/usr/bin/python3
"""Writes swish_mlp.onnx, the example's model: y = Swish(x @ W1 + b1, beta=1.5) @ W2, x float32[batch, 16],
with com.example::Swish from the plugin (swish_op.c). Seeded, so the committed file is what this writes.

    /usr/bin/python3 examples/custom_op/make_model.py examples/custom_op/swish_mlp.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "W1"], ["h"], name="fc1"),
     helper.make_node("Add", ["h", "b1"], ["a"], name="bias1"),
     helper.make_node("Swish", ["a"], ["s"], name="swish", domain="com.example", beta=1.5),
     helper.make_node("MatMul", ["s", "W2"], ["y"], name="fc2")],
    "swish_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    [numpy_helper.from_array(rng.uniform(-1, 1, (16, 8)).astype(np.float32), "W1"),
     numpy_helper.from_array(rng.uniform(-1, 1, (8,)).astype(np.float32), "b1"),
     numpy_helper.from_array(rng.uniform(-1, 1, (8, 4)).astype(np.float32), "W2")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)],
                          producer_name="poprt examples/custom_op")
model.ir_version = 8
onnx.save(model, sys.argv[1])
