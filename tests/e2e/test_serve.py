#!/usr/bin/python3
"""End to end: popef-serve on a free loopback port, spoken to over the KServe v2 REST protocol by
a small client (urllib / http.client) and by curl. The answers are checked against popef-run's
outputs for the same rows (and the mlp's against numpy too); bad requests against their 400/404
replies; 32 concurrent clients against the same references, with the batching seen in /metrics;
SIGTERM against a request still in flight. Every wait is bounded; every server is stopped.

    /usr/bin/python3 tests/e2e/test_serve.py --bin-dir build/bin
"""

import http.client
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

REPO = e2e_util.REPO_DIR
MLP = os.path.join(REPO, "models", "mlp.onnx")
SHARED_MODELS = os.path.normpath(os.environ.get("POPRT_SHARED_DIR", os.path.join(REPO, "..", "shared"))) + "/models"
BATCH = 4            # the mlp is compiled for batches of 4 rows
TIMEOUT = 60         # seconds any one request, start-up or shutdown may take

# KServe datatype -> numpy dtype.
DATATYPES = {"BOOL": np.bool_, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
             "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
             "FP16": np.float16, "FP32": np.float32, "FP64": np.float64}
TENSOR_TYPES = {"BOOL": TensorProto.BOOL, "INT8": TensorProto.INT8, "INT16": TensorProto.INT16,
                "INT32": TensorProto.INT32, "INT64": TensorProto.INT64, "UINT8": TensorProto.UINT8,
                "UINT16": TensorProto.UINT16, "UINT32": TensorProto.UINT32, "UINT64": TensorProto.UINT64,
                "FP16": TensorProto.FLOAT16, "FP32": TensorProto.FLOAT, "FP64": TensorProto.DOUBLE}
HEADER_LENGTH = "Inference-Header-Content-Length"


def mlp_numpy(x):
    """The mlp's forward pass in float64, from the weights in mlp.onnx."""
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(MLP).graph.initializer}
    h = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0)
    return ((h @ w["w2"].T + w["b2"]) * w["scale"]).astype(np.float32)


# ---------------------------------------------------------------------------------------- client

