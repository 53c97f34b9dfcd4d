#!/usr/bin/python3
"""Writes golden_model.onnx: a small network whose compiled program uses most vertex kinds
(ConvPartial with an activation, Pool max and average, MatMul with bias, Unary, Binary with
broadcast, Activation, Norm, Softmax, Reduce, Fill; Cast in float16). The golden PopEFs beside it
were compiled from it once and are never rewritten (tests/golden/README.md).

    /usr/bin/python3 tests/golden/make_golden_model.py tests/golden/golden_model.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(11)


def weight(name, *shape):
    return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)


nodes = [
    helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
    helper.make_node("Relu", ["c"], ["r"], name="relu"),
    helper.make_node("MaxPool", ["r"], ["mp"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Pad", ["mp", "pads"], ["pd"], name="pad", mode="constant"),
    helper.make_node("AveragePool", ["pd"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Flatten", ["ap"], ["f"], name="flatten"),
    helper.make_node("MatMul", ["f", "mw"], ["m"], name="matmul"),
    helper.make_node("Add", ["m", "mb"], ["g"], name="bias"),
    helper.make_node("Sigmoid", ["g"], ["s"], name="sigmoid"),
    helper.make_node("Mul", ["s", "scale"], ["sc"], name="scale"),
    helper.make_node("LeakyRelu", ["sc"], ["lr"], name="leaky", alpha=0.2),
    helper.make_node("LayerNormalization", ["lr", "lnw", "lnb"], ["ln"], name="layernorm", axis=-1),
    helper.make_node("Softmax", ["ln"], ["y"], name="softmax", axis=-1),
    helper.make_node("ReduceMean", ["ln"], ["z"], name="reducemean", axes=[1], keepdims=0),
    helper.make_node("Exp", ["z"], ["e"], name="exp"),
]
graph = helper.make_graph(
    nodes, "golden",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16]),
     helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])],
    [weight("cw", 4, 3, 3, 3), weight("cb", 4), numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
     weight("mw", 36, 16), weight("mb", 16), weight("scale", 1, 16), weight("lnw", 16), weight("lnb", 16)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="poprt tests/golden")
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, sys.argv[1])
