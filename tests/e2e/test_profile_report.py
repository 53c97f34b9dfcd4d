#!/usr/bin/python3
"""End to end: the profile report (poprt-convert --report, popef-run --report, POPRT_REPORT_DIR).

profile.json is checked against figures that come from elsewhere: popef-run's --json estimate (the
sum of the per-compute-set cycles must equal its total exactly), popef-dump's tile memory, FLOPs and
bytes worked out with numpy from the model's shapes. report.html is opened in headless Chromium
(Debian's chromium): the page must render without console messages, and the numbers its charts and
tables carry must be profile.json's. A screenshot of each page goes to
<build>/test-output/profile_report/ and its path is printed.

    /usr/bin/python3 tests/e2e/test_profile_report.py --bin-dir build/bin

Without chromium the page tests are skipped, saying so; so are the shared models' without ../shared.
"""

import html.parser
import json
import os
import re
import shutil
import subprocess
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
SHARED_MODELS = os.path.normpath(os.environ.get("POPRT_SHARED_DIR", os.path.join(REPO, "..", "shared"))) + "/models"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def output_dir():
    """<build>/test-output/profile_report: kept after the test, for the screenshots."""
    d = os.path.join(os.path.dirname(e2e_util.BIN_DIR), "test-output", "profile_report")
    os.makedirs(d, exist_ok=True)
    return d


# ---- the small model -------------------------------------------------------------------------
# x[1,3,16,16] -> Conv 3x3 (8 channels, bias, no padding) -> Relu -> Transpose (a layout op: an
# exchange without compute) -> GlobalAveragePool -> Flatten -> Gemm (10 outputs, bias) -> Sinh
# (no device lowering: a host program).
X_SHAPE, W_SHAPE, CLASSES = (1, 3, 16, 16), (8, 3, 3, 3), 10


def small_model(path):
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, W_SHAPE).astype(np.float32)
    b = rng.uniform(-1, 1, (W_SHAPE[0],)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (W_SHAPE[0], CLASSES)).astype(np.float32)
    b2 = rng.uniform(-1, 1, (CLASSES,)).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (b, "b"), (w2, "w2"), (b2, "b2"))]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[0, 1, 3, 2]),
        helper.make_node("GlobalAveragePool", ["t"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["g"], name="gemm"),
        helper.make_node("Sinh", ["g"], ["y"], name="sinh"),
    ]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, CLASSES))], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"w": w, "b": b, "w2": w2, "b2": b2}


# ---- the page in Chromium --------------------------------------------------------------------
class Elements(html.parser.HTMLParser):
    """Every element's tag and attributes, in document order."""

    def __init__(self):
        super().__init__()
        self.items = []

    def handle_starttag(self, tag, attrs):
        self.items.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def find(self, tag=None, **attrs):
        return [a for t, a in self.items if (tag is None or t == tag) and all(a.get(k.replace("_", "-")) == v
                                                                              for k, v in attrs.items())]


def chromium(args, timeout=120):
    # --no-sandbox: CI runs as root; a profile of its own, so no HOME is needed; console messages go
    # to stderr as INFO:CONSOLE lines.
    with tempfile.TemporaryDirectory(prefix="poprt-chromium-") as profile:
        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--hide-scrollbars"] + args
        return e2e_util.run_cmd(argv, timeout=timeout)


def open_page(test, page, shot):
    """The DOM of `page` after its scripts ran, and a screenshot of it at `shot`."""
    url = "file://" + os.path.abspath(page)
    r = chromium(["--dump-dom", url])
    test.assertEqual(r.returncode, 0, r.describe())
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    test.assertEqual(console, [], "the page wrote to the console:\n" + "\n".join(console))
    s = chromium(["--screenshot=" + shot, "--window-size=1400,3400", url])
    test.assertEqual(s.returncode, 0, s.describe())
    test.assertTrue(os.path.getsize(shot) > 10000, "screenshot too small: " + shot)
    print("\nscreenshot: " + shot, flush=True)
    dom = Elements()
    dom.feed(r.stdout)
    body = dom.find("body")
    if body and "data-render-ms" in body[0]:
        print("%s: drawn in %s ms" % (os.path.basename(shot), body[0]["data-render-ms"]), flush=True)
    return dom


