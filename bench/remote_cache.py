#!/usr/bin/python3
"""What the remote compile cache saves a CI runner: a model's compile (runner A, uploading to an
nginx WebDAV server on 127.0.0.1) against the same conversion on runner B with an empty local
cache (a remote hit: the entry and its blobs fetched and checked), and on B again (a local hit).
Each timed as the whole poprt-convert process, best of --repeat.

    /usr/bin/python3 bench/remote_cache.py [--model ../shared/models/light_resnet50.onnx] [--bin-dir build/bin]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from webdav_server import Nginx  # noqa: E402


def convert(bin_dir, model, out, cache, url, upload, summary):
    argv = [os.path.join(bin_dir, "poprt-convert"), "--input_model", model, "--export_popef", "--output_dir", out,
            "--cache_dir", cache, "--remote_cache", url, "--summary_json", summary]
    if upload:
        argv.append("--remote_cache_upload")
    env = dict(os.environ)
    env.pop("POPRT_CACHE_DIR", None)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - t0
    with open(summary) as f:
        return seconds, json.load(f)["cache"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(REPO, "..", "shared", "models", "light_resnet50.onnx"))
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bin"))
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rows = {"compile + upload (runner A)": [], "remote hit (runner B, empty local cache)": [],
            "local hit (runner B again)": []}
    popef_bytes = 0
    for i in range(a.repeat):
        with tempfile.TemporaryDirectory(prefix="poprt-bench-") as tmp:
            server = Nginx(os.path.join(tmp, "nginx")).start()
            try:
                url = server.url()
                s, c = convert(a.bin_dir, a.model, os.path.join(tmp, "a"), os.path.join(tmp, "a-cache"), url, True,
                               os.path.join(tmp, "a.json"))
                assert not c["hit"] and c["upload"] == "stored", c
                rows["compile + upload (runner A)"].append(s)
                s, c = convert(a.bin_dir, a.model, os.path.join(tmp, "b"), os.path.join(tmp, "b-cache"), url, False,
                               os.path.join(tmp, "b.json"))
                assert c["hit"] and c["tier"] == "remote", c
                rows["remote hit (runner B, empty local cache)"].append(s)
                shutil.rmtree(os.path.join(tmp, "b"))
                s, c = convert(a.bin_dir, a.model, os.path.join(tmp, "b"), os.path.join(tmp, "b-cache"), url, False,
                               os.path.join(tmp, "b.json"))
                assert c["hit"] and c["tier"] == "local", c
                rows["local hit (runner B again)"].append(s)
                popef_bytes = os.path.getsize(os.path.join(tmp, "b", "executable.popef"))
            finally:
                server.stop()
    compile_s = min(rows["compile + upload (runner A)"])
    print("%s: PopEF %.1f MB, best of %d" % (os.path.basename(a.model), popef_bytes / 1e6, a.repeat))
    print("%-42s %10s %10s" % ("", "seconds", "speed-up"))
    for name, times in rows.items():
        print("%-42s %10.3f %9.1fx" % (name, min(times), compile_s / min(times)))


if __name__ == "__main__":
    main()
