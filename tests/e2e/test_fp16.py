#!/usr/bin/python3
"""End to end: `poprt-convert --precision fp16`.

- A few small models of ../shared/models compile with --precision fp16, run with popef-run on
  their stored inputs, and each float output matches ONNX Runtime's stored fp32 output: cosine
  similarity >= 0.999 or within rtol/atol 1e-2, no NaN/Inf the fp32 output does not have, and the
  same top-1 for class-score models. oww_melspectrogram's power spectrum (up to 3.7e9) is the real
  overflow case the avoid-overflow patterns exist for.
- The optimised ONNX passes onnx.checker, holds float16 weights (about half the bytes) and keeps
  float32 model inputs/outputs unless --fp16_io.
- --precision_compare prints its table and fills --summary_json; bad fp16 flags fail with one line.
- The PopEF stores a float32 weight that fits float16 as float16 (one beyond 65504 keeps float32)
  and popef-run computes with the weight rounded to float16.
- Casts between float32 and float16 run on the device, bit-exact with numpy.

    /usr/bin/python3 tests/e2e/test_fp16.py --bin-dir build/bin
"""

import glob
import json
import os
import sys
import unittest

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "malformed"))
import e2e_util  # noqa: E402
import popef_io  # noqa: E402

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_DIR = os.environ.get("POPRT_SHARED_DIR", os.path.normpath(os.path.join(_REPO, "..", "shared")))
MODELS_DIR = os.path.join(SHARED_DIR, "models")

# Small models (a second or two each on the host fallback); class-score models also keep their
# top-1. ultraface_rfb320 decodes boxes with Exp (kept fp32 to its outputs); light_squeezenet's
# constant-filled weights push activations past 65504 (the range check keeps those in fp32).
RUN_MODELS = ["mnist_cntk", "resnet20_cifar", "yunet_face", "oww_melspectrogram", "ultraface_rfb320", "light_squeezenet"]
CLASS_SCORE_MODELS = {"mnist_cntk", "resnet20_cifar"}
RANGE_KEPT = {"light_squeezenet"}  # most of its convs stay fp32: not half the bytes
MIN_COSINE = 0.999
TOL = 1e-2


def stored(name):
    data = os.path.join(MODELS_DIR, name)
    with open(os.path.join(data, "meta.json")) as f:
        meta = json.load(f)
    return data, meta


def shape_args(meta):
    args = []
    for inp in meta["inputs"]:
        args += ["--input_shape", "%s=%s" % (inp["name"], ",".join(str(d) for d in inp["dims"]))]
    return args


def initializer_bytes(model):
    return sum(len(numpy_helper.to_array(t).tobytes()) for t in model.graph.initializer)