class ProfileChecks:
    """Checks of profile.json against popef-run --json and popef-dump --json, and of the page."""

    def check_profile_against_tools(self, profile, run_json, dump_json):
        est = run_json["ipu_estimate"]
        sets = profile["compute_sets"]
        # The per-compute-set cycles add up to the estimate popef-run prints, exactly.
        self.assertEqual(sum(s["cycles"] for s in sets), est["cycles"])
        self.assertEqual(sum(s["compute_cycles"] for s in sets), est["compute_cycles"])
        self.assertEqual(sum(s["exchange_cycles"] for s in sets), est["exchange_cycles"])
        self.assertEqual(sum(s["sync_cycles"] for s in sets), est["sync_cycles"])
        self.assertEqual(sum(o["cycles"] for o in profile["ops"]), est["cycles"])
        self.assertEqual(sum(s["compute_cycles"] + s["exchange_cycles"] + s["sync_cycles"]
                             for s in profile["trace"]["steps"]), est["cycles"])
        self.assertEqual(profile["estimate"]["cycles"], est["cycles"])
        for s in sets:
            self.assertEqual(s["cycles"], s["compute_cycles"] + s["exchange_cycles"] + s["sync_cycles"], s["name"])
        # Memory: what popef-dump reads from the executable.
        exe = dump_json["executable"]
        tiles = profile["memory"]["tiles"]
        self.assertEqual(len(tiles["required"]), exe["tiles"])
        self.assertEqual(sum(tiles["required"]), exe["tile_memory_bytes"])
        self.assertEqual(max(tiles["required"]), exe["busiest_tile_bytes"])
        self.assertEqual(len([s for s in sets if s["kind"] == "compute"]), exe["compute_sets"])
        if profile["memory"]["source"] == "compiler":
            for i, need in enumerate(tiles["required"]):
                parts = tiles["weights"][i] + tiles["activations"][i] + tiles["exchange_buffers"][i]
                self.assertLessEqual(parts, need, "tile %d" % i)
                self.assertEqual(parts + tiles["unused_gaps"][i], need, "tile %d" % i)
            points = profile["liveness"]["points"]
            self.assertTrue(points)
            self.assertEqual([p["step"] for p in points], sorted(p["step"] for p in points))
            # The busiest tile at each point holds no more than the tile's main region ever did.
            for p in points:
                t = p["busiest_tile"]
                self.assertLessEqual(p["busiest_bytes"], tiles["required"][t] - tiles["weights"][t], p)

    def check_page(self, profile, dom):
        self.assertTrue(dom.find("body", data_rendered="true"), "the page's script did not finish")
        cycles = dom.find("div", data_key="cycles")
        self.assertEqual(len(cycles), 1)
        self.assertEqual(int(cycles[0]["data-value"]), profile["estimate"]["cycles"])
        # The tile map: one rect per tile, each with the tile's bytes.
        rects = dom.find("rect", **{"class": "tile"})
        self.assertEqual([int(r["data-bytes"]) for r in rects], profile["memory"]["tiles"]["required"])
        # The liveness chart: one column per point, with its numbers.
        points = profile["liveness"]["points"]
        cols = [a for a in dom.find("rect", **{"class": "point"}) if "data-activations" in a]
        self.assertEqual([(int(c["data-step"]), int(c["data-activations"]), int(c["data-exchange-buffers"])) for c in cols],
                         [(p["step"], p["activations"], p["exchange_buffers"]) for p in points])
        # The ops table: every op once, most cycles first, adding up to the estimate.
        table = dom.find("table", id="ops-table")[0]
        self.assertEqual(int(table["data-rows"]), len(profile["ops"]))
        rows = [a for t, a in dom.items if t == "tr" and "data-cycles" in a]
        op_rows = rows[:len(profile["ops"])]
        self.assertEqual([int(r["data-cycles"]) for r in op_rows], [o["cycles"] for o in profile["ops"]])
        self.assertEqual([int(r["data-cycles"]) for r in op_rows], sorted((int(r["data-cycles"]) for r in op_rows),
                                                                          reverse=True))
        self.assertEqual(sum(int(r["data-cycles"]) for r in op_rows), profile["estimate"]["cycles"])
        # The trace: every step, with the estimate's cycles.
        g = dom.find("g", id="trace-steps")[0]
        self.assertEqual(int(g["data-steps"]), len(profile["trace"]["steps"]))
        self.assertEqual(int(g["data-cycles"]), profile["estimate"]["cycles"])
        segs = {int(a["data-step"]) for a in dom.find("rect", **{"class": "seg"})}
        busy = {i for i, s in enumerate(profile["trace"]["steps"])
                if s["kind"] == "host" or s["compute_cycles"] + s["exchange_cycles"] + s["sync_cycles"] > 0}
        self.assertEqual(segs, busy)

    def check_self_contained(self, page):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for bad in ("<link", "src=", "url(", "@import", "https:"):
            self.assertNotIn(bad, text, "report.html must not load anything")
        self.assertEqual(set(re.findall(r"http://[^\"' ]*", text)), {"http://www.w3.org/2000/svg"})


