#!/usr/bin/python3
"""Generates the quickstart's default model, models/mlp.onnx: a small two-layer perceptron
built from the ops the first device lowering supports (MatMul, Add, Relu, Gemm, Mul), with
deterministic weights, plus one input (mlp/input_0_x.npy) and the outputs numpy computes for it
(mlp/output_0_y.npy) so the quickstart can check its result.

Usage: /usr/bin/python3 models/make_default_model.py [OUT_DIR]   (default: the folder of this script)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(out_dir):
    rng = np.random.default_rng(20261121)
    w1 = (rng.standard_normal((64, 128)) / 8).astype(np.float32)
    b1 = (rng.standard_normal((128,)) / 10).astype(np.float32)
    w2 = (rng.standard_normal((10, 128)) / 11).astype(np.float32)  # Gemm with transB=1
    b2 = (rng.standard_normal((10,)) / 10).astype(np.float32)
    scale = np.array([0.5], dtype=np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu1"),
        helper.make_node("Gemm", ["h2", "w2", "b2"], ["h3"], name="fc2", transB=1),
        helper.make_node("Mul", ["h3", "scale"], ["y"], name="scale"),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2"),
         numpy_helper.from_array(scale, "scale")])
    model = helper.make_model(graph, producer_name="poprt models/make_default_model.py",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, "mlp.onnx"))

    # One batch of 4 and the reference output, computed with numpy in float64.
    x = rng.uniform(-1, 1, (4, 64)).astype(np.float32)
    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
    y = ((h @ w2.T.astype(np.float64) + b2) * scale).astype(np.float32)
    data = os.path.join(out_dir, "mlp")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "input_0_x.npy"), x)
    np.save(os.path.join(data, "output_0_y.npy"), y)


if __name__ == "__main__":
    build(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
