#!/usr/bin/python3
"""End to end: models over several IPUs.

A chain of 18 Gemms with 4096x4096 float32 weights (1.2 GB, more than an ipu2's 1472 x 624 KiB =
0.94 GB) fails on one IPU with exit code 1, a one-line error naming the worst tiles and the
weights that live there, and nothing written. Sharded over 2 ipu2 and pipelined over 4 it
compiles, and popef-run's output matches numpy's; the pipelined estimate's throughput beats the
sharded one's over the same 4 IPUs with batches_per_step = 2 x stages. A small model sharded over
2 IPUs by a --manual_sharding_config gives the same outputs with 1, 2 and 4 replicas.

The weights are ONNX external data in one sparse file: 1.2 GB long, but only each weight's first
64 rows are written (random, so the Gemms compute something and no two weights are equal for
common_subexpression_elimination to merge), so the file takes 18 MB of disk. poprt-convert still
reads the 1.2 GB and holds it a few times over (about 5 GB resident, 15-20 s a compile).

    /usr/bin/python3 tests/e2e/test_multi_ipu.py --bin-dir /work/main/build/bin
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from test_bert_encoder import GENERATOR, bert_reference  # noqa: E402

LAYERS = 18
WIDTH = 4096  # 18 x 4096 x 4096 x 4 bytes = 1.21e9 bytes
DENSE_ROWS = 64  # of each weight, written; the rest is the file's hole (zeros)
BATCH = 2


def write_big_model(folder):
    """model.onnx and its sparse weights.bin in `folder`; returns the model path and each weight's
    dense rows (the rest is zero)."""
    weight_bytes = WIDTH * WIDTH * 4
    rng = np.random.default_rng(5)
    dense = []
    data = os.path.join(folder, "weights.bin")
    with open(data, "wb") as f:
        f.truncate(LAYERS * weight_bytes)  # a hole: zeros that take no disk
        for i in range(LAYERS):
            rows = (rng.standard_normal((DENSE_ROWS, WIDTH)) / np.sqrt(DENSE_ROWS)).astype(np.float32)
            f.seek(i * weight_bytes)
            f.write(rows.tobytes())
            dense.append(rows)
    nodes, inits = [], []
    cur = "x"
    for i in range(LAYERS):
        w = TensorProto()
        w.name = "weight_%d" % i
        w.data_type = TensorProto.FLOAT
        w.dims.extend([WIDTH, WIDTH])
        w.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "weights.bin"), ("offset", str(i * weight_bytes)),
                           ("length", str(weight_bytes))):
            entry = w.external_data.add()
            entry.key, entry.value = key, value
        inits.append(w)
        out = "y" if i == LAYERS - 1 else "h%d" % i
        # Gemm with transB: each tile gathers whole rows of the weight (one copy, not one per row).
        nodes.append(helper.make_node("Gemm", [cur, w.name], [out], name="gemm_%d" % i, transB=1))
        cur = out
    graph = helper.make_graph(nodes, "too_big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, WIDTH])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path, dense


def chain_reference(dense, x):
    """y = x W0^T W1^T ... in float64: only each weight's first rows are non-zero."""
    h = x.astype(np.float64)
    for rows in dense:
        y = np.zeros_like(h)
        y[:, :DENSE_ROWS] = h @ rows.astype(np.float64).T
        h = y
    return h