class Fp16SharedModelsTest(e2e_util.E2ETestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(MODELS_DIR):
            raise unittest.SkipTest("%s does not exist" % MODELS_DIR)

    def test_small_models_match_onnx_runtime_in_fp16(self):
        for name in RUN_MODELS:
            with self.subTest(model=name):
                self.check_model(name)

    def check_model(self, name):
        data, meta = stored(name)
        out = self.mkdir(name)
        src = os.path.join(MODELS_DIR, name + ".onnx")
        args = ["--input_model", src, "--precision", "fp16", "--export_popef", "--output_dir", out,
                "--summary_json", os.path.join(out, "summary.json")] + shape_args(meta)
        self.assertOk(e2e_util.run_tool("poprt-convert", args, timeout=600))

        # The optimised ONNX: valid, float16 weights (about half the bytes), float32 model I/O.
        converted = onnx.load(os.path.join(out, name + ".poprt.onnx"))
        onnx.checker.check_model(converted)
        kinds = {t.data_type for t in converted.graph.initializer if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16)}
        self.assertIn(TensorProto.FLOAT16, kinds, "%s: no float16 weights" % name)
        if name not in RANGE_KEPT:
            # Against the fp32 conversion (light_* models build their weights with ConstantOfShape).
            fp32_out = self.mkdir(name + "_fp32")
            self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", src, "--output_dir", fp32_out] + shape_args(meta)))
            ratio = initializer_bytes(converted) / float(initializer_bytes(onnx.load(os.path.join(fp32_out, name + ".poprt.onnx"))))
            self.assertLess(ratio, 0.55, "%s: weights take %.2f of their fp32 bytes" % (name, ratio))
        for vi in list(converted.graph.input) + list(converted.graph.output):
            self.assertEqual(vi.type.tensor_type.elem_type, TensorProto.FLOAT, "%s: %s" % (name, vi.name))
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["precision"], "fp16")
        folds = [p for p in summary["passes"] if p["name"] == "fold_casts"]
        self.assertEqual(len(folds), 1)
        self.assertEqual(folds[0]["counters"]["cast_chains_remaining"], 0, "%s: Cast chains left" % name)

        run_args = [os.path.join(out, "executable.popef"), "--output_dir", os.path.join(out, "outputs")]
        for inp in meta["inputs"]:
            files = glob.glob(os.path.join(data, "input_%d_*.npy" % inp["index"]))
            self.assertEqual(len(files), 1)
            run_args += ["--input", "%s=%s" % (inp["name"], files[0])]
        self.assertOk(e2e_util.run_tool("popef-run", run_args, timeout=600))
        for outp in meta["outputs"]:
            expected_file = glob.glob(os.path.join(data, "output_%d_*.npy" % outp["index"]))[0]
            expected = np.load(expected_file)
            got = np.load(os.path.join(out, "outputs", os.path.basename(expected_file)))
            self.assertEqual(got.dtype, expected.dtype, "%s %s" % (name, outp["name"]))
            self.assertEqual(got.shape, expected.shape, "%s %s" % (name, outp["name"]))
            cosine, max_abs, new_nonfinite, close = e2e_util.precision_accuracy(expected, got, TOL)
            what = "%s output %s: cosine %.6f, max abs error %.3g" % (name, outp["name"], cosine, max_abs)
            self.assertEqual(new_nonfinite, 0, what + ": NaN/Inf where ONNX Runtime has none")
            self.assertTrue(cosine >= MIN_COSINE or close, what)
            if name in CLASS_SCORE_MODELS:
                self.assertEqual(int(np.argmax(got)), int(np.argmax(expected)), what + ": top-1 differs")


