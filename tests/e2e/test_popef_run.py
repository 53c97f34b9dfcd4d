#!/usr/bin/python3
"""End to end: popef-run as a runner and benchmark tool on the bundled models/mlp.onnx (and one
small model of ../shared/models when present). Outputs are checked against numpy (the model's own
generator computes models/mlp/output_0_y.npy; numpy recomputes it for generated inputs) and against
ONNX Runtime's stored outputs; the printed summary against the --json file.

    /usr/bin/python3 tests/e2e/test_popef_run.py --bin-dir build/bin
"""

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

REPO = e2e_util.REPO_DIR
MLP = os.path.join(REPO, "models", "mlp.onnx")
MLP_DATA = os.path.join(REPO, "models", "mlp")
SHARED_MODELS = os.path.normpath(os.environ.get("POPRT_SHARED_DIR", os.path.join(REPO, "..", "shared"))) + "/models"


def mlp_numpy(x):
    """The mlp's forward pass in float64, from the weights in mlp.onnx."""
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(MLP).graph.initializer}
    h = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0)
    return ((h @ w["w2"].T + w["b2"]) * w["scale"]).astype(np.float32)


class PopefRunTest(e2e_util.E2ETestCase):
    popef_dir = None

    @classmethod
    def setUpClass(cls):
        cls.work = __import__("tempfile").mkdtemp(prefix="poprt-e2e-run-")
        cls.popef = cls.compile("mlp", [])
        cls.popef_r2 = cls.compile("mlp_r2", ["--replication_factor", "2", "--batches_per_step", "2"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, True)

    @classmethod
    def compile(cls, name, extra):
        out = os.path.join(cls.work, name)
        r = e2e_util.run_tool("poprt-convert", ["--input_model", MLP, "--input_shape", "x=4,64", "--export_popef",
                                                "--output_dir", out] + extra)
        if r.returncode != 0:
            raise AssertionError(r.describe())
        return os.path.join(out, "executable.popef")

    # ------------------------------------------------------------------ summary and JSON

    def test_benchmark_summary_matches_the_json_file(self):
        js = self.path("bench", "summary.json")  # a missing directory is created
        r = self.assertOk(e2e_util.run_tool("popef-run", [
            self.popef, "--input_dir", MLP_DATA, "--expected_dir", MLP_DATA, "--iterations", "20", "--warmup", "2",
            "--duration", "0", "--threads", "2", "--async", "2", "--json", js]))
        with open(js) as f:
            j = json.load(f)
        out = r.stdout
        self.assertEqual(j["requests"], 20)
        self.assertEqual(j["settings"], {"benchmark": True, "iterations": 20, "warmup": 2, "warmup_s": 0.0, "duration_s": 0.0,
                                         "threads": 2, "async": 2})
        self.assertIn("20 request(s) in %.3f s after 2 warm-up" % j["wall_s"], out)

        def shown(pattern):
            m = re.search(pattern, out)
            self.assertIsNotNone(m, "no %r in:\n%s" % (pattern, out))
            return [float(g) for g in m.groups()]

        self.assertEqual(shown(r"throughput +([\d.]+) requests/s, ([\d.]+) samples/s"),
                         [j["throughput"]["requests_per_s"], j["throughput"]["samples_per_s"]])
        keys = ["min", "mean", "median", "p90", "p95", "p99", "max"]
        lat = shown(r"latency +" + ", ".join(r"%s ([\d.]+) ms" % k for k in keys))
        self.assertEqual(lat, [j["latency_ms"][k] for k in keys])
        self.assertEqual(lat[2:], sorted(lat[2:]))  # median <= p90 <= ... <= max
        self.assertLessEqual(lat[0], lat[2])
        self.assertTrue(lat[0] <= lat[1] <= lat[6])
        self.assertAlmostEqual(j["throughput"]["samples_per_s"] / j["throughput"]["requests_per_s"], 4, delta=0.1)
        split = shown(r"host-to-device ([\d.]+) ms, compute ([\d.]+) ms, device-to-host ([\d.]+) ms")
        self.assertEqual(split, [j["host_ms_per_batch"][k] for k in ("host_to_device", "compute", "device_to_host")])
        ipu = j["ipu_estimate"]
        self.assertEqual(shown(r"latency +([\d.]+) us per batch \((\d+) cycles: compute (\d+), exchange (\d+), sync (\d+)\)"),
                         [ipu["latency_us"], ipu["cycles"], ipu["compute_cycles"], ipu["exchange_cycles"], ipu["sync_cycles"]])
        self.assertEqual(ipu["cycles"], ipu["compute_cycles"] + ipu["exchange_cycles"] + ipu["sync_cycles"])
        self.assertAlmostEqual(ipu["latency_us"], ipu["cycles"] / (ipu["clock_ghz"] * 1e3), delta=0.05 * ipu["latency_us"])
        self.assertEqual(shown(r"throughput +([\d.]+) samples/s \(batch 4 x 1 per step x 1 replica"), [ipu["throughput_samples_per_s"]])
        self.assertTrue(j["expected"]["ok"])
        self.assertEqual([o["name"] for o in j["expected"]["outputs"]], ["y"])
        self.assertLess(j["expected"]["outputs"][0]["max_abs_err"], 1e-4)

    def test_a_plain_run_is_one_cold_request_and_benchmark_measures_like_trtexec(self):
        r = self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--input_dir", MLP_DATA]))
        self.assertIn("single run (one cold request", r.stdout)
        self.assertNotIn("p99", r.stdout)
        self.assertNotIn("requests/s", r.stdout)
        js, times = self.path("b.json"), self.path("times.json")
        r = self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--input_dir", MLP_DATA, "--benchmark",
                                                          "--json", js, "--export_times", times]))
        with open(js) as f:
            j = json.load(f)
        # trtexec's defaults: a warm-up of 0.2 s, then at least 10 requests and 3 s.
        self.assertEqual((j["settings"]["benchmark"], j["settings"]["warmup_s"], j["settings"]["duration_s"],
                          j["settings"]["iterations"]), (True, 0.2, 3.0, 10))
        self.assertGreaterEqual(j["wall_s"], 3.0)
        self.assertGreaterEqual(j["requests"], 10)
        self.assertIn("p99", r.stdout)
        with open(times) as f:
            t = json.load(f)
        self.assertEqual(len(t), j["requests"])
        self.assertTrue(all(x["latency_ms"] > 0 and x["start_ms"] >= 0 for x in t))
        self.assertAlmostEqual(max(x["latency_ms"] for x in t), j["latency_ms"]["max"], delta=0.01)
        # --profile: the steps of one traced run, longest first, with their share and the IPU estimate.
        r = self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--input_dir", MLP_DATA, "--profile"]))
        rows = re.findall(r"^  (\d+) +(compute|exchange|host_call|\S+) +.*? ([\d.]+) +([\d.]+)% +", r.stdout, re.M)
        self.assertGreater(len(rows), 0, r.stdout)
        times = [float(x[2]) for x in rows]
        self.assertEqual(times, sorted(times, reverse=True))
        self.assertLessEqual(sum(float(x[3]) for x in rows), 100.5)
        self.assertRegex(r.stdout, r"total: simulator [\d.]+ us; IPU estimate [\d.]+ us on the device")

    @unittest.skipUnless(os.path.isdir(os.path.join(SHARED_MODELS, "resnet20_cifar")), "no ../shared/models")
    def test_fp16_outputs_judged_by_cosine_and_top1(self):
        out = self.path("r20")
        self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", os.path.join(SHARED_MODELS, "resnet20_cifar.onnx"),
                                                          "--precision", "fp16", "--export_popef", "--output_dir", out]))
        data = os.path.join(SHARED_MODELS, "resnet20_cifar")
        args = [os.path.join(out, "executable.popef"), "--input_dir", data, "--expected_dir", data]
        # float32 tolerances are not what fp16 meets: an fp16 PopEF is judged by 1e-2 unless told
        # otherwise, and by its cosine and its top-1 class.
        r = self.assertOk(e2e_util.run_tool("popef-run", args))
        self.assertIn("rtol 0.01, atol 0.01: fp16 defaults", r.stdout)
        r = e2e_util.run_tool("popef-run", args + ["--rtol", "1e-3", "--atol", "1e-4"])
        self.assertEqual(r.returncode, 1, r.describe())
        for compare in ("cosine", "top1"):
            r = self.assertOk(e2e_util.run_tool("popef-run", args + ["--compare", compare]))
            cosine = float(re.search(r"208 +float32\[1,10\] +\S+ +\S+ +([\d.]+) +100% +ok", r.stdout).group(1))
            self.assertGreaterEqual(cosine, 0.999)
        # An impossible bar fails, naming the output and its cosine.
        r = e2e_util.run_tool("popef-run", args + ["--compare", "cosine", "--min_cosine", "1"])
        self.assertEqual(r.returncode, 1, r.describe())
        self.assertIn("output '208' has cosine similarity", r.stderr)
        # Relative errors against zeros are left out, never "inf".
        self.assertNotIn("inf", r.stdout)

    def test_a_model_wholly_on_the_host_has_no_ipu_estimate(self):
        g = onnx.helper.make_graph([onnx.helper.make_node("NonZero", ["x"], ["y"])], "host",
                                   [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
                                   [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.INT64, [1, None])])
        m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 13)])
        m.ir_version = 7
        path = self.path("host.onnx")
        onnx.save(m, path)
        self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", path, "--export_popef", "--output_dir",
                                                          self.path("host")]))
        r = self.assertOk(e2e_util.run_tool("popef-run", [self.path("host", "executable.popef"), "--fill", "ones"]))
        self.assertIn("IPU estimate: none (every node runs on the host)", r.stdout)
        self.assertNotIn("samples/s", r.stdout)

    def test_progress_bar_only_on_a_terminal(self):
        # Not a terminal: nothing on stderr, even past 2 s.
        r = self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--input_dir", MLP_DATA, "--duration", "2.3"]))
        self.assertEqual(r.stderr, "")
        wall = float(re.search(r"request\(s\) in ([\d.]+) s", r.stdout).group(1))
        self.assertGreaterEqual(wall, 2.3)
        # A terminal: the bar is drawn there.
        master, slave = pty.openpty()
        p = subprocess.Popen([e2e_util.tool_path("popef-run"), self.popef, "--input_dir", MLP_DATA, "--duration", "2.5"],
                             stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        out, _ = p.communicate(timeout=120)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        os.close(master)
        self.assertEqual(p.returncode, 0, out)
        self.assertIn(b"requests", seen)
        self.assertIn(b"[=", seen)

    # ------------------------------------------------------------------ outputs vs references

    def test_expected_dir_mismatch_fails_naming_the_output(self):
        exp = self.mkdir("expected")
        y = np.load(os.path.join(MLP_DATA, "output_0_y.npy"))
        y[1, 3] += 0.5
        np.save(os.path.join(exp, "output_0_y.npy"), y)
        out_dir = self.path("out")
        r = e2e_util.run_tool("popef-run", [self.popef, "--input_dir", MLP_DATA, "--expected_dir", exp,
                                            "--output_dir", out_dir])
        line = self.assertFails(r, "popef-run", mentions=["--expected_dir", "'y'", "1 of 40 elements"])
        self.assertIn("max abs error 0.5", line)
        self.assertRegex(r.stdout, r"y +float32\[4,10\] +0\.5 .*FAIL")
        # The outputs are written all the same, to look at the difference.
        got = np.load(os.path.join(out_dir, "output_0_y.npy"))
        np.testing.assert_allclose(got, mlp_numpy(np.load(os.path.join(MLP_DATA, "input_0_x.npy"))), rtol=1e-5, atol=1e-6)
        # A wide enough tolerance accepts it.
        self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--input_dir", MLP_DATA, "--expected_dir", exp,
                                                      "--atol", "0.6"]))
        # A dtype that differs is a mismatch, named.
        np.save(os.path.join(exp, "output_0_y.npy"), y.astype(np.float64))
        r = e2e_util.run_tool("popef-run", [self.popef, "--input_dir", MLP_DATA, "--expected_dir", exp])
        self.assertFails(r, "popef-run", mentions=["'y'", "float64[4,10]", "float32[4,10]"])

    def test_expected_dir_against_onnx_runtime_outputs(self):
        data = os.path.join(SHARED_MODELS, "mnist_cntk")
        if not os.path.isdir(data):
            self.skipTest("%s does not exist" % data)
        with open(os.path.join(data, "meta.json")) as f:
            meta = json.load(f)
        args = ["--input_model", data + ".onnx", "--export_popef", "--output_dir", self.path("mnist")]
        for inp in meta["inputs"]:
            args += ["--input_shape", "%s=%s" % (inp["name"], ",".join(str(d) for d in inp["dims"]))]
        self.assertOk(e2e_util.run_tool("poprt-convert", args, timeout=600))
        js = self.path("mnist.json")
        self.assertOk(e2e_util.run_tool("popef-run", [self.path("mnist", "executable.popef"), "--input_dir", data,
                                                      "--expected_dir", data, "--json", js], timeout=600))
        with open(js) as f:
            self.assertTrue(json.load(f)["expected"]["ok"])

    def test_fill_modes(self):
        for mode, x in (("zeros", np.zeros((4, 64), np.float32)), ("ones", np.ones((4, 64), np.float32))):
            with self.subTest(fill=mode):
                out = self.path("fill_" + mode)
                self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--fill", mode, "--output_dir", out]))
                np.testing.assert_allclose(np.load(os.path.join(out, "output_0_y.npy")), mlp_numpy(x), rtol=1e-5, atol=1e-6)
        runs = {}
        for seed in ("1", "1", "2"):
            out = self.path("random_" + seed + str(len(runs)))
            self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--fill", "random", "--seed", seed, "--output_dir", out]))
            runs.setdefault(seed, []).append(np.load(os.path.join(out, "output_0_y.npy")))
        np.testing.assert_array_equal(runs["1"][0], runs["1"][1])  # a seed gives the same inputs
        self.assertFalse(np.array_equal(runs["1"][0], runs["2"][0]))
        # --input wins over --fill for the inputs it gives.
        out = self.path("given")
        self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--fill", "zeros", "--input",
                                                      "x=" + os.path.join(MLP_DATA, "input_0_x.npy"), "--output_dir", out]))
        np.testing.assert_allclose(np.load(os.path.join(out, "output_0_y.npy")),
                                   np.load(os.path.join(MLP_DATA, "output_0_y.npy")), rtol=1e-4, atol=1e-5)

    def test_input_dir(self):
        # ONNX test data naming: input_<i>.pb.
        d = self.mkdir("pb_inputs")
        x = np.load(os.path.join(MLP_DATA, "input_0_x.npy"))
        with open(os.path.join(d, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        out = self.path("pb_out")
        self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--input_dir", d, "--output_dir", out,
                                                      "--expected_dir", MLP_DATA]))
        # Two files for one input, an input the model does not have, not a directory.
        np.save(os.path.join(d, "input_0_x.npy"), x)
        self.run_fails([self.popef, "--input_dir", d], mentions=["input_0.pb", "input_0_x.npy"])
        os.remove(os.path.join(d, "input_0.pb"))
        np.save(os.path.join(d, "input_1_z.npy"), x)
        self.run_fails([self.popef, "--input_dir", d], mentions=["input_1_z.npy", "1 input(s)"])
        self.run_fails([self.popef, "--input_dir", os.path.join(d, "input_0_x.npy")], mentions=["--input_dir"])
        # Without any input: the hint names the ways to give one.
        self.run_fails([self.popef], mentions=["'x'", "--fill"])

    # ------------------------------------------------------------------ replication, batches per step

    def test_replication_and_batches_per_step(self):
        dump = self.assertOk(e2e_util.run_tool("popef-dump", [self.popef_r2, "--json"]))
        md = json.loads(dump.stdout)["metadata"]
        self.assertEqual((md["replication_factor"], md["batches_per_step"]), (2, 2))
        js = self.path("r2.json")
        out = self.path("r2_out")
        r = self.assertOk(e2e_util.run_tool("popef-run", [self.popef_r2, "--input_dir", MLP_DATA, "--expected_dir", MLP_DATA,
                                                          "--iterations", "9", "--duration", "0", "--async", "4", "--json", js,
                                                          "--output_dir", out]))
        with open(js) as f:
            j = json.load(f)
        self.assertEqual((j["replication_factor"], j["batches_per_step"], j["requests"]), (2, 2, 9))
        self.assertTrue(j["expected"]["ok"])
        self.assertIn("2 replica(s)", r.stdout)
        # Two replicas of the same model: twice the estimated throughput of one, at the same latency.
        one = self.path("r1.json")
        self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--input_dir", MLP_DATA, "--json", one]))
        with open(one) as f:
            j1 = json.load(f)
        self.assertEqual(j1["ipu_estimate"]["cycles"], j["ipu_estimate"]["cycles"])
        self.assertAlmostEqual(j["ipu_estimate"]["throughput_samples_per_s"],
                               2 * j1["ipu_estimate"]["throughput_samples_per_s"], delta=1)

    # ------------------------------------------------------------------ usage and bad flags

    def test_usage_errors_exit_2(self):
        for args in (["--iterations", "0"], ["--threads", "0"], ["--async", "0"], ["--fill", "twos"],
                     ["--rtol", "-1"], ["--duration", "-2"], ["--warmup", "x"]):
            with self.subTest(args=args):
                self.run_fails([self.popef, "--fill", "zeros"] + args, code=2, usage=True)

    def test_bad_json_and_expected_paths_fail_before_running(self):
        d = self.mkdir("a_dir")
        self.run_fails([self.popef, "--fill", "zeros", "--json", d], mentions=["--json", d])
        self.run_fails([self.popef, "--fill", "zeros", "--expected_dir", self.path("nope")], mentions=["--expected_dir"])
        empty = self.mkdir("empty_expected")
        self.run_fails([self.popef, "--fill", "zeros", "--expected_dir", empty], mentions=["output_0_y.npy", "'y'"])

    def run_fails(self, args, mentions=(), code=1, usage=False):
        out_dir = self.mkdir("run_out_" + str(abs(hash(tuple(args)))))
        r = e2e_util.run_tool("popef-run", list(args) + ["--output_dir", out_dir])
        line = self.assertFails(r, "popef-run", code=code, mentions=mentions, usage=usage)
        self.assertEqual(os.listdir(out_dir), [], "popef-run wrote outputs and failed:\n" + r.describe())
        return line


if __name__ == "__main__":
    e2e_util.main()