class ProfileReportTest(e2e_util.E2ETestCase, ProfileChecks):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="poprt-e2e-report-")
        cls.model = os.path.join(cls.work, "small.onnx")
        cls.weights = small_model(cls.model)
        cls.out = os.path.join(cls.work, "compiled")
        cls.convert = e2e_util.run_tool("poprt-convert", ["--input_model", cls.model, "--export_popef", "--output_dir",
                                                          cls.out, "--tiles_per_ipu", "16",
                                                          "--report", os.path.join(cls.work, "convert_report")])
        if cls.convert.returncode != 0:
            raise AssertionError(cls.convert.describe())
        cls.popef = os.path.join(cls.out, "executable.popef")
        cls.run_json = os.path.join(cls.work, "run.json")
        cls.ran = e2e_util.run_tool("popef-run", [cls.popef, "--fill", "random", "--json", cls.run_json,
                                                  "--report", os.path.join(cls.work, "run_report")])
        if cls.ran.returncode != 0:
            raise AssertionError(cls.ran.describe())

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, True)

    def load(self, name):
        with open(os.path.join(self.work, name), encoding="utf-8") as f:
            return json.load(f)

    def dump_json(self, popef):
        r = self.assertOk(e2e_util.run_tool("popef-dump", [popef, "--json"]))
        return json.loads(r.stdout)

    def test_both_tools_write_the_report_and_say_where(self):
        for d in ("convert_report", "run_report"):
            self.assertEqual(sorted(os.listdir(os.path.join(self.work, d))), ["profile.json", "report.html"])
        self.assertIn(os.path.join(self.work, "convert_report", "report.html"), self.convert.stdout)
        self.assertIn(os.path.join(self.work, "run_report", "report.html"), self.ran.stdout)
        self.assertEqual(self.load("convert_report/profile.json")["tool"], "poprt-convert")
        self.assertEqual(self.load("run_report/profile.json")["tool"], "popef-run")

    def test_profile_agrees_with_popef_run_and_popef_dump(self):
        with open(self.run_json) as f:
            run_json = json.load(f)
        dump = self.dump_json(self.popef)
        for name in ("run_report/profile.json", "convert_report/profile.json"):
            with self.subTest(name):
                self.check_profile_against_tools(self.load(name), run_json, dump)

    def test_figures_worked_out_from_the_model(self):
        p = self.load("run_report/profile.json")
        ops = {o["name"]: o for o in p["ops"]}
        # The conv (fused with its Relu) and the gemm: 2 FLOPs per multiply-accumulate, 1 per bias add.
        n, c, h, w = X_SHAPE
        co, _, kh, kw = W_SHAPE
        outputs = n * co * (h - kh + 1) * (w - kw + 1)
        self.assertEqual(ops["conv"]["flops"], 2 * outputs * c * kh * kw + outputs)
        self.assertIn("Conv", ops["conv"]["op_type"])
        self.assertEqual(ops["gemm"]["flops"], 2 * co * CLASSES + CLASSES)
        # The transpose only moves data: an exchange, no compute set; the Sinh runs on the host.
        self.assertEqual(ops["transpose"]["compute_sets"], 0)
        self.assertGreater(ops["transpose"]["exchange_bytes"], 0)
        host = [s for s in p["compute_sets"] if s["kind"] == "host"]
        self.assertEqual(len(host), 1)
        self.assertEqual(host[0]["cycles"], 0)
        self.assertGreater(host[0]["wall_us"], 0)
        self.assertGreater(p["trace"]["host_us"], 0)
        # Streams move the input in and the gemm's result out to the host program.
        streams_in = sum(s["exchange_bytes"] for s in p["compute_sets"] if s["kind"] == "stream_in")
        self.assertEqual(streams_in, int(np.prod(X_SHAPE)) * 4)
        # Weights: every weight the device reads is somewhere (slices may be copied to several tiles).
        device_weights = sum(a.nbytes for a in self.weights.values())
        self.assertGreaterEqual(p["memory"]["totals"]["weights"], device_weights)
        # Liveness: when the conv ends, its input and output are both live.
        conv_point = [pt for pt in p["liveness"]["points"] if pt["node"] == "conv"][0]
        self.assertGreaterEqual(conv_point["activations"], (int(np.prod(X_SHAPE)) + outputs) * 4)
        # The trace: device steps at their estimated time, laid end to end.
        clock = p["target"]["clock_hz"]
        steps = p["trace"]["steps"]
        for a, b in zip(steps, steps[1:]):
            self.assertAlmostEqual(a["start_us"] + a["duration_us"], b["start_us"], delta=1e-6)
            self.assertEqual(a["start_cycle"] + a["compute_cycles"] + a["exchange_cycles"] + a["sync_cycles"],
                             b["start_cycle"])
        device = [s for s in steps if s["kind"] != "host"]
        self.assertAlmostEqual(sum(s["duration_us"] for s in device), p["estimate"]["cycles"] / clock * 1e6, delta=1e-3)

    def test_report_dir_from_the_environment(self):
        d = self.path("env_report")
        self.assertOk(e2e_util.run_tool("popef-run", [self.popef, "--fill", "zeros"], env={"POPRT_REPORT_DIR": d}))
        self.assertEqual(sorted(os.listdir(d)), ["profile.json", "report.html"])

    def test_bad_report_flags(self):
        r = e2e_util.run_tool("poprt-convert", ["--input_model", self.model, "--output_dir", self.path("o"),
                                                "--report", self.path("r")])
        self.assertFails(r, "poprt-convert", code=2, mentions=("--report", "--export_popef"), usage=True)
        blocker = self.write_bytes("file", b"x")
        r = e2e_util.run_tool("poprt-convert", ["--input_model", self.model, "--export_popef", "--output_dir",
                                                self.path("o2"), "--report", blocker])
        self.assertFails(r, "poprt-convert", mentions=("--report", blocker))
        self.assertFalse(os.path.exists(self.path("o2")), "nothing is written when a flag is bad")
        r = e2e_util.run_tool("popef-run", [self.popef, "--report", os.path.join(blocker, "sub")])
        self.assertFails(r, "popef-run", mentions=("--report",))
        r = e2e_util.run_tool("popef-run", [self.popef, "--fill", "zeros"], env={"POPRT_REPORT_DIR": blocker})
        self.assertFails(r, "popef-run", mentions=("POPRT_REPORT_DIR", blocker, "not a directory"))

    @unittest.skipIf(CHROMIUM is None, "chromium is not installed (apt-get install chromium; scripts/install-deps.sh does)")
    def test_page_renders_the_profile(self):
        for name in ("run_report", "convert_report"):
            with self.subTest(name):
                page = os.path.join(self.work, name, "report.html")
                self.check_self_contained(page)
                dom = open_page(self, page, os.path.join(output_dir(), "small_" + name + ".png"))
                self.check_page(self.load(name + "/profile.json"), dom)


