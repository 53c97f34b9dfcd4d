#!/usr/bin/python3
"""Runs one libFuzzer target for a bounded time and prints one summary line.

    run_fuzzer.py --fuzzer build-asan/bin/fuzz_npy --work DIR --seconds 15 --corpus SEEDS [--corpus MORE]

DIR is emptied first; libFuzzer writes the inputs it finds interesting to DIR/corpus and any
crashing, leaking, slow or out-of-memory input to DIR/<kind>-<hash> (the finding). The
--corpus folders are only read (a missing one is skipped). Exits with the fuzzer's status: 0
when the run ended without a finding.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fuzzer", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seconds", type=int, required=True)
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--keep", action="store_true", help="keep DIR/corpus from an earlier run")
    ap.add_argument("extra", nargs="*", help="more libFuzzer flags")
    a = ap.parse_args()

    name = os.path.basename(a.fuzzer)
    corpus = os.path.join(a.work, "corpus")
    if not a.keep:
        shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(corpus, exist_ok=True)
    dirs = [d for d in a.corpus if os.path.isdir(d)]
    argv = [a.fuzzer, corpus] + dirs + [
        "-max_total_time=%d" % a.seconds,
        "-timeout=10",            # one input running 10 s is a hang: a finding
        "-rss_limit_mb=2048",     # and so is an allocation beyond 2 GiB (malloc_limit_mb follows it)
        "-print_final_stats=1",
        "-artifact_prefix=" + os.path.join(a.work, ""),
    ] + a.extra
    t0 = time.time()
    with open(os.path.join(a.work, "fuzzer.log"), "w") as log:
        p = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT)
    wall = time.time() - t0
    text = open(os.path.join(a.work, "fuzzer.log"), errors="replace").read()

    def stat(key):
        m = re.findall(r"stat::%s:\s*(\d+)" % key, text)
        return int(m[-1]) if m else None

    runs = stat("number_of_executed_units")
    # libFuzzer's own view of the corpus: seeds deduplicated by the coverage they add, plus finds.
    status = re.findall(r"cov: (\d+) ft: \d+ corp: (\d+)/(\w+)", text)
    cov, corp, corp_size = status[-1] if status else ("?", "?", "?")
    print("%s: %s, %.0f s, %s execs (%s/s), corpus %s inputs (%s), cov %s, peak rss %s MB" % (
        name, "ok" if p.returncode == 0 else "FINDING (exit %d)" % p.returncode, wall, runs,
        stat("average_exec_per_sec"), corp, corp_size, cov, stat("peak_rss_mb")))
    if p.returncode != 0:
        # The finding: libFuzzer's report (the lines from the sanitizer or the property check on).
        lines = text.splitlines()
        start = next((i for i, l in enumerate(lines) if re.search(r"ERROR|fuzz property|==\d+==|SUMMARY|Test unit", l)), 0)
        sys.stdout.write("\n".join(lines[start:start + 80]) + "\n")
        arts = [f for f in os.listdir(a.work) if re.match(r"(crash|leak|timeout|oom|slow-unit)-", f)]
        print("findings in %s: %s" % (a.work, ", ".join(arts) or "(none saved)"))
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
