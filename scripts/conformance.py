#!/usr/bin/python3
"""ONNX backend conformance runner for poprt.

Runs the ONNX backend test data (Debian's libonnx-testdata) through poprt-convert and
popef-run and compares the outputs with the reference outputs of each test.

For every test folder (<data>/<suite>/<test>/model.onnx + test_data_set_*/):
  * input_<i>.pb is mapped to the i-th graph input that is not an initializer;
  * the model is compiled with poprt-convert --export_popef once per distinct set of input
    shapes, with --input_shape NAME=D0,D1,... taken from the .pb files;
  * popef-run runs the PopEF with --input NAME=input_<i>.pb;
  * output_<i>.pb is compared with the .npy written for output i: dtype and shape must match
    exactly; floating point values within |a-b| <= atol + rtol*|b| (NaN equals NaN);
    integers, bools and strings exactly.

Needs Debian's python3 (python3-onnx, python3-numpy): run it with /usr/bin/python3.

Exit status: 0, or 1 when --baseline is given and a test listed in it does not pass
(REGRESSION); 2 on usage errors.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # pragma: no cover
    sys.exit("conformance.py: error: %s (run it with /usr/bin/python3, which has python3-onnx and numpy)" % e)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = "/usr/share/libonnx-testdata/data"
DEFAULT_SUITES = ["node", "simple", "pytorch-converted", "pytorch-operator"]
DEFAULT_BASELINE = os.path.join(REPO_ROOT, "tests", "conformance", "passing.txt")

RTOL = 1e-3
ATOL = 1e-7
MAX_REASON = 200


class TestFailure(Exception):
    """A test fails with this one-line reason."""


# ---------------------------------------------------------------------------------------------
# Running one test (in a worker process)
# ---------------------------------------------------------------------------------------------

def output_file_name(index, name):
    """Mirrors tools/tool_common.cpp outputFileName()."""
    return "output_%d_%s.npy" % (index, re.sub(r"[^A-Za-z0-9._-]", "_", name))


def shorten(text, limit=MAX_REASON):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tool_reason(tool, proc, paths):
    """One line explaining why a tool call failed."""
    if proc.returncode < 0:
        try:
            sig = signal.Signals(-proc.returncode).name
        except ValueError:
            sig = "signal %d" % -proc.returncode
        return "%s crashed (%s)" % (tool, sig)
    lines = [l.strip() for l in proc.stderr.decode("utf-8", "replace").splitlines() if l.strip()]
    # Prefer the tool's own error line over any log output that may precede it.
    line = next((l for l in lines if l.startswith(tool + ": ") and "error" in l.split(":", 2)[1]), None)
    if line is None:
        line = lines[0] if lines else "exit code %d, nothing on stderr" % proc.returncode
    prefix_error = tool + ": error: "
    if line.startswith(prefix_error):
        line = line[len(prefix_error):]
    elif line.startswith(tool + ": "):
        line = line[len(tool) + 2:]  # keeps "internal error: ..." / "usage error: ..."
    # Drop a leading file name ("/path/model.onnx: ...", "work/x/input_0.pb: ...").
    line = re.sub(r"^\S*/\S*?: ", "", line)
    for p, repl in paths:
        line = line.replace(p, repl)
    if proc.returncode not in (0, 1):
        line = "exit code %d: %s" % (proc.returncode, line)
    if tool != "poprt-convert":
        line = tool + ": " + line
    return line


def call_tool(tool, args, timeout, paths, log):
    cmd = [tool_path(tool)] + args
    log.append(" ".join(cmd))
    try:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestFailure("timeout: %s ran longer than %g s" % (tool, timeout))
    if proc.returncode != 0:
        raise TestFailure(tool_reason(tool, proc, paths))


_BIN_DIR = None


def tool_path(tool):
    return os.path.join(_BIN_DIR, tool)


def type_kind(type_proto):
    return type_proto.WhichOneof("value") or "unknown"


def format_index(idx):
    return str(tuple(int(i) for i in idx))


def compare(i, actual, expected):
    """Raises TestFailure when actual (from the .npy) differs from expected (from output_<i>.pb)."""
    # Strings: the .npy holds numpy unicode ('<U'), onnx gives object arrays of str/bytes.
    if expected.dtype.kind in "OSU" and actual.dtype.kind in "OSU":
        decode = np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else str(v), otypes=[object])
        actual = decode(actual) if actual.size else actual.astype(object)
        expected = decode(expected) if expected.size else expected.astype(object)
    if actual.dtype != expected.dtype:
        raise TestFailure("output %d: dtype %s != expected %s" % (i, actual.dtype, expected.dtype))
    if actual.shape != expected.shape:
        raise TestFailure("output %d: shape %s != expected %s" % (i, tuple(actual.shape), tuple(expected.shape)))
    if actual.size == 0:
        return
    kind = expected.dtype.kind
    if kind in "fc":
        a = actual.astype(np.complex128 if kind == "c" else np.float64)
        b = expected.astype(a.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(a - b)
            # Infinities must match exactly (inf - inf is nan, and inf <= atol + rtol*inf would accept -inf).
            close = np.isfinite(a) & np.isfinite(b) & (diff <= ATOL + RTOL * np.abs(b))
            ok = (a == b) | (np.isnan(a) & np.isnan(b)) | close
        if ok.all():
            return
        rank = np.where(ok, -1.0, np.nan_to_num(diff.real if kind == "c" else diff, nan=np.inf, posinf=np.inf))
        flat = int(np.argmax(rank))
        idx = np.unravel_index(flat, actual.shape)
        num = (lambda v: str(complex(v))) if kind == "c" else (lambda v: "%.9g" % v)
        raise TestFailure("output %d: max abs diff %.6g at index %s (got %s, expected %s; %d of %d values differ)"
                          % (i, diff.flat[flat].real, format_index(idx), num(actual.flat[flat]),
                             num(expected.flat[flat]), int((~ok).sum()), ok.size))
    # ints, bools, strings: exact.
    ok = actual == expected
    if np.all(ok):
        return
    ok = np.asarray(ok, dtype=bool).reshape(actual.shape)
    if kind in "iu":
        diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        bad_diff = np.where(ok, -1.0, diff)
        flat = int(np.argmax(bad_diff))
        idx = np.unravel_index(flat, actual.shape)
        raise TestFailure("output %d: max abs diff %.6g at index %s (got %r, expected %r; %d of %d values differ)"
                          % (i, bad_diff.flat[flat], format_index(idx), actual.flat[flat].item(),
                             expected.flat[flat].item(), int((~ok).sum()), ok.size))
    flat = int(np.argmin(ok.reshape(-1)))
    idx = np.unravel_index(flat, actual.shape)
    raise TestFailure("output %d: values differ at index %s (got %r, expected %r; %d of %d values differ)"
                      % (i, format_index(idx), actual.flat[flat], expected.flat[flat], int((~ok).sum()), ok.size))


def data_sets(test_dir):
    def key(p):
        m = re.search(r"(\d+)$", p)
        return (int(m.group(1)) if m else -1, p)
    return sorted((d for d in glob.glob(os.path.join(test_dir, "test_data_set_*")) if os.path.isdir(d)), key=key)


def numbered_files(folder, prefix):
    """input_0.pb, input_1.pb, ... in index order (stops at the first gap)."""
    files = []
    while os.path.exists(os.path.join(folder, "%s_%d.pb" % (prefix, len(files)))):
        files.append(os.path.join(folder, "%s_%d.pb" % (prefix, len(files))))
    return files


def run_checks(test_dir, work, timeout, data_root, log):
    try:
        model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    except Exception as e:  # noqa: BLE001 - any parse problem is a test failure
        raise TestFailure("cannot load model.onnx with onnx: %s" % e)
    inits = {t.name for t in model.graph.initializer} | {t.values.name for t in model.graph.sparse_initializer}
    graph_inputs = [v for v in model.graph.input if v.name not in inits]
    graph_outputs = list(model.graph.output)

    sets = data_sets(test_dir)
    if not sets:
        raise TestFailure("no test_data_set_* folder")
    paths = [(work, "<work>"), (data_root, "<data>")]
    compiled = {}  # tuple of (name, dims) -> popef path, or TestFailure
    host_nodes = []  # [node, reason] of every node a compile left on the host
    for set_dir in sets:
        try:
            check_data_set(test_dir, set_dir, work, timeout, paths, graph_inputs, graph_outputs, compiled, host_nodes, log)
        except TestFailure as f:
            if len(sets) > 1:
                raise TestFailure("%s: %s" % (os.path.basename(set_dir), f))
            raise
    return host_nodes


def check_data_set(test_dir, set_dir, work, timeout, paths, graph_inputs, graph_outputs, compiled, host_nodes, log):
    """Compiles (unless a PopEF for these input shapes exists already), runs and compares one test_data_set_*."""
    set_name = os.path.basename(set_dir)
    in_files = numbered_files(set_dir, "input")
    if len(in_files) > len(graph_inputs):
        raise TestFailure("%s has %d inputs, the model has %d non-initializer inputs"
                          % (set_name, len(in_files), len(graph_inputs)))
    shapes = []
    for value, path in zip(graph_inputs, in_files):
        if type_kind(value.type) != "tensor_type":
            shapes.append((value.name, None))  # a sequence or optional: no shape to fix
            continue
        try:
            tensor = onnx.load_tensor(path)
        except Exception as e:  # noqa: BLE001
            raise TestFailure("cannot read %s/%s: %s" % (set_name, os.path.basename(path), e))
        shapes.append((value.name, tuple(tensor.dims)))
    key = tuple(shapes)

    if key not in compiled:
        out = os.path.join(work, "compile_%d" % len(compiled))
        summary = os.path.join(work, "summary_%d.json" % len(compiled))
        args = ["--input_model", os.path.join(test_dir, "model.onnx"), "--output_dir", out, "--export_popef",
                "--summary_json", summary]
        for name, dims in shapes:
            if dims is not None:
                args += ["--input_shape", "%s=%s" % (name, ",".join(str(d) for d in dims))]
        try:
            call_tool("poprt-convert", args, timeout, paths, log)
            compiled[key] = os.path.join(out, "executable.popef")
            with open(summary) as f:
                placement = json.load(f).get("placement") or {}
            host_nodes += [[h["node"], h["reason"]] for h in placement.get("host_nodes", [])]
        except TestFailure as f:
            compiled[key] = f
    if isinstance(compiled[key], TestFailure):
        raise compiled[key]

    run_dir = os.path.join(work, "run_" + set_name)
    args = [compiled[key], "--output_dir", run_dir]
    for (name, _), path in zip(shapes, in_files):
        args += ["--input", "%s=%s" % (name, path)]
    call_tool("popef-run", args, timeout, paths, log)

    out_files = numbered_files(set_dir, "output")
    for i, path in enumerate(out_files):
        if i >= len(graph_outputs):
            raise TestFailure("%s has %d outputs, the model has %d" % (set_name, len(out_files), len(graph_outputs)))
        if type_kind(graph_outputs[i].type) != "tensor_type":
            compare_value_proto(i, run_dir, graph_outputs[i], path)
            continue
        npy = os.path.join(run_dir, output_file_name(i, graph_outputs[i].name))
        if not os.path.exists(npy):
            found = sorted(glob.glob(os.path.join(run_dir, "output_%d_*.npy" % i)))
            if not found:
                raise TestFailure("output %d: popef-run wrote no output_%d_*.npy" % (i, i))
            npy = found[0]
        try:
            expected = numpy_helper.to_array(onnx.load_tensor(path))
        except Exception as e:  # noqa: BLE001
            raise TestFailure("cannot read %s/output_%d.pb: %s" % (set_name, i, e))
        try:
            actual = np.load(npy, allow_pickle=False)
        except Exception as e:  # noqa: BLE001
            raise TestFailure("output %d: cannot read %s: %s" % (i, os.path.basename(npy), e))
        compare(i, actual, expected)
    extra = sorted(glob.glob(os.path.join(run_dir, "output_%d_*.npy" % len(out_files))))
    if extra and len(out_files) == len(graph_outputs):
        raise TestFailure("popef-run wrote more outputs than the model has (%s)" % os.path.basename(extra[0]))


def value_items(proto_path, kind):
    """A sequence or optional .pb as a list of numpy arrays ([] for an empty optional)."""
    with open(proto_path, "rb") as f:
        data = f.read()
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return "sequence", [numpy_helper.to_array(t) for t in seq.tensor_values]
    opt = onnx.OptionalProto()
    opt.ParseFromString(data)
    if opt.HasField("tensor_value"):
        return "tensor", [numpy_helper.to_array(opt.tensor_value)]
    if opt.HasField("sequence_value"):
        return "sequence", [numpy_helper.to_array(t) for t in opt.sequence_value.tensor_values]
    return "none", []


def compare_value_proto(i, run_dir, output, expected_path):
    """Sequences and optionals: popef-run writes them as .pb, like the test data."""
    kind = type_kind(output.type)
    mine = os.path.join(run_dir, output_file_name(i, output.name)[:-len(".npy")] + ".pb")
    if not os.path.exists(mine):
        raise TestFailure("output %d: popef-run wrote no %s" % (i, os.path.basename(mine)))
    try:
        got_kind, got = value_items(mine, kind)
        want_kind, want = value_items(expected_path, kind)
    except Exception as e:  # noqa: BLE001
        raise TestFailure("output %d: cannot read a .pb: %s" % (i, e))
    if got_kind != want_kind or len(got) != len(want):
        raise TestFailure("output %d: %s of %d item(s) != expected %s of %d" % (i, got_kind, len(got), want_kind, len(want)))
    for a, b in zip(got, want):
        compare(i, a, b)


def run_test(job):
    """Worker entry point: returns the result record of one test."""
    global _BIN_DIR
    _BIN_DIR = job["bin_dir"]
    suite, test = job["suite"], job["test"]
    work = os.path.join(job["work_root"], suite, test)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    log = []
    start = time.monotonic()
    status, reason, host_nodes = "pass", "", []
    try:
        host_nodes = run_checks(job["test_dir"], work, job["timeout"], job["data_root"], log)
    except TestFailure as f:
        status, reason = "fail", str(f)
    except Exception as e:  # noqa: BLE001 - a bug in this runner must not stop the run
        status, reason = "fail", "conformance.py: %s: %s" % (type(e).__name__, e)
    seconds = time.monotonic() - start
    if job["keep"]:
        with open(os.path.join(work, "commands.txt"), "w") as f:
            f.write("\n".join(log) + "\n")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return {"suite": suite, "test": test, "status": status, "reason": shorten(reason), "seconds": round(seconds, 3),
            "group": reason_group(reason) if reason else "", "full_reason": reason, "host_nodes": host_nodes}


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

def read_baseline(path):
    entries = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                entries.append(line)
    return entries


def write_baseline(path, entries):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("# ONNX backend tests (suite/test) that must pass; checked by scripts/conformance.py --baseline.\n")
        f.write("# Regenerate with: /usr/bin/python3 scripts/conformance.py --update-baseline\n")
        for e in sorted(set(entries)):
            f.write(e + "\n")


_DEVICE_RE = re.compile(r"^\d+ node\(s\) cannot run on the device: (.*)$")
_NODE_RE = re.compile(r"node '[^']*' \(([\w.]+)\): (.*?)(?=; node '|$)")


def blocking_ops(reason):
    """[(op, why)] for "N node(s) cannot run on the device: node 'a' (Op): why; node ..." reasons."""
    m = _DEVICE_RE.match(reason)
    if not m:
        return []
    nodes = re.sub(r"; \.\.\. \(\d+ more\)$", "", m.group(1))  # the tool lists ten nodes at most
    return [(op, why) for op, why in _NODE_RE.findall(nodes)]


def reason_group(reason):
    """Folds names, numbers and shapes out of a (full, untruncated) reason so that alike failures group together."""
    nodes = blocking_ops(reason)
    if nodes:
        no_lowering = sorted({op for op, why in nodes if why == "no device lowering for this op yet"})
        other = sorted({"%s (%s)" % (op, re.sub(r"'[^']*'", "'*'", why)) for op, why in nodes
                        if why != "no device lowering for this op yet"})
        parts = []
        if no_lowering:
            parts.append("no device lowering for " + ", ".join(no_lowering))
        parts += other
        more = " (and more nodes)" if re.search(r"; \.\.\. \(\d+ more\)$", reason) else ""
        return "cannot run on the device: " + "; ".join(parts) + more
    g = re.sub(r"^test_data_set_\d+: ", "", reason)
    g = re.sub(r"'[^']*'", "'*'", g)
    g = re.sub(r"\[[^\]]*\]", "[...]", g)                     # shapes: float32[3,4] -> float32[...]
    g = re.sub(r"\((\d+, )*\d*,?\)", "(...)", g)              # shape / index tuples
    g = re.sub(r"\b(output|input|rank|dim) \d+", r"\1 N", g)
    g = re.sub(r"max abs diff \S+ at index \(\.\.\.\) \(.*\)$", "values differ beyond tolerance", g)
    g = re.sub(r"values differ at index \(\.\.\.\) \(.*\)$", "values differ", g)
    return shorten(g)


def discover(data_root, suites):
    tests = []
    for suite in suites:
        folder = os.path.join(data_root, suite)
        if not os.path.isdir(folder):
            print("conformance.py: error: no suite folder %s (--data, --suites)" % folder, file=sys.stderr)
            sys.exit(2)
        for test in sorted(os.listdir(folder)):
            if os.path.isfile(os.path.join(folder, test, "model.onnx")):
                tests.append((suite, test))
    return tests


def main(argv=None):
    ap = argparse.ArgumentParser(description="Run the ONNX backend test data through poprt-convert and popef-run.")
    ap.add_argument("--bin-dir", default=os.path.join(REPO_ROOT, "build", "bin"),
                    help="folder with poprt-convert and popef-run (default: <repo>/build/bin)")
    ap.add_argument("--data", default=DEFAULT_DATA, help="test data root (default: %(default)s)")
    ap.add_argument("--suites", default=",".join(DEFAULT_SUITES), help="comma list of suites (default: %(default)s)")
    ap.add_argument("--filter", help="only tests whose name (or suite/name) matches this regular expression")
    ap.add_argument("--jobs", type=int, default=2, help="tests run in parallel (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per tool call (default: %(default)s)")
    ap.add_argument("--json", help="write per-test results to this file")
    ap.add_argument("--baseline", help="file listing suite/test that must pass; a failure of one is a REGRESSION (exit 1)")
    ap.add_argument("--update-baseline", action="store_true",
                    help="write the passing tests to the baseline file (default %s)" % os.path.relpath(DEFAULT_BASELINE, REPO_ROOT))
    ap.add_argument("--only-baseline", action="store_true", help="run only the tests listed in the baseline")
    ap.add_argument("--keep-dir", help="keep the work files (PopEFs, outputs, commands.txt) in this folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test as it finishes and every failure")
    args = ap.parse_args(argv)

    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    bin_dir = os.path.abspath(args.bin_dir)
    for tool in ("poprt-convert", "popef-run"):
        if not os.access(os.path.join(bin_dir, tool), os.X_OK):
            ap.error("no executable %s in %s (--bin-dir)" % (tool, bin_dir))
    data_root = os.path.abspath(args.data)
    suites = [s for s in args.suites.split(",") if s]
    baseline_path = args.baseline or (DEFAULT_BASELINE if args.update_baseline else None)
    if args.only_baseline and not baseline_path:
        ap.error("--only-baseline needs --baseline FILE")
    baseline = []
    if baseline_path and os.path.exists(baseline_path):
        baseline = read_baseline(baseline_path)
    elif args.baseline and not args.update_baseline:
        ap.error("--baseline %s: no such file" % args.baseline)
    try:
        rx = re.compile(args.filter) if args.filter else None
    except re.error as e:
        ap.error("--filter: %s" % e)

    def selected(suite, test):
        if suite not in suites:
            return False
        return rx is None or bool(rx.search(test) or rx.search(suite + "/" + test))

    tests = [t for t in discover(data_root, suites) if selected(*t)]
    if args.only_baseline:
        wanted = set(baseline)
        tests = [t for t in tests if "%s/%s" % t in wanted]
    if not tests:
        print("conformance.py: no tests selected", file=sys.stderr)

    if args.keep_dir:
        work_root = os.path.abspath(args.keep_dir)
        os.makedirs(work_root, exist_ok=True)
    else:
        work_root = tempfile.mkdtemp(prefix="poprt-conformance-")

    jobs = [{"suite": s, "test": t, "test_dir": os.path.join(data_root, s, t), "bin_dir": bin_dir,
             "work_root": work_root, "data_root": data_root, "timeout": args.timeout,
             "keep": bool(args.keep_dir)} for s, t in tests]
    results = []
    start = time.monotonic()
    try:
        with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(run_test, j) for j in jobs]
            for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                r = fut.result()
                results.append(r)
                if args.verbose:
                    print("[%d/%d] %s %s/%s (%.2f s)%s" % (n, len(jobs), r["status"].upper(), r["suite"], r["test"],
                                                          r["seconds"], ": " + r["reason"] if r["reason"] else ""),
                          flush=True)
    finally:
        if not args.keep_dir:
            shutil.rmtree(work_root, ignore_errors=True)
    elapsed = time.monotonic() - start
    order = {t: i for i, t in enumerate(tests)}
    results.sort(key=lambda r: order[(r["suite"], r["test"])])

    # Per-suite table.
    per_suite = defaultdict(lambda: [0, 0])
    for r in results:
        per_suite[r["suite"]][0 if r["status"] == "pass" else 1] += 1
    print()
    print("%-20s %7s %7s %7s" % ("suite", "passed", "failed", "total"))
    for suite in suites:
        if suite in per_suite:
            p, f = per_suite[suite]
            print("%-20s %7d %7d %7d   %s %d/%d" % (suite, p, f, p + f, suite, p, p + f))
    tp = sum(v[0] for v in per_suite.values())
    tf = sum(v[1] for v in per_suite.values())
    print("%-20s %7d %7d %7d   total %d/%d" % ("total", tp, tf, tp + tf, tp, tp + tf))
    print("(%.1f s, %d jobs)" % (elapsed, args.jobs))

    # Of the passing tests, those whose every node ran on the device (no host fallback).
    passed = [r for r in results if r["status"] == "pass"]
    on_device = [r for r in passed if not r["host_nodes"]]
    print("all nodes on the device: %d of %d passing tests" % (len(on_device), len(passed)))
    host_reasons = Counter(reason_group(reason) for r in passed for reason in {h[1] for h in r["host_nodes"]})
    if host_reasons and args.verbose:
        print("why passing tests use the host (tests):")
        for g, n in sorted(host_reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:25]:
            print("%6d  %s" % (n, g))

    failures = [r for r in results if r["status"] != "pass"]
    if failures:
        groups = defaultdict(list)
        for r in failures:
            groups[r["group"]].append(r)
        print()
        print("failures by reason (%d reasons):" % len(groups))
        for g, rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            example = "" if len(rs) > 1 else "  [%s/%s]" % (rs[0]["suite"], rs[0]["test"])
            print("%6d  %s%s" % (len(rs), g, example))
        ops = Counter(op for r in failures for op in {op for op, _ in blocking_ops(r["full_reason"])})
        if ops:
            print()
            print("ops that keep the most tests off the device (tests blocked):")
            print("  " + ", ".join("%s %d" % kv for kv in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))[:25]))
        if args.verbose:
            print()
            print("failing tests:")
            for r in failures:
                print("  %s/%s: %s" % (r["suite"], r["test"], r["reason"]))

    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: r[k] for k in ("suite", "test", "status", "reason", "seconds", "host_nodes")} for r in results], f,
                      indent=1)
            f.write("\n")

    status = 0
    ran = {"%s/%s" % (r["suite"], r["test"]) for r in results}
    passing = {"%s/%s" % (r["suite"], r["test"]) for r in results if r["status"] == "pass"}
    reasons = {"%s/%s" % (r["suite"], r["test"]): r["reason"] for r in results}
    if baseline_path:
        base = set(baseline)
        # Baseline entries inside the selection that no longer exist count as regressions too.
        in_scope = {e for e in base if "/" in e and selected(*e.split("/", 1))}
        missing = sorted(in_scope - ran)  # every selected test on disk ran, so these do not exist
        regressions = sorted(e for e in in_scope & ran if e not in passing)
        new = sorted(passing - base)
        if args.update_baseline:
            updated = (base - ran - set(missing)) | passing
            write_baseline(baseline_path, updated)
            print()
            print("baseline %s updated: %d tests (%d added, %d removed)"
                  % (baseline_path, len(updated), len(updated - base), len(base - updated)))
        else:
            print()
            for e in regressions:
                print("REGRESSION %s: %s" % (e, reasons[e]))
            for e in missing:
                print("REGRESSION %s: test not found in %s" % (e, data_root))
            for e in new:
                print("newly passing (update the baseline with --update-baseline): %s" % e)
            checked = len(in_scope & ran)
            if regressions or missing:
                print("baseline: %d of %d baseline tests regressed" % (len(regressions) + len(missing), len(in_scope)))
                status = 1
            else:
                print("baseline: all %d baseline tests pass" % checked)
    return status


if __name__ == "__main__":
    sys.exit(main())