def shared_model_test(model):
    """Compiles a model of ../shared/models at the shapes of its meta.json, runs it with its stored
    inputs and --report, checks the profile against popef-run and popef-dump, and the page in Chromium."""

    def test(self):
        onnx_path = os.path.join(SHARED_MODELS, model + ".onnx")
        if not os.path.exists(onnx_path):
            self.skipTest("no %s (../shared/models)" % onnx_path)
        out = self.path("compiled")
        args = ["--input_model", onnx_path, "--export_popef", "--output_dir", out]
        with open(os.path.join(SHARED_MODELS, model, "meta.json")) as f:
            for inp in json.load(f)["inputs"]:
                args += ["--input_shape", "%s=%s" % (inp["name"], ",".join(str(d) for d in inp["dims"]))]
        self.assertOk(e2e_util.run_tool("poprt-convert", args, timeout=600))
        popef = os.path.join(out, "executable.popef")
        report, run_json = self.path("report"), self.path("run.json")
        t0 = time.time()
        self.assertOk(e2e_util.run_tool("popef-run", [popef, "--input_dir", os.path.join(SHARED_MODELS, model),
                                                      "--json", run_json, "--report", report], timeout=600))
        print("\n%s: popef-run --report took %.1f s" % (model, time.time() - t0), flush=True)
        with open(os.path.join(report, "profile.json"), encoding="utf-8") as f:
            profile = json.load(f)
        with open(run_json) as f:
            ran = json.load(f)
        dump = json.loads(self.assertOk(e2e_util.run_tool("popef-dump", [popef, "--json"])).stdout)
        self.check_profile_against_tools(profile, ran, dump)
        page = os.path.join(report, "report.html")
        size = os.path.getsize(page)
        print("%s: report.html %.0f KiB" % (model, size / 1024), flush=True)
        self.assertLess(size, 4 << 20, "report.html should stay small")
        self.check_self_contained(page)
        if CHROMIUM is None:
            self.skipTest("chromium is not installed (apt-get install chromium; scripts/install-deps.sh does)")
        self.check_page(profile, open_page(self, page, os.path.join(output_dir(), model + ".png")))
        shutil.copy(page, os.path.join(output_dir(), model + ".html"))

    return test


class SharedModelReportTest(e2e_util.E2ETestCase, ProfileChecks):
    test_yunet_face = shared_model_test("yunet_face")
    test_light_resnet50 = shared_model_test("light_resnet50")


if __name__ == "__main__":
    e2e_util.main()
