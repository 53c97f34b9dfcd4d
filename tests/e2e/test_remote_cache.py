#!/usr/bin/python3
"""End to end: the remote compile cache (--remote_cache) against a real HTTP server that takes
PUT — Debian's nginx with its WebDAV module on 127.0.0.1, configured here — as CI runners use a
Bazel HTTP cache:

- runner A (empty local cache) compiles and uploads; runner B (another empty local cache) gets a
  byte-identical PopEF from the server without compiling, and its local cache is filled;
- read-only unless --remote_cache_upload;
- a corrupted blob on the server is detected, reported and recompiled;
- a server stopped mid-run costs a warning, not a failed compile, and is not asked again;
- credentials from a header file; no path, host name or credential in the entry or the output.

    /usr/bin/python3 tests/e2e/test_remote_cache.py --bin-dir build/bin
"""

import json
import os
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from e2e_util import read_bytes, read_json  # noqa: E402
from webdav_server import NGINX, Nginx  # noqa: E402

MLP = os.path.join(e2e_util.REPO_DIR, "models", "mlp.onnx")
MLP_DATA = os.path.join(e2e_util.REPO_DIR, "models", "mlp")
TOKEN = "Bearer s3cret-token-for-the-test"




@unittest.skipUnless(os.path.exists(NGINX), "nginx is not installed (scripts/install-deps.sh installs nginx-light)")
class RemoteCacheTest(e2e_util.E2ETestCase):

    def setUp(self):
        super().setUp()
        self.server = Nginx(self.mkdir("nginx")).start()
        self.addCleanup(self.server.stop)

    def convert(self, runner, extra=(), env=None):
        """A conversion on `runner`: its own local cache and output dir, the summary as JSON."""
        out = self.path(runner)
        summary = self.path(runner + ".json")
        args = ["--input_model", MLP, "--input_shape", "x=4,64", "--export_popef", "--output_dir", out,
                "--cache_dir", self.path(runner + "-cache"), "--remote_cache", self.server.url(),
                "--summary_json", summary] + list(extra)
        r = self.assertOk(e2e_util.run_tool("poprt-convert", args, env=env, timeout=300))
        return r, read_json(summary), out

    def assertRunsTheModel(self, popef):
        self.assertOk(e2e_util.run_tool("popef-run", [popef, "--input_dir", MLP_DATA, "--expected_dir", MLP_DATA,
                                                      "--output_dir", self.path("run-" + os.path.basename(os.path.dirname(popef)))]))

    def test_runner_b_gets_runner_a_compile_without_compiling(self):
        r, a, a_out = self.convert("a", ["--remote_cache_upload"])
        self.assertEqual((a["cache"]["hit"], a["cache"]["why"], a["cache"]["upload"]), (False, "no entry", "stored"))
        key = a["cache"]["key"]
        self.assertEqual([os.path.basename(p) for p in self.server.files("ac")], [key])
        self.assertEqual(len(self.server.files("cas")), 3)  # ONNX, PopEF, summary

        r, b, b_out = self.convert("b")
        self.assertIn("remote cache hit", r.stdout)
        self.assertEqual((b["cache"]["hit"], b["cache"]["tier"], b["cache"]["key"]), (True, "remote", key))
        for name in ("executable.popef", "mlp.poprt.onnx"):
            self.assertEqual(read_bytes(os.path.join(b_out, name)), read_bytes(os.path.join(a_out, name)), name)
        self.assertEqual(b["placement"], a["placement"])
        self.assertEqual(b["files"]["popef"], os.path.join(b_out, "executable.popef"))
        self.assertRunsTheModel(os.path.join(b_out, "executable.popef"))
        # The hit filled runner B's local cache: the next conversion there is a local hit.
        r, b2, _ = self.convert("b")
        self.assertEqual((b2["cache"]["hit"], b2["cache"]["tier"]), (True, "local"))

        # Nothing of runner A's paths or the server's address is in what the server keeps.
        for blob in self.server.files("cas") + self.server.files("ac"):
            data = read_bytes(blob)
            for secret in (self.tmp, "127.0.0.1", str(self.server.port)):
                self.assertNotIn(secret.encode(), data, "%s in %s" % (secret, blob))

    def test_read_only_unless_asked_to_upload(self):
        r, a, _ = self.convert("a")
        self.assertEqual(a["cache"]["upload"], "read-only (--remote_cache_upload to upload)")
        self.assertEqual(self.server.files("ac") + self.server.files("cas"), [])
        # The environment variable names the cache as the flag does.
        out = self.path("env")
        self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", MLP, "--input_shape", "x=4,64", "--output_dir", out,
                                                          "--remote_cache_upload"],
                                        env={"POPRT_REMOTE_CACHE": self.server.url()}))
        self.assertEqual(len(self.server.files("ac")), 1)

    def test_corrupted_blob_is_refused_and_recompiled(self):
        _, a, a_out = self.convert("a", ["--remote_cache_upload"])
        popef = read_bytes(os.path.join(a_out, "executable.popef"))
        import hashlib
        blob = os.path.join(self.server.root, "poprt", "cas", hashlib.sha256(popef).hexdigest())
        damaged = bytearray(popef)
        damaged[len(damaged) // 2] ^= 0xFF
        with open(blob, "wb") as f:
            f.write(damaged)

        r, b, b_out = self.convert("b")
        self.assertNotIn("remote cache hit", r.stdout)
        self.assertIn("warning: remote cache: corrupted entry (executable.popef: the blob does not match its SHA-256", r.stdout)
        self.assertFalse(b["cache"]["hit"])
        self.assertTrue(b["cache"]["why"].startswith("corrupted entry: executable.popef"), b["cache"]["why"])
        self.assertEqual(read_bytes(os.path.join(b_out, "executable.popef")), popef)  # compiled, and reproducible

        # A truncated blob likewise.
        with open(blob, "wb") as f:
            f.write(popef[:100])
        r, c, _ = self.convert("c")
        self.assertFalse(c["cache"]["hit"])
        self.assertIn("100 of %d bytes" % len(popef), c["cache"]["why"])

    def test_server_stopped_mid_run_costs_a_warning(self):
        self.convert("a", ["--remote_cache_upload"])
        self.server.stop()
        # A batch of two models on a runner whose cache went away: both compile; the server is asked once.
        models = self.mkdir("models")
        for name in ("one", "two"):
            shutil.copy(MLP, os.path.join(models, name + ".onnx"))
        t0 = time.time()
        r = self.assertOk(e2e_util.run_tool("poprt-convert", [
            "--input_model", os.path.join(models, "one.onnx"), "--input_model", os.path.join(models, "two.onnx"),
            "--input_shape", "x=4,64", "--export_popef", "--output_dir", self.path("batch"),
            "--remote_cache", self.server.url(), "--remote_cache_upload", "--summary_json", self.path("batch.json")],
            timeout=300))
        elapsed = time.time() - t0
        self.assertIn("remote cache unreachable", r.stdout)
        self.assertIn("2 models: 2 converted, 0 failed; cache: 0 of 2 hits (0%)", r.stdout)
        for name in ("one", "two"):
            s = read_json(os.path.join(self.path("batch"), name, "summary.json"))
            self.assertFalse(s["cache"]["hit"])
            self.assertIn("unreachable", s["cache"]["why"])
            self.assertRunsTheModel(os.path.join(self.path("batch"), name, "executable.popef"))
        self.assertLess(elapsed, 60, "an unreachable cache must cost seconds, not minutes")

    def test_credentials_from_a_header_file_are_never_shown(self):
        self.server.stop()
        self.server = Nginx(self.mkdir("nginx-auth"), token=TOKEN).start()
        self.addCleanup(self.server.stop)
        # Without the header: refused, a warning, compiled.
        r, a, _ = self.convert("a", ["--remote_cache_upload"])
        self.assertIn("access refused (HTTP 401", r.stdout)
        self.assertEqual(self.server.files("ac"), [])
        headers = self.write_bytes("headers.txt", ("# the cache's token\nAuthorization: %s\n" % TOKEN).encode())
        r, a, _ = self.convert("a2", ["--remote_cache_upload", "--remote_cache_header_file", headers])
        self.assertEqual(a["cache"]["upload"], "stored")
        r, b, _ = self.convert("b", env={"POPRT_REMOTE_CACHE_HEADER_FILE": headers})
        self.assertEqual(b["cache"]["tier"], "remote")
        for text in (r.stdout, r.stderr, json.dumps(b)):
            self.assertNotIn("s3cret", text)
        # Basic auth in the URL is not echoed either; a malformed header file names its line, not its text.
        bad = self.write_bytes("bad.txt", b"Authorization s3cret\n")
        r = e2e_util.run_tool("poprt-convert", ["--input_model", MLP, "--output_dir", self.path("bad"),
                                                "--remote_cache", "http://user:s3cret@127.0.0.1:%d/poprt" % self.server.port,
                                                "--remote_cache_header_file", bad])
        self.assertEqual(r.returncode, 1, r.describe())
        self.assertIn("line 1 is not 'Name: value'", r.stderr)
        self.assertNotIn("s3cret", r.stderr + r.stdout)

    def test_bad_url_is_the_flags_error(self):
        r = e2e_util.run_tool("poprt-convert", ["--input_model", MLP, "--output_dir", self.path("x"),
                                                "--remote_cache", "ftp://cache.example/"])
        self.assertEqual(r.returncode, 2, r.describe())  # a flag's value no server could make right
        self.assertIn("--remote_cache: expected http://host[:port][/prefix]", r.stderr)
        self.assertFalse(os.path.exists(self.path("x")))


if __name__ == "__main__":
    e2e_util.main()
