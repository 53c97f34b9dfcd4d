#!/usr/bin/python3
"""End to end: poprt-convert in CI pipelines.

- the compile cache (--cache_dir / POPRT_CACHE_DIR): a hit restores byte-identical files without
  compiling; the key follows the model's bytes (external data included) and the options, not
  paths; 4 processes compiling one model into one cache at once leave one entry and 4 identical
  outputs; --cache_max_bytes evicts the least recently used entry;
- reproducibility: the same inputs compiled in different directories, into differently named
  output dirs, give byte-identical PopEFs that hold no path of the run;
- batch conversion (--input_model repeated, a models: list in --config_yaml) with a summary per
  model and a non-zero exit when one failed;
- --error_format json: errors as one JSON object per line.

    /usr/bin/python3 tests/e2e/test_aot.py --bin-dir build/bin
"""

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from e2e_util import read_bytes, read_json  # noqa: E402

MLP = os.path.join(e2e_util.REPO_DIR, "models", "mlp.onnx")




def make_deep_mlp(width=256, layers=6, seed=1):
    """x: float32[batch, width] through `layers` MatMul+Add+Relu: enough work that a compile takes
    a noticeable time, so concurrent compiles overlap."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        inits += [numpy_helper.from_array((rng.standard_normal((width, width)) / 16).astype(np.float32), "w%d" % i),
                  numpy_helper.from_array((rng.standard_normal((width,)) / 10).astype(np.float32), "b%d" % i)]
        nodes += [helper.make_node("MatMul", [prev, "w%d" % i], ["m%d" % i], name="mm%d" % i),
                  helper.make_node("Add", ["m%d" % i, "b%d" % i], ["a%d" % i], name="add%d" % i),
                  helper.make_node("Relu", ["a%d" % i], ["r%d" % i], name="relu%d" % i)]
        prev = "r%d" % i
    nodes.append(helper.make_node("Identity", [prev], ["y"], name="out"))
    g = helper.make_graph(nodes, "deep_mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def save_with_external_data(model, path, location):
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location=location,
                    size_threshold=0)


class AotTest(e2e_util.E2ETestCase):

    def convert(self, args, cwd=None, env=None):
        return self.assertOk(e2e_util.run_tool("poprt-convert", args, cwd=cwd, env=env, timeout=300))

    def cache_entries(self, cache):
        return sorted(n for n in os.listdir(cache) if not n.startswith("."))

    # ------------------------------------------------------------------ the cache

    def test_hit_restores_every_file_without_compiling(self):
        cache = self.path("cache")
        common = ["--input_model", MLP, "--input_shape", "x=4,64", "--export_popef", "--cache_dir", cache]
        first = self.path("first")
        r = self.convert(common + ["--output_dir", first, "--summary_json", self.path("first.json")])
        self.assertNotIn("cache hit", r.stdout)
        miss = read_json(self.path("first.json"))
        self.assertEqual(miss["cache"]["hit"], False)
        self.assertEqual(self.cache_entries(cache), [miss["cache"]["key"]])

        # Another output dir, model name and working directory: a hit, restoring the same bytes.
        second = self.path("second", "deeper")
        r = self.convert(common + ["--output_dir", second, "--output_model", "renamed.onnx",
                                   "--summary_json", self.path("second.json")], cwd=self.mkdir("cwd"))
        self.assertIn("cache hit", r.stdout)
        hit = read_json(self.path("second.json"))
        self.assertEqual(hit["cache"]["hit"], True)
        self.assertEqual(hit["cache"]["key"], miss["cache"]["key"])
        self.assertLess(hit["cache"]["seconds"], 0.5, "a hit should only copy files")
        self.assertEqual(sorted(os.listdir(second)), ["executable.popef", "renamed.onnx"])
        self.assertEqual(read_bytes(os.path.join(second, "executable.popef")),
                         read_bytes(os.path.join(first, "executable.popef")))
        self.assertEqual(read_bytes(os.path.join(second, "renamed.onnx")),
                         read_bytes(os.path.join(first, "mlp.poprt.onnx")))
        # The summary is the compile's, with this run's files.
        self.assertEqual(hit["files"]["popef"], os.path.join(second, "executable.popef"))
        self.assertEqual(hit["placement"], miss["placement"])
        self.assertEqual(hit["passes"], miss["passes"])
        # The restored PopEF runs and gives the model's reference output.
        out = self.path("run_out")
        self.assertOk(e2e_util.run_tool("popef-run", [os.path.join(second, "executable.popef"), "--input_dir",
                                                      os.path.join(e2e_util.REPO_DIR, "models", "mlp"),
                                                      "--expected_dir", os.path.join(e2e_util.REPO_DIR, "models", "mlp"),
                                                      "--output_dir", out]))

        # POPRT_CACHE_DIR does the same as --cache_dir.
        third = self.path("third")
        r = self.convert(common[:-2] + ["--output_dir", third], env={"POPRT_CACHE_DIR": cache})
        self.assertIn("cache hit", r.stdout)
        # An option that changes the result is a miss, and a second entry.
        r = self.convert(common + ["--output_dir", self.path("fp16"), "--precision", "fp16"])
        self.assertNotIn("cache hit", r.stdout)
        self.assertEqual(len(self.cache_entries(cache)), 2)

    def test_external_data_bytes_are_part_of_the_key(self):
        cache = self.path("cache")
        model_dir = self.mkdir("model")
        model = make_deep_mlp(width=32, layers=2)
        save_with_external_data(model, os.path.join(model_dir, "ext.onnx"), "ext.weights")
        args = ["--input_model", os.path.join(model_dir, "ext.onnx"), "--input_shape", "x=2,32", "--export_popef",
                "--cache_dir", cache]
        self.convert(args + ["--output_dir", self.path("a")])
        self.assertIn("cache hit", self.convert(args + ["--output_dir", self.path("b")]).stdout)
        # Same .onnx bytes, other weights (the first 16 floats of the file): a miss, and a PopEF
        # with the new weights.
        weights = os.path.join(model_dir, "ext.weights")
        data = bytearray(read_bytes(weights))
        data[:64] = np.full(16, 0.25, np.float32).tobytes()
        with open(weights, "wb") as f:
            f.write(bytes(data))
        r = self.convert(args + ["--output_dir", self.path("c")])
        self.assertNotIn("cache hit", r.stdout)
        self.assertNotEqual(read_bytes(self.path("c", "executable.popef")),
                            read_bytes(self.path("a", "executable.popef")))
        self.assertEqual(len(self.cache_entries(cache)), 2)

    def test_four_processes_at_once_leave_one_entry_and_identical_outputs(self):
        cache = self.path("cache")
        model = self.path("deep.onnx")
        onnx.save(make_deep_mlp(), model)
        procs = []
        for i in range(4):
            argv = [e2e_util.tool_path("poprt-convert"), "--input_model", model, "--input_shape", "x=16,256",
                    "--export_popef", "--cache_dir", cache, "--output_dir", self.path("out%d" % i),
                    "--summary_json", self.path("s%d.json" % i)]
            procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        for p in procs:
            out, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err.decode())
        entries = self.cache_entries(cache)
        self.assertEqual(len(entries), 1, entries)
        self.assertEqual([n for n in os.listdir(cache) if n.startswith(".")], [], "temporary entries left behind")
        stored = read_bytes(os.path.join(cache, entries[0], "executable.popef"))
        for i in range(4):
            self.assertEqual(read_bytes(self.path("out%d" % i, "executable.popef")), stored, "output %d" % i)
        misses = sum(not read_json(self.path("s%d.json" % i))["cache"]["hit"] for i in range(4))
        # They started together and a compile takes far longer than starting: they all compiled.
        self.assertGreaterEqual(misses, 2, "the processes did not overlap: the race was not exercised")

    def test_max_bytes_evicts_the_least_recently_used_entry(self):
        cache = self.path("cache")
        base = ["--input_model", MLP, "--export_popef", "--cache_dir", cache]

        def compile_batch(n, limit=None):
            extra = ["--cache_max_bytes", str(limit)] if limit else []
            return self.convert(base + ["--input_shape", "x=%d,64" % n, "--output_dir", self.path("b%d" % n)] + extra)

        compile_batch(1)
        compile_batch(2)
        entries = self.cache_entries(cache)
        sizes = {e: sum(os.path.getsize(os.path.join(cache, e, f)) for f in os.listdir(os.path.join(cache, e)))
                 for e in entries}
        time.sleep(0.05)
        self.assertIn("cache hit", compile_batch(1).stdout)  # batch 1 is now the most recently used
        after_hit = set(self.cache_entries(cache))
        # Room for about two entries: storing batch 3 evicts batch 2's.
        compile_batch(3, limit=int(max(sizes.values()) * 2.5))
        left = set(self.cache_entries(cache))
        self.assertEqual(len(left), 2, left)
        self.assertEqual(len(left & after_hit), 1)
        self.assertIn("cache hit", compile_batch(1).stdout)
        self.assertNotIn("cache hit", compile_batch(2).stdout)

    # ------------------------------------------------------------------ reproducibility

    def test_same_inputs_give_the_same_bytes_anywhere(self):
        """Two copies of a model with external data, in different directories, compiled in fp16
        from different working directories into differently named output dirs, without a cache."""
        outs = []
        for place, out_name in (("one/a", "out_x"), ("two/b/c", "build-y")):
            d = self.mkdir(place)
            save_with_external_data(make_deep_mlp(width=64, layers=3), os.path.join(d, "model.onnx"), "w.bin")
            out = os.path.join(d, out_name)
            self.convert(["--input_model", "model.onnx", "--input_shape", "x=4,64", "--export_popef",
                          "--precision", "fp16", "--output_dir", out_name], cwd=d)
            outs.append(out)
        for name in ("model.poprt.onnx", "executable.popef"):
            a, b = (read_bytes(os.path.join(o, name)) for o in outs)
            self.assertTrue(a == b, "%s differs (%d vs %d bytes)" % (name, len(a), len(b)))
            for o in outs:
                self.assertNotIn(self.tmp.encode(), a, "%s holds a path of the run" % name)
                self.assertNotIn(os.path.basename(o).encode(), a, "%s holds its output dir's name" % name)

    # ------------------------------------------------------------------ batch conversion

    def test_batch_converts_every_model_and_fails_if_one_did(self):
        models = self.mkdir("models")
        shutil.copy(MLP, os.path.join(models, "a.onnx"))
        with open(os.path.join(models, "b.onnx"), "wb") as f:
            f.write(b"not a model")
        onnx.save(make_deep_mlp(width=64, layers=1), os.path.join(models, "c.onnx"))
        out = self.path("out")
        r = e2e_util.run_tool("poprt-convert", [
            "--input_model", os.path.join(models, "a.onnx"), "--input_model", os.path.join(models, "b.onnx"),
            "--input_model", os.path.join(models, "c.onnx"), "--input_shape", "x=4,64", "--export_popef",
            "--output_dir", out, "--summary_json", self.path("batch.json"), "--error_format", "json"])
        self.assertNoCrash(r)
        self.assertEqual(r.returncode, 1, r.describe())
        errors = [json.loads(line) for line in r.stderr.splitlines()]
        self.assertEqual(len(errors), 2, r.stderr)  # b's error, then the tally
        self.assertEqual(errors[0]["model"], os.path.join(models, "b.onnx"))
        self.assertEqual(errors[0]["file"], os.path.join(models, "b.onnx"))
        self.assertEqual(errors[0]["code"], 1)
        self.assertIn("1 of 3 models failed", errors[1]["error"])
        self.assertEqual(sorted(os.listdir(out)), ["a", "c"], "a failed model leaves nothing")
        for stem in ("a", "c"):
            self.assertEqual(sorted(os.listdir(os.path.join(out, stem))),
                             ["%s.poprt.onnx" % stem, "executable.popef", "summary.json"])
            s = read_json(os.path.join(out, stem, "summary.json"))
            self.assertEqual(s["inputs"][0]["shape"], [4, 64])
        batch = read_json(self.path("batch.json"))
        self.assertEqual([m["status"] for m in batch["models"]], ["ok", "failed", "ok"])
        self.assertEqual(batch["models"][1]["exit_code"], 1)
        self.assertEqual((batch["converted"], batch["failed"]), (2, 1))
        # a's PopEF is the one a single conversion makes.
        single = self.path("single")
        self.convert(["--input_model", MLP, "--input_shape", "x=4,64", "--export_popef", "--output_dir", single])
        self.assertEqual(read_bytes(os.path.join(out, "a", "executable.popef")),
                         read_bytes(os.path.join(single, "executable.popef")))

    def test_batch_from_a_models_list_with_options_per_model(self):
        models = self.mkdir("models")
        shutil.copy(MLP, os.path.join(models, "a.onnx"))
        onnx.save(make_deep_mlp(width=64, layers=1), os.path.join(models, "c.onnx"))
        cfg = self.path("models.yaml")
        with open(cfg, "w") as f:
            f.write("export_popef: true\noutput_dir: %s\nmodels:\n"
                    "  - {input_model: %s, input_shape: {x: [2, 64]}}\n"
                    "  - input_model: %s\n    batch_size: 8\n    precision: fp16\n"
                    % (self.path("out"), os.path.join(models, "a.onnx"), os.path.join(models, "c.onnx")))
        r = self.convert(["--config_yaml", cfg])
        self.assertIn("2 models: 2 converted, 0 failed", r.stdout)
        a = read_json(self.path("out", "a", "summary.json"))
        c = read_json(self.path("out", "c", "summary.json"))
        self.assertEqual(a["inputs"][0]["shape"], [2, 64])
        self.assertEqual((c["inputs"][0]["shape"], c["precision"]), ([8, 64], "fp16"))

    def test_batch_stem_clash_is_a_usage_error(self):
        for d in ("x", "y"):
            shutil.copy(MLP, os.path.join(self.mkdir(d), "m.onnx"))
        out = self.path("out")
        r = e2e_util.run_tool("poprt-convert", ["--input_model", self.path("x", "m.onnx"), "--input_model",
                                                self.path("y", "m.onnx"), "--output_dir", out])
        self.assertFails(r, "poprt-convert", code=2, usage=True,
                         mentions=[self.path("x", "m.onnx"), self.path("y", "m.onnx")])
        self.assertFalse(os.path.exists(out))

    # ------------------------------------------------------------------ --error_format json

    def assertJsonError(self, r, code, **fields):
        self.assertNoCrash(r)
        self.assertEqual(r.returncode, code, r.describe())
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.describe())
        err = json.loads(lines[0])
        self.assertEqual(err["code"], code)
        self.assertTrue(err["error"])
        for k, v in fields.items():
            self.assertEqual(err.get(k), v, "%s in %s" % (k, lines[0]))
        return err

    def test_error_format_json(self):
        junk = self.write_bytes("junk.onnx", b"junk")
        r = e2e_util.run_tool("poprt-convert", ["--input_model", junk, "--error_format", "json",
                                                "--output_dir", self.path("o")])
        self.assertJsonError(r, 1, file=junk, kind="error", tool="poprt-convert")
        r = e2e_util.run_tool("poprt-convert", ["--error_format=json", "--bogus"])
        self.assertJsonError(r, 2, flag="--bogus", kind="usage")
        r = e2e_util.run_tool("poprt-convert", ["--error_format", "json", "--input_model", MLP,
                                                "--precision", "fp8", "--output_dir", self.path("o")])
        self.assertJsonError(r, 2, flag="--precision", kind="usage")  # a bad flag value is a usage error
        odd = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")], "g",
                                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        m = helper.make_model(odd, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        p = self.path("odd.onnx")
        onnx.save(m, p)
        r = e2e_util.run_tool("poprt-convert", ["--error_format", "json", "--input_model", p,
                                                "--output_dir", self.path("o")])
        self.assertJsonError(r, 1, file=p, node="mystery")
        # The other tools take it too.
        missing = self.path("missing.popef")
        self.assertJsonError(e2e_util.run_tool("popef-run", [missing, "--error_format", "json"]), 1,
                             tool="popef-run", file=missing)
        self.assertJsonError(e2e_util.run_tool("popef-dump", [missing, "--error_format", "json"]), 1,
                             tool="popef-dump", file=missing)
        # And without it, errors stay one text line.
        self.assertFails(e2e_util.run_tool("poprt-convert", ["--input_model", junk, "--output_dir",
                                                             self.path("o")]), "poprt-convert", mentions=[junk])
        self.assertFalse(os.path.exists(self.path("o")))


if __name__ == "__main__":
    e2e_util.main()
