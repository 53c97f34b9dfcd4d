#!/usr/bin/python3
"""End to end: a custom op as users bring one. examples/custom_op/ is built as its own project
against the installed poprt package (`cmake --install` into a temporary prefix): the plugin
(libswish_op.so, com.example::Swish), the PopEF its build compiles with poprt_add_popef, and a
program running it through the runtime API. Then the same model through poprt-convert and popef-run
(fp32 and fp16), the Python package, and the errors: a PopEF run without its plugin, a model
converted without it.

The reference is numpy on the model's own weights: y = swish(x @ W1 + b1, beta 1.5) @ W2.

    /usr/bin/python3 tests/e2e/test_custom_op.py --bin-dir build/bin
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

REPO = e2e_util.REPO_DIR
EXAMPLE = os.path.join(REPO, "examples", "custom_op")
MODEL = os.path.join(EXAMPLE, "swish_mlp.onnx")


def reference(x):
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(MODEL).graph.initializer}
    a = x.astype(np.float64) @ w["W1"] + w["b1"]
    s = a / (1.0 + np.exp(-1.5 * a))
    return s @ w["W2"]


class CustomOpTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="poprt-e2e-custom-op-")
        prefix = os.path.join(cls.tmp, "prefix")
        cls.run_ok(["cmake", "--install", os.path.dirname(e2e_util.BIN_DIR), "--prefix", prefix])
        cls.build = os.path.join(cls.tmp, "build")
        env = dict(os.environ, CMAKE_PREFIX_PATH=prefix)
        env.pop("POPRT_CACHE_DIR", None)
        cls.run_ok(["cmake", "-S", EXAMPLE, "-B", cls.build, "-DCMAKE_BUILD_TYPE=Release"], env=env)
        cls.run_ok(["cmake", "--build", cls.build, "-j", "2"], env=env)
        cls.plugin = os.path.join(cls.build, "libswish_op.so")
        cls.x = np.random.default_rng(3).uniform(-2, 2, (2, 16)).astype(np.float32)
        cls.x_npy = os.path.join(cls.tmp, "x.npy")
        np.save(cls.x_npy, cls.x)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    @classmethod
    def run_ok(cls, argv, env=None):
        r = e2e_util.run_cmd(argv, timeout=600, env=env)
        if r.returncode != 0:
            raise AssertionError("command failed:\n" + r.describe())
        return r

    def convert(self, out_dir, *flags):
        return e2e_util.run_tool("poprt-convert", ["--input_model", MODEL, "--input_shape", "x=2,16", "--output_dir", out_dir,
                                                   "--export_popef", *flags])

    def run_popef(self, popef, out_dir, *flags):
        return e2e_util.run_tool("popef-run", [popef, "--input", "x=" + self.x_npy, "--output_dir", out_dir, *flags])

    def test_the_example_builds_and_runs_through_the_runtime_api(self):
        popef = os.path.join(self.build, "swish_mlp.popef")
        self.assertTrue(os.path.exists(self.plugin) and os.path.exists(popef))
        x_bin, y_bin = os.path.join(self.tmp, "x.bin"), os.path.join(self.tmp, "y.bin")
        self.x.tofile(x_bin)
        self.run_ok([os.path.join(self.build, "swish_runner"), self.plugin, popef, x_bin, y_bin])
        got = np.fromfile(y_bin, dtype=np.float32).reshape(2, 4)
        np.testing.assert_allclose(got, reference(self.x), rtol=1e-4, atol=1e-5)

    def test_convert_and_run_in_fp32_and_fp16(self):
        for precision, tol in (("fp32", 1e-4), ("fp16", 1e-2)):
            out = os.path.join(self.tmp, "convert-" + precision)
            r = self.convert(out, "--precision", precision, "--custom_library_so_paths", self.plugin)
            self.assertEqual(r.returncode, 0, r.describe())
            popef = os.path.join(out, "executable.popef")
            dump = e2e_util.run_tool("popef-dump", [popef, "--custom_library_so_paths", self.plugin])
            self.assertEqual(dump.returncode, 0, dump.describe())
            self.assertIn("plugin swish_op 1.0: com.example::Swish", dump.stdout)
            r = self.run_popef(popef, os.path.join(out, "run"), "--custom_library_so_paths", self.plugin)
            self.assertEqual(r.returncode, 0, r.describe())
            got = np.load(os.path.join(out, "run", "output_0_y.npy")).astype(np.float64)
            np.testing.assert_allclose(got, reference(self.x), rtol=tol, atol=tol / 10, err_msg=precision)

    def test_a_popef_without_its_plugin_is_refused_by_name(self):
        out = os.path.join(self.tmp, "needs-plugin")
        r = self.convert(out, "--custom_library_so_paths", self.plugin)
        self.assertEqual(r.returncode, 0, r.describe())
        r = self.run_popef(os.path.join(out, "executable.popef"), os.path.join(out, "run"))
        self.assertEqual(r.returncode, 1, r.describe())
        self.assertIn("needs custom op 'com.example::Swish' of plugin 'swish_op'", r.stderr)
        self.assertIn("--custom_library_so_paths", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_a_model_converted_without_its_plugin_names_the_op(self):
        out = os.path.join(self.tmp, "no-plugin")
        r = self.convert(out)
        self.assertEqual(r.returncode, 1, r.describe())
        self.assertIn("com.example.Swish", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "executable.popef")))
        r = self.convert(out, "--custom_library_so_paths", os.path.join(self.tmp, "missing.so"))
        self.assertEqual(r.returncode, 1, r.describe())
        self.assertIn("--custom_library_so_paths: " + os.path.join(self.tmp, "missing.so"), r.stderr)

    def test_python_package_loads_the_plugin(self):
        python_dir = os.path.join(os.path.dirname(e2e_util.BIN_DIR), "python")
        if not os.path.isdir(os.path.join(python_dir, "poprt")):
            self.skipTest("the Python package is not built in this build")
        script = (
            "import sys, numpy as np, poprt\n"
            "poprt.load_custom_ops(sys.argv[1])\n"
            "converted = poprt.Converter(input_shape={'x': [2, 16]}).convert(sys.argv[2])\n"
            "runner = poprt.runtime.ModelRunner(poprt.compiler.Compiler.compile(converted))\n"
            "np.save(sys.argv[4], runner.execute({'x': np.load(sys.argv[3])})['y'])\n")
        y_npy = os.path.join(self.tmp, "python_y.npy")
        env = dict(os.environ, PYTHONPATH=python_dir)
        env.pop("POPRT_CACHE_DIR", None)
        self.run_ok(["/usr/bin/python3", "-c", script, self.plugin, MODEL, self.x_npy, y_npy], env=env)
        np.testing.assert_allclose(np.load(y_npy), reference(self.x), rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    e2e_util.parse_args()
    unittest.main(verbosity=2)
