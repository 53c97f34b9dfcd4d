#!/usr/bin/python3
"""End to end: poprt-convert's PopRT-style features.

--show, --check (with --check_rtol/--check_atol), --summary_json, --config_yaml, --convert_version,
and deterministic output: the same model and flags give byte-identical .onnx and .popef files
across runs, output directories and input locations.

    /usr/bin/python3 tests/e2e/test_convert_features.py --bin-dir /work/main/build/bin
"""

import collections
import json
import os
import shutil
import sys
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from e2e_util import read_bytes  # noqa: E402
from test_roundtrip_shared_models import ORT_DIR, npy_files, ort_env  # noqa: E402

MLP = os.path.join(e2e_util.REPO_DIR, "models", "mlp.onnx")
MLP_SHAPE = "x=4,64"



def make_conv_model(dyn=False):
    """A small CNN as exporters write it: the conv weight is computed from constants (folded), and
    the flatten shape comes from Shape/Gather/Concat of a tensor (folded once shapes are static)."""
    rng = np.random.default_rng(5)
    w0 = rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32)
    bias = rng.uniform(-0.1, 0.1, (4,)).astype(np.float32)
    fc = rng.uniform(-0.5, 0.5, (4 * 4 * 4, 5)).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["two"], name="const_two",
                         value=numpy_helper.from_array(np.array(2.0, np.float32), "two_v")),
        helper.make_node("Mul", ["w0", "two"], ["w"], name="scale_weight"),
        helper.make_node("Conv", ["x", "w", "bias"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["p_shape"], name="shape"),
        helper.make_node("Gather", ["p_shape", "zero"], ["batch"], name="gather_batch", axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"], name="unsqueeze_batch"),
        helper.make_node("Concat", ["batch1", "minus_one"], ["flat_shape"], name="concat_shape", axis=0),
        helper.make_node("Reshape", ["p", "flat_shape"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "fc"], ["m"], name="fc"),
        # A detour through float64, which the device never runs: a host fallback. (A Neg in float64
        # between the Casts: fold_casts would fold a bare f32 -> f64 -> f32 round trip away.)
        helper.make_node("Cast", ["m"], ["m64"], name="to_double", to=TensorProto.DOUBLE),
        helper.make_node("Neg", ["m64"], ["n64"], name="neg_double"),
        helper.make_node("Cast", ["n64"], ["n32"], name="to_float", to=TensorProto.FLOAT),
        helper.make_node("Neg", ["n32"], ["m32"], name="neg"),
        helper.make_node("Identity", ["m32"], ["y"], name="identity"),
    ]
    batch = "N" if dyn else 2
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 5])],
        [numpy_helper.from_array(w0, "w0"), numpy_helper.from_array(bias, "bias"),
         numpy_helper.from_array(fc, "fc"), numpy_helper.from_array(np.array(0, np.int64), "zero"),
         numpy_helper.from_array(np.array([0], np.int64), "axes0"),
         numpy_helper.from_array(np.array([-1], np.int64), "minus_one")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m, full_check=True)
    return m


def make_dynamic_quantized_model():
    """Two MatMuls as ONNX Runtime's dynamic quantization writes them (DynamicQuantizeLinear ->
    MatMulInteger -> Cast -> Mul by the scales): int8 weights without a zero point, and uint8
    weights with zero point 7 (centered, -7..248: int16)."""
    rng = np.random.default_rng(11)
    w1 = rng.integers(-128, 128, (64, 48)).astype(np.int8)
    w2 = rng.integers(0, 256, (48, 32)).astype(np.uint8)
    nodes = []
    for i, (x, w, zp, y) in enumerate((("x", "w1", "", "h"), ("h", "w2", "w2_zero", "y"))):
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [x + "_q", x + "_s", x + "_z"], name="dql%d" % i),
            helper.make_node("MatMulInteger", [x + "_q", w, x + "_z"] + ([zp] if zp else []), [x + "_acc"],
                             name="mmi%d" % i),
            helper.make_node("Cast", [x + "_acc"], [x + "_accf"], name="cast%d" % i, to=TensorProto.FLOAT),
            helper.make_node("Mul", [x + "_accf", x + "_s"], [x + "_m"], name="scale_x%d" % i),
            helper.make_node("Mul", [x + "_m", w + "_scale"], [y], name="scale_w%d" % i),
        ]
    graph = helper.make_graph(
        nodes, "dynamic_quantized",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(np.array(7, np.uint8), "w2_zero"),
         numpy_helper.from_array(rng.uniform(0.01, 0.02, 48).astype(np.float32), "w1_scale"),
         numpy_helper.from_array(rng.uniform(0.01, 0.02, 32).astype(np.float32), "w2_scale")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m, full_check=True)
    return m