def small_model(path, opset=13):
    """x[2,8] -> MatMul(w1) -> Relu -> MatMul(w2) -> Softmax -> y[2,4]."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w2"], ["z"], name="mm2"),
             helper.make_node("Softmax", ["z"], ["y"], name="softmax", axis=-1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, path)
    return m


class Fp16FlagsTest(e2e_util.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.model = self.path("small.onnx")
        small_model(self.model)

    def convert(self, *extra, out="out"):
        return e2e_util.run_tool("poprt-convert", ["--input_model", self.model, "--output_dir", self.path(out)] + list(extra))

    def converted(self, out="out"):
        return onnx.load(self.path(out, "small.poprt.onnx"))

    def test_fp16_io_changes_model_inputs_and_outputs(self):
        self.assertOk(self.convert("--precision", "fp16", out="a"))
        self.assertOk(self.convert("--precision", "fp16", "--fp16_io", out="b"))
        a, b = self.converted("a"), self.converted("b")
        self.assertEqual(a.graph.input[0].type.tensor_type.elem_type, TensorProto.FLOAT)
        self.assertEqual(a.graph.output[0].type.tensor_type.elem_type, TensorProto.FLOAT)
        self.assertEqual(b.graph.input[0].type.tensor_type.elem_type, TensorProto.FLOAT16)
        self.assertEqual(b.graph.output[0].type.tensor_type.elem_type, TensorProto.FLOAT16)
        self.assertEqual(sum(n.op_type == "Cast" for n in a.graph.node), 2)
        self.assertEqual(sum(n.op_type == "Cast" for n in b.graph.node), 0)
        for m in (a, b):
            onnx.checker.check_model(m)
            self.assertTrue(all(t.data_type == TensorProto.FLOAT16 for t in m.graph.initializer))

    def test_skip_lists_keep_ops_in_fp32(self):
        self.assertOk(self.convert("--precision", "fp16", "--fp16_skip_op_types", "Softmax",
                                   "--fp16_skip_node_names", "mm1"))
        m = self.converted()
        onnx.checker.check_model(m)
        m = onnx.shape_inference.infer_shapes(m)
        types = {vi.name: vi.type.tensor_type.elem_type for vi in list(m.graph.value_info) + list(m.graph.output)}
        self.assertEqual(types["h"], TensorProto.FLOAT)   # mm1, named
        self.assertEqual(types["r"], TensorProto.FLOAT16)  # relu converts
        self.assertEqual(types["y"], TensorProto.FLOAT)   # softmax, by type, writes the output directly
        w1 = [t for t in m.graph.initializer if t.name == "w1"][0]
        self.assertEqual(w1.data_type, TensorProto.FLOAT)  # only mm1 reads it

    def test_precision_compare_prints_a_table_and_fills_the_summary(self):
        r = self.assertOk(self.convert("--precision", "fp16", "--precision_compare", "--precision_compare_per_layer",
                                       "--summary_json", self.path("s.json")))
        self.assertIn("precision_compare", r.stdout)
        self.assertIn("cosine", r.stdout)
        self.assertIn("per layer", r.stdout)
        with open(self.path("s.json")) as f:
            s = json.load(f)
        outs = s["precision_compare"]["outputs"]
        self.assertEqual([o["name"] for o in outs], ["y"])
        self.assertGreater(outs[0]["cosine"], 0.999)
        self.assertLess(outs[0]["max_abs_error"], 1e-2)
        # The values inside the graph (the output is in the outputs table).
        self.assertEqual({l["name"] for l in s["precision_compare"]["layers"]}, {"h", "r", "z"})
        # With the inputs from a file, its name is reported as read, not generated.
        x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
        np.save(self.path("x.npy"), x)
        r = self.assertOk(self.convert("--precision", "fp16", "--precision_compare", "--precision_compare_input",
                                       "x=" + self.path("x.npy"), "--summary_json", self.path("t.json"), out="o2"))
        with open(self.path("t.json")) as f:
            self.assertEqual(json.load(f)["precision_compare"]["file_inputs"], ["x"])

    def test_bad_fp16_flags_fail_with_one_line(self):
        self.assertFails(self.convert("--precision", "fp8"), "poprt-convert", 2, ["--precision", "fp8"], usage=True)
        # Flag values and combinations no model could make right: usage errors (exit 2).
        self.assertFails(self.convert("--precision", "fp16", "--fp16_skip_op_types", "Softmax,Sofmax"), "poprt-convert", 2,
                         ["--fp16_skip_op_types", "'Sofmax'"], usage=True)
        self.assertFails(self.convert("--fp16_io"), "poprt-convert", 2, ["--fp16_io", "--precision fp16"], usage=True)
        self.assertFails(self.convert("--precision_compare"), "poprt-convert", 2, ["--precision_compare"], usage=True)
        self.assertFails(self.convert("--precision", "fp16", "--enable_avoid_overflow_patterns=maybe"), "poprt-convert", 2,
                         usage=True)
        self.assertFails(self.convert("--precision", "fp16", "--precision_compare", "--precision_compare_input",
                                      "nope=" + self.path("x.npy")), "poprt-convert", 1, ["nope"])
        self.assertFalse(os.path.exists(self.path("out", "small.poprt.onnx")))

    def test_output_is_deterministic(self):
        for out in ("d1", "d2"):
            self.assertOk(self.convert("--precision", "fp16", "--fp16_skip_op_types", "Relu", "--export_popef", out=out))
        for f in ("small.poprt.onnx", "executable.popef"):
            with open(self.path("d1", f), "rb") as a, open(self.path("d2", f), "rb") as b:
                self.assertEqual(a.read(), b.read(), f)

    def test_unmatched_skip_name_is_a_warning(self):
        r = self.assertOk(self.convert("--precision", "fp16", "--fp16_skip_node_names", "no_such_node"))
        self.assertIn("no_such_node", r.stdout)
        self.assertIn("warning", r.stdout)

    def test_overflow_patterns_flag_turns_them_off(self):
        # exp(x * 20) / sum(exp(x * 20)) (softmax without the max): exp(20) = 4.9e8 overflows fp16.
        # Vector ops only: --fp16_keep_vector_regions=false, or the whole graph would stay float32.
        nodes = [helper.make_node("Mul", ["x", "k"], ["s"], name="scale"),
                 helper.make_node("Exp", ["s"], ["e"], name="exp"),
                 helper.make_node("ReduceSum", ["e", "axes"], ["sum"], name="sum", keepdims=1),
                 helper.make_node("Div", ["e", "sum"], ["y"], name="div")]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                              [numpy_helper.from_array(np.array(20, np.float32), "k"),
                               numpy_helper.from_array(np.array([-1], np.int64), "axes")])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), self.model)
        x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
        np.save(self.path("x.npy"), x)
        s = np.exp(x * 20.0)
        expected = s / s.sum(axis=-1, keepdims=True)
        for flag, ok in (("true", True), ("false", False)):
            out = "o_" + flag
            self.assertOk(self.convert("--precision", "fp16", "--enable_avoid_overflow_patterns=" + flag,
                                       "--fp16_keep_vector_regions=false", "--export_popef", out=out))
            self.assertOk(e2e_util.run_tool("popef-run", [self.path(out, "executable.popef"), "--input",
                                                          "x=" + self.path("x.npy"), "--output_dir", self.path(out, "r")]))
            got = np.load(self.path(out, "r", "output_0_y.npy"))
            good = bool(np.all(np.isfinite(got))) and np.allclose(got, expected, rtol=TOL, atol=TOL)
            self.assertEqual(good, ok, "--enable_avoid_overflow_patterns=%s: %s" % (flag, got))



def tensor_blobs(popef_path):
    """{name: (dtype, shape, payload data)} of a PopEF's tensor data blobs (docs/POPEF.md)."""
    with open(popef_path, "rb") as f:
        blobs = popef_io.decode_popef(f.read())
    out = {}
    for b in blobs:
        if b.type == 3:
            (n,) = np.frombuffer(b.payload[:8], "<u8")
            header = popef_io.cbor_decode(b.payload[8:8 + int(n)])
            out[b.name.decode()] = (header["dtype"], header["shape"], b.payload[8 + int(n):])
    return out