class BiggerThanOneIpu(e2e_util.E2ETestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.model_dir = tempfile.mkdtemp(prefix="poprt-e2e-big-")
        cls.model, cls.dense = write_big_model(cls.model_dir)
        rng = np.random.default_rng(9)
        cls.x = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
        cls.x_npy = os.path.join(cls.model_dir, "x.npy")
        np.save(cls.x_npy, cls.x)
        cls.expected = chain_reference(cls.dense, cls.x)

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.model_dir, True)

    def compile(self, out, flags):
        return e2e_util.run_tool("poprt-convert", ["--input_model", self.model, "--export_popef", "--output_dir", out]
                                 + flags, timeout=1200)

    def run_and_check(self, popef, extra=()):
        """popef-run's output against numpy; returns its --json summary."""
        res, summary = self.path("res"), self.path("run.json")
        r = self.assertOk(e2e_util.run_tool("popef-run", [popef, "--input", "x=" + self.x_npy, "--output_dir", res,
                                                          "--json", summary] + list(extra), timeout=1200))
        got = np.load(os.path.join(res, "output_0_y.npy"))
        # The chain's values are products of 18 layers: compare relative to their scale.
        np.testing.assert_allclose(got, self.expected, rtol=1e-4, atol=1e-4 * np.abs(self.expected).max())
        self.assertGreater(np.abs(self.expected).max(), 1e-3, "the reference must not be all zeros")
        with open(summary) as f:
            return json.load(f), r

    def test_the_weights_file_is_sparse(self):
        st = os.stat(os.path.join(self.model_dir, "weights.bin"))
        self.assertGreater(st.st_size, 1.2e9)
        self.assertLess(st.st_blocks * 512, 64 << 20, "the filesystem did not keep weights.bin sparse")

    def test_one_ipu_reports_the_worst_tiles_and_writes_nothing(self):
        out = self.path("out")
        r = self.compile(out, [])
        line = self.assertFails(r, "poprt-convert", 1, mentions=("out of tile memory on ipu2", "of 1472 tiles need more",
                                                                 "worst: tile ", "weight_"))
        self.assertIn("hint: --precision fp16 (half the bytes), ", line)  # its weights are float32
        self.assertIn("--num_ipus", line)
        self.assertFalse(os.path.exists(os.path.join(out, "executable.popef")), r.describe())
        self.assertEqual(e2e_util.snapshot_dir(out), {}, "nothing may be written:\n" + r.describe())

    def test_sharded_over_two_ipus_matches_numpy(self):
        out = self.path("out")
        self.assertOk(self.compile(out, ["--num_ipus", "2"]))
        popef = os.path.join(out, "executable.popef")
        # The weights once and the program in a few MB: 1.21 GB (a PopEF of format 3 took 2.4 GB).
        self.assertLess(os.path.getsize(popef), 1.25e9)
        dump = self.assertOk(e2e_util.run_tool("popef-dump", [popef, "--json"], timeout=300))
        exe = json.loads(dump.stdout)["executable"]
        self.assertEqual(exe["num_ipus"], 2)
        self.assertEqual([s["ipu"] for s in exe["segments"]], [0, 1])
        for ipu in exe["ipus"]:  # each IPU holds about half the 1.2 GB, within its 0.94 GB
            self.assertGreater(ipu["bytes"], 0.5e9)
            self.assertLess(ipu["bytes"], 1472 * 624 * 1024)
        j, r = self.run_and_check(popef)
        self.assertEqual((j["ipu_estimate"]["num_ipus"], j["ipu_estimate"]["stages"]), (2, 2))
        self.assertIn("2 sharded stage(s) on 2 IPU(s)", r.stdout)

    def test_pipelined_over_four_ipus_matches_numpy(self):
        out = self.path("out")
        self.assertOk(self.compile(out, ["--num_ipus", "4", "--batches_per_step", "8", "--execution_strategy", "pipelined"]))
        j, r = self.run_and_check(os.path.join(out, "executable.popef"), ["--iterations", "16", "--duration", "0"])
        est = j["ipu_estimate"]
        self.assertEqual((est["execution_strategy"], est["stages"], est["num_ipus"]), ("pipelined", 4, 4))
        self.assertIn("4 pipelined stage(s) on 4 IPU(s): a step of 8 batch(es)", r.stdout)


