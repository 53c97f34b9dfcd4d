#!/usr/bin/python3
"""End to end: every real model in /work/shared/models goes through `poprt-convert` (import and
re-export with only shape inference, no --export_popef). The round-tripped model must pass onnx.checker (full_check) and,
run in ONNX Runtime (node + onnxruntime-node, /work/shared/ort/ort_run.js) on the same
deterministic inputs, reproduce the stored ONNX Runtime outputs of the original model
(rtol 1e-3, atol 1e-4). One subTest per model; NAME@VARIANT folders are not used.

    /usr/bin/python3 tests/e2e/test_roundtrip_shared_models.py --bin-dir /work/main/build/bin

Environment: POPRT_SHARED_DIR (default ../shared beside the repository) holds models/ and ort/.
Skipped when node or the onnxruntime-node package is unavailable.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

# ../shared beside the repository, as every developer and CI machine has it.
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_DIR = os.environ.get("POPRT_SHARED_DIR", os.path.normpath(os.path.join(_REPO, "..", "shared")))
MODELS_DIR = os.path.join(SHARED_DIR, "models")
ORT_DIR = os.path.join(SHARED_DIR, "ort")
RTOL = 1e-3
ATOL = 1e-4
ORT_TIMEOUT = 300


def model_names():
    """Model names from models.tsv; every NAME.onnx in the folder must be listed."""
    with open(os.path.join(MODELS_DIR, "models.tsv"), newline="") as f:
        names = [row["name"] for row in csv.DictReader(f, delimiter="\t")]
    on_disk = sorted(f[:-5] for f in os.listdir(MODELS_DIR) if f.endswith(".onnx"))
    return names, on_disk


def ort_env():
    """(env, None) with NODE_PATH set so that onnxruntime-node loads, or (None, reason)."""
    node = shutil.which("node")
    if not node:
        return None, "node is not on PATH"
    env = dict(os.environ)
    setup = os.path.join(ORT_DIR, "setup.sh")
    if not os.path.isfile(setup):
        return None, "%s is missing" % setup
    try:
        p = subprocess.run(["bash", setup], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "%s timed out" % setup
    if p.returncode != 0:
        return None, "%s failed: %s" % (setup, p.stderr.decode(errors="replace").strip()[-300:])
    for line in p.stdout.decode().splitlines():
        line = line.strip()
        if line.startswith("export NODE_PATH="):
            env["NODE_PATH"] = line.split("=", 1)[1].strip().strip("'\"")
    if "NODE_PATH" not in env:
        return None, "%s printed no NODE_PATH" % setup
    p = subprocess.run([node, "-e", "require('onnxruntime-node')"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=120)
    if p.returncode != 0:
        return None, "onnxruntime-node does not load: " + p.stderr.decode(errors="replace").strip()[-300:]
    return env, None


def ort_args(meta):
    """ort_run.js options that recreate the stored inputs (see ort_run.js makeInput)."""
    args = ["--runs", "1", "--warmup", "0", "--threads", "1",
            "--seed", str(meta.get("seed", 1234)),
            "--default-dim", str(meta.get("default_dim", 1))]
    if "range" in meta:
        args += ["--range", ",".join(repr(float(v)) if not float(v).is_integer() else str(int(v))
                                     for v in meta["range"])]
    if "int_range" in meta:
        args += ["--int-range", ",".join(str(int(v)) for v in meta["int_range"])]
    for k, v in sorted(meta.get("dims", {}).items()):
        args += ["--dim", "%s=%d" % (k, int(v))]
    for k, v in sorted(meta.get("values", {}).items()):
        args += ["--value", "%s=%r" % (k, v)]
    return args


def npy_files(d, prefix):
    """{index: filename} of d/<prefix>_<i>_<name>.npy."""
    out = {}
    for f in os.listdir(d):
        if f.startswith(prefix + "_") and f.endswith(".npy"):
            idx = f[len(prefix) + 1:].split("_", 1)[0]
            if idx.isdigit():
                out[int(idx)] = f
    return out


class RoundTripSharedModelsTest(e2e_util.E2ETestCase):

    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(MODELS_DIR):
            raise unittest.SkipTest("%s does not exist" % MODELS_DIR)
        cls.env, reason = ort_env()
        if cls.env is None:
            raise unittest.SkipTest("ONNX Runtime reference unavailable: " + reason)

    def test_model_list_is_complete(self):
        names, on_disk = model_names()
        self.assertEqual(sorted(names), on_disk, "models.tsv and the .onnx files disagree")
        for n in names:
            self.assertTrue(os.path.isfile(os.path.join(MODELS_DIR, n, "meta.json")), n)

    def test_roundtrip(self):
        names, _ = model_names()
        self.assertGreater(len(names), 0)
        timings = []
        for name in names:
            with self.subTest(model=name):
                t0 = time.monotonic()
                self.check_model(name)
                timings.append((time.monotonic() - t0, name))
        sys.stderr.write("\n  per-model seconds: %s\n" % ", ".join("%s %.1f" % (n, t) for t, n in
                                                                   sorted(timings, reverse=True)))

    def check_model(self, name):
        src = os.path.join(MODELS_DIR, name + ".onnx")
        ref_dir = os.path.join(MODELS_DIR, name)
        with open(os.path.join(ref_dir, "meta.json")) as f:
            meta = json.load(f)

        # 1. round trip
        out_dir = self.mkdir(name)
        r = e2e_util.run_tool("poprt-convert", ["--input_model", src, "--output_dir", out_dir,
                                                "--passes", "infer_shapes"], timeout=300)
        self.assertOk(r)
        converted = os.path.join(out_dir, name + ".poprt.onnx")
        self.assertTrue(os.path.isfile(converted), "no %s:\n%s" % (converted, r.describe()))

        # 2. a valid ONNX model
        model = onnx.load(converted)
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception as e:  # onnx raises ValidationError / InferenceError
            self.fail("%s: onnx.checker.check_model(full_check=True) failed on the converted model: "
                      "%s: %s\nrepro: %s" % (name, type(e).__name__, str(e).strip()[:1500], r.cmdline()))
        orig = onnx.load(src, load_external_data=False)
        self.assertEqual([i.name for i in model.graph.input if i.name not in
                          {t.name for t in model.graph.initializer}],
                         [i.name for i in orig.graph.input if i.name not in
                          {t.name for t in orig.graph.initializer}], "graph inputs changed")
        self.assertEqual([o.name for o in model.graph.output], [o.name for o in orig.graph.output],
                         "graph outputs changed")

        # 3. run it in ONNX Runtime with the stored seed/dims/values
        ort_out = os.path.join(out_dir, "ort")
        argv = ["node", os.path.join(ORT_DIR, "ort_run.js"), converted, "--outdir", ort_out] + ort_args(meta)
        rr = e2e_util.run_cmd(argv, timeout=ORT_TIMEOUT, env=self.env)
        self.assertEqual(rr.returncode, 0, "%s: ONNX Runtime could not run the converted model:\n%s"
                         % (name, rr.describe()))

        # 4. ORT generated exactly the stored inputs (same names, dtypes, shapes, data)
        want_in, got_in = npy_files(ref_dir, "input"), npy_files(ort_out, "input")
        self.assertEqual(sorted(got_in.values()), sorted(want_in.values()), "%s: input files" % name)
        for i, f in want_in.items():
            a, b = np.load(os.path.join(ref_dir, f)), np.load(os.path.join(ort_out, got_in[i]))
            self.assertEqual((a.dtype, a.shape), (b.dtype, b.shape), "%s: input %s" % (name, f))
            self.assertTrue(np.array_equal(a, b), "%s: input %s data differs (test setup problem)" % (name, f))

        # 5. the outputs match the original model's stored ORT outputs
        want_out, got_out = npy_files(ref_dir, "output"), npy_files(ort_out, "output")
        self.assertEqual(sorted(got_out.values()), sorted(want_out.values()), "%s: output files" % name)
        for i, f in sorted(want_out.items()):
            want = np.load(os.path.join(ref_dir, f))
            got = np.load(os.path.join(ort_out, got_out[i]))
            self.assertEqual(got.dtype, want.dtype, "%s: %s dtype" % (name, f))
            self.assertEqual(got.shape, want.shape, "%s: %s shape" % (name, f))
            if np.issubdtype(want.dtype, np.floating):
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True,
                                           err_msg="%s: %s differs from the stored ORT output\nrepro: %s"
                                                   % (name, f, " ".join(argv)))
            else:
                np.testing.assert_array_equal(got, want, err_msg="%s: %s" % (name, f))


if __name__ == "__main__":
    e2e_util.main()
