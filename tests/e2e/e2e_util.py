"""Shared helpers for the end-to-end tests in tests/e2e.

Each test script is run on its own with the Debian python (python3-onnx + numpy):

    /usr/bin/python3 tests/e2e/test_X.py --bin-dir /work/main/build/bin [unittest args]

`parse_args()` strips --bin-dir (default: <repo>/build/bin) from sys.argv before unittest sees it.
Expected values never come from poprt's own tools: they come from numpy, ONNX Runtime, or the
stored model outputs in ../shared/models.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

REPO_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN_DIR = os.path.join(REPO_DIR, "build", "bin")

TOOLS = ("poprt-convert", "popef-run", "popef-dump")


def parse_args(argv=None):
    """Remove --bin-dir DIR / --bin-dir=DIR from sys.argv and remember it in BIN_DIR."""
    global BIN_DIR
    argv = sys.argv if argv is None else argv
    out = [argv[0]]
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--bin-dir":
            if i + 1 >= len(argv):
                sys.exit("--bin-dir needs a value")
            BIN_DIR = os.path.abspath(argv[i + 1])
            i += 2
            continue
        if a.startswith("--bin-dir="):
            BIN_DIR = os.path.abspath(a.split("=", 1)[1])
            i += 1
            continue
        out.append(a)
        i += 1
    argv[:] = out
    return BIN_DIR


def main():
    """parse --bin-dir, then unittest.main()."""
    parse_args()
    for t in TOOLS:
        p = os.path.join(BIN_DIR, t)
        if not os.access(p, os.X_OK):
            sys.exit("e2e: %s is missing or not executable (use --bin-dir)" % p)
    unittest.main(verbosity=2)


class Result:
    def __init__(self, argv, returncode, stdout, stderr, timed_out=False):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out

    @property
    def signal(self):
        """The signal that killed the process, or None."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    def cmdline(self):
        return " ".join(_shquote(a) for a in self.argv)

    def describe(self):
        sig = ""
        if self.signal:
            try:
                sig = " (signal %s)" % signal.Signals(self.signal).name
            except ValueError:
                sig = " (signal %d)" % self.signal
        return "$ %s\nexit %s%s%s\n--- stderr ---\n%s--- stdout (first 2000 chars) ---\n%s" % (
            self.cmdline(), self.returncode, sig, " TIMEOUT" if self.timed_out else "",
            self.stderr, self.stdout[:2000])


def _shquote(s):
    if s and all(c.isalnum() or c in "@%+=:,./-_" for c in s):
        return s
    return "'" + s.replace("'", "'\"'\"'") + "'"


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_json(path):
    with open(path) as f:
        return json.load(f)


def tool_path(name):
    return os.path.join(BIN_DIR, name)


def run_tool(name, args, timeout=120, cwd=None, env=None):
    """Run one of the CLIs; never raises on failure, returns a Result."""
    argv = [tool_path(name)] + [str(a) for a in args]
    e = dict(os.environ)
    e.pop("POPRT_LOG_LEVEL", None)
    e.pop("POPRT_CACHE_DIR", None)  # a developer's compile cache would turn compiles into copies
    e.pop("POPRT_REMOTE_CACHE", None)
    if env:
        e.update(env)
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           cwd=cwd, env=e)
        return Result(argv, p.returncode, p.stdout.decode("utf-8", "replace"),
                      p.stderr.decode("utf-8", "replace"))
    except subprocess.TimeoutExpired as ex:
        out = (ex.stdout or b"").decode("utf-8", "replace")
        err = (ex.stderr or b"").decode("utf-8", "replace")
        return Result(argv, None, out, err, timed_out=True)


def run_cmd(argv, timeout=300, cwd=None, env=None):
    """Run any command; returns a Result."""
    try:
        p = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, cwd=cwd, env=env)
        return Result(argv, p.returncode, p.stdout.decode("utf-8", "replace"),
                      p.stderr.decode("utf-8", "replace"))
    except subprocess.TimeoutExpired as ex:
        out = (ex.stdout or b"").decode("utf-8", "replace")
        err = (ex.stderr or b"").decode("utf-8", "replace")
        return Result(argv, None, out, err, timed_out=True)


def run_checked(argv, timeout, env=None):
    """Runs a command for a script (not a test): its stdout, or RuntimeError naming the tool, its
    exit code and its stderr."""
    p = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (os.path.basename(argv[0]), p.returncode,
                                                          p.stderr.decode("utf-8", "replace").strip()))
    return p.stdout.decode("utf-8", "replace")