class BertLarge(e2e_util.E2ETestCase):
    def test_pipelined_over_four_ipus_matches_numpy(self):
        # BERT-Large's encoder as torch.onnx exports it: 24 layers, hidden 1024, 16 heads (1.2 GB of
        # float32 weights, more than an ipu2 holds), at sequence length 32.
        layers, hidden, heads, seq = 24, 1024, 16, 32
        model = self.path("bert_large.onnx")
        self.assertOk(e2e_util.run_cmd([sys.executable, GENERATOR, "--out", model, "--layers", str(layers), "--hidden",
                                        str(hidden), "--heads", str(heads), "--seq", str(seq), "--batch", "1",
                                        "--seed", "5"], timeout=600))
        out, summary = self.path("out"), self.path("summary.json")
        self.assertOk(e2e_util.run_tool("poprt-convert", [
            "--input_model", model, "--export_popef", "--output_dir", out, "--num_ipus", "4",
            "--execution_strategy", "pipelined", "--batches_per_step", "8", "--summary_json", summary], timeout=1200))
        with open(summary) as f:
            counters = {p["name"]: p["counters"] for p in json.load(f)["passes"]}
        self.assertEqual(counters["fuse_attention"].get("attention"), layers)
        popef = os.path.join(out, "executable.popef")
        dump = json.loads(self.assertOk(e2e_util.run_tool("popef-dump", [popef, "--json"], timeout=300)).stdout)
        self.assertEqual([s["ipu"] for s in dump["executable"]["segments"]], [0, 1, 2, 3])
        self.assertGreater(sum(i["bytes"] for i in dump["executable"]["ipus"]), 1472 * 624 * 1024)  # not one IPU's worth

        rng = np.random.default_rng(7)
        h = rng.standard_normal((1, seq, hidden)).astype(np.float32)
        mask = np.ones((1, seq), np.float32)
        mask[0, seq - 5:] = 0
        w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(model).graph.initializer}
        expected = bert_reference(w, h.astype(np.float64), mask.astype(np.float64), heads)
        del w
        exp_dir = self.mkdir("expected")
        np.save(os.path.join(exp_dir, "output_0_last_hidden_state.npy"), expected.astype(np.float32))
        np.save(self.path("h.npy"), h)
        np.save(self.path("mask.npy"), mask)
        r = self.assertOk(e2e_util.run_tool("popef-run", [
            popef, "--input", "hidden_states=" + self.path("h.npy"), "--input", "attention_mask=" + self.path("mask.npy"),
            "--expected_dir", exp_dir, "--rtol", "1e-3", "--atol", "1e-3", "--iterations", "1", "--duration", "0"], timeout=1500))
        self.assertIn("4 pipelined stage(s) on 4 IPU(s)", r.stdout)


def write_chain(folder, layers, width, rows):
    """A small MatMul+Relu chain; returns the model path, its weights and the numpy function."""
    rng = np.random.default_rng(11)
    weights = [(rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32) for _ in range(layers)]
    nodes, cur = [], "x"
    for i in range(layers):
        nodes.append(helper.make_node("MatMul", [cur, "w%d" % i], ["m%d" % i], name="mm%d" % i))
        nodes.append(helper.make_node("Relu", ["m%d" % i], ["y" if i == layers - 1 else "r%d" % i], name="relu%d" % i))
        cur = "r%d" % i
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])],
                              [numpy_helper.from_array(w, "w%d" % i) for i, w in enumerate(weights)])
    path = os.path.join(folder, "chain.onnx")
    with open(path, "wb") as f:
        f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())

    def reference(x):
        h = x.astype(np.float64)
        for w in weights:
            h = np.maximum(h @ w, 0)
        return h
    return path, reference


