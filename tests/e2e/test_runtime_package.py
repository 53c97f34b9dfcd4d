#!/usr/bin/python3
"""End to end: the runtime API as users get it. `cmake --install` puts the shared library, the
headers and the CMake package in a temporary prefix; examples/ is configured and built against that
prefix alone as a separate project (find_package(poprt)); the example then runs models/mlp.onnx's
PopEF and its output must match the numpy reference in models/mlp.

    /usr/bin/python3 tests/e2e/test_runtime_package.py --bin-dir build/bin
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

REPO = e2e_util.REPO_DIR


class RuntimePackageTest(e2e_util.E2ETestCase):
    def test_example_builds_against_the_installed_package_and_runs(self):
        build_dir = os.path.dirname(e2e_util.BIN_DIR)
        prefix = self.path("prefix")
        self.assertOk(e2e_util.run_cmd(["cmake", "--install", build_dir, "--prefix", prefix]))
        for f in ("include/poprt/runtime/model_runner.h", "lib/cmake/poprt/poprtConfig.cmake"):
            self.assertTrue(os.path.exists(os.path.join(prefix, f)), f)
        ex_build = self.path("examples-build")
        env = dict(os.environ, CMAKE_PREFIX_PATH=prefix)
        self.assertOk(e2e_util.run_cmd(["cmake", "-S", os.path.join(REPO, "examples"), "-B", ex_build,
                                        "-DCMAKE_BUILD_TYPE=Release"], env=env))
        self.assertOk(e2e_util.run_cmd(["cmake", "--build", ex_build], timeout=600, env=env))
        exe = os.path.join(ex_build, "model_runner_example")

        model = self.path("model")
        self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", os.path.join(REPO, "models", "mlp.onnx"),
                                                          "--input_shape", "x=4,64", "--export_popef",
                                                          "--output_dir", model]))
        in_dir, out_dir = self.mkdir("in"), self.mkdir("out")
        np.load(os.path.join(REPO, "models", "mlp", "input_0_x.npy")).tofile(os.path.join(in_dir, "x.bin"))
        r = self.assertOk(e2e_util.run_cmd([exe, os.path.join(model, "executable.popef"), in_dir, out_dir]))
        self.assertIn("output y  float32[4,10]", r.stdout)
        got = np.fromfile(os.path.join(out_dir, "y.bin"), dtype=np.float32).reshape(4, 10)
        want = np.load(os.path.join(REPO, "models", "mlp", "output_0_y.npy"))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

        # Errors come out by category: a missing input file is an ApplicationError.
        os.remove(os.path.join(in_dir, "x.bin"))
        r = e2e_util.run_cmd([exe, os.path.join(model, "executable.popef"), in_dir, out_dir])
        self.assertEqual(r.returncode, 1, r.describe())
        self.assertIn("model_runner_example: error: ", r.stderr)
        self.assertIn("x.bin", r.stderr)


if __name__ == "__main__":
    e2e_util.main()
