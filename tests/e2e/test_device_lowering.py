#!/usr/bin/python3
"""End to end: small ONNX models made of the ops with device lowerings beyond the five basic ones
(GELU and attention patterns the passes fuse, LayerNormalization, InstanceNormalization,
BatchNormalization, Softmax/LogSoftmax, reductions, CumSum, Sin/Cos, variadic Sum/Max/Min, Clip with
constant and run-time bounds, LeakyRelu/HardSigmoid/HardSwish, Pow) are compiled with
`poprt-convert --export_popef --summary_json`, which must place every node on the device, run with
`popef-run`, and compared with numpy computing the same model in float64 (rtol 1e-4, atol 1e-5).

    /usr/bin/python3 tests/e2e/test_device_lowering.py --bin-dir /work/main/build/bin
"""

import json
import math
import os
import sys
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

RTOL = 1e-4
ATOL = 1e-5
erf = np.vectorize(math.erf)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


class Model:
    """A one-graph model: nodes, float32 inputs and initializers, float64 reference outputs."""

    def __init__(self, name, opset=17):
        self.name, self.opset = name, opset
        self.nodes, self.inputs, self.inits, self.outputs = [], [], [], []

    def input(self, name, arr, dtype=np.float32):
        self.inputs.append((name, arr.astype(dtype)))
        return name

    def const(self, name, arr, dtype=np.float32):
        self.inits.append((name, np.asarray(arr, dtype=dtype)))
        return name

    def node(self, op, ins, out, domain="", **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=out + "_node", domain=domain, **attrs))
        return out

    def output(self, name, ref):
        self.outputs.append((name, np.asarray(ref, dtype=np.float64)))

    def proto(self, elem=TensorProto.FLOAT):
        g = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, elem, a.shape) for n, a in self.inputs],
            [helper.make_tensor_value_info(n, elem, r.shape) for n, r in self.outputs],
            [numpy_helper.from_array(a, n) for n, a in self.inits])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)])