class SmallModels(e2e_util.E2ETestCase):
    def test_pipelined_beats_sharded_with_two_batches_a_stage(self):
        # 8 layers over 4 IPUs of 16 tiles; batches_per_step = 2 x stages.
        model, reference = write_chain(self.tmp, 8, 256, 4)
        x = np.random.default_rng(2).standard_normal((4, 256)).astype(np.float32)
        np.save(self.path("x.npy"), x)
        throughput = {}
        for strategy in ("sharded", "pipelined"):
            out = self.path("out_" + strategy)
            self.assertOk(e2e_util.run_tool("poprt-convert", [
                "--input_model", model, "--export_popef", "--output_dir", out, "--num_ipus", "4", "--tiles_per_ipu", "16",
                "--batches_per_step", "8", "--execution_strategy", strategy]))
            res, summary = self.path("res_" + strategy), self.path(strategy + ".json")
            self.assertOk(e2e_util.run_tool("popef-run", [os.path.join(out, "executable.popef"), "--input",
                                                          "x=" + self.path("x.npy"), "--output_dir", res,
                                                          "--iterations", "16", "--duration", "0", "--json", summary]))
            np.testing.assert_allclose(np.load(os.path.join(res, "output_0_y.npy")), reference(x), rtol=1e-4, atol=1e-5)
            with open(summary) as f:
                est = json.load(f)["ipu_estimate"]
            self.assertEqual((est["execution_strategy"], est["stages"]), (strategy, 4))
            throughput[strategy] = est["throughput_samples_per_s"]
        # Balanced stages overlapping on 8 batches: 8 batches in 11 phases instead of 8 x 4 stages.
        self.assertGreater(throughput["pipelined"], 2 * throughput["sharded"], throughput)

    def test_replicas_give_the_outputs_of_one(self):
        rng = np.random.default_rng(3)
        w1 = rng.standard_normal((16, 32)).astype(np.float32)
        w2 = rng.standard_normal((32, 8)).astype(np.float32)
        nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
                 helper.make_node("Relu", ["h"], ["r"], name="relu"),
                 helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")]
        graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                                  [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
        model = self.write_bytes("small.onnx", helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
        config = self.write_bytes("sharding.yaml", b"- node: relu\n  device: 1\n  stage: 0\n"
                                                   b"- node: mm2\n  device: 0\n  stage: 1\n")
        x = rng.standard_normal((4, 16)).astype(np.float32)
        np.save(self.path("x.npy"), x)
        expected = np.maximum(x.astype(np.float64) @ w1, 0) @ w2
        outputs = {}
        for replicas in (1, 2, 4):
            out = self.path("out%d" % replicas)
            r = self.assertOk(e2e_util.run_tool("poprt-convert", [
                "--input_model", model, "--export_popef", "--output_dir", out, "--num_ipus", "2",
                "--manual_sharding_config", config, "--replication_factor", str(replicas)]))
            self.assertIn("2 IPU(s)", r.stdout)
            popef = os.path.join(out, "executable.popef")
            dump = json.loads(self.assertOk(e2e_util.run_tool("popef-dump", [popef, "--json"])).stdout)
            # relu and its ancestor mm1 on IPU 1, mm2 on IPU 0.
            self.assertEqual([s["ipu"] for s in dump["executable"]["segments"]], [1, 0])
            res = self.path("res%d" % replicas)
            self.assertOk(e2e_util.run_tool("popef-run", [popef, "--input", "x=" + self.path("x.npy"),
                                                          "--output_dir", res, "--iterations", "8", "--duration", "0"]))
            outputs[replicas] = np.load(os.path.join(res, "output_0_y.npy"))
            np.testing.assert_allclose(outputs[replicas], expected, rtol=1e-5, atol=1e-5)
        for replicas in (2, 4):
            np.testing.assert_array_equal(outputs[replicas], outputs[1])

    def test_bad_configs_are_named(self):
        model = self.write_bytes("relu.onnx", helper.make_model(helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])]),
            opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
        cases = [
            (b"- node: nope\n  device: 0\n", "node 'nope' is not in the model"),
            (b"- node: relu\n  device: 5\n", "node 'relu' is put on device 5, but --num_ipus is 2"),
            (b"- node: relu\n", "entry 1: needs 'node' and 'device'"),
            (b"- node: relu\n  device: 0\n  colour: red\n", "entry 1: unknown key 'colour'"),
            (b"[unclosed", "not valid YAML"),
        ]
        for i, (text, message) in enumerate(cases):
            config = self.write_bytes("bad%d.yaml" % i, text)
            out = self.path("bad_out%d" % i)
            r = e2e_util.run_tool("poprt-convert", ["--input_model", model, "--export_popef", "--output_dir", out,
                                                    "--num_ipus", "2", "--manual_sharding_config", config])
            self.assertFails(r, "poprt-convert", 1, mentions=(config, message))
            self.assertEqual(e2e_util.snapshot_dir(out), {}, "nothing may be written:\n" + r.describe())
        r = e2e_util.run_tool("poprt-convert", ["--input_model", model, "--export_popef", "--output_dir",
                                                self.path("usage"), "--execution_strategy", "pipelined"])
        self.assertFails(r, "poprt-convert", 2, mentions=("--num_ipus > 1",), usage=True)


if __name__ == "__main__":
    e2e_util.main()
