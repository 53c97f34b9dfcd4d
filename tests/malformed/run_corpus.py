#!/usr/bin/python3
"""Runs the malformed-input corpus: every row of manifest.tsv through its tool.

    /usr/bin/python3 tests/malformed/run_corpus.py --bin-dir build/bin [--keep DIR] [--only SUBSTRING]

make_corpus.py writes the files first (into a temporary folder, or DIR with --keep). For each
row the tool must: exit with the expected code; print exactly one line on stderr, starting
"<tool>: error: " and containing the file's name and the expected substring; not crash, hang
(60 s) or report a sanitizer error; leave its output directory as it was (a sentinel file, and
for poprt-convert an earlier successful output, must be untouched). A "popef" row is run through
popef-run and popef-dump, which must both refuse the file with the same message, and
popef-dump must print nothing on stdout. Every file the generator writes must have a row, and
every row a file.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CRASH_MARKERS = ("internal error", "terminate called", "segmentation fault", "core dumped", "addresssanitizer",
                 "leaksanitizer", "runtime error:", "what():", "abort")


def read_manifest():
    rows = []
    with open(os.path.join(HERE, "manifest.tsv"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) not in (4, 5):
                sys.exit("manifest.tsv:%d: expected 4 or 5 tab-separated columns, got %d" % (n, len(cols)))
            env = dict(kv.split("=", 1) for kv in cols[4].split()) if len(cols) == 5 and cols[4] else {}
            rows.append({"file": cols[0], "tool": cols[1], "exit": int(cols[2]), "expect": cols[3], "env": env, "line": n})
    return rows


def snapshot(d):
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            out[os.path.relpath(p, d)] = (st.st_size, st.st_mtime_ns)
    return out


def run(argv, env):
    e = dict(os.environ)
    e.pop("POPRT_LOG_LEVEL", None)
    e.update(env)
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=e)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return None, "", "TIMEOUT after 60 s"


def check(row, tool, argv, out_dir):
    """Runs one invocation; returns a list of problems (empty when it behaved)."""
    before = snapshot(out_dir)
    code, stdout, stderr = run(argv, row["env"])
    where = "manifest.tsv:%d %s: $ %s" % (row["line"], row["file"], " ".join(argv))
    problems = []
    low = stderr.lower()
    if code is None or code < 0 or any(m in low for m in CRASH_MARKERS):
        problems.append("crashed or hung (exit %s): %s" % (code, stderr.strip()[:500]))
    if code != row["exit"]:
        problems.append("exit %s, expected %d" % (code, row["exit"]))
    lines = stderr.splitlines()
    if len(lines) != 1:
        problems.append("%d lines on stderr, expected 1: %r" % (len(lines), stderr[:500]))
    else:
        line = lines[0]
        prefix = tool + (": usage error: " if row["exit"] == 2 else ": error: ")
        if not line.startswith(prefix):
            problems.append("stderr does not start with %r: %s" % (prefix, line))
        if row["file"] not in line:
            problems.append("the error does not name the file %r: %s" % (row["file"], line))
        if row["expect"] not in line:
            problems.append("the error does not contain %r: %s" % (row["expect"], line))
    if tool == "popef-dump" and stdout.strip():
        problems.append("popef-dump printed output for a file it refused")
    if snapshot(out_dir) != before:
        problems.append("the output directory changed")
    return ["%s\n    %s" % (where, p) for p in problems], (lines[0] if len(lines) == 1 else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--keep", help="write the corpus here and keep it")
    ap.add_argument("--only", help="run only the rows whose file name contains this")
    a = ap.parse_args()
    bins = os.path.abspath(a.bin_dir)
    corpus = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="poprt-malformed-")
    os.makedirs(corpus, exist_ok=True)
    r = subprocess.run([sys.executable, os.path.join(HERE, "make_corpus.py"), "--out", corpus, "--bin-dir", bins])
    if r.returncode != 0:
        sys.exit("run_corpus: make_corpus.py failed")
    rows = read_manifest()
    problems = []
    helpers = {"base.popef", "host.popef", "conv.popef", "x.npy", "weights.bin", "escape.bin", "_out"}
    made = set(os.listdir(corpus)) - helpers
    listed = {row["file"] for row in rows}
    problems += ["make_corpus.py wrote %s, which manifest.tsv does not list" % f for f in sorted(made - listed)]
    problems += ["manifest.tsv lists %s, which make_corpus.py did not write" % f for f in sorted(listed - made)]

    # An output directory holding an earlier successful conversion and a sentinel.
    out_dir = os.path.join(corpus, "_out")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "sentinel.txt"), "w") as f:
        f.write("keep me\n")
    shutil.copyfile(os.path.join(corpus, "base.popef"), os.path.join(out_dir, "executable.popef"))

    os.chdir(corpus)  # file names in the manifest and in the messages are relative to it
    ran = 0
    for row in rows:
        if a.only and a.only not in row["file"]:
            continue
        f, tool = row["file"], row["tool"]
        if tool == "convert":
            invocations = [("poprt-convert", [os.path.join(bins, "poprt-convert"), "--input_model", f, "--export_popef",
                                              "--output_dir", out_dir])]
        elif tool == "popef":
            invocations = [("popef-run", [os.path.join(bins, "popef-run"), f, "--input", "x=x.npy", "--output_dir", out_dir]),
                           ("popef-dump", [os.path.join(bins, "popef-dump"), f])]
        elif tool == "input":
            invocations = [("popef-run", [os.path.join(bins, "popef-run"), "base.popef", "--input", "x=" + f,
                                          "--output_dir", out_dir])]
        else:
            problems.append("manifest.tsv:%d: unknown tool %r" % (row["line"], tool))
            continue
        messages = []
        for name, argv in invocations:
            p, line = check(row, name, argv, out_dir)
            problems += p
            if line:
                messages.append(line.split(": error: ", 1)[-1])
        if len(messages) == 2 and messages[0] != messages[1]:
            problems.append("manifest.tsv:%d %s: popef-run and popef-dump refuse it differently:\n    %s\n    %s" % (
                row["line"], f, messages[0], messages[1]))
        ran += 1
    if not a.keep:
        shutil.rmtree(corpus, ignore_errors=True)
    for p in problems:
        print("FAIL " + p)
    print("run_corpus: %d cases, %d problems" % (ran, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
