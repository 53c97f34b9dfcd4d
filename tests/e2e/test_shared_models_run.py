#!/usr/bin/python3
"""End to end: every real model in ../shared/models compiles with `poprt-convert --export_popef`
at the shapes of its meta.json and runs with `popef-run` on the stored inputs; each output must
match the stored ONNX Runtime output (rtol 1e-3, atol 1e-4). One subTest per model. Nodes the
device cannot run yet go to the host (the compile summary says how many).

    /usr/bin/python3 tests/e2e/test_shared_models_run.py --bin-dir build/bin
"""

import glob
import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_DIR = os.environ.get("POPRT_SHARED_DIR", os.path.normpath(os.path.join(_REPO, "..", "shared")))
MODELS_DIR = os.path.join(SHARED_DIR, "models")
RTOL = 1e-3
ATOL = 1e-4


class SharedModelsRunTest(e2e_util.E2ETestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(MODELS_DIR):
            raise unittest.SkipTest("%s does not exist" % MODELS_DIR)

    def test_every_model_matches_onnx_runtime(self):
        names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(MODELS_DIR, "*.onnx")))
        self.assertGreater(len(names), 0)
        for name in names:
            with self.subTest(model=name):
                self.check_model(name)

    def check_model(self, name):
        data = os.path.join(MODELS_DIR, name)
        with open(os.path.join(data, "meta.json")) as f:
            meta = json.load(f)
        out = self.mkdir(name)
        args = ["--input_model", os.path.join(MODELS_DIR, name + ".onnx"), "--export_popef", "--output_dir", out]
        for inp in meta["inputs"]:
            args += ["--input_shape", "%s=%s" % (inp["name"], ",".join(str(d) for d in inp["dims"]))]
        self.assertOk(e2e_util.run_tool("poprt-convert", args, timeout=600))
        run_args = [os.path.join(out, "executable.popef"), "--output_dir", os.path.join(out, "outputs")]
        for inp in meta["inputs"]:
            files = glob.glob(os.path.join(data, "input_%d_*.npy" % inp["index"]))
            self.assertEqual(len(files), 1, "input %d of %s" % (inp["index"], name))
            run_args += ["--input", "%s=%s" % (inp["name"], files[0])]
        self.assertOk(e2e_util.run_tool("popef-run", run_args, timeout=600))
        for outp in meta["outputs"]:
            expected_files = glob.glob(os.path.join(data, "output_%d_*.npy" % outp["index"]))
            self.assertEqual(len(expected_files), 1)
            expected = np.load(expected_files[0])
            got_path = os.path.join(out, "outputs", os.path.basename(expected_files[0]))
            self.assertTrue(os.path.exists(got_path), "popef-run wrote no %s" % got_path)
            got = np.load(got_path)
            self.assertEqual(got.dtype, expected.dtype, "%s output %s" % (name, outp["name"]))
            self.assertEqual(got.shape, expected.shape, "%s output %s" % (name, outp["name"]))
            diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
            bad = ~(diff <= ATOL + RTOL * np.abs(expected.astype(np.float64)))
            self.assertFalse(bad.any(), "%s output %s: %d of %d values differ, max abs diff %g"
                             % (name, outp["name"], int(bad.sum()), bad.size, float(diff.max())))


if __name__ == "__main__":
    e2e_util.main()