def make_squeeze_model():
    """Opset 13 Squeeze + ReduceSum with their axes from Constant nodes (inputs at opset 13,
    attributes at opset 11): libonnx's version converter can take this one down to 11."""
    def const(name):
        return helper.make_node("Constant", [], [name], name=name,
                                value=numpy_helper.from_array(np.array([1], np.int64), name + "_v"))
    nodes = [const("axes_sq"), helper.make_node("Squeeze", ["x", "axes_sq"], ["s"], name="squeeze"),
             const("axes_rs"), helper.make_node("ReduceSum", ["s", "axes_rs"], ["y"], name="reduce", keepdims=1)]
    graph = helper.make_graph(nodes, "squeeze_reduce",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m, full_check=True)
    return m


def make_relu_model(opset=13):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m


def op_counts(model):
    """Node counts by op type, custom domains written DOMAIN:OP as the summary does."""
    return dict(collections.Counter((n.domain + ":" if n.domain not in ("", "ai.onnx") else "") + n.op_type
                                    for n in model.graph.node))


class ConvertFeaturesTest(e2e_util.E2ETestCase):

    def setUp(self):
        super().setUp()
        self.conv_path = self.path("small_cnn.onnx")
        onnx.save(make_conv_model(), self.conv_path)

    def convert(self, args, cwd=None):
        r = e2e_util.run_tool("poprt-convert", args, cwd=cwd, timeout=300)
        return self.assertOk(r)

    def convert_fails(self, args, mentions=(), code=1, usage=False):
        """Fails by the contract of test_bad_inputs.py and leaves a fresh output dir uncreated."""
        out = self.path("failed_out_%d" % len(os.listdir(self.tmp)))
        r = e2e_util.run_tool("poprt-convert", list(args) + ["--output_dir", out])
        line = self.assertFails(r, "poprt-convert", code=code, mentions=mentions, usage=usage)
        self.assertEqual(list(e2e_util.snapshot_dir(out)), [], "files left behind:\n" + r.describe())
        return line

    def test_a_quantized_models_weights_keep_their_integer_types_in_the_converted_onnx(self):
        # quantized_to_float makes the weights float32 integers for the device; the converted ONNX
        # stores them as int8 / int16 read through a Cast, and computes what the original does.
        node_env, why = ort_env()
        if node_env is None:
            self.skipTest("ONNX Runtime reference unavailable: " + why)
        src = self.path("dynamic_quantized.onnx")
        onnx.save(make_dynamic_quantized_model(), src)
        out = self.path("out")
        # without the fusions, whose ai.graphcore ops ONNX Runtime does not have
        self.convert(["--input_model", src, "--output_dir", out, "--passes", "quantized_to_float,dead_code_elimination"])
        path = os.path.join(out, "dynamic_quantized.poprt.onnx")
        converted = onnx.load(path)
        onnx.checker.check_model(converted, full_check=True)
        casts = {n.input[0]: n for n in converted.graph.node if n.op_type == "Cast"}
        stored = {}
        for t in converted.graph.initializer:
            size = int(np.prod(t.dims))
            self.assertFalse(t.data_type == TensorProto.FLOAT and size > 1024, "%s is float32" % t.name)
            if size > 1024:
                self.assertIn(t.name, casts, "nothing widens %s" % t.name)
                self.assertEqual(helper.get_attribute_value(casts[t.name].attribute[0]), TensorProto.FLOAT)
                stored[size] = t.data_type
        self.assertEqual(stored, {64 * 48: TensorProto.INT8, 48 * 32: TensorProto.INT16})
        self.assertLess(os.path.getsize(path), (64 * 48 + 48 * 32) * 4)  # under their float32 bytes

        # ONNX Runtime draws the same inputs for both (same seed, name and shape)
        outputs = []
        for model in (src, path):
            ort_out = self.path("ort_" + os.path.basename(model))
            r = e2e_util.run_cmd(["node", os.path.join(ORT_DIR, "ort_run.js"), model, "--outdir", ort_out, "--runs",
                                  "1", "--warmup", "0", "--threads", "1", "--range", "-2,2"], env=node_env)
            self.assertEqual(r.returncode, 0, r.describe())
            outputs.append(np.load(os.path.join(ort_out, npy_files(ort_out, "output")[0])))
        np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-5, atol=1e-6)

    # ------------------------------------------------------------------ no silent no-ops

    def test_out_of_memory_hints_name_fp16_for_float32_data(self):
        # Two 400x400 float32 weights (640 KB each) are more than a 1-tile target holds (624 KiB);
        # in float16 they take half, still more than the tile. The float32 error suggests
        # --precision fp16 first; the float16 one cannot.
        rng = np.random.default_rng(0)
        g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                               helper.make_node("MatMul", ["h", "W2"], ["y"], name="mm2")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 400])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 400])],
                              [numpy_helper.from_array(rng.uniform(-1, 1, (400, 400)).astype(np.float32), "W"),
                               numpy_helper.from_array(rng.uniform(-1, 1, (400, 400)).astype(np.float32), "W2")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        model = self.path("big.onnx")
        onnx.save(m, model)
        args = ["--input_model", model, "--export_popef", "--tiles_per_ipu", "1"]
        line = self.convert_fails(args, mentions=["hint: --precision fp16 (half the bytes)"])
        self.assertIn("bytes per tile", line)
        line = self.convert_fails(args + ["--precision", "fp16"], mentions=["out of tile memory", "hint: "])
        self.assertNotIn("--precision fp16", line)

    def test_a_conv_that_fits_only_serialized_goes_to_the_device_serialized(self):
        # A temporal 3x1x1 conv as R(2+1)D has them, over whole 32x32 planes: on 8 tiles no split of
        # it fits, so it would fall back to the host; in 4 passes over output channels it fits. On
        # 4 tiles not even that fits: it stays on the host, the model as it was. Either way the
        # output is the conv numpy computes.
        rng = np.random.default_rng(3)
        w = rng.uniform(-0.5, 0.5, (32, 32, 3, 1, 1)).astype(np.float32)
        bias = rng.uniform(-0.1, 0.1, (32,)).astype(np.float32)
        x = rng.uniform(-1, 1, (1, 32, 4, 32, 32)).astype(np.float32)
        g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="temporal", kernel_shape=[3, 1, 1],
                                                pads=[1, 0, 0, 1, 0, 0])], "t3d",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        model, x_path = self.path("t3d.onnx"), self.path("x.npy")
        onnx.save(m, model)
        np.save(x_path, x)
        padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (0, 0), (0, 0)))
        ref = sum(np.einsum("oc,nctij->notij", w[:, :, k, 0, 0], padded[:, :, k:k + 4]) for k in range(3))
        ref += bias.reshape(1, -1, 1, 1, 1)
        for tiles, on_device in (("8", True), ("4", False)):
            out, summary = self.path("out" + tiles), self.path("summary%s.json" % tiles)
            self.convert(["--input_model", model, "--export_popef", "--output_dir", out, "--tiles_per_ipu", tiles,
                          "--summary_json", summary])
            s = self.load_summary(summary)
            serialized = [w for w in s["warnings"] if "serialized into 4 passes" in w]
            if on_device:
                self.assertEqual(s["placement"]["host_nodes"], [])
                self.assertEqual(len(serialized), 1, s["warnings"])
                self.assertIn("'temporal'", serialized[0])
            else:
                self.assertEqual([h["node"] for h in s["placement"]["host_nodes"]], ["temporal"])
                self.assertIn("--serialize_matmul 'temporal=4'", s["placement"]["host_nodes"][0]["reason"])
                self.assertEqual(serialized, [])
            self.assertOk(e2e_util.run_tool("popef-run", [os.path.join(out, "executable.popef"), "--input", "x=" + x_path,
                                                          "--output_dir", self.path("res" + tiles)]))
            got = np.load(self.path("res" + tiles, "output_0_y.npy"))
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)

    def test_flags_that_would_do_nothing_are_refused(self):
        # fp16 without the pass that makes it: float32 weights recorded as fp16, before this was refused.
        self.convert_fails(["--input_model", MLP, "--input_shape", MLP_SHAPE, "--precision", "fp16", "--export_popef",
                            "--skip_passes", "float_to_half"], mentions=["--precision fp16", "float_to_half"],
                           code=2, usage=True)
        self.convert_fails(["--input_model", MLP, "--input_shape", MLP_SHAPE, "--precision", "fp16",
                            "--passes", "constant_folding"], mentions=["float_to_half"], code=2, usage=True)
        # --batch_size on a model whose batch is static: nothing to set.
        static = self.path("relu.onnx")
        onnx.save(make_relu_model(), static)
        self.convert_fails(["--input_model", static, "--batch_size", "4"],
                           mentions=["--batch_size 4", "no input has a dynamic dim at axis 0", "input 'x' is float32[2,4]"])
        self.convert(["--input_model", static, "--batch_size", "2", "--output_dir", self.path("same_batch")])  # as fixed
        # A graph without outputs computes nothing.
        empty = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                                    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], []),
                                  opset_imports=[helper.make_opsetid("", 13)])
        empty.ir_version = 7
        no_outputs = self.path("no_outputs.onnx")
        onnx.save(empty, no_outputs)
        self.convert_fails(["--input_model", no_outputs, "--export_popef"], mentions=["no_outputs.onnx", "has no outputs"])

    # ------------------------------------------------------------------ deterministic output

    def assertSameOutputs(self, model, extra_args, stem):
        """Compile `model` twice — from two locations, into two different output dirs, once from
        another working directory — and compare the .onnx and .popef bytes."""
        copy_dir = self.mkdir("elsewhere", "deeper")
        copy = os.path.join(copy_dir, os.path.basename(model))
        shutil.copy(model, copy)
        out1 = self.path("run1")
        out2 = self.mkdir("run2", "nested")
        self.convert(["--input_model", model, "--output_dir", out1, "--export_popef"] + extra_args)
        self.convert(["--input_model", os.path.basename(model), "--output_dir", os.path.relpath(out2, copy_dir),
                      "--export_popef"] + extra_args, cwd=copy_dir)
        for name in (stem + ".poprt.onnx", "executable.popef"):
            a = read_bytes(os.path.join(out1, name))
            b = read_bytes(os.path.join(out2, name))
            self.assertGreater(len(a), 0, name)
            self.assertTrue(a == b, "%s differs between two runs (%d vs %d bytes)" % (name, len(a), len(b)))

    def test_deterministic_mlp(self):
        self.assertSameOutputs(MLP, ["--input_shape", MLP_SHAPE], "mlp")

    def test_deterministic_conv_with_host_fallback(self):
        self.assertSameOutputs(self.conv_path, ["--tiles_per_ipu", "16"], "small_cnn")

    # ------------------------------------------------------------------ --show

    def test_show(self):
        out = self.path("show_out")
        r = self.convert(["--input_model", MLP, "--show", "--output_dir", out])
        lines = r.stdout.splitlines()
        row_x = [l for l in lines if l.split()[:2] == ["input", "x"]]
        row_y = [l for l in lines if l.split()[:2] == ["output", "y"]]
        self.assertEqual(len(row_x), 1, r.stdout)
        self.assertEqual(len(row_y), 1, r.stdout)
        self.assertEqual(row_x[0].split()[2:], ["float32", "[batch,64]"], r.stdout)
        self.assertEqual(row_y[0].split()[2:], ["float32", "[batch,10]"], r.stdout)
        self.assertFalse(os.path.exists(out), "--show wrote an output dir")
        # with --input_shape the table shows the fixed shape; still nothing written, not even in cwd
        cwd = self.mkdir("show_cwd")
        r = self.convert(["--input_model", MLP, "--show", "--input_shape", MLP_SHAPE, "--export_popef"], cwd=cwd)
        self.assertIn("[4,64]", r.stdout)
        self.assertEqual(os.listdir(cwd), [])

    def test_show_bad_model(self):
        p = self.write_bytes("junk.onnx", b"not a model")
        self.convert_fails(["--input_model", p, "--show"], mentions=[p])

    # ------------------------------------------------------------------ --check

    def check_table_row(self, stdout, output):
        rows = [l.split() for l in stdout.splitlines() if l.split()[:1] == [output]]
        self.assertEqual(len(rows), 1, stdout)
        return rows[0]

    def test_check_passes(self):
        r = self.convert(["--input_model", MLP, "--input_shape", MLP_SHAPE, "--check",
                          "--output_dir", self.path("mlp_out")])
        self.assertIn("check:", r.stdout)
        row = self.check_table_row(r.stdout, "y")
        self.assertEqual(row[1], "float32[4,10]")
        self.assertEqual(row[-1], "ok")
        # the conv model: constant folding changes the graph, the results stay within the tolerance
        r = self.convert(["--input_model", self.conv_path, "--check", "--check_rtol", "1e-5",
                          "--check_atol", "1e-6", "--output_dir", self.path("conv_out")])
        row = self.check_table_row(r.stdout, "y")
        self.assertEqual(row[1], "float32[2,5]")
        self.assertEqual(row[-1], "ok")
        abs_err, rel_err = float(row[2]), float(row[3])
        self.assertLessEqual(abs_err, 1e-5)
        self.assertLessEqual(rel_err, 1e-4)

    def test_check_dynamic_input_is_refused(self):
        self.convert_fails(["--input_model", MLP, "--check"], mentions=["--check", "'x'", "--input_shape"])

    def test_check_bad_tolerances_are_usage_errors(self):
        for args, flag in ((["--check_atol", "-1"], "--check_atol"), (["--check_rtol=-0.5"], "--check_rtol"),
                           (["--check_atol", "nan"], "--check_atol"), (["--check_rtol", "abc"], "--check_rtol")):
            with self.subTest(args=args):
                self.convert_fails(["--input_model", MLP, "--input_shape", MLP_SHAPE, "--check"] + args,
                                   code=2, usage=True, mentions=[flag])

    # ------------------------------------------------------------------ --summary_json

    def load_summary(self, path):
        with open(path) as f:
            s = json.load(f)
        for key in ("input_model", "opset", "inputs", "outputs", "nodes_before", "nodes_after", "passes",
                    "warnings", "placement", "check", "compile_seconds", "files"):
            self.assertIn(key, s)
        return s

    def test_summary_json_with_popef(self):
        out = self.path("out")
        summary = self.path("reports", "summary.json")  # its directory is created
        self.convert(["--input_model", self.conv_path, "--export_popef", "--output_dir", out,
                      "--summary_json", summary, "--check"])
        s = self.load_summary(summary)
        model = onnx.load(self.conv_path)
        converted = onnx.load(os.path.join(out, "small_cnn.poprt.onnx"))
        self.assertEqual(s["nodes_before"]["total"], len(model.graph.node))
        self.assertEqual(s["nodes_before"]["by_op_type"], op_counts(model))
        self.assertEqual(s["nodes_after"]["total"], len(converted.graph.node))
        self.assertEqual(s["nodes_after"]["by_op_type"], op_counts(converted))
        self.assertLess(s["nodes_after"]["total"], s["nodes_before"]["total"])  # folding removed nodes
        self.assertEqual(s["opset"], {"imported": 13, "converted": 13})
        self.assertEqual(s["inputs"], [{"name": "x", "kind": "tensor", "dtype": "float32", "shape": [2, 3, 8, 8]}])
        self.assertEqual(s["outputs"], [{"name": "y", "kind": "tensor", "dtype": "float32", "shape": [2, 5]}])
        names = [p["name"] for p in s["passes"]]
        self.assertIn("constant_folding", names)
        for p in s["passes"]:
            self.assertEqual(set(p), {"name", "seconds", "changed", "counters", "near_misses"})
            self.assertGreaterEqual(p["seconds"], 0)
        folding = [p for p in s["passes"] if p["name"] == "constant_folding"][0]
        self.assertTrue(folding["changed"])
        placement = s["placement"]
        self.assertIsNotNone(placement)
        self.assertEqual(len(placement["device_nodes"]) + len(placement["host_nodes"]), s["nodes_after"]["total"])
        host_reasons = {h["node"]: h["reason"] for h in placement["host_nodes"]}
        self.assertIn("conv", placement["device_nodes"])
        self.assertIn("to_double", host_reasons)  # float64 runs on the host
        self.assertTrue(all(host_reasons.values()))
        self.assertTrue(any("host" in w for w in s["warnings"]), s["warnings"])
        self.assertEqual(s["check"]["passed"], True)
        self.assertGreater(s["compile_seconds"], 0)
        self.assertEqual(os.path.abspath(s["files"]["onnx"]), os.path.join(out, "small_cnn.poprt.onnx"))
        self.assertEqual(os.path.abspath(s["files"]["popef"]), os.path.join(out, "executable.popef"))
        self.assertTrue(os.path.exists(s["files"]["popef"]))

    def test_summary_json_without_popef(self):
        out = self.path("out")
        summary = os.path.join(out, "summary.json")
        self.convert(["--input_model", MLP, "--output_dir", out, "--summary_json", summary])
        s = self.load_summary(summary)
        self.assertIsNone(s["placement"])
        self.assertIsNone(s["files"]["popef"])
        self.assertIsNone(s["check"])
        self.assertEqual(s["nodes_before"]["by_op_type"], op_counts(onnx.load(MLP)))
        self.assertEqual(s["inputs"][0]["shape"], ["batch", 64])  # symbolic dims stay names
        self.assertTrue(any("'x'" in w for w in s["warnings"]), s["warnings"])  # dynamic input
        self.assertEqual(sorted(os.listdir(out)), ["mlp.poprt.onnx", "summary.json"])

    def test_summary_json_bad_path(self):
        f = self.write_bytes("a_file", b"x")
        self.convert_fails(["--input_model", MLP, "--summary_json", os.path.join(f, "s.json")],
                           mentions=["--summary_json", f])
        d = self.mkdir("a_dir")
        self.convert_fails(["--input_model", MLP, "--summary_json", d], mentions=["--summary_json", d])

    # ------------------------------------------------------------------ --config_yaml

    def write_yaml(self, name, text):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_config_yaml_applies_keys(self):
        out = self.path("yaml_out")
        for i, shape in enumerate(('input_shape: {x: [4, 64]}', 'input_shape: ["x=4,64"]', 'input_shape: "x=4,64"')):
            with self.subTest(shape=shape):
                d = "%s_%d" % (out, i)
                cfg = self.write_yaml("c%d.yaml" % i, "input_model: %s\noutput_dir: %s\nexport_popef: true\n%s\n"
                                      "ipu_version: ipu21\nskip_passes: [identity_elimination]\n" % (MLP, d, shape))
                self.convert(["--config_yaml", cfg])
                self.assertTrue(os.path.exists(os.path.join(d, "executable.popef")))
                m = onnx.load(os.path.join(d, "mlp.poprt.onnx"))
                dims = [x.dim_value for x in m.graph.input[0].type.tensor_type.shape.dim]
                self.assertEqual(dims, [4, 64])
                dump = e2e_util.run_tool("popef-dump", [os.path.join(d, "executable.popef"), "--json"])
                self.assertOk(dump)
                self.assertIn("ipu21", dump.stdout)

    def test_config_yaml_flags_win(self):
        yaml_out, flag_out = self.path("from_yaml"), self.path("from_flag")
        cfg = self.write_yaml("c.yaml", "input_model: %s\noutput_dir: %s\ninput_shape: {x: [4, 64]}\n"
                                        "export_popef: true\n" % (MLP, yaml_out))
        self.convert(["--config_yaml", cfg, "--output_dir", flag_out, "--input_shape", "x=2,64"])
        self.assertFalse(os.path.exists(yaml_out))
        m = onnx.load(os.path.join(flag_out, "mlp.poprt.onnx"))
        self.assertEqual([x.dim_value for x in m.graph.input[0].type.tensor_type.shape.dim], [2, 64])

    def test_config_yaml_errors(self):
        cases = [("unknown.yaml", "input_model: %s\nbogus_key: 1\n" % MLP, ["bogus_key"]),
                 ("type_int.yaml", "input_model: %s\nnum_ipus: many\n" % MLP, ["num_ipus"]),
                 ("type_bool.yaml", "input_model: %s\nexport_popef: [1, 2]\n" % MLP, ["export_popef"]),
                 ("type_shape.yaml", "input_model: %s\ninput_shape: {x: [4, b]}\n" % MLP, ["input_shape"]),
                 ("range.yaml", "input_model: %s\ncheck_atol: -1\n" % MLP, ["check_atol"]),
                 ("syntax.yaml", "input_model: [unclosed\n", []),
                 ("list.yaml", "- input_model\n", [])]
        for name, text, mentions in cases:
            with self.subTest(file=name):
                p = self.write_yaml(name, text)
                self.convert_fails(["--config_yaml", p], mentions=[p] + mentions)
        missing = self.path("missing.yaml")
        self.convert_fails(["--config_yaml", missing], mentions=[missing])
        # no input_model anywhere: a usage error
        p = self.write_yaml("no_model.yaml", "export_popef: true\n")
        self.convert_fails(["--config_yaml", p], code=2, usage=True, mentions=["input_model"])

    # ------------------------------------------------------------------ --convert_version

    def test_convert_version_down(self):
        p = self.path("squeeze13.onnx")
        onnx.save(make_squeeze_model(), p)
        out = self.path("v11")
        summary = os.path.join(out, "s.json")
        self.convert(["--input_model", p, "--convert_version", "11", "--output_dir", out, "--check",
                      "--summary_json", summary, "--export_popef"])
        m = onnx.load(os.path.join(out, "squeeze13.poprt.onnx"))
        onnx.checker.check_model(m, full_check=True)
        self.assertEqual([o.version for o in m.opset_import if o.domain in ("", "ai.onnx")], [11])
        squeeze = [n for n in m.graph.node if n.op_type == "Squeeze"]
        self.assertEqual(len(squeeze), 1)
        self.assertEqual([a.name for a in squeeze[0].attribute], ["axes"])  # opset 11: axes is an attribute
        self.assertEqual(len(squeeze[0].input), 1)
        with open(summary) as f:
            self.assertEqual(json.load(f)["opset"], {"imported": 13, "converted": 11})
        # and it still computes the same thing
        x = np.random.default_rng(1).uniform(-1, 1, (2, 1, 4)).astype(np.float32)
        xp = self.path("x.npy")
        np.save(xp, x)
        r = e2e_util.run_tool("popef-run", [os.path.join(out, "executable.popef"), "--input", "x=" + xp,
                                            "--output_dir", os.path.join(out, "run")])
        self.assertOk(r)
        got = np.load(os.path.join(out, "run", "output_0_y.npy"))
        np.testing.assert_allclose(got, x.reshape(2, 4).sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)

    def test_convert_version_up(self):
        p = self.path("relu11.onnx")
        onnx.save(make_relu_model(11), p)
        out = self.path("v17")
        self.convert(["--input_model", p, "--convert_version", "17", "--output_dir", out])
        m = onnx.load(os.path.join(out, "relu11.poprt.onnx"))
        self.assertEqual([o.version for o in m.opset_import if o.domain in ("", "ai.onnx")], [17])

    def test_convert_version_errors(self):
        for v in ("5", "18", "0"):
            with self.subTest(version=v):
                self.convert_fails(["--input_model", MLP, "--convert_version", v], code=2, usage=True,
                                   mentions=["--convert_version"])
        # a conversion libonnx's converter has no adapter for: one line naming the flag and model
        p = self.path("relu13.onnx")
        onnx.save(make_relu_model(13), p)
        self.convert_fails(["--input_model", p, "--convert_version", "11"], mentions=["--convert_version 11", p])


if __name__ == "__main__":
    e2e_util.main()
