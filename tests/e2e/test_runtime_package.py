#!/usr/bin/python3
"""End to end: the poprt package as users get it. `cmake --install` puts the shared library, the
headers, poprt-convert and the CMake package in a temporary prefix; examples/ is configured and
built against that prefix alone as a separate project (find_package(poprt)):

- the build compiles models ahead of time with poprt_add_popef (three models given to the example,
  plus its float16 variant of models/mlp.onnx), and the example program runs the PopEF the build
  made: its output must match the numpy reference in models/mlp;
- a second build compiles nothing, and touching one model recompiles that model only.

    /usr/bin/python3 tests/e2e/test_runtime_package.py --bin-dir build/bin
"""

import os
import re
import shutil
import sys
import tempfile
import time
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

REPO = e2e_util.REPO_DIR
STEMS = ("alpha", "beta", "mlp")  # the models the example compiles; mlp is a copy of models/mlp.onnx
POPEFS = ["%s.popef" % s for s in STEMS] + ["mlp_fp16.popef"]


def make_model(seed):
    """y = Relu(x @ W + b), x: float32[batch, 64], as the example's models must take."""
    rng = np.random.default_rng(seed)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"), helper.make_node("Add", ["h", "b"], ["a"], name="add"),
         helper.make_node("Relu", ["a"], ["y"], name="relu")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [numpy_helper.from_array(rng.uniform(-1, 1, (64, 8)).astype(np.float32), "W"),
         numpy_helper.from_array(rng.uniform(-1, 1, (8,)).astype(np.float32), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def compiled_models(build_log):
    """The models a build log shows poprt_add_popef compiling (its "poprt-convert M -> O" lines)."""
    return sorted(os.path.basename(m) for m in re.findall(r"poprt-convert (\S+) -> ", build_log))


class RuntimePackageTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="poprt-e2e-package-")
        build_dir = os.path.dirname(e2e_util.BIN_DIR)
        cls.prefix = os.path.join(cls.tmp, "prefix")
        cls.run_ok(["cmake", "--install", build_dir, "--prefix", cls.prefix])
        cls.models = os.path.join(cls.tmp, "models")
        os.makedirs(cls.models)
        for seed, stem in enumerate(STEMS[:2]):
            onnx.save(make_model(seed), os.path.join(cls.models, stem + ".onnx"))
        shutil.copy(os.path.join(REPO, "models", "mlp.onnx"), os.path.join(cls.models, "mlp.onnx"))
        cls.ex_build = os.path.join(cls.tmp, "examples-build")
        cls.env = dict(os.environ, CMAKE_PREFIX_PATH=cls.prefix)
        cls.env.pop("POPRT_CACHE_DIR", None)  # every model compiles here
        model_list = ";".join(os.path.join(cls.models, s + ".onnx") for s in STEMS)
        cls.run_ok(["cmake", "-S", os.path.join(REPO, "examples"), "-B", cls.ex_build, "-DCMAKE_BUILD_TYPE=Release",
                    "-DPOPRT_EXAMPLE_MODELS=" + model_list])
        cls.first_build = cls.build()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    @classmethod
    def run_ok(cls, argv, timeout=600):
        r = e2e_util.run_cmd(argv, timeout=timeout, env=getattr(cls, "env", None))
        if r.returncode != 0:
            raise AssertionError("command failed:\n" + r.describe())
        return r

    @classmethod
    def build(cls):
        return cls.run_ok(["cmake", "--build", cls.ex_build, "-j", "2"]).stdout

    def popef_times(self):
        return {p: os.stat(os.path.join(self.ex_build, p)).st_mtime_ns for p in POPEFS}

    def test_installed_package(self):
        for f in ("include/poprt/runtime/model_runner.h", "lib/cmake/poprt/poprtConfig.cmake",
                  "lib/cmake/poprt/poprt_add_popef.cmake", "bin/poprt-convert"):
            self.assertTrue(os.path.exists(os.path.join(self.prefix, f)), f)
        # The first build compiled every model with the installed poprt-convert.
        self.assertEqual(compiled_models(self.first_build), sorted(["alpha.onnx", "beta.onnx", "mlp.onnx", "mlp.onnx"]))

    def test_example_runs_the_popef_the_build_compiled(self):
        exe = os.path.join(self.ex_build, "model_runner_example")
        in_dir = os.path.join(self.tmp, "in")
        os.makedirs(in_dir, exist_ok=True)
        np.load(os.path.join(REPO, "models", "mlp", "input_0_x.npy")).tofile(os.path.join(in_dir, "x.bin"))
        want = np.load(os.path.join(REPO, "models", "mlp", "output_0_y.npy"))
        for popef, tol in (("mlp.popef", 1e-4), ("mlp_fp16.popef", 2e-2)):
            out_dir = os.path.join(self.tmp, "out-" + popef)
            os.makedirs(out_dir, exist_ok=True)
            r = self.run_ok([exe, os.path.join(self.ex_build, popef), in_dir, out_dir])
            self.assertIn("output y  float32[4,10]", r.stdout)
            got = np.fromfile(os.path.join(out_dir, "y.bin"), dtype=np.float32).reshape(4, 10)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol / 10, err_msg=popef)

        # Errors come out by category: a missing input file is an ApplicationError.
        os.remove(os.path.join(in_dir, "x.bin"))
        r = e2e_util.run_cmd([exe, os.path.join(self.ex_build, "mlp.popef"), in_dir, self.tmp])
        self.assertEqual(r.returncode, 1, r.describe())
        self.assertIn("model_runner_example: error: ", r.stderr)
        self.assertIn("x.bin", r.stderr)

    def test_rebuild_compiles_only_changed_models(self):
        before = self.popef_times()
        self.assertEqual(compiled_models(self.build()), [], "a second build compiled again")
        self.assertEqual(self.popef_times(), before)

        # Touch beta.onnx (now: later than every output, which make compares): beta alone recompiles.
        time.sleep(max(0.0, 1.0 - (time.time() - max(before.values()) / 1e9)))
        os.utime(os.path.join(self.models, "beta.onnx"))
        self.assertEqual(compiled_models(self.build()), ["beta.onnx"])
        after = self.popef_times()
        self.assertNotEqual(after.pop("beta.popef"), before.pop("beta.popef"))
        self.assertEqual(after, before)


if __name__ == "__main__":
    e2e_util.parse_args()
    unittest.main(verbosity=2)
