#!/usr/bin/python3
"""Converts an ONNX model with poprt, runs it on the IPU simulator and compares the outputs with
stored reference outputs (ONNX Runtime's, in ../shared/models' layout: NAME/input_<i>_<name>.npy,
NAME/output_<i>_<name>.npy).

    PYTHONPATH=build/python examples/python/convert_and_run.py ../shared/models/yunet_face [--precision fp16]
"""
import argparse
import glob
import os

import numpy as np

import poprt


def arrays(folder, kind):
    return {os.path.basename(f)[:-4].split("_", 2)[2]: np.load(f)
            for f in sorted(glob.glob(os.path.join(folder, f"{kind}_*.npy")))}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model_dir", help="a folder NAME/ beside NAME.onnx")
    p.add_argument("--precision", default="fp32")
    a = p.parse_args()
    folder = a.model_dir.rstrip("/")
    inputs, expected = arrays(folder, "input"), arrays(folder, "output")
    popef = poprt.compiler.Compiler.compile(folder + ".onnx", precision=a.precision,
                                            input_shape={k: list(v.shape) for k, v in inputs.items()})
    runner = poprt.runtime.ModelRunner(popef)
    outputs = runner.execute(inputs)
    for name, want in expected.items():
        got = outputs[name]
        err = float(np.abs(got.astype(np.float64) - want).max()) if want.size else 0.0
        print(f"{name:24s} max abs error {err:.3g}")
    print(f"estimated IPU latency {runner.estimate()['seconds'] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
