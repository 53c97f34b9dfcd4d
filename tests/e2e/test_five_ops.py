#!/usr/bin/python3
"""End to end: ONNX models made of Add, Mul, Relu, MatMul and Gemm are compiled with
`poprt-convert --export_popef`, run with `popef-run`, and compared with numpy computing the same
model in float64 (rtol 1e-4, atol 1e-5). `popef-dump --json` must list the anchors.

    /usr/bin/python3 tests/e2e/test_five_ops.py --bin-dir /work/main/build/bin
"""

import json
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


# ---------------------------------------------------------------- float64 references (numpy only)

def ref_gemm(a, b, c=None, alpha=1.0, beta=1.0, trans_a=0, trans_b=0):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    if trans_a:
        a = a.T
    if trans_b:
        b = b.T
    y = alpha * (a @ b)
    if c is not None:
        y = y + beta * c.astype(np.float64)
    return y


def ref_matmul(a, b):
    # np.matmul follows the same rules as ONNX MatMul (numpy.matmul semantics, 1-D promotion).
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def relu(x):
    return np.maximum(x.astype(np.float64), 0.0)


# ---------------------------------------------------------------- model description

class Model:
    """A single-graph ONNX model plus its runtime inputs and float64 reference outputs."""

    def __init__(self, name, opset=13):
        self.name = name
        self.opset = opset
        self.nodes = []
        self.inputs = []        # (name, np.float32 array)
        self.initializers = []  # (name, np.float32 array)
        self.outputs = []       # (name, float64 reference)

    def input(self, name, arr):
        self.inputs.append((name, np.ascontiguousarray(arr, dtype=np.float32)))
        return self.inputs[-1][1]

    def weight(self, name, arr):
        self.initializers.append((name, np.ascontiguousarray(arr, dtype=np.float32)))
        return self.initializers[-1][1]

    def node(self, op, ins, outs, **attrs):
        self.nodes.append(helper.make_node(op, ins, outs, name="%s_%d" % (op, len(self.nodes)), **attrs))

    def output(self, name, ref):
        self.outputs.append((name, np.asarray(ref, dtype=np.float64)))

    def proto(self):
        g = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape)) for n, a in self.inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(r.shape)) for n, r in self.outputs],
            [numpy_helper.from_array(a, n) for n, a in self.initializers])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="poprt-e2e")
        m.ir_version = 7  # readable by onnx 1.12 and every opset used here
        onnx.checker.check_model(m, full_check=True)
        return m


