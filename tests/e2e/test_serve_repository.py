#!/usr/bin/python3
"""End to end: popef-serve with a model repository laid out as Triton's (--model_repository):
explicit loads and unloads over HTTP and gRPC, the index with each model's state and the reason a
load failed (a broken PopEF, a config.pbtxt that does not fit, an unknown config field) while the
model already served stays served, a new version replacing the old one while requests keep coming
(none fails, and replies name the new version), poll mode following the directory, and the
control-mode rules.

    /usr/bin/python3 tests/e2e/test_serve_repository.py --bin-dir build/bin
"""

import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from test_serve import BATCH, MLP, TIMEOUT, Server, compile_model, dtypes_model, popef_run  # noqa: E402

try:
    import grpc
    from test_serve_grpc import generate_client
except ImportError:
    grpc = None

MLP_CONFIG = """
name: "mlp"
platform: "poprt_popef"
max_batch_size: 4
input [ { name: "x", data_type: TYPE_FP32, dims: [ 64 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 10 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 1000 }
"""


class RepositoryTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="poprt-e2e-repo-")
        cls.mlp = compile_model(MLP, os.path.join(cls.work, "mlp"), ["--batch_size", str(BATCH)])
        dtypes_onnx = os.path.join(cls.work, "dtypes.onnx")
        dtypes_model(dtypes_onnx)
        cls.dtypes = compile_model(dtypes_onnx, os.path.join(cls.work, "dtypes"), [])
        cls.x = np.random.default_rng(5).uniform(-1, 1, (2, 64)).astype(np.float32)
        cls.y = popef_run(cls.mlp, {"x": np.concatenate([cls.x, np.zeros((2, 64), np.float32)])},
                          os.path.join(cls.work, "ref"))["y"][:2]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, True)

    def setUp(self):
        self.repo = tempfile.mkdtemp(prefix="repo-", dir=self.work)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            self.assertEqual(s.stop(), 0, "".join(s.stdout))

    def place(self, name, version, popef=None, data=None, config=None):
        d = os.path.join(self.repo, name, str(version))
        os.makedirs(d, exist_ok=True)
        if popef:
            shutil.copy(popef, os.path.join(d, "model.popef"))
        if data is not None:
            with open(os.path.join(d, "model.popef"), "wb") as f:
                f.write(data)
        if config is not None:
            with open(os.path.join(self.repo, name, "config.pbtxt"), "w") as f:
                f.write(config)

    def serve(self, *args):
        s = Server(["--model_repository", self.repo] + list(args))
        self.servers.append(s)
        return s

    def index(self, s):
        status, _, body = s.client.request("POST", "/v2/repository/index")
        self.assertEqual(status, 200, body)
        import json
        return {m["name"]: m for m in json.loads(body)}

    def post(self, s, path):
        import json
        status, _, body = s.client.request("POST", path)
        return status, json.loads(body) if body else None

    def infer(self, s, model="mlp", version=None):
        path = "/v2/models/%s%s/infer" % (model, "/versions/%s" % version if version else "")
        import json
        body = json.dumps({"inputs": [{"name": "x", "shape": [2, 64], "datatype": "FP32", "data": self.x.ravel().tolist()}]})
        status, _, reply = s.client.request("POST", path, body=body)
        return status, json.loads(reply)

    def test_explicit_loads_unloads_and_failures(self):
        self.place("mlp", 1, self.mlp, config=MLP_CONFIG)
        self.place("dtypes", 1, self.dtypes)
        self.place("broken", 3, data=b"not a popef")
        s = self.serve("--model_control_mode", "explicit", "--load_model", "mlp")
        idx = self.index(s)
        self.assertEqual((idx["mlp"]["state"], idx["mlp"]["version"]), ("READY", "1"))
        self.assertNotIn("state", idx["dtypes"])  # in the repository, never loaded
        status, reply = self.infer(s)
        self.assertEqual((status, reply["model_version"]), (200, "1"))
        np.testing.assert_allclose(np.array(reply["outputs"][0]["data"], np.float32).reshape(2, 10), self.y,
                                   rtol=1e-6, atol=1e-7)
        _, config = s.client.get_json("/v2/models/mlp/config")
        self.assertEqual(config["dynamic_batching"]["max_queue_delay_microseconds"], 1000)  # from config.pbtxt

        self.assertEqual(self.post(s, "/v2/repository/models/dtypes/load")[0], 200)
        self.assertEqual(self.index(s)["dtypes"]["state"], "READY")
        status, err = self.post(s, "/v2/repository/models/broken/load")
        self.assertEqual(status, 400)
        self.assertIn("model 'broken'", err["error"])
        self.assertEqual((self.index(s)["broken"]["state"], self.index(s)["broken"]["version"]), ("UNAVAILABLE", "3"))

        # A config that does not fit the PopEF: the load fails, the served version stays.
        with open(os.path.join(self.repo, "mlp", "config.pbtxt"), "w") as f:
            f.write(MLP_CONFIG.replace("max_batch_size: 4", "max_batch_size: 8"))
        status, err = self.post(s, "/v2/repository/models/mlp/load")
        self.assertEqual(status, 400)
        self.assertIn("config.pbtxt: max_batch_size 8, the PopEF is compiled for batches of 4", err["error"])
        entry = self.index(s)["mlp"]
        self.assertEqual(entry["state"], "READY")
        self.assertIn("max_batch_size 8", entry["reason"])
        self.assertEqual(self.infer(s)[0], 200)
        with open(os.path.join(self.repo, "mlp", "config.pbtxt"), "w") as f:
            f.write(MLP_CONFIG + 'version_policy: { latest: { num_versions: 2 } }\n')
        status, err = self.post(s, "/v2/repository/models/mlp/load")
        self.assertIn("version_policy", err["error"])  # asked for, not acted on: refused by name

        # Unload: the model is gone; twice is an error; a path is not a model name.
        self.assertEqual(self.post(s, "/v2/repository/models/dtypes/unload")[0], 200)
        self.assertEqual(s.client.get_json("/v2/models/dtypes")[0], 404)
        self.assertEqual(self.post(s, "/v2/repository/models/dtypes/unload")[0], 400)
        self.assertIn(self.post(s, "/v2/repository/models/..%2Fetc/load")[0], (400, 404))
        # Loads of models the repository does not have leave no trace in the index.
        for i in range(3):
            self.assertEqual(self.post(s, "/v2/repository/models/nope%d/load" % i)[0], 400)
        self.assertFalse(any(name.startswith("nope") for name in self.index(s)))
        status, err = self.post(s, "/v2/repository/models/..%20/load")
        self.assertEqual(status, 400)
        self.assertIn("is not a model name", err["error"])

    def test_a_new_version_replaces_the_old_while_requests_keep_coming(self):
        self.place("mlp", 1, self.mlp)
        s = self.serve("--model_control_mode", "explicit", "--load_model", "mlp")
        results, stop = [], threading.Event()

        def client():
            while not stop.is_set():
                results.append(self.infer(s))

        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        self.place("mlp", 2, self.mlp)
        self.assertEqual(self.post(s, "/v2/repository/models/mlp/load")[0], 200)
        time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join(TIMEOUT)
        statuses = [st for st, _ in results]
        self.assertGreater(len(results), 20)
        self.assertEqual(set(statuses), {200}, [r for r in results if r[0] != 200][:3])
        versions = [r["model_version"] for _, r in results]
        self.assertEqual(versions[-1], "2")
        self.assertIn("1", versions)
        self.assertEqual(self.infer(s, version="1")[0], 404)
        self.assertEqual(self.infer(s, version="2")[0], 200)

    def test_poll_follows_the_directory(self):
        self.place("mlp", 1, self.mlp)
        s = self.serve("--model_control_mode", "poll", "--repository_poll_secs", "1")
        self.assertEqual(self.index(s)["mlp"]["state"], "READY")
        self.assertEqual(self.post(s, "/v2/repository/models/mlp/unload")[0], 400)  # not in poll mode
        self.place("dtypes", 1, self.dtypes)
        shutil.rmtree(os.path.join(self.repo, "mlp"))
        deadline = time.time() + 20
        while time.time() < deadline:
            idx = self.index(s)
            if idx.get("dtypes", {}).get("state") == "READY" and "mlp" not in idx or \
                    idx.get("mlp", {}).get("state") == "UNAVAILABLE":
                break
            time.sleep(0.2)
        self.assertEqual(self.index(s)["dtypes"]["state"], "READY")
        self.assertEqual(s.client.get_json("/v2/models/mlp")[0], 404)
        # The directory gone for a moment (a scan that fails) unloads nothing; a model unloaded because
        # it was removed comes back when it is put back unchanged.
        self.place("mlp", 1, self.mlp)
        away = self.repo + ".away"
        os.rename(self.repo, away)
        time.sleep(2.5)
        os.rename(away, self.repo)
        deadline = time.time() + 20
        while time.time() < deadline and self.index(s).get("mlp", {}).get("state") != "READY":
            time.sleep(0.2)
        self.assertEqual((self.index(s)["mlp"]["state"], self.index(s)["dtypes"]["state"]), ("READY", "READY"))

    def test_control_mode_rules(self):
        self.place("mlp", 1, self.mlp)
        s = self.serve()  # none: everything loaded at start-up, no loads on request
        self.assertEqual(self.index(s)["mlp"]["state"], "READY")
        status, err = self.post(s, "/v2/repository/models/mlp/unload")
        self.assertEqual(status, 400)
        self.assertIn("--model_control_mode explicit", err["error"])
        repo = ["--model_repository", self.repo]
        for args, code, mention in [(repo + ["--model_control_mode", "explicit", "--load_model", "nope"], 1, "nope"),
                                    (repo + ["--load_model", "mlp"], 2, "--load_model"),
                                    (["--model_control_mode", "poll", "--model", "m=" + self.mlp], 2, "--model_control_mode"),
                                    (["--model_repository", "/no/such/dir"], 1, "not a directory")]:
            r = e2e_util.run_tool("popef-serve", ["--port", "0", "--grpc_port", "-1"] + args, timeout=TIMEOUT)
            self.assertEqual(r.returncode, code, r.describe())
            self.assertIn(mention, r.stderr)

    @unittest.skipIf(grpc is None, "python3-grpcio / python3-grpc-tools are not installed")
    def test_grpc_repository_rpcs(self):
        self.place("mlp", 1, self.mlp)
        self.place("dtypes", 1, self.dtypes)
        s = self.serve("--model_control_mode", "explicit")
        pb, rpc = generate_client(tempfile.mkdtemp(dir=self.work))
        with grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port) as channel:
            stub = rpc.GRPCInferenceServiceStub(channel)
            self.assertEqual(sorted((m.name, m.state) for m in stub.RepositoryIndex(pb.RepositoryIndexRequest()).models),
                             [("dtypes", ""), ("mlp", "")])
            stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="mlp"))
            ready = stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True)).models
            self.assertEqual([(m.name, m.version, m.state) for m in ready], [("mlp", "1", "READY")])
            self.assertTrue(stub.ModelReady(pb.ModelReadyRequest(name="mlp", version="1")).ready)
            with self.assertRaises(grpc.RpcError) as e:
                stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="nope"))
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("no such model", e.exception.details())
            stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="mlp"))
            with self.assertRaises(grpc.RpcError) as e:
                stub.ModelReady(pb.ModelReadyRequest(name="mlp"))
            self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)


if __name__ == "__main__":
    e2e_util.parse_args()
    if not os.access(e2e_util.tool_path("popef-serve"), os.X_OK):
        sys.exit("e2e: popef-serve is missing (use --bin-dir)")
    unittest.main(verbosity=2)