class WeightStorageTest(e2e_util.E2ETestCase):
    def save_model(self, nodes, outputs, weights):
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 4]) for o in outputs],
                              [numpy_helper.from_array(w, n) for n, w in weights.items()])
        model = self.path("m.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
        return model

    def convert_and_run(self, model, x, out, *extra):
        """The PopEF's tensor data blobs, and popef-run's outputs {name: array} on x."""
        np.save(self.path("x.npy"), x)
        self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", model, "--export_popef", "--output_dir",
                                                          self.path(out)] + list(extra)))
        self.assertOk(e2e_util.run_tool("popef-run", [self.path(out, "executable.popef"), "--input",
                                                      "x=" + self.path("x.npy"), "--output_dir", self.path(out, "run")]))
        outputs = {f.split("_", 2)[2][:-4]: np.load(self.path(out, "run", f)) for f in os.listdir(self.path(out, "run"))}
        return tensor_blobs(self.path(out, "executable.popef")), outputs

    def test_float32_weights_are_stored_as_float16_when_they_fit(self):
        # x[2,8] -> MatMul(w1) -> y1 and MatMul(w2) -> y2 with weights of 3e4: the range check
        # keeps both MatMuls float32 (their outputs pass 65504). w1 fits float16 and is stored so;
        # w2 holds 1e5 (beyond 65504) and keeps float32.
        rng = np.random.default_rng(3)
        w1 = np.clip(rng.standard_normal((8, 4)) * 3e4, -65000, 65000).astype(np.float32)
        w2 = np.clip(rng.standard_normal((8, 4)) * 3e4, -65000, 65000).astype(np.float32)
        w2[0, 0] = 1.0e5
        model = self.save_model([helper.make_node("MatMul", ["x", "w1"], ["y1"], name="mm1"),
                                 helper.make_node("MatMul", ["x", "w2"], ["y2"], name="mm2")], ["y1", "y2"],
                                {"w1": w1, "w2": w2})
        x = rng.uniform(-1, 1, (2, 8)).astype(np.float32)
        fp16, got = self.convert_and_run(model, x, "fp16", "--precision", "fp16")
        fp32, _ = self.convert_and_run(model, x, "fp32")
        self.assertEqual((fp16["w1"][0], fp16["w2"][0]), ("float16", "float32"))
        stored = np.frombuffer(fp16["w1"][2], "<f2").astype(np.float32)
        np.testing.assert_array_equal(stored, w1.astype(np.float16).astype(np.float32).ravel())
        for t, _, _ in fp32.values():
            self.assertEqual(t, "float32")  # --precision fp32 stores weights as they are
        # popef-run computes with w1 rounded to float16, and w2 as it is.
        w1_16 = w1.astype(np.float16).astype(np.float64)
        expected = x.astype(np.float64) @ w1_16
        unrounded = x.astype(np.float64) @ w1.astype(np.float64)
        atol = 1e-6 * np.abs(expected).max()
        np.testing.assert_allclose(got["y1"], expected, rtol=1e-5, atol=atol)
        self.assertGreater(np.abs(unrounded - expected).max(), 100 * atol)  # the rounding is visible
        np.testing.assert_allclose(got["y2"], x.astype(np.float64) @ w2.astype(np.float64), rtol=1e-5, atol=atol)

    def test_float32_weights_of_integers_are_stored_as_int8_or_int16(self):
        # Four weights of x[2,8] -> MatMul -> y<i>: integers within int8, integers up to 300
        # (int16), integers with a -0.0 (whose sign int8 would lose) and fractions. Under both
        # precisions the first two are stored narrower, the others as they are, and popef-run
        # computes with every weight exactly as it was.
        rng = np.random.default_rng(5)
        w = {"w8": rng.integers(-128, 128, (8, 4)).astype(np.float32),
             "w16": rng.integers(-300, 301, (8, 4)).astype(np.float32),
             "wneg0": rng.integers(-5, 6, (8, 4)).astype(np.float32),
             "wfrac": (rng.integers(-5, 6, (8, 4)) + 0.5).astype(np.float32)}
        w["w16"][0, 0] = 300
        w["wneg0"][0, 0] = -0.0
        names = list(w)
        model = self.save_model([helper.make_node("MatMul", ["x", n], ["y_" + n], name="mm_" + n) for n in names],
                                ["y_" + n for n in names], w)
        x = rng.uniform(-1, 1, (2, 8)).astype(np.float32)
        # Under fp16 the MatMuls are kept float32 (so their weights are float32 weights) and
        # their fractional weight is stored as it is.
        for flags in ([], ["--precision", "fp16", "--fp16_skip_op_types", "MatMul"]):
            with self.subTest(flags=flags):
                blobs, got = self.convert_and_run(model, x, "fp16" if flags else "fp32", *flags)
                self.assertEqual({n: blobs[n][0] for n in names},
                                 {"w8": "int8", "w16": "int16", "wneg0": "float32", "wfrac": "float32"})
                np.testing.assert_array_equal(np.frombuffer(blobs["w8"][2], "i1").astype(np.float32), w["w8"].ravel())
                np.testing.assert_array_equal(np.frombuffer(blobs["w16"][2], "<i2").astype(np.float32), w["w16"].ravel())
                for n in ("w8", "w16", "wneg0"):
                    expected = x.astype(np.float64) @ w[n].astype(np.float64)
                    np.testing.assert_allclose(got["y_" + n], expected, rtol=1e-6, atol=1e-5, err_msg=n)

    def test_weights_of_nodes_kept_float32_on_request_are_stored_as_they_are(self):
        # x[2,8] -> MatMul(w1) -> Relu -> MatMul(w2) -> y, kept float32 by the skip list: the
        # weights keep every bit, and popef-run computes with them unrounded.
        rng = np.random.default_rng(4)
        w1 = rng.standard_normal((8, 16)).astype(np.float32)
        w2 = (rng.standard_normal((16, 4)) * 0.5).astype(np.float32)
        model = self.save_model([helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
                                 helper.make_node("Relu", ["h"], ["r"], name="relu"),
                                 helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")], ["y"], {"w1": w1, "w2": w2})
        x = rng.standard_normal((2, 8)).astype(np.float32)
        for flags in (["--fp16_skip_op_types", "MatMul,Relu"], ["--fp16_skip_node_names", "mm1,relu,mm2"]):
            with self.subTest(flags=flags):
                blobs, got = self.convert_and_run(model, x, flags[0].strip("-"), "--precision", "fp16", *flags)
                self.assertEqual({n: b[0] for n, b in blobs.items()}, {"w1": "float32", "w2": "float32"})
                expected = np.maximum(x.astype(np.float64) @ w1.astype(np.float64), 0) @ w2.astype(np.float64)
                np.testing.assert_allclose(got["y"], expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())

    def test_min_cosine_keeps_yolox_nano_within_0_999_of_onnx_runtime(self):
        # Rounding yolox_nano's weights to float16 alone gives cosine 0.9969 against its float32
        # output in ONNX Runtime: plain fp16 cannot reach 0.999, --fp16_min_cosine 0.999 must
        # (calibrated on the stored input, judged against ONNX Runtime's stored output).
        data = os.path.join(MODELS_DIR, "yolox_nano")
        if not os.path.isdir(data):
            self.skipTest("%s does not exist" % data)
        image = glob.glob(os.path.join(data, "input_0_*.npy"))[0]
        for flags, passes in (([], False), (["--fp16_min_cosine", "0.999", "--fp16_calibration_input", "images=" + image], True)):
            with self.subTest(flags=flags):
                out = self.path("yolox%d" % len(flags))
                r = self.assertOk(e2e_util.run_tool("poprt-convert", [
                    "--input_model", os.path.join(MODELS_DIR, "yolox_nano.onnx"), "--precision", "fp16", "--export_popef",
                    "--output_dir", out] + flags, timeout=300))
                if flags:
                    self.assertIn("for --fp16_min_cosine 0.999", r.stdout)
                run = e2e_util.run_tool("popef-run", [os.path.join(out, "executable.popef"), "--input", "images=" + image,
                                                      "--expected_dir", data, "--compare", "cosine"], timeout=300)
                self.assertEqual(run.returncode, 0 if passes else 1, run.describe())

    def test_host_program_weights_are_float16_too(self):
        # An LSTM runs on the host: its weights travel inside the host program, where popef-dump
        # counts them; --precision fp16 halves them, Slice'd gate weights included.
        rng = np.random.default_rng(4)
        H, I = 8, 4
        w = rng.standard_normal((1, 4 * H, I)).astype(np.float32)
        r = rng.standard_normal((1, 4 * H, H)).astype(np.float32)
        nodes = [helper.make_node("Slice", ["r_all", "starts", "ends"], ["r"], name="slice_r"),
                 helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="lstm", hidden_size=H)]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 1, I])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 1, 1, H])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.concatenate([r, r]), "r_all"),
                               numpy_helper.from_array(np.array([0], np.int64), "starts"),
                               numpy_helper.from_array(np.array([1], np.int64), "ends")])
        model = self.path("lstm.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
        sizes = {}
        for out, extra in (("fp32", []), ("fp16", ["--precision", "fp16"])):
            self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", model, "--export_popef", "--output_dir",
                                                              self.path(out)] + extra))
            dump = json.loads(self.assertOk(e2e_util.run_tool("popef-dump", [self.path(out, "executable.popef"),
                                                                             "--json"])).stdout)
            self.assertEqual(dump["executable"]["host_programs"], 1)
            sizes[out] = dump["executable"]["host_program_weight_bytes"]
        self.assertEqual(sizes["fp32"], (w.size + r.size) * 4)  # constant folding sliced r_all
        self.assertEqual(sizes["fp16"], (w.size + r.size) * 2)


