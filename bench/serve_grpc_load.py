#!/usr/bin/python3
"""Load run of popef-serve over gRPC and HTTP: N concurrent clients (default 32) for S seconds each
(default 10) against the mlp compiled for batches of 4, served from a model repository with dynamic
batching; every reply is checked against popef-run's output for its rows, and halfway through each
run a new version of the model is loaded (the old one finishes its requests). Prints requests/s,
p50 and p99 latency and the error count per protocol.

    /usr/bin/python3 bench/serve_grpc_load.py [--bin-dir build/bin] [--clients 32] [--seconds 10]

The clients are Python threads (grpcio, http.client): on a small machine they, not the server,
may bound the rates; compare protocols within one run.
"""
import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import e2e_util  # noqa: E402
from test_serve import Server, compile_model, popef_run  # noqa: E402
from test_serve_grpc import generate_client  # noqa: E402

import grpc  # noqa: E402


def percentile(values, p):
    return float(np.percentile(values, p)) * 1000 if values else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bin"))
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    e2e_util.BIN_DIR = os.path.abspath(a.bin_dir)
    work = tempfile.mkdtemp(prefix="poprt-grpc-load-")
    try:
        popef = compile_model(os.path.join(REPO, "models", "mlp.onnx"), os.path.join(work, "mlp"), ["--batch_size", "4"])
        repo = os.path.join(work, "repo")
        os.makedirs(os.path.join(repo, "mlp", "1"))
        shutil.copy(popef, os.path.join(repo, "mlp", "1", "model.popef"))
        rng = np.random.default_rng(3)
        x = rng.uniform(-1, 1, (4, 64)).astype(np.float32)
        y = popef_run(popef, {"x": x}, os.path.join(work, "ref"))["y"]
        pb, rpc = generate_client(work)
        server = Server(["--model_repository", repo, "--model_control_mode", "explicit", "--load_model", "mlp",
                         "--max_queue_delay_us", "500", "--http_threads", str(a.clients + 8)])
        version = [1]

        def reload_halfway():
            time.sleep(a.seconds / 2)
            version[0] += 1
            os.makedirs(os.path.join(repo, "mlp", str(version[0])))
            shutil.copy(popef, os.path.join(repo, "mlp", str(version[0]), "model.popef"))
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            conn.request("POST", "/v2/repository/models/mlp/load")
            status = conn.getresponse().status
            assert status == 200, "reload failed: %d" % status

        def run(protocol):
            latencies, errors, versions = [], [], set()
            stop = time.time() + a.seconds
            lock = threading.Lock()

            def client(i):
                rows = 1 + i % 4
                mine, bad, seen = [], [], set()
                if protocol == "grpc":
                    channel = grpc.insecure_channel("127.0.0.1:%d" % server.grpc_port)
                    stub = rpc.GRPCInferenceServiceStub(channel)
                    q = pb.ModelInferRequest(model_name="mlp")
                    q.inputs.add(name="x", datatype="FP32", shape=[rows, 64])
                    q.raw_input_contents.append(x[:rows].tobytes())
                else:
                    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
                    body = json.dumps({"inputs": [{"name": "x", "shape": [rows, 64], "datatype": "FP32",
                                                   "data": x[:rows].ravel().tolist()}]})
                while time.time() < stop:
                    t0 = time.perf_counter()
                    try:
                        if protocol == "grpc":
                            r = stub.ModelInfer(q)
                            got = np.frombuffer(r.raw_output_contents[0], np.float32).reshape(rows, 10)
                            seen.add(r.model_version)
                        else:
                            conn.request("POST", "/v2/models/mlp/infer", body=body)
                            resp = conn.getresponse()
                            reply = json.loads(resp.read())
                            if resp.status != 200:
                                raise RuntimeError(reply)
                            got = np.array(reply["outputs"][0]["data"], np.float32).reshape(rows, 10)
                            seen.add(reply["model_version"])
                        mine.append(time.perf_counter() - t0)
                        if not np.allclose(got, y[:rows], rtol=1e-5, atol=1e-6):
                            bad.append("wrong output")
                    except Exception as e:  # counted, and the first few printed
                        bad.append(repr(e)[:200])
                with lock:
                    latencies.extend(mine)
                    errors.extend(bad)
                    versions.update(seen)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
            reloader = threading.Thread(target=reload_halfway)
            t0 = time.time()
            for t in threads + [reloader]:
                t.start()
            for t in threads + [reloader]:
                t.join()
            wall = time.time() - t0
            return len(latencies) / wall, percentile(latencies, 50), percentile(latencies, 99), errors, sorted(versions)

        print("popef-serve, mlp (batches of 4, 1-4 rows a request), %d clients x %.0f s, a reload halfway"
              % (a.clients, a.seconds))
        print("%-6s %12s %10s %10s %8s  %s" % ("", "requests/s", "p50 ms", "p99 ms", "errors", "versions answering"))
        failed = False
        for protocol in ("grpc", "http"):
            rate, p50, p99, errors, versions = run(protocol)
            print("%-6s %12.0f %10.2f %10.2f %8d  %s" % (protocol, rate, p50, p99, len(errors), ",".join(versions)))
            for e in errors[:3]:
                print("    " + e)
            failed = failed or bool(errors)
        code = server.stop()
        if code != 0 or failed:
            sys.exit(1)
    finally:
        shutil.rmtree(work, True)


if __name__ == "__main__":
    main()
