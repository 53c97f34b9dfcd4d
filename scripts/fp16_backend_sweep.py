#!/usr/bin/python3
"""Does every float16 graph float_to_half makes run? Takes each ONNX backend test model
(Debian's libonnx-testdata) through `poprt-convert --precision fp16 --precision_compare`, with the
test's own inputs as the calibration and comparison inputs, and reports the models that fail to
convert or evaluate in fp16 (when their fp32 conversion and evaluation work) and those whose fp16
outputs gain NaN/Inf. Accuracy itself is scripts/fp16_accuracy.py's job.

    /usr/bin/python3 scripts/fp16_backend_sweep.py [--bin-dir build/bin] [--suites node,simple,...]
"""

import argparse
import collections
import glob
import os
import subprocess
import sys
import tempfile

import onnx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/usr/share/libonnx-testdata/data"


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace").strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bin"))
    ap.add_argument("--suites", default="node,simple,pytorch-converted,pytorch-operator")
    a = ap.parse_args()
    convert = os.path.join(a.bin_dir, "poprt-convert")
    counts, problems = collections.Counter(), []
    with tempfile.TemporaryDirectory(prefix="poprt-fp16-sweep-") as work:
        for suite in a.suites.split(","):
            for d in sorted(glob.glob(os.path.join(DATA, suite, "*", ""))):
                model_path = os.path.join(d, "model.onnx")
                sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
                if not os.path.exists(model_path) or not sets:
                    continue
                model = onnx.load(model_path)
                inits = {i.name for i in model.graph.initializer}
                names = [i.name for i in model.graph.input if i.name not in inits]
                args = [convert, "--input_model", model_path, "--precision", "fp16", "--precision_compare",
                        "--output_dir", os.path.join(work, "out")]
                files = [os.path.join(sets[0], "input_%d.pb" % i) for i in range(len(names))]
                if not all(os.path.exists(f) for f in files):
                    continue
                for n, f in zip(names, files):
                    args += ["--precision_compare_input", "%s=%s" % (n, f), "--fp16_calibration_input", "%s=%s" % (n, f)]
                name = "%s/%s" % (suite, os.path.basename(os.path.dirname(d)))
                code, out, err = run(args)
                if code != 0:
                    # Models whose fp32 conversion or evaluation fails are not float16's problem.
                    c32, _, _ = run([convert, "--input_model", model_path, "--output_dir", os.path.join(work, "out32")])
                    failing_fp32 = c32 != 0 or "the float32 model fails" in err
                    counts["fails in fp32 too" if failing_fp32 else "FAIL"] += 1
                    if not failing_fp32:
                        problems.append((name, err))
                elif "new NaN/Inf" in out:
                    counts["NEW NaN/Inf"] += 1
                    problems.append((name, "float16 outputs gain NaN/Inf"))
                else:
                    counts["ok"] += 1
    print(", ".join("%s: %d" % kv for kv in sorted(counts.items())))
    for name, why in problems:
        print("%s: %s" % (name, why))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