class Fp16DeviceCastTest(e2e_util.E2ETestCase):
    def test_casts_between_float32_and_float16_run_on_the_device(self):
        # x -> Cast(float16) -> Relu -> Cast(float32) -> y: the Casts are Cast vertices, bit-exact with
        # numpy's conversions (round to nearest even, beyond 65504 to infinity).
        nodes = [helper.make_node("Cast", ["x"], ["h"], name="narrow", to=TensorProto.FLOAT16),
                 helper.make_node("Relu", ["h"], ["r"], name="relu"),
                 helper.make_node("Cast", ["r"], ["y"], name="widen", to=TensorProto.FLOAT)]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 33])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 33])])
        model = self.path("cast.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
        x = (np.random.default_rng(5).standard_normal((4, 33)) * 3).astype(np.float32)
        x.flat[:8] = [65504, 65519, 65520, 1e6, 6e-8, 1.00048828125, 2049, -1e6]
        np.save(self.path("x.npy"), x)
        self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", model, "--export_popef", "--output_dir",
                                                          self.path("out"), "--summary_json", self.path("s.json")]))
        with open(self.path("s.json")) as f:
            placement = json.load(f)["placement"]
        self.assertEqual(placement["host_nodes"], [])
        self.assertEqual(sorted(placement["device_nodes"]), ["narrow", "relu", "widen"])
        self.assertOk(e2e_util.run_tool("popef-run", [self.path("out", "executable.popef"), "--input",
                                                      "x=" + self.path("x.npy"), "--output_dir", self.path("run")]))
        got = np.load(self.path("run", "output_0_y.npy"))
        with np.errstate(over="ignore"):
            expected = np.maximum(x.astype(np.float16), np.float16(0)).astype(np.float32)
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


if __name__ == "__main__":
    e2e_util.main()