class Client:
    """A small KServe v2 REST client over http.client: JSON tensors or the binary extension."""

    def __init__(self, port):
        self.port = port

    def request(self, method, path, body=None, headers=None):
        """(status, headers, body bytes); one connection per call."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def get_json(self, path):
        status, _, body = self.request("GET", path)
        return status, (json.loads(body) if body else None)

    def infer(self, model, inputs, binary_inputs=False, binary_outputs=False, outputs=None, nested=False,
              request_id=None):
        """inputs: {name: array}. Returns (status, {name: array} or the error JSON)."""
        header = {"inputs": []}
        tail = b""
        for name, a in inputs.items():
            dt = next(k for k, v in DATATYPES.items() if np.dtype(v) == a.dtype)
            entry = {"name": name, "shape": list(a.shape), "datatype": dt}
            if binary_inputs:
                raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
                entry["parameters"] = {"binary_data_size": len(raw)}
                tail += raw
            else:
                entry["data"] = a.tolist() if nested else a.ravel().tolist()
            header["inputs"].append(entry)
        if binary_outputs:
            header["parameters"] = {"binary_data_output": True}
        if outputs is not None:
            header["outputs"] = outputs
        if request_id is not None:
            header["id"] = request_id
        body = json.dumps(header).encode()
        headers = {"Content-Type": "application/json"}
        if binary_inputs:
            headers = {"Content-Type": "application/octet-stream", HEADER_LENGTH: str(len(body))}
            body += tail
        status, rh, raw = self.request("POST", "/v2/models/%s/infer" % model, body, headers)
        return status, decode_reply(rh, raw) if status == 200 else json.loads(raw)


def decode_reply(headers, raw):
    """{output name: array} from an infer reply (JSON data or binary after the JSON header);
    also {"__json__": the JSON header}."""
    n = int(headers.get(HEADER_LENGTH.lower(), len(raw)))
    reply = json.loads(raw[:n])
    offset = n
    out = {"__json__": reply}
    for o in reply["outputs"]:
        dtype = np.dtype(DATATYPES[o["datatype"]]).newbyteorder("<")
        size = o.get("parameters", {}).get("binary_data_size")
        if size is not None:
            out[o["name"]] = np.frombuffer(raw[offset:offset + size], dtype=dtype).reshape(o["shape"])
            offset += size
        else:
            out[o["name"]] = np.array(o["data"], dtype=dtype).reshape(o["shape"])
    assert offset == len(raw), "reply has %d bytes after its outputs" % (len(raw) - offset)
    return out


def metrics(client):
    """{sample name with labels: value} from GET /metrics."""
    status, _, body = client.request("GET", "/metrics")
    assert status == 200
    values = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    return values


# ---------------------------------------------------------------------------------------- server

class Server:
    """popef-serve on free loopback ports (--port 0 --grpc_port 0; the ports are read from its
    first lines)."""

    def __init__(self, args):
        self.proc = subprocess.Popen([e2e_util.tool_path("popef-serve"), "--port", "0", "--grpc_port", "0"] + args,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = queue.Queue()
        self.stdout = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        deadline = time.time() + TIMEOUT
        self.port = self.grpc_port = None
        while self.port is None or self.grpc_port is None:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                self.kill()
                raise AssertionError("popef-serve did not start listening: %s" % self.stdout)
            if line is None:
                self.kill()
                raise AssertionError("popef-serve exited: %s" % "".join(self.stdout))
            m = re.search(r"listening on (http|grpc)://127\.0\.0\.1:(\d+)", line)
            if m and m.group(1) == "http":
                self.port = int(m.group(2))
            elif m:
                self.grpc_port = int(m.group(2))
        self.client = Client(self.port)

    def _read(self):
        for line in self.proc.stdout:
            self.stdout.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def stop(self):
        """SIGTERM, then the exit code (None if it did not exit in time: then it is killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        finally:
            self.reader.join(timeout=TIMEOUT)
            self.proc.stdout.close()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)


def compile_model(onnx_path, out_dir, extra):
    r = e2e_util.run_tool("poprt-convert", ["--input_model", onnx_path, "--export_popef", "--output_dir", out_dir] + extra)
    if r.returncode != 0:
        raise AssertionError(r.describe())
    return os.path.join(out_dir, "executable.popef")


def popef_run(popef, inputs, out_dir):
    """popef-run's outputs for {name: array}: {name: array}."""
    os.makedirs(out_dir, exist_ok=True)
    args = [popef, "--output_dir", out_dir]
    for name, a in inputs.items():
        p = os.path.join(out_dir, "in_%s.npy" % name)
        np.save(p, a)
        args += ["--input", "%s=%s" % (name, p)]
    r = e2e_util.run_tool("popef-run", args)
    if r.returncode != 0:
        raise AssertionError(r.describe())
    out = {}
    for f in sorted(os.listdir(out_dir)):
        m = re.match(r"output_\d+_(.+)\.npy$", f)
        if m:
            out[m.group(1)] = np.load(os.path.join(out_dir, f))
    return out


def dtypes_model(path):
    """One [2,3] input per KServe datatype and an output computed from each: x+x (wrapping for
    integers), Not for BOOL."""
    nodes, inputs, outputs = [], [], []
    for dt, npt in DATATYPES.items():
        elem = TENSOR_TYPES[dt]
        inputs.append(helper.make_tensor_value_info("in_" + dt, elem, [2, 3]))
        outputs.append(helper.make_tensor_value_info("out_" + dt, elem, [2, 3]))
        if dt == "BOOL":
            nodes.append(helper.make_node("Not", ["in_" + dt], ["out_" + dt]))
        else:
            nodes.append(helper.make_node("Add", ["in_" + dt, "in_" + dt], ["out_" + dt]))
    model = helper.make_model(helper.make_graph(nodes, "dtypes", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def fixed_model(path):
    """x: float32[2, 3] -> total = ReduceSum(x) (a scalar: no batch axis), twice = x + x."""
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0), helper.make_node("Add", ["x", "x"], ["twice"])],
        "fixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("twice", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def dtypes_inputs(rng, rows):
    x = {}
    for dt, npt in DATATYPES.items():
        if dt == "BOOL":
            x["in_" + dt] = rng.integers(0, 2, (rows, 3)).astype(np.bool_)
        elif dt.startswith("FP"):
            x["in_" + dt] = (rng.integers(-64, 64, (rows, 3)) / 8).astype(npt)  # exact in FP16
        else:
            info = np.iinfo(npt)
            x["in_" + dt] = rng.integers(info.min, info.max, (rows, 3), dtype=npt, endpoint=True)
    return x