def rand(rng, shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


class DeviceLoweringTest(e2e_util.E2ETestCase):
    def check(self, m, expect_fused=(), elem=TensorProto.FLOAT, rtol=RTOL, atol=ATOL):
        """Compiles m, checks every node is on the device (and the fused ops present), runs, compares."""
        model_path = self.path(m.name + ".onnx")
        onnx.save(m.proto(elem), model_path)
        out_dir = self.path(m.name + "_out")
        summary = self.path(m.name + "_summary.json")
        r = e2e_util.run_tool("poprt-convert", ["--input_model", model_path, "--output_dir", out_dir, "--export_popef",
                                                "--summary_json", summary])
        self.assertOk(r)
        with open(summary) as f:
            placement = json.load(f)["placement"]
        self.assertEqual(placement["host_nodes"], [], "%s: nodes left on the host" % m.name)
        fused = onnx.load(os.path.join(out_dir, m.name + ".poprt.onnx"))
        for op in expect_fused:
            self.assertIn(op, [n.op_type for n in fused.graph.node], "%s: %s not fused" % (m.name, op))
        args = [os.path.join(out_dir, "executable.popef"), "--output_dir", self.path(m.name + "_res")]
        for name, arr in m.inputs:
            p = self.path("%s_%s.npy" % (m.name, name))
            np.save(p, arr)
            args += ["--input", "%s=%s" % (name, p)]
        self.assertOk(e2e_util.run_tool("popef-run", args))
        for i, (name, ref) in enumerate(m.outputs):
            got = np.load(self.path(m.name + "_res", "output_%d_%s.npy" % (i, name)))
            self.assertEqual(got.shape, ref.shape, "%s output %s" % (m.name, name))
            np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, err_msg="%s output %s" % (m.name, name))

    def test_gelu_pattern_runs_fused_on_the_device(self):
        rng = np.random.default_rng(1)
        m = Model("gelu")
        x = rand(rng, (4, 33))
        m.input("x", x)
        m.node("Div", ["x", m.const("sqrt2", 1.4142135)], "d")
        m.node("Erf", ["d"], "e")
        m.node("Add", ["e", m.const("one", 1.0)], "a")
        m.node("Mul", ["x", "a"], "xm")
        m.node("Mul", ["xm", m.const("half", 0.5)], "y")
        xd = x.astype(np.float64)
        m.output("y", 0.5 * xd * (1 + erf(xd / math.sqrt(2))))
        self.check(m, expect_fused=["Gelu"])

    def test_attention_pattern_runs_fused_on_the_device(self):
        rng = np.random.default_rng(2)
        B, S, H, D = 2, 5, 3, 4
        m = Model("attention")
        q, k, v = (rand(rng, (B, S, H * D)) for _ in range(3))
        mask = np.where(rng.uniform(size=(B, 1, 1, S)) < 0.3, -1e4, 0.0).astype(np.float32)
        for name, arr in (("q", q), ("k", k), ("v", v), ("mask", mask)):
            m.input(name, arr)
        shape = m.const("shape", [B, S, H, D], np.int64)
        for t in "qkv":
            m.node("Reshape", [t, shape], t + "r")
        m.node("Transpose", ["qr"], "qh", perm=[0, 2, 1, 3])
        m.node("Transpose", ["kr"], "kt", perm=[0, 2, 3, 1])
        m.node("Transpose", ["vr"], "vh", perm=[0, 2, 1, 3])
        m.node("MatMul", ["qh", "kt"], "s")
        m.node("Div", ["s", m.const("scale", math.sqrt(D))], "ss")
        m.node("Add", ["ss", "mask"], "sm")
        m.node("Softmax", ["sm"], "p", axis=-1)
        m.node("MatMul", ["p", "vh"], "ctx")
        m.node("Transpose", ["ctx"], "ct", perm=[0, 2, 1, 3])
        m.node("Reshape", ["ct", m.const("out_shape", [B, S, H * D], np.int64)], "y")
        qh = q.astype(np.float64).reshape(B, S, H, D).transpose(0, 2, 1, 3)
        kh = k.astype(np.float64).reshape(B, S, H, D).transpose(0, 2, 1, 3)
        vh = v.astype(np.float64).reshape(B, S, H, D).transpose(0, 2, 1, 3)
        p = softmax(qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(D) + mask, -1)
        m.output("y", (p @ vh).transpose(0, 2, 1, 3).reshape(B, S, H * D))
        self.check(m, expect_fused=["MultiHeadAttention"])

    def test_normalisations(self):
        rng = np.random.default_rng(3)
        m = Model("norms")
        x = rand(rng, (2, 5, 64))
        img = rand(rng, (2, 3, 5, 5))
        m.input("x", x)
        m.input("img", img)
        s, b = rand(rng, (64,)), rand(rng, (64,))
        m.node("LayerNormalization", ["x", m.const("s", s), m.const("b", b)], "ln", axis=-1, epsilon=1e-5)
        xd = x.astype(np.float64)
        mu, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
        m.output("ln", (xd - mu) / np.sqrt(var + 1e-5) * s + b)
        cs, cb = rand(rng, (3,)), rand(rng, (3,))
        m.node("InstanceNormalization", ["img", m.const("cs", cs), m.const("cb", cb)], "inorm", epsilon=1e-4)
        imd = img.astype(np.float64)
        mu, var = imd.mean((2, 3), keepdims=True), imd.var((2, 3), keepdims=True)
        m.output("inorm", (imd - mu) / np.sqrt(var + 1e-4) * cs.reshape(1, 3, 1, 1) + cb.reshape(1, 3, 1, 1))
        # BatchNormalization after a Relu (nothing to fold it into).
        m.node("Relu", ["img"], "r")
        mean, bvar = rand(rng, (3,)), rand(rng, (3,), 0.5, 2.0)
        m.node("BatchNormalization", ["r", m.const("bs", cs), m.const("bb", cb), m.const("bm", mean), m.const("bv", bvar)],
               "bn", epsilon=1e-3)
        rd = np.maximum(imd, 0)
        c = lambda a: a.reshape(1, 3, 1, 1).astype(np.float64)  # noqa: E731
        m.output("bn", (rd - c(mean)) / np.sqrt(c(bvar) + 1e-3) * c(cs) + c(cb))
        self.check(m)

    def test_softmax_and_reductions(self):
        rng = np.random.default_rng(4)
        m = Model("rows")
        x = rand(rng, (2, 7, 3, 5))
        m.input("x", x)
        xd = x.astype(np.float64)
        m.node("Softmax", ["x"], "sm_mid", axis=1)
        m.output("sm_mid", softmax(xd, 1))
        m.node("LogSoftmax", ["x"], "lsm", axis=-1)
        m.output("lsm", np.log(softmax(xd, -1)))
        m.node("ReduceMean", ["x"], "mean12", axes=[1, 2], keepdims=1)
        m.output("mean12", xd.mean(axis=(1, 2), keepdims=True))
        m.node("ReduceMax", ["x"], "max_last", axes=[-1], keepdims=0)
        m.output("max_last", xd.max(axis=-1))
        m.node("ReduceSum", ["x", m.const("axes0", [0], np.int64)], "sum0", keepdims=0)
        m.output("sum0", xd.sum(axis=0))
        m.node("ReduceL2", ["x"], "l2_all", keepdims=0)
        m.output("l2_all", np.sqrt((xd ** 2).sum()))
        m.node("ReduceLogSumExp", ["x"], "lse", axes=[1], keepdims=1)
        m.output("lse", np.log(np.exp(xd).sum(axis=1, keepdims=True)))
        self.check(m)

    def test_cumsum_and_trigonometry(self):
        rng = np.random.default_rng(12)
        m = Model("scan")
        x = rand(rng, (2, 9, 4))
        m.input("x", x)
        xd = x.astype(np.float64)
        m.node("CumSum", ["x", m.const("axis1", 1, np.int64)], "cs")
        m.output("cs", np.cumsum(xd, axis=1))
        m.node("CumSum", ["x", m.const("axis_last", [-1], np.int32)], "cs_rev_excl", exclusive=1, reverse=1)
        rev = np.flip(np.cumsum(np.flip(xd, -1), axis=-1), -1)
        m.output("cs_rev_excl", rev - xd)
        m.node("Sin", ["x"], "sin")
        m.output("sin", np.sin(xd))
        m.node("Cos", ["x"], "cos")
        m.output("cos", np.cos(xd))
        self.check(m)

    def test_variadic_and_activations(self):
        rng = np.random.default_rng(5)
        m = Model("elementwise")
        a, b, c = rand(rng, (3, 1, 5)), rand(rng, (4, 5)), rand(rng, (3, 4, 5))
        for name, arr in (("a", a), ("b", b), ("c", c)):
            m.input(name, arr)
        ad, bd, cd = (t.astype(np.float64) for t in (a, b, c))
        m.node("Sum", ["a", "b", "c"], "sum3")
        m.output("sum3", ad + bd + cd)
        m.node("Max", ["a", "b", "c"], "max3")
        m.output("max3", np.maximum(np.maximum(ad, bd), cd))
        m.node("Min", ["c", "a"], "min2")
        m.output("min2", np.minimum(cd, ad))
        m.node("Clip", ["c", m.const("lo", -0.5), m.const("hi", 0.75)], "clip")
        m.output("clip", np.clip(cd, -0.5, 0.75))
        # Clip with a bound computed at run time: Clip(c, ReduceMin(c) + 0.5).
        m.node("ReduceMin", ["c"], "cmin", keepdims=0)
        m.node("Add", ["cmin", m.const("half", 0.5)], "lo_rt")
        m.node("Clip", ["c", "lo_rt"], "clip_rt")
        m.output("clip_rt", np.maximum(cd, cd.min() + 0.5))
        m.node("LeakyRelu", ["c"], "leaky", alpha=0.2)
        m.output("leaky", np.where(cd < 0, 0.2 * cd, cd))
        m.node("HardSigmoid", ["c"], "hsig", alpha=0.3, beta=0.4)
        m.output("hsig", np.clip(0.3 * cd + 0.4, 0, 1))
        m.node("HardSwish", ["c"], "hswish")
        m.output("hswish", cd * np.clip(cd / 6 + 0.5, 0, 1))
        m.node("Abs", ["c"], "absc")
        m.node("Pow", ["absc", m.const("three", 3.0)], "pow3")
        m.output("pow3", np.abs(cd) ** 3)
        self.check(m)

    def test_float16_model_runs_on_float16_vertices(self):
        # Half storage, float32 arithmetic: within float16's precision of a float64 reference.
        rng = np.random.default_rng(6)
        m = Model("half")
        f16 = np.float16
        x = rand(rng, (1, 3, 8, 8)).astype(f16)
        w = (rand(rng, (4, 3, 3, 3)) * 0.3).astype(f16)
        fc = (rand(rng, (4 * 8 * 8, 10)) * 0.1).astype(f16)
        m.input("x", x, f16)
        m.node("Conv", ["x", m.const("w", w, f16)], "c", pads=[1, 1, 1, 1])
        m.node("Relu", ["c"], "r")
        m.node("Flatten", ["r"], "f")
        m.node("MatMul", ["f", m.const("fc", fc, f16)], "logits")
        m.node("Softmax", ["logits"], "p", axis=-1)
        m.node("ReduceSum", ["p", m.const("axes", [1], np.int64)], "total", keepdims=1)
        xd, wd = x.astype(np.float64), w.astype(np.float64)
        xp = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)))
        conv = np.zeros((1, 4, 8, 8))
        for o in range(4):
            for i in range(8):
                for j in range(8):
                    conv[0, o, i, j] = (xp[0, :, i:i + 3, j:j + 3] * wd[o]).sum()
        logits = np.maximum(conv, 0).reshape(1, -1) @ fc.astype(np.float64)
        p = softmax(logits, -1)
        m.output("p", p)
        m.output("total", p.sum(axis=1, keepdims=True))
        self.check(m, elem=TensorProto.FLOAT16, rtol=1e-2, atol=1e-3)


if __name__ == "__main__":
    e2e_util.main()
