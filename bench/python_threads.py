#!/usr/bin/python3
"""Throughput of poprt.runtime.ModelRunner from 1 and 4 Python threads on a PopEF compiled with
replication_factor 2: shows the GIL is released while the simulator runs (README "Python").

    PYTHONPATH=build/python bench/python_threads.py [--model ../shared/models/resnet20_cifar] [--seconds 5]
"""
import argparse
import glob
import threading
import time

import numpy as np

import poprt


def run(runner, inputs, threads, seconds):
    done = [0] * threads
    stop = time.perf_counter() + seconds

    def worker(i):
        while time.perf_counter() < stop:
            runner.execute(inputs)
            done[i] += 1

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(done) / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="../shared/models/resnet20_cifar")
    p.add_argument("--seconds", type=float, default=5)
    a = p.parse_args()
    inputs = {os_name.split("/")[-1][:-4].split("_", 2)[2]: np.load(os_name)
              for os_name in sorted(glob.glob(a.model + "/input_*.npy"))}
    popef = poprt.compiler.Compiler.compile(a.model + ".onnx", replication_factor=2,
                                            input_shape={k: list(v.shape) for k, v in inputs.items()})
    runner = poprt.runtime.ModelRunner(popef)
    runner.execute(inputs)  # warm-up
    one = run(runner, inputs, 1, a.seconds)
    four = run(runner, inputs, 4, a.seconds)
    print(f"| threads | requests/s | latency (ms) |\n|---|---|---|\n| 1 | {one:.1f} | {1e3 / one:.1f} |\n"
          f"| 4 | {four:.1f} | {4e3 / four:.1f} |\nspeed-up 4 threads / 1 thread: {four / one:.2f}x")


if __name__ == "__main__":
    main()