def dtypes_expected(x):
    return {"out_" + k[3:]: (~v if v.dtype == np.bool_ else v + v) for k, v in x.items()}


# ----------------------------------------------------------------------------------------- tests

class ServeTest(unittest.TestCase):
    """One server for most tests: the mlp (batches of 4, a long enough queue delay for batching
    to be seen), the dtypes model and, when ../shared is there, mnist_cntk."""

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="poprt-e2e-serve-")
        # --batch_size records batch_size and batch_axis in the PopEF, which popef-serve reads.
        cls.mlp = compile_model(MLP, os.path.join(cls.work, "mlp"), ["--batch_size", str(BATCH)])
        dtypes_onnx = os.path.join(cls.work, "dtypes.onnx")
        dtypes_model(dtypes_onnx)
        cls.dtypes = compile_model(dtypes_onnx, os.path.join(cls.work, "dtypes"), [])
        fixed_onnx = os.path.join(cls.work, "fixed.onnx")
        fixed_model(fixed_onnx)
        cls.fixed = compile_model(fixed_onnx, os.path.join(cls.work, "fixed"), [])
        rng = np.random.default_rng(7)
        # 16 rows of mlp inputs and popef-run's outputs for them, a compiled batch at a time.
        cls.x = rng.uniform(-1, 1, (4 * BATCH, 64)).astype(np.float32)
        cls.y = np.concatenate([popef_run(cls.mlp, {"x": cls.x[i:i + BATCH]}, os.path.join(cls.work, "ref%d" % i))["y"]
                                for i in range(0, len(cls.x), BATCH)])
        args = ["--model", "mlp=" + cls.mlp, "--model", "dtypes=" + cls.dtypes, "--model", "fixed=" + cls.fixed,
                "--max_queue_delay_us", "20000"]
        cls.mnist_dir = os.path.join(SHARED_MODELS, "mnist_cntk")
        cls.mnist = None
        if os.path.isdir(cls.mnist_dir):
            cls.mnist = compile_model(SHARED_MODELS + "/mnist_cntk.onnx", os.path.join(cls.work, "mnist"), [])
            args += ["--model", "mnist=" + cls.mnist]
        cls.server = Server(args)
        cls.client = cls.server.client

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        shutil.rmtree(cls.work, True)
        assert code == 0, "popef-serve exited %s:\n%s" % (code, "".join(cls.server.stdout))

    def assertRows(self, got, first, rows):
        """`got` holds popef-run's outputs for rows first..first+rows of self.x."""
        self.assertEqual(got.shape, (rows, 10))
        np.testing.assert_allclose(got, self.y[first:first + rows], rtol=1e-6, atol=1e-7)

    # -------------------------------------------------------------- health and metadata

    def test_health_and_metadata(self):
        c = self.client
        status, server = c.get_json("/v2")
        self.assertEqual(status, 200)
        self.assertEqual(server["name"], "popef-serve")
        self.assertIn("binary_tensor_data", server["extensions"])
        for path in ("/v2/health/live", "/v2/health/ready", "/v2/models/mlp/ready", "/v2/models/mlp/versions/1/ready"):
            self.assertEqual(c.request("GET", path)[0], 200, path)
        for path in ("/v2/models/mlp", "/v2/models/mlp/versions/1"):
            status, meta = c.get_json(path)
            self.assertEqual(status, 200)
            self.assertEqual(meta["name"], "mlp")
            self.assertEqual(meta["versions"], ["1"])
            self.assertEqual(meta["inputs"], [{"name": "x", "datatype": "FP32", "shape": [-1, 64]}])
            self.assertEqual(meta["outputs"], [{"name": "y", "datatype": "FP32", "shape": [-1, 10]}])
        status, config = c.get_json("/v2/models/mlp/config")
        self.assertEqual((status, config["max_batch_size"], config["batch_axis"]), (200, BATCH, 0))
        self.assertEqual(config["dynamic_batching"], {"enabled": True, "max_queue_delay_microseconds": 20000})
        self.assertEqual((config["input"], config["output"]),
                         ([{"name": "x", "data_type": "TYPE_FP32", "dims": [64]}],
                          [{"name": "y", "data_type": "TYPE_FP32", "dims": [10]}]))
        for path in ("/v2/models/nope", "/v2/models/nope/ready", "/v2/models/mlp/versions/2", "/v2/nothing"):
            status, body = c.get_json(path)
            self.assertEqual(status, 404, path)
            self.assertIsInstance(body["error"], str)
        self.assertIn("'nope'", c.get_json("/v2/models/nope")[1]["error"])

    # -------------------------------------------------------------- inference, small client

    def test_json_inference_flat_and_nested(self):
        for rows, first, nested in ((1, 3, False), (2, 5, True), (3, 0, False), (4, 8, True)):
            status, out = self.client.infer("mlp", {"x": self.x[first:first + rows]}, nested=nested, request_id="r%d" % rows)
            self.assertEqual(status, 200, out)
            self.assertRows(out["y"], first, rows)
            reply = out["__json__"]
            self.assertEqual((reply["model_name"], reply["model_version"], reply["id"]), ("mlp", "1", "r%d" % rows))
            self.assertEqual(reply["outputs"][0]["datatype"], "FP32")
        # And numpy, an oracle independent of poprt, within float32 rounding.
        np.testing.assert_allclose(self.y, mlp_numpy(self.x), rtol=1e-4, atol=1e-4)

    def test_binary_inference(self):
        c = self.client
        status, out = c.infer("mlp", {"x": self.x[4:7]}, binary_inputs=True, binary_outputs=True)
        self.assertEqual(status, 200, out)
        self.assertRows(out["y"], 4, 3)
        self.assertEqual(out["__json__"]["outputs"][0]["parameters"], {"binary_data_size": 3 * 10 * 4})
        # JSON in, binary out for the output that asks for it.
        status, out = c.infer("mlp", {"x": self.x[9:10]}, outputs=[{"name": "y", "parameters": {"binary_data": True}}])
        self.assertEqual(status, 200, out)
        self.assertIn("binary_data_size", out["__json__"]["outputs"][0]["parameters"])
        self.assertRows(out["y"], 9, 1)
        # Binary in, JSON out.
        status, out = c.infer("mlp", {"x": self.x[12:16]}, binary_inputs=True)
        self.assertEqual(status, 200, out)
        self.assertIn("data", out["__json__"]["outputs"][0])
        self.assertRows(out["y"], 12, 4)

    def test_every_datatype(self):
        rng = np.random.default_rng(11)
        for binary in (False, True):
            x = dtypes_inputs(rng, 1)  # one row of the two the model is compiled for: padded
            status, out = self.client.infer("dtypes", x, binary_inputs=binary, binary_outputs=binary)
            self.assertEqual(status, 200, out)
            for name, want in dtypes_expected(x).items():
                self.assertEqual(out[name].dtype, want.dtype, name)
                np.testing.assert_array_equal(out[name], want, name)
        # popef-run agrees on a whole batch.
        x = dtypes_inputs(rng, 2)
        ref = popef_run(self.dtypes, x, os.path.join(self.work, "dtypes_ref_%d" % os.getpid()))
        status, out = self.client.infer("dtypes", x, binary_inputs=True, binary_outputs=True)
        self.assertEqual(status, 200, out)
        for name in ref:
            np.testing.assert_array_equal(out[name], ref[name], name)

    def test_a_model_that_does_not_batch_takes_its_compiled_shapes(self):
        status, meta = self.client.get_json("/v2/models/fixed")
        self.assertEqual(meta["inputs"][0]["shape"], [2, 3])  # no -1: the scalar output has no batch axis
        self.assertEqual(self.client.get_json("/v2/models/fixed/config")[1]["max_batch_size"], 0)
        x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
        for binary in (False, True):
            status, out = self.client.infer("fixed", {"x": x}, binary_inputs=binary, binary_outputs=binary)
            self.assertEqual(status, 200, out)
            self.assertEqual(out["total"].shape, ())
            self.assertEqual(float(out["total"]), float(x.sum()))
            np.testing.assert_array_equal(out["twice"], x + x)
        status, error = self.client.infer("fixed", {"x": x[:1]})
        self.assertEqual(status, 400)
        self.assertIn("shape [1,3], the model takes [2,3]", error["error"])

    def test_shared_model_against_onnx_runtime(self):
        if self.mnist is None:
            self.skipTest("no ../shared/models/mnist_cntk")
        x = np.load(os.path.join(self.mnist_dir, "input_0_Input3.npy"))
        ort = np.load(os.path.join(self.mnist_dir, "output_0_Plus214_Output_0.npy"))
        ref = popef_run(self.mnist, {"Input3": x}, os.path.join(self.work, "mnist_ref"))["Plus214_Output_0"]
        for binary in (False, True):
            status, out = self.client.infer("mnist", {"Input3": x}, binary_inputs=binary, binary_outputs=binary)
            self.assertEqual(status, 200, out)
            np.testing.assert_allclose(out["Plus214_Output_0"], ref, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(out["Plus214_Output_0"], ort, rtol=1e-3, atol=1e-4)

    # -------------------------------------------------------------- curl

    def curl(self, args, body_file):
        out = os.path.join(self.work, "curl_%d.out" % threading.get_ident())
        hdr = out + ".headers"
        r = e2e_util.run_cmd(["curl", "-s", "-S", "--max-time", str(TIMEOUT), "-o", out, "-D", hdr, "-w", "%{http_code}",
                              "--data-binary", "@" + body_file] + args, timeout=TIMEOUT + 10)
        self.assertEqual(r.returncode, 0, r.describe())
        with open(out, "rb") as f:
            body = f.read()
        with open(hdr) as f:
            headers = {k.strip().lower(): v.strip() for k, v in
                       (line.split(":", 1) for line in f.read().splitlines() if ":" in line)}
        return int(r.stdout), headers, body

    def test_curl_json_and_binary(self):
        if shutil.which("curl") is None:
            self.skipTest("no curl")
        url = "http://127.0.0.1:%d/v2/models/mlp/infer" % self.server.port
        req = os.path.join(self.work, "curl_req.json")
        with open(req, "w") as f:
            json.dump({"inputs": [{"name": "x", "shape": [2, 64], "datatype": "FP32", "data": self.x[1:3].tolist()}]}, f)
        status, headers, body = self.curl([url, "-H", "Content-Type: application/json"], req)
        self.assertEqual(status, 200, body)
        self.assertRows(decode_reply(headers, body)["y"], 1, 2)

        header = json.dumps({"inputs": [{"name": "x", "shape": [3, 64], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 3 * 64 * 4}}],
                             "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
        req_bin = os.path.join(self.work, "curl_req.bin")
        with open(req_bin, "wb") as f:
            f.write(header + self.x[10:13].astype("<f4").tobytes())
        status, headers, body = self.curl([url, "-H", "Content-Type: application/octet-stream",
                                           "-H", "%s: %d" % (HEADER_LENGTH, len(header))], req_bin)
        self.assertEqual(status, 200, body)
        self.assertEqual(int(headers[HEADER_LENGTH.lower()]), len(body) - 3 * 10 * 4)
        self.assertRows(decode_reply(headers, body)["y"], 10, 3)

        status, _, body = self.curl(["http://127.0.0.1:%d/v2/models/nope/infer" % self.server.port], req)
        self.assertEqual(status, 404)
        self.assertIn("nope", json.loads(body)["error"])

        # curl's default Content-Type (form-urlencoded, as `curl -d @request.json` sends it) with a
        # 1 MB body: read as the JSON it is, not refused as an oversized form.
        big = os.path.join(self.work, "curl_big.json")
        with open(big, "w") as f:
            json.dump({"id": "x" * 1_000_000, "inputs": [{"name": "x", "shape": [2, 64], "datatype": "FP32",
                                                         "data": self.x[1:3].tolist()}]}, f)
        status, headers, body = self.curl([url], big)
        self.assertEqual(status, 200, body[:300])
        self.assertRows(decode_reply(headers, body)["y"], 1, 2)
        # A number beyond a double is a bad request, not a server error.
        huge = os.path.join(self.work, "curl_huge.json")
        with open(huge, "w") as f:
            f.write('{"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32", "data": [1e999%s]}]}' % (", 0" * 63))
        status, _, body = self.curl([url], huge)
        self.assertEqual(status, 400, body)
        self.assertIn("number overflow", json.loads(body)["error"])

    # -------------------------------------------------------------- errors

    def test_bad_requests(self):
        c = self.client
        x1 = {"name": "x", "shape": [1, 64], "datatype": "FP32", "data": [0.5] * 64}

        def post(model, body, headers=None):
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            status, h, raw = c.request("POST", "/v2/models/%s/infer" % model, data, headers or {})
            self.assertEqual(h.get("content-type"), "application/json", raw)
            return status, json.loads(raw)["error"]

        cases = [
            ("nope", {"inputs": [x1]}, None, 404, "unknown model 'nope'"),
            ("mlp/versions/3", {"inputs": [x1]}, None, 404, "no version '3'"),
            ("mlp", {"inputs": [dict(x1, name="z")]}, None, 400, "unknown input 'z'"),
            ("mlp", {"inputs": [dict(x1, datatype="FP64")]}, None, 400, "datatype FP64, the model takes FP32"),
            ("mlp", {"inputs": [dict(x1, datatype="INT32")]}, None, 400, "the model takes FP32"),
            ("mlp", {"inputs": [dict(x1, shape=[1, 63])]}, None, 400, "shape [1,63]"),
            ("mlp", {"inputs": [dict(x1, shape=[64])]}, None, 400, "shape [64]"),
            ("mlp", {"inputs": [dict(x1, shape=[5, 64], data=[0.0] * 320)]}, None, 400, "5 rows"),
            ("mlp", {"inputs": [dict(x1, shape=[0, 64], data=[])]}, None, 400, "0 rows"),
            ("mlp", {"inputs": [dict(x1, data=[0.5] * 63)]}, None, 400, "63 elements"),
            ("mlp", {"inputs": [dict(x1, data=[0.5] * 65)]}, None, 400, "more than the 64"),
            ("mlp", {"inputs": [dict(x1, data=["a"] * 64)]}, None, 400, "expected a number"),
            ("mlp", {"inputs": [x1, x1]}, None, 400, "given twice"),
            ("mlp", {"inputs": []}, None, 400, "input 'x' is missing"),
            ("mlp", {"inputs": [x1], "outputs": [{"name": "w"}]}, None, 400, "unknown output 'w'"),
            ("mlp", b"{\"inputs\": [", None, 400, "not valid JSON"),
            ("mlp", {"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32",
                                 "parameters": {"binary_data_size": 256}}]}, None, 400, "without an " + HEADER_LENGTH),
            ("mlp", json.dumps({"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32",
                                            "parameters": {"binary_data_size": 255}}]}).encode() + bytes(255),
             "header", 400, "binary_data_size 255"),
            ("mlp", json.dumps({"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32",
                                            "parameters": {"binary_data_size": 256}}]}).encode() + bytes(100),
             "header", 400, "runs past the end"),
            ("mlp", json.dumps({"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32",
                                            "parameters": {"binary_data_size": 256}}]}).encode() + bytes(260),
             "header", 400, "4 bytes of binary data after"),
            ("mlp", {"inputs": [x1]}, {HEADER_LENGTH: "99999"}, 400, HEADER_LENGTH),
            ("dtypes", {"inputs": [{"name": "in_INT8", "shape": [1, 3], "datatype": "INT8", "data": [1, 2, 300]}]},
             None, 400, "300 is out of range"),
            ("dtypes", {"inputs": [{"name": "in_BOOL", "shape": [1, 3], "datatype": "BOOL", "data": [1, 0, 1]}]},
             None, 400, "expected true or false"),
        ]
        for model, body, headers, status, mention in cases:
            if headers == "header":
                headers = {HEADER_LENGTH: str(body.index(b"}]}") + 3)}
            with self.subTest(model=model, mention=mention):
                got_status, error = post(model, body, headers)
                self.assertEqual(got_status, status, error)
                self.assertIn(mention, error)
        # GET on the infer route is no route (404), with a JSON error too.
        status, body = c.get_json("/v2/models/mlp/infer")
        self.assertEqual(status, 404)
        self.assertIn("error", body)

    # -------------------------------------------------------------- concurrency and batching

    def test_32_concurrent_clients(self):
        before = metrics(self.client)
        clients, per_client = 32, 6
        results, errors = [], []
        lock = threading.Lock()

        def client_loop(seed):
            rng = random.Random(seed)
            try:
                for i in range(per_client):
                    rows = rng.randint(1, BATCH)
                    first = rng.randint(0, len(self.x) - rows)
                    binary = (seed + i) % 2 == 0
                    status, out = self.client.infer("mlp", {"x": self.x[first:first + rows]},
                                                    binary_inputs=binary, binary_outputs=binary)
                    with lock:
                        results.append((status, out, first, rows))
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(repr(e))

        start = time.time()
        threads = [threading.Thread(target=client_loop, args=(s,), daemon=True) for s in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(1, start + 2 * TIMEOUT - time.time()))
        self.assertFalse(any(t.is_alive() for t in threads), "clients still running after %d s" % (2 * TIMEOUT))
        self.assertEqual(errors, [])
        self.assertEqual(len(results), clients * per_client)
        for status, out, first, rows in results:
            self.assertEqual(status, 200, out)
            self.assertRows(out["y"], first, rows)

        after = metrics(self.client)
        key = '{model="mlp"}'

        def delta(name):
            return after[name + key] - before[name + key]

        requests = clients * per_client
        self.assertEqual(delta("poprt_inference_request_success_total"), requests)
        self.assertEqual(delta("poprt_inference_count_total"), sum(r[3] for r in results))
        self.assertEqual(delta("poprt_inference_request_duration_seconds_count"), requests)
        self.assertEqual(delta("poprt_inference_queue_duration_seconds_count"), requests)
        # Batching: the rows of several requests ran together.
        batches = delta("poprt_inference_exec_count_total")
        self.assertGreater(batches, 0)
        self.assertLess(batches, requests)
        self.assertEqual(delta("poprt_inference_compute_duration_seconds_count"), batches)
        self.assertGreater(after['poprt_http_responses_total{code="200"}'], requests)
        self.assertGreater(after["poprt_ipu_utilization_estimate" + key], 0)
        self.assertEqual(after["poprt_inference_pending_requests" + key], 0)


