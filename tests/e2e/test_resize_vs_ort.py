#!/usr/bin/python3
"""End to end: Resize in every mode (nearest, linear, cubic) and coordinate transformation mode,
from sizes and from scales (up, down, fractional), against ONNX Runtime.

One model holds a Resize per case, all reading the same input: poprt-convert compiles it once,
popef-run runs it on the input ONNX Runtime generated, and each output must match ONNX Runtime's
(atol 1e-5: the two interpolate in different orders).

Left out on purpose: align_corners with a scale that does not give a whole output length. The
ONNX test data (test_resize_downsample_scales_*_align_corners) divide by in * scale - 1 there,
ONNX Runtime by the floored output length - 1, and fails those tests; poprt follows the ONNX data,
which the conformance suite checks.

    /usr/bin/python3 tests/e2e/test_resize_vs_ort.py --bin-dir /work/main/build/bin
"""

import glob
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from test_roundtrip_shared_models import ORT_DIR, ort_env  # noqa: E402

SHAPE = [1, 2, 9, 11]
MODES = ("nearest", "linear", "cubic")
COORDS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
# (sizes or scales of the last two dims): up, down, fractional both ways, a whole factor.
TARGETS = (("sizes", (13, 7)), ("sizes", (5, 3)), ("scales", (1.7, 0.6)), ("scales", (2.0, 2.0)), ("scales", (0.5, 0.37)))


def whole_lengths(kind, target):
    return kind == "sizes" or all(float(SHAPE[2 + i] * s).is_integer() for i, s in enumerate(target))


def cases():
    for mode in MODES:
        for coord in COORDS:
            for kind, target in TARGETS:
                if coord == "align_corners" and not whole_lengths(kind, target):
                    continue  # see the module's docstring
                yield mode, coord, kind, target


def resize_model():
    """The model and its output names, one per case."""
    nodes, inits, outputs = [], [], []
    for i, (mode, coord, kind, target) in enumerate(cases()):
        attrs = {"mode": mode, "coordinate_transformation_mode": coord}
        if mode == "cubic":
            attrs["cubic_coeff_a"] = -0.75
        roi = np.array([], np.float32)
        if coord == "tf_crop_and_resize":
            roi = np.array([0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7], np.float32)
            attrs["extrapolation_value"] = 0.5
        inits.append(numpy_helper.from_array(roi, "roi_%d" % i))
        if kind == "sizes":
            inits.append(numpy_helper.from_array(np.array([], np.float32), "scales_%d" % i))
            inits.append(numpy_helper.from_array(np.array(SHAPE[:2] + list(target), np.int64), "sizes_%d" % i))
            inputs = ["x", "roi_%d" % i, "scales_%d" % i, "sizes_%d" % i]
        else:
            inits.append(numpy_helper.from_array(np.array([1, 1] + list(target), np.float32), "scales_%d" % i))
            inputs = ["x", "roi_%d" % i, "scales_%d" % i]
        name = "y%d_%s_%s_%s" % (i, mode, coord, kind)
        nodes.append(helper.make_node("Resize", inputs, [name], name="resize_%d" % i, **attrs))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [None] * 4))
    graph = helper.make_graph(nodes, "resizes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)], outputs,
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), [o.name for o in outputs]


class ResizeAgainstOnnxRuntime(e2e_util.E2ETestCase):
    def test_every_mode_matches_onnx_runtime(self):
        env, why = ort_env()
        if env is None:
            self.skipTest(why)
        model, names = resize_model()
        self.assertGreater(len(names), 60)
        path = self.path("resizes.onnx")
        onnx.save(model, path)
        ort_out = self.path("ort")
        r = e2e_util.run_cmd(["node", os.path.join(ORT_DIR, "ort_run.js"), path, "--outdir", ort_out, "--runs", "1",
                              "--warmup", "0", "--threads", "1", "--range", "-1,1"], env=env)
        self.assertEqual(r.returncode, 0, r.describe())
        x = glob.glob(os.path.join(ort_out, "input_0_*.npy"))[0]
        out = self.path("out")
        self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", path, "--export_popef", "--output_dir", out]))
        res = self.path("res")
        self.assertOk(e2e_util.run_tool("popef-run", [os.path.join(out, "executable.popef"), "--input", "x=" + x,
                                                      "--output_dir", res]))
        for i, name in enumerate(names):
            with self.subTest(name):
                want = np.load(os.path.join(ort_out, "output_%d_%s.npy" % (i, name)))
                got = np.load(os.path.join(res, "output_%d_%s.npy" % (i, name)))
                self.assertEqual(got.shape, want.shape)
                self.assertGreater(np.abs(want).max(), 0.1, "a case that compares nothing")
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


if __name__ == "__main__":
    e2e_util.main()
