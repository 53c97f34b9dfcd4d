#!/usr/bin/python3
"""Side-by-side benchmark of poprt and ONNX Runtime on the shared models (see bench/run.sh).

For each model folder in --models (NAME/meta.json, NAME/input_*.npy; the model file is
meta.json's model_path under the models' parent folder), in the same run:
  * poprt-convert --export_popef at meta.json's input shapes: wall time and peak memory, and the
    PopEF's size against its weights';
  * popef-run on the stored inputs with --warmup/--iterations, for POPRT_SIM_THREADS 1 and 2:
    median and p90 host latency and peak memory (from its --json summary and /usr/bin/time);
  * ONNX Runtime through ../shared/ort/ort_run.js with the same dims (its inputs come from the same
    seeded generator as the stored ones), intra-op threads 1 and 2: median and p90 latency.
Writes a table to stdout and --json FILE with every figure and the ratio popef-run / ORT per model
and thread count. Machines are shared and noisy: quote ratios from one run, not absolute times.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd, env=None, timeout=1800):
    """Runs cmd under /usr/bin/time; returns (completed process, wall seconds, peak MiB)."""
    p = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + cmd, capture_output=True, text=True, env=env,
                       timeout=timeout)
    m = re.search(r"TIME ([0-9.]+) ([0-9]+)\s*$", p.stderr)
    wall, peak = (float(m.group(1)), int(m.group(2)) / 1024.0) if m else (float("nan"), float("nan"))
    return p, wall, peak


def fail(what, p):
    tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
    return {"error": "%s failed (exit %d): %s" % (what, p.returncode, tail[0])}


def popefSizes(args, popef):
    """The PopEF's bytes and its weights' (tensor data blobs plus the weights host programs carry,
    as popef-dump counts them): how much of the file is the program rather than the model."""
    p = subprocess.run([os.path.join(args.bin_dir, "popef-dump"), popef, "--json"], capture_output=True, text=True)
    size = os.path.getsize(popef)
    if p.returncode != 0:
        return {"bytes": size}
    dump = json.loads(p.stdout)
    weights = sum(b["bytes"] for b in dump["blobs"] if b["type"] == "tensor data")
    weights += dump.get("executable", {}).get("host_program_weight_bytes", 0)
    return {"bytes": size, "weight_bytes": weights, "ratio": size / weights if weights else float("nan")}


def bench_model(name, folder, models_root, args, work):
    meta = json.load(open(os.path.join(folder, "meta.json")))
    model = os.path.join(os.path.dirname(models_root), meta["model_path"])
    if not os.path.exists(model):
        model = os.path.join(models_root, os.path.basename(meta["model_path"]))
    out = os.path.join(work, name)
    row = {"model": name}
    cmd = [os.path.join(args.bin_dir, "poprt-convert"), "--input_model", model, "--export_popef", "--output_dir", out]
    for i in meta["inputs"]:
        cmd += ["--input_shape", "%s=%s" % (i["name"], ",".join(str(d) for d in i["dims"]))]
    p, wall, peak = timed(cmd)
    if p.returncode != 0:
        row.update(fail("poprt-convert", p))
        return row
    row["compile"] = {"seconds": wall, "peak_mib": peak}
    row["popef"] = popefSizes(args, os.path.join(out, "executable.popef"))
    inputs = []
    for i in meta["inputs"]:
        found = glob.glob(os.path.join(folder, "input_%d_*.npy" % i["index"]))
        if found:
            inputs += ["--input", "%s=%s" % (i["name"], found[0])]
    row["popef_run"] = {}
    for threads in args.threads:
        summary = os.path.join(out, "run_%d.json" % threads)
        env = dict(os.environ, POPRT_SIM_THREADS=str(threads))
        p, wall, peak = timed([os.path.join(args.bin_dir, "popef-run"), os.path.join(out, "executable.popef"),
                               "--warmup", str(args.warmup), "--iterations", str(args.iterations), "--json", summary]
                              + inputs, env=env)
        if p.returncode != 0:
            row["popef_run"][str(threads)] = fail("popef-run", p)
            continue
        s = json.load(open(summary))
        row["popef_run"][str(threads)] = {"median_ms": s["latency_ms"]["median"], "p90_ms": s["latency_ms"]["p90"],
                                          "load_ms": s["load_ms"], "peak_mib": peak,
                                          "ipu_estimate_us": s["ipu_estimate"]["latency_us"]}
    ort_cmd = ["node", os.path.join(args.ort_dir, "ort_run.js"), model, "--runs", str(args.iterations),
               "--warmup", str(args.warmup), "--threads", ",".join(str(t) for t in args.threads),
               "--seed", str(meta.get("seed", 1234)), "--default-dim", str(meta.get("default_dim", 1))]
    for k, v in meta.get("dims", {}).items():
        ort_cmd += ["--dim", "%s=%s" % (k, v)]
    for k, v in meta.get("values", {}).items():
        ort_cmd += ["--value", "%s=%s" % (k, v)]
    if "range" in meta:
        ort_cmd += ["--range", ",".join(str(x) for x in meta["range"])]
    p = subprocess.run(ort_cmd, capture_output=True, text=True, timeout=1800)
    row["ort"] = {}
    if p.returncode != 0:
        row["ort"] = fail("ort_run.js", p)
    for m in re.finditer(r"threads=(\d+)\s+median ([0-9.]+) ms\s+p90 ([0-9.]+) ms", p.stdout):
        row["ort"][m.group(1)] = {"median_ms": float(m.group(2)), "p90_ms": float(m.group(3))}
    row["ratio"] = {}
    for t in map(str, args.threads):
        ours, theirs = row["popef_run"].get(t, {}), row["ort"].get(t, {})
        if "median_ms" in ours and "median_ms" in theirs and theirs["median_ms"] > 0:
            row["ratio"][t] = ours["median_ms"] / theirs["median_ms"]
    return row


def print_table(rows, threads):
    """One line per model: compile, PopEF size against its weights, then per thread count popef-run's
    median, ORT's, their ratio and popef-run's peak memory; last, how much faster popef-run is with
    the most threads than with one (and ORT likewise)."""
    nan = float("nan")
    head = "%-24s %9s %9s %9s %6s" % ("model", "compile s", "peak MiB", "PopEF MB", "/wts")
    for t in threads:
        head += "  %10s %10s %7s %8s" % ("poprt ms/%d" % t, "ORT ms/%d" % t, "ratio", "peak MiB")
    if len(threads) > 1:
        head += "  %11s %9s" % ("poprt %d/%d" % (threads[0], threads[-1]), "ORT")
    print(head)
    for r in rows:
        if "error" in r:
            print("%-24s %s" % (r["model"], r["error"]))
            continue
        popef = r.get("popef", {})
        line = "%-24s %9.2f %9.0f %9.1f %5.2fx" % (r["model"], r["compile"]["seconds"], r["compile"]["peak_mib"],
                                                  popef.get("bytes", nan) / 1e6, popef.get("ratio", nan))
        for t in map(str, threads):
            run = r["popef_run"].get(t, {})
            theirs = r["ort"].get(t, {}).get("median_ms", nan)
            line += "  %10.2f %10.2f %6.1fx %8.0f" % (run.get("median_ms", nan), theirs, r["ratio"].get(t, nan),
                                                     run.get("peak_mib", nan))
        if len(threads) > 1:
            first, last = str(threads[0]), str(threads[-1])
            scale = lambda d: d.get(first, {}).get("median_ms", nan) / d.get(last, {}).get("median_ms", nan)
            line += "  %10.2fx %8.2fx" % (scale(r["popef_run"]), scale(r["ort"]))
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=os.path.join(os.path.dirname(REPO), "shared", "models"))
    ap.add_argument("--ort-dir", default=os.path.join(os.path.dirname(REPO), "shared", "ort"))
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bin"))
    ap.add_argument("--filter", help="only models whose name matches this regular expression")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts (default 1,2)")
    ap.add_argument("--json", default=os.path.join(REPO, "build", "bench.json"), help="write the figures here")
    args = ap.parse_args()
    args.threads = [int(t) for t in args.threads.split(",") if t]
    folders = sorted(d for d in glob.glob(os.path.join(args.models, "*")) if os.path.exists(os.path.join(d, "meta.json")))
    if args.filter:
        folders = [d for d in folders if re.search(args.filter, os.path.basename(d))]
    if not folders:
        sys.exit("bench: no model folders with meta.json in %s" % args.models)
    rows = []
    with tempfile.TemporaryDirectory(prefix="poprt-bench-") as work:
        for d in folders:
            name = os.path.basename(d)
            print("bench: %s" % name, file=sys.stderr, flush=True)
            rows.append(bench_model(name, d, args.models, args, work))
    print_table(rows, args.threads)
    with open(args.json, "w") as f:
        json.dump({"threads": args.threads, "iterations": args.iterations, "warmup": args.warmup, "models": rows}, f, indent=1)
        f.write("\n")
    print("figures written to %s" % args.json)


if __name__ == "__main__":
    main()