class ServeLifecycleTest(unittest.TestCase):
    """Servers of their own: batching off, SIGTERM with a request in flight, bad flags."""

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="poprt-e2e-serve-life-")
        cls.mlp = compile_model(MLP, os.path.join(cls.work, "mlp"), ["--input_shape", "x=%d,64" % BATCH])
        cls.x = np.random.default_rng(3).uniform(-1, 1, (BATCH, 64)).astype(np.float32)
        cls.y = popef_run(cls.mlp, {"x": cls.x}, os.path.join(cls.work, "ref"))["y"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, True)

    def test_batching_off_runs_each_request_alone(self):
        server = Server(["--model", "m=" + self.mlp, "--dynamic_batching=false"])
        try:
            results = []
            threads = [threading.Thread(target=lambda i=i: results.append(
                (i % BATCH, server.client.infer("m", {"x": self.x[i % BATCH:i % BATCH + 1]}))), daemon=True)
                for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=TIMEOUT)
            self.assertEqual(len(results), 8)
            for i, (status, out) in results:
                self.assertEqual(status, 200, out)
                np.testing.assert_allclose(out["y"], self.y[i:i + 1], rtol=1e-6, atol=1e-7)
            m = metrics(server.client)
            self.assertEqual(m['poprt_inference_exec_count_total{model="m"}'], 8)
            self.assertEqual(m['poprt_batch_fill_ratio{model="m"}'], 1 / BATCH)
        finally:
            self.assertEqual(server.stop(), 0, "".join(server.stdout))

    def test_sigterm_finishes_the_request_in_flight(self):
        # A 1-row request waits up to 3 s for others to fill its batch; SIGTERM comes meanwhile.
        server = Server(["--model", "m=" + self.mlp, "--max_queue_delay_us", "3000000"])
        reply = []
        t = threading.Thread(target=lambda: reply.append(server.client.infer("m", {"x": self.x[2:3]})), daemon=True)
        try:
            t.start()
            deadline = time.time() + TIMEOUT
            while metrics(server.client)['poprt_inference_pending_requests{model="m"}'] < 1:
                self.assertLess(time.time(), deadline, "the request never queued")
                time.sleep(0.02)
            server.proc.send_signal(signal.SIGTERM)
            t.join(timeout=TIMEOUT)
            self.assertFalse(t.is_alive(), "the request in flight got no reply")
            status, out = reply[0]
            self.assertEqual(status, 200, out)
            np.testing.assert_allclose(out["y"], self.y[2:3], rtol=1e-6, atol=1e-7)
        finally:
            code = server.stop()
        self.assertEqual(code, 0, "".join(server.stdout))
        self.assertTrue(any("SIGTERM" in line for line in server.stdout), server.stdout)
        with self.assertRaises(OSError):  # nothing listens any more
            Client(server.port).request("GET", "/v2/health/live")

    def test_bad_flags(self):
        bad = [(["--model", "m=" + os.path.join(self.work, "missing.popef")], 1, "missing.popef"),
               (["--model", "m"], 2, "--model"),  # a malformed value: a usage error
               (["--model", "a b=" + self.mlp], 1, "--model"),
               (["--model", "m=" + self.mlp, "--model", "m=" + self.mlp], 1, "given twice"),
               ([], 2, "--model"),
               (["--model", "m=" + self.mlp, "--port", "70000"], 2, "--port"),
               (["--model", "m=" + self.mlp, "--grpc_port", "-2"], 2, "--grpc_port")]
        running = Server(["--model", "m=" + self.mlp])  # a port in use fails: it is not shared
        try:
            bad.append((["--model", "m=" + self.mlp, "--port", str(running.port)], 1, "--port %d" % running.port))
            bad.append((["--model", "m=" + self.mlp, "--grpc_port", str(running.grpc_port)], 1,
                        "--grpc_port %d" % running.grpc_port))
            self._check_bad(bad)
        finally:
            self.assertEqual(running.stop(), 0)

    def _check_bad(self, bad):
        for args, code, mention in bad:
            with self.subTest(args=args):
                args = args + (["--port", "0"] if "--port" not in args else [])
                args = args + (["--grpc_port", "0"] if "--grpc_port" not in args else [])
                r = e2e_util.run_tool("popef-serve", args, timeout=TIMEOUT)
                self.assertEqual(r.returncode, code, r.describe())
                self.assertIn(mention, r.stderr)
                self.assertEqual(len(r.stderr.splitlines()), 1, r.describe())


if __name__ == "__main__":
    e2e_util.parse_args()
    if not os.access(e2e_util.tool_path("popef-serve"), os.X_OK):
        sys.exit("e2e: popef-serve is missing (use --bin-dir)")
    unittest.main(verbosity=2)