def rand(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def xavier(rng, shape, fan_in):
    return (rng.uniform(-1.0, 1.0, size=shape) / np.sqrt(max(fan_in, 1))).astype(np.float32)


# ---------------------------------------------------------------- model builders

def m_binary(op, name, xshape, bshape, b_is_input=False, seed=0):
    rng = np.random.default_rng(seed)
    m = Model(name)
    x = m.input("x", rand(rng, xshape))
    b = m.input("b", rand(rng, bshape)) if b_is_input else m.weight("b", rand(rng, bshape))
    m.node(op, ["x", "b"], ["y"])
    fn = np.add if op == "Add" else np.multiply
    m.output("y", fn(x.astype(np.float64), b.astype(np.float64)))
    return m


def m_relu(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    m = Model(name)
    x = rand(rng, shape)
    if x.size:
        x.flat[0] = 0.0  # exactly zero, and a negative zero
        if x.size > 1:
            x.flat[1] = -0.0
    x = m.input("x", x)
    m.node("Relu", ["x"], ["y"])
    m.output("y", relu(x))
    return m


def m_matmul(name, ashape, bshape, b_is_input=False, seed=0):
    rng = np.random.default_rng(seed)
    k = ashape[-1]
    m = Model(name)
    a = m.input("a", rand(rng, ashape))
    if b_is_input:
        b = m.input("b", xavier(rng, bshape, k))
    else:
        b = m.weight("w", xavier(rng, bshape, k))
    m.node("MatMul", ["a", "b" if b_is_input else "w"], ["y"])
    m.output("y", ref_matmul(a, b))
    return m


def m_gemm(name, M, K, N, c_shape=None, alpha=None, beta=None, trans_a=0, trans_b=0,
           b_is_input=False, opset=13, seed=0):
    rng = np.random.default_rng(seed)
    m = Model(name, opset=opset)
    a = m.input("a", rand(rng, (K, M) if trans_a else (M, K)))
    bshape = (N, K) if trans_b else (K, N)
    b = m.input("b", xavier(rng, bshape, K)) if b_is_input else m.weight("w", xavier(rng, bshape, K))
    ins = ["a", "b" if b_is_input else "w"]
    c = None
    if c_shape is not None:
        c = m.weight("c", rand(rng, c_shape))
        ins.append("c")
    attrs = {}
    if alpha is not None:
        attrs["alpha"] = float(alpha)
    if beta is not None:
        attrs["beta"] = float(beta)
    if trans_a:
        attrs["transA"] = 1
    if trans_b:
        attrs["transB"] = 1
    m.node("Gemm", ins, ["y"], **attrs)
    m.output("y", ref_gemm(a, b, c, 1.0 if alpha is None else alpha, 1.0 if beta is None else beta,
                           trans_a, trans_b))
    return m


def m_chain(name, M, K, H, N, opset=13, seed=0):
    """MatMul -> Add -> Relu -> Gemm(transB, alpha, beta) -> Mul, with a second runtime input."""
    rng = np.random.default_rng(seed)
    m = Model(name, opset=opset)
    x = m.input("x", rand(rng, (M, K)))
    s = m.input("s", rand(rng, (M, 1), 0.5, 1.5))
    w1 = m.weight("w1", xavier(rng, (K, H), K))
    b1 = m.weight("b1", rand(rng, (H,), -0.2, 0.2))
    w2 = m.weight("w2", xavier(rng, (N, H), H))
    c2 = m.weight("c2", rand(rng, (N,)))
    m.node("MatMul", ["x", "w1"], ["h0"])
    m.node("Add", ["h0", "b1"], ["h1"])
    m.node("Relu", ["h1"], ["h2"])
    m.node("Gemm", ["h2", "w2", "c2"], ["g"], alpha=0.75, beta=-1.5, transB=1)
    m.node("Mul", ["g", "s"], ["y"])
    h = relu(ref_matmul(x, w1) + b1.astype(np.float64))
    g = ref_gemm(h, w2, c2, 0.75, -1.5, 0, 1)
    m.output("y", g * s.astype(np.float64))
    # a second output taken from the middle of the chain
    m.output("h2", h)
    return m


# ---------------------------------------------------------------- the tests

class FiveOpsTest(e2e_util.E2ETestCase):

    def compile_and_run(self, m, extra_args=(), check_dump=True):
        """Compile m, run it, compare with the float64 reference; returns popef-dump's JSON."""
        model_path = self.path(m.name + ".onnx")
        onnx.save(m.proto(), model_path)
        out_dir = self.path("out_" + m.name)
        r = e2e_util.run_tool("poprt-convert", ["--input_model", model_path, "--output_dir", out_dir,
                                                "--export_popef"] + list(extra_args), timeout=300)
        self.assertOk(r)
        popef = os.path.join(out_dir, "executable.popef")
        self.assertTrue(os.path.isfile(popef), r.describe())
        converted = os.path.join(out_dir, m.name + ".poprt.onnx")
        self.assertTrue(os.path.isfile(converted), "no converted model:\n" + r.describe())
        onnx.checker.check_model(onnx.load(converted), full_check=True)

        args = [popef]
        for n, a in m.inputs:
            p = self.path("in_%s_%s.npy" % (m.name, n))
            np.save(p, a)
            args += ["--input", "%s=%s" % (n, p)]
        run_dir = self.path("run_" + m.name)
        r = e2e_util.run_tool("popef-run", args + ["--output_dir", run_dir], timeout=300)
        self.assertOk(r)
        expected_files = sorted("output_%d_%s.npy" % (i, n) for i, (n, _) in enumerate(m.outputs))
        self.assertEqual(sorted(os.listdir(run_dir)), expected_files, r.describe())
        for i, (n, ref) in enumerate(m.outputs):
            got = np.load(os.path.join(run_dir, "output_%d_%s.npy" % (i, n)))
            self.assertEqual(got.dtype, np.float32, "output %s" % n)
            self.assertEqual(got.shape, ref.shape, "output %s shape" % n)
            self.assertTrue(np.all(np.isfinite(got)), "output %s has non-finite values" % n)
            try:
                np.testing.assert_allclose(got.astype(np.float64), ref, rtol=RTOL, atol=ATOL,
                                           err_msg="%s: output %s differs from numpy" % (m.name, n))
            except AssertionError as e:
                raise AssertionError("%s\nrepro: %s" % (e, r.cmdline())) from None

        if not check_dump:
            return None
        r = e2e_util.run_tool("popef-dump", [popef, "--json"], timeout=120)
        self.assertOk(r)
        dump = json.loads(r.stdout)
        anchors = dump["metadata"]["anchors"]
        got = sorted((a["kind"], a["name"], tuple(a["shape"]), a["dtype"]) for a in anchors)
        want = sorted([("input", n, a.shape, "float32") for n, a in m.inputs] +
                      [("output", n, r_.shape, "float32") for n, r_ in m.outputs])
        self.assertEqual(got, want, "popef-dump --json anchors")
        # the text form must also work
        self.assertOk(e2e_util.run_tool("popef-dump", [popef], timeout=120))
        return dump

    def run_all(self, models, **kw):
        for m in models:
            with self.subTest(model=m.name):
                self.compile_and_run(m, **kw)

    # ---- Add / Mul broadcasting
    def test_add_broadcast(self):
        self.run_all([
            m_binary("Add", "add_same", (3, 5), (3, 5), b_is_input=True, seed=1),
            m_binary("Add", "add_n", (3, 5), (5,), seed=2),
            m_binary("Add", "add_1", (3, 5), (1,), seed=3),
            m_binary("Add", "add_m1", (3, 5), (3, 1), seed=4),
            m_binary("Add", "add_scalar", (4, 6), (), seed=5),
            m_binary("Add", "add_bidir", (4, 1), (1, 6), b_is_input=True, seed=6),   # -> [4,6]
            m_binary("Add", "add_bcast_lhs", (5,), (3, 5), b_is_input=True, seed=7),  # lhs smaller rank
            m_binary("Add", "add_3d", (2, 3, 4), (3, 1), seed=8),
            m_binary("Add", "add_big_n", (256, 300), (300,), seed=9),
            m_binary("Add", "add_big_m1", (256, 300), (256, 1), b_is_input=True, seed=10),
        ])

    def test_mul_broadcast(self):
        self.run_all([
            m_binary("Mul", "mul_same", (3, 5), (3, 5), b_is_input=True, seed=11),
            m_binary("Mul", "mul_n", (3, 5), (5,), seed=12),
            m_binary("Mul", "mul_1", (3, 5), (1,), seed=13),
            m_binary("Mul", "mul_m1", (3, 5), (3, 1), seed=14),
            m_binary("Mul", "mul_bidir", (1, 7), (5, 1), b_is_input=True, seed=15),
            m_binary("Mul", "mul_4d", (2, 1, 3, 4), (5, 1, 4), b_is_input=True, seed=16),  # -> [2,5,3,4]
            m_binary("Mul", "mul_big_n", (512, 300), (300,), seed=17),
            m_binary("Mul", "mul_big_1", (512, 300), (1,), seed=18),
        ])

    def test_relu(self):
        self.run_all([
            m_relu("relu_tiny", (1,), seed=20),
            m_relu("relu_small", (3, 5), seed=21),
            m_relu("relu_4d", (2, 3, 4, 5), seed=22),
            m_relu("relu_big", (512, 1024), seed=23),
        ])

    # ---- MatMul
    def test_matmul_2d(self):
        self.run_all([
            m_matmul("mm_1x1x1", (1, 1), (1, 1), seed=30),
            m_matmul("mm_small", (3, 4), (4, 5), seed=31),
            m_matmul("mm_odd", (7, 13), (13, 11), b_is_input=True, seed=32),
            m_matmul("mm_big", (256, 512), (512, 300), seed=33),
        ])

    def test_matmul_batched(self):
        self.run_all([
            m_matmul("mm_3d_2d", (2, 3, 4), (4, 5), seed=40),
            m_matmul("mm_3d_3d", (2, 3, 4), (2, 4, 5), b_is_input=True, seed=41),
            m_matmul("mm_3d_3d_w", (3, 5, 6), (3, 6, 2), seed=42),
            m_matmul("mm_bcast_batch", (1, 3, 4), (4, 4, 5), b_is_input=True, seed=43),
            m_matmul("mm_4d_bcast", (2, 1, 3, 4), (3, 4, 5), b_is_input=True, seed=44),
            m_matmul("mm_2d_3d", (3, 4), (2, 4, 5), b_is_input=True, seed=45),
            m_matmul("mm_3d_2d_big", (4, 64, 512), (512, 300), seed=46),
            m_matmul("mm_3d_3d_big", (8, 64, 128), (8, 128, 96), b_is_input=True, seed=47),
        ])

    def test_matmul_1d(self):
        self.run_all([
            m_matmul("mm_vec_mat", (4,), (4, 5), seed=50),     # -> [5]
            m_matmul("mm_mat_vec", (3, 4), (4,), seed=51),     # -> [3]
            m_matmul("mm_vec_vec", (6,), (6,), b_is_input=True, seed=52),  # -> []
            m_matmul("mm_3d_vec", (2, 3, 4), (4,), seed=53),   # -> [2,3]
            m_matmul("mm_vec_3d", (4,), (2, 4, 5), b_is_input=True, seed=54),  # -> [2,5]
            m_matmul("mm_vec_big", (512,), (512, 300), seed=55),
        ])

    # ---- Gemm
    def test_gemm(self):
        M, K, N = 3, 4, 5
        self.run_all([
            m_gemm("gemm_plain", M, K, N, seed=60),
            m_gemm("gemm_c_n", M, K, N, c_shape=(N,), seed=61),
            m_gemm("gemm_c_mn", M, K, N, c_shape=(M, N), seed=62),
            m_gemm("gemm_c_1", M, K, N, c_shape=(1,), seed=63),
            m_gemm("gemm_c_m1", M, K, N, c_shape=(M, 1), seed=64),
            m_gemm("gemm_c_1n", M, K, N, c_shape=(1, N), seed=65),
            m_gemm("gemm_c_scalar", M, K, N, c_shape=(), seed=66),
            m_gemm("gemm_ta", M, K, N, c_shape=(N,), trans_a=1, seed=67),
            m_gemm("gemm_tb", M, K, N, c_shape=(M, N), trans_b=1, seed=68),
            m_gemm("gemm_ta_tb", M, K, N, c_shape=(M, 1), trans_a=1, trans_b=1, seed=69),
            m_gemm("gemm_alpha_beta", M, K, N, c_shape=(M, N), alpha=0.25, beta=-3.0, seed=70),
            m_gemm("gemm_all", M, K, N, c_shape=(1,), alpha=-1.5, beta=0.5, trans_a=1, trans_b=1,
                   b_is_input=True, seed=71),
            m_gemm("gemm_beta0", M, K, N, c_shape=(N,), beta=0.0, seed=72),
            m_gemm("gemm_opset9", M, K, N, c_shape=(M, N), alpha=2.0, beta=0.5, trans_b=1, opset=9,
                   seed=73),
            m_gemm("gemm_big", 256, 512, 300, c_shape=(300,), alpha=0.7, beta=1.3, trans_b=1, seed=74),
            m_gemm("gemm_big_ta", 128, 300, 256, c_shape=(128, 1), trans_a=1, b_is_input=True, seed=75),
        ])

    # ---- all five together
    def test_chain(self):
        self.run_all([
            m_chain("chain_tiny", 2, 3, 4, 5, seed=80),
            m_chain("chain_opset17", 4, 8, 16, 3, opset=17, seed=81),
            m_chain("chain_big", 256, 512, 300, 200, seed=82),
        ])

    def test_big_spreads_over_tiles(self):
        dump = self.compile_and_run(m_matmul("spread_mm", (256, 512), (512, 300), seed=90))
        ex = dump["executable"]
        self.assertGreater(ex["tiles_used"], 16, "a 256x512x300 MatMul should use many tiles: %r" % ex)
        self.assertLessEqual(ex["tiles_used"], ex["tiles"])

    def test_tiles_per_ipu_4(self):
        for m in (m_chain("chain_t4", 64, 128, 96, 40, seed=91),
                  m_matmul("mm_t4", (128, 256), (256, 100), seed=92)):
            with self.subTest(model=m.name):
                dump = self.compile_and_run(m, extra_args=["--tiles_per_ipu", "4"])
                ex = dump["executable"]
                self.assertEqual(ex["tiles"], 4, repr(ex))
                self.assertLessEqual(ex["tiles_used"], 4, repr(ex))

    def test_ipu1(self):
        for m in (m_chain("chain_ipu1", 64, 128, 96, 40, seed=93),
                  m_gemm("gemm_ipu1", 256, 512, 300, c_shape=(256, 1), alpha=0.5, beta=2.0, trans_a=1,
                         seed=94)):
            with self.subTest(model=m.name):
                dump = self.compile_and_run(m, extra_args=["--ipu_version", "ipu1"])
                self.assertEqual(dump["metadata"]["ipu_version"], "ipu1")
                self.assertEqual(dump["executable"]["target"], "ipu1")
                self.assertEqual(dump["executable"]["tiles"], 1216)  # GC2 (Colossus Mk1): 1216 tiles

    def test_empty_dims(self):
        # zero-size tensors are legal ONNX; a MatMul with K = 0 must give zeros.
        self.run_all([
            m_binary("Add", "add_empty", (0, 5), (5,), seed=100),
            m_relu("relu_empty", (3, 0), seed=101),
            m_matmul("mm_empty_m", (0, 4), (4, 5), seed=102),
            m_matmul("mm_empty_k", (3, 0), (0, 5), b_is_input=True, seed=103),
            m_gemm("gemm_empty_k", 3, 0, 5, c_shape=(5,), alpha=2.0, beta=0.5, seed=104),
        ])


if __name__ == "__main__":
    e2e_util.main()