def stored_run_flags(data_dir):
    """For a folder in ../shared/models' layout (meta.json, input_<i>_<name>.npy): (meta, the
    --input_shape flags fixing the stored inputs' shapes, the --input flags reading them)."""
    import glob
    with open(os.path.join(data_dir, "meta.json")) as f:
        meta = json.load(f)
    shapes, inputs = [], []
    for inp in meta["inputs"]:
        shapes += ["--input_shape", "%s=%s" % (inp["name"], ",".join(str(d) for d in inp["dims"]))]
        files = glob.glob(os.path.join(data_dir, "input_%d_*.npy" % inp["index"]))
        if len(files) != 1:
            raise RuntimeError("%s: %d files for input %d" % (data_dir, len(files), inp["index"]))
        inputs += ["--input", "%s=%s" % (inp["name"], files[0])]
    return meta, shapes, inputs


def compile_and_run(bin_dir, model, out, shapes, inputs, convert_args, timeout):
    """poprt-convert --export_popef of `model` into `out` (with `shapes`, --input_shape flags, and
    `convert_args`), then popef-run once on `inputs` (--input flags) into out/outputs. Returns
    (the compile summary, popef-run's --json summary); RuntimeError when a tool fails."""
    summary_path = os.path.join(out, "summary.json")
    run_checked([os.path.join(bin_dir, "poprt-convert"), "--input_model", model, "--export_popef", "--output_dir", out,
                 "--summary_json", summary_path] + convert_args + shapes, timeout)
    run_json = os.path.join(out, "run.json")
    run_checked([os.path.join(bin_dir, "popef-run"), os.path.join(out, "executable.popef"), "--output_dir",
                 os.path.join(out, "outputs"), "--json", run_json] + inputs, timeout)
    with open(summary_path) as f, open(run_json) as g:
        return json.load(f), json.load(g)


def precision_accuracy(expected, got, tol=1e-2):
    """How a reduced-precision output compares with the fp32 one: (cosine similarity, max abs
    error, count of NaN/Inf where `expected` is finite, all within atol = rtol = tol). Cosine and
    errors are over the elements finite in both; two all-zero outputs have cosine 1."""
    import numpy as np
    e = np.asarray(expected, dtype=np.float64).ravel()
    g = np.asarray(got, dtype=np.float64).ravel()
    new_nonfinite = int(np.sum(np.isfinite(e) & ~np.isfinite(g)))
    both = np.isfinite(e) & np.isfinite(g)
    e, g = e[both], g[both]
    ne, ng = np.linalg.norm(e), np.linalg.norm(g)
    if ne == 0 and ng == 0:
        cosine = 1.0
    elif ne == 0 or ng == 0:
        cosine = 0.0
    else:
        cosine = float(np.dot(e, g) / (ne * ng))
    max_abs = float(np.max(np.abs(e - g))) if e.size else 0.0
    close = bool(np.all(np.abs(e - g) <= tol + tol * np.abs(e)))
    return cosine, max_abs, new_nonfinite, close


def snapshot_dir(path):
    """{relative path: (size, mtime_ns)} of every file and dir under path ({} if it does not exist)."""
    snap = {}
    if not os.path.exists(path):
        return snap
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            snap[os.path.relpath(p, path)] = (st.st_size, st.st_mtime_ns)
    return snap


class E2ETestCase(unittest.TestCase):
    """unittest.TestCase with a per-test temp dir and CLI assertions."""

    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="poprt-e2e-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def mkdir(self, *parts):
        p = self.path(*parts)
        os.makedirs(p, exist_ok=True)
        return p

    def write_bytes(self, name, data):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def assertNoCrash(self, r):
        self.assertFalse(r.timed_out, "timed out:\n" + r.describe())
        self.assertIsNone(r.signal, "killed by a signal:\n" + r.describe())
        low = r.stderr.lower() + r.stdout.lower()
        for bad in ("internal error", "terminate called", "segmentation fault", "core dumped",
                    "addresssanitizer", "runtime error:", "std::", "what():", "abort"):
            self.assertNotIn(bad, low, "looks like a crash/internal error:\n" + r.describe())

    def assertOk(self, r):
        self.assertNoCrash(r)
        self.assertEqual(r.returncode, 0, "expected success:\n" + r.describe())
        return r

    def assertFails(self, r, tool, code=1, mentions=(), usage=False):
        """exit `code`, exactly one stderr line '<tool>: error: ...' (or '<tool>: usage error: ...')
        that contains each string in `mentions`."""
        self.assertNoCrash(r)
        self.assertEqual(r.returncode, code, "wrong exit code:\n" + r.describe())
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, "expected exactly one line on stderr:\n" + r.describe())
        self.assertTrue(r.stderr.endswith("\n"), "stderr line not newline-terminated:\n" + r.describe())
        line = lines[0]
        prefix = "%s: usage error: " % tool if usage else "%s: error: " % tool
        self.assertTrue(line.startswith(prefix), "stderr does not start with %r:\n%s" % (prefix, r.describe()))
        self.assertGreater(len(line), len(prefix) + 5, "empty error message:\n" + r.describe())
        for m in mentions:
            self.assertIn(m, line, "error message does not name %r:\n%s" % (m, r.describe()))
        return line
