#!/usr/bin/python3
"""End to end: popef-serve's gRPC endpoint (the KServe v2 GRPCInferenceService) spoken to by a
client that Debian's python3-grpc-tools generates from the project's serve/kserve.proto, as an
unmodified KServe or Triton client would be: health, metadata, ModelInfer with raw contents of
every datatype (FP32, FP16, INT64, BOOL and the rest) and with typed contents, checked against
popef-run's outputs for the same inputs; errors with their status codes; the stream RPC; 16
concurrent clients batched together; the requests counted in /metrics; SIGTERM.

    /usr/bin/python3 tests/e2e/test_serve_grpc.py --bin-dir build/bin
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from test_serve import (BATCH, DATATYPES, MLP, TIMEOUT, Server, compile_model, dtypes_expected,  # noqa: E402
                        dtypes_inputs, dtypes_model, popef_run)

try:
    import grpc
    from grpc_tools import protoc
except ImportError:  # Debian's python3-grpcio and python3-grpc-tools (scripts/install-deps.sh)
    grpc = None

PROTO_DIR = os.path.join(e2e_util.REPO_DIR, "serve")
TYPED_FIELD = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents", "INT32": "int_contents",
               "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
               "UINT32": "uint_contents", "UINT64": "uint64_contents", "FP32": "fp32_contents", "FP64": "fp64_contents"}


def generate_client(out_dir):
    """kserve_pb2 and kserve_pb2_grpc from serve/kserve.proto, as a client project would make them."""
    if protoc.main(["protoc", "-I" + PROTO_DIR, "--python_out=" + out_dir, "--grpc_python_out=" + out_dir,
                    os.path.join(PROTO_DIR, "kserve.proto"), os.path.join(PROTO_DIR, "model_config.proto")]) != 0:
        raise AssertionError("grpc_tools.protoc failed on serve/kserve.proto")
    sys.path.insert(0, out_dir)
    import kserve_pb2
    import kserve_pb2_grpc
    return kserve_pb2, kserve_pb2_grpc


@unittest.skipIf(grpc is None, "python3-grpcio / python3-grpc-tools are not installed")
class GrpcServeTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="poprt-e2e-grpc-")
        cls.pb, rpc = generate_client(os.path.join(cls.work))
        cls.mlp = compile_model(MLP, os.path.join(cls.work, "mlp"), ["--batch_size", str(BATCH)])
        dtypes_onnx = os.path.join(cls.work, "dtypes.onnx")
        dtypes_model(dtypes_onnx)
        cls.dtypes = compile_model(dtypes_onnx, os.path.join(cls.work, "dtypes"), [])
        rng = np.random.default_rng(11)
        cls.x = rng.uniform(-1, 1, (BATCH, 64)).astype(np.float32)
        cls.y = popef_run(cls.mlp, {"x": cls.x}, os.path.join(cls.work, "ref_mlp"))["y"]
        cls.dx = dtypes_inputs(rng, 2)
        cls.dy = popef_run(cls.dtypes, cls.dx, os.path.join(cls.work, "ref_dtypes"))
        cls.server = Server(["--model", "mlp=" + cls.mlp, "--model", "dtypes=" + cls.dtypes,
                             "--max_queue_delay_us", "20000"])
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)
        cls.stub = rpc.GRPCInferenceServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        code = cls.server.stop()
        shutil.rmtree(cls.work, True)
        assert code == 0, "popef-serve exited %s:\n%s" % (code, "".join(cls.server.stdout))

    def request(self, model, inputs, raw=True, outputs=()):
        q = self.pb.ModelInferRequest(model_name=model, id="req-" + model)
        for name, a in inputs.items():
            dt = next(k for k, v in DATATYPES.items() if np.dtype(v) == a.dtype)
            t = q.inputs.add(name=name, datatype=dt, shape=list(a.shape))
            if raw:
                q.raw_input_contents.append(np.ascontiguousarray(a).tobytes())
            else:
                getattr(t.contents, TYPED_FIELD[dt]).extend(a.ravel().tolist())
        for name in outputs:
            q.outputs.add(name=name)
        return q

    def outputs(self, reply):
        self.assertEqual(len(reply.outputs), len(reply.raw_output_contents))
        return {t.name: np.frombuffer(raw, DATATYPES[t.datatype]).reshape(list(t.shape))
                for t, raw in zip(reply.outputs, reply.raw_output_contents)}

    def assertStatus(self, call, code, mention):
        with self.assertRaises(grpc.RpcError) as e:
            call()
        self.assertEqual(e.exception.code(), code, e.exception.details())
        self.assertIn(mention, e.exception.details())

    def test_health_and_metadata(self):
        self.assertTrue(self.stub.ServerLive(self.pb.ServerLiveRequest()).live)
        self.assertTrue(self.stub.ServerReady(self.pb.ServerReadyRequest()).ready)
        self.assertTrue(self.stub.ModelReady(self.pb.ModelReadyRequest(name="mlp", version="1")).ready)
        server = self.stub.ServerMetadata(self.pb.ServerMetadataRequest())
        self.assertEqual(server.name, "popef-serve")
        m = self.stub.ModelMetadata(self.pb.ModelMetadataRequest(name="mlp"))
        self.assertEqual((m.name, list(m.versions), m.platform), ("mlp", ["1"], "poprt_popef"))
        self.assertEqual([(t.name, t.datatype, list(t.shape)) for t in m.inputs], [("x", "FP32", [-1, 64])])
        self.assertEqual([(t.name, t.datatype, list(t.shape)) for t in m.outputs], [("y", "FP32", [-1, 10])])
        c = self.stub.ModelConfig(self.pb.ModelConfigRequest(name="mlp")).config
        self.assertEqual((c.name, c.platform, c.max_batch_size), ("mlp", "poprt_popef", BATCH))
        self.assertEqual([(t.name, list(t.dims)) for t in c.input], [("x", [64])])
        self.assertEqual([(t.name, list(t.dims)) for t in c.output], [("y", [10])])
        self.assertEqual(c.dynamic_batching.max_queue_delay_microseconds, 20000)
        self.assertEqual(c.instance_group[0].count, 1)
        d = self.stub.ModelMetadata(self.pb.ModelMetadataRequest(name="dtypes"))
        self.assertEqual(sorted(t.datatype for t in d.inputs), sorted(DATATYPES))

    def test_infer_raw_matches_popef_run_for_every_datatype(self):
        reply = self.stub.ModelInfer(self.request("dtypes", self.dx))
        self.assertEqual((reply.model_name, reply.model_version, reply.id), ("dtypes", "1", "req-dtypes"))
        got = self.outputs(reply)
        self.assertEqual(sorted(got), sorted(self.dy))
        for name, want in self.dy.items():
            np.testing.assert_array_equal(got[name], want, err_msg=name)
        # popef-run agrees with the model's definition (x + x, Not).
        for name, want in dtypes_expected(self.dx).items():
            np.testing.assert_array_equal(got[name], want, err_msg=name)

    def test_typed_contents_give_the_same_answers(self):
        mlp = self.stub.ModelInfer(self.request("mlp", {"x": self.x}, raw=False))
        np.testing.assert_array_equal(self.outputs(mlp)["y"], self.y)
        # FP16 has no typed field: it must come raw (tests/unit/serve checks every typed field).
        typed = self.request("dtypes", {k: v for k, v in self.dx.items() if k != "in_FP16"}, raw=False)
        typed.inputs.add(name="in_FP16", datatype="FP16", shape=[2, 3])
        self.assertStatus(lambda: self.stub.ModelInfer(typed), grpc.StatusCode.INVALID_ARGUMENT,
                          "input 'in_FP16': FP16 has no typed contents field: send it in raw_input_contents")
        # Asking for two outputs: exactly those, in that order.
        two = self.stub.ModelInfer(self.request("dtypes", self.dx, outputs=["out_BOOL", "out_FP16"]))
        self.assertEqual([t.name for t in two.outputs], ["out_BOOL", "out_FP16"])
        np.testing.assert_array_equal(self.outputs(two)["out_FP16"], self.dy["out_FP16"])

    def test_errors_have_their_status_codes(self):
        stub, pb = self.stub, self.pb
        self.assertStatus(lambda: stub.ModelInfer(self.request("nope", {"x": self.x})), grpc.StatusCode.NOT_FOUND,
                          "unknown model 'nope'")
        self.assertStatus(lambda: stub.ModelMetadata(pb.ModelMetadataRequest(name="mlp", version="2")),
                          grpc.StatusCode.NOT_FOUND, "has no version '2'")
        self.assertStatus(lambda: stub.ModelInfer(self.request("mlp", {"x": self.x.astype(np.float64)})),
                          grpc.StatusCode.INVALID_ARGUMENT, "input 'x': datatype FP64, the model takes FP32")
        self.assertStatus(lambda: stub.ModelInfer(self.request("mlp", {"x": np.zeros((5, 64), np.float32)})),
                          grpc.StatusCode.INVALID_ARGUMENT, "has 5 rows along axis 0")
        short = self.request("mlp", {"x": self.x})
        short.raw_input_contents[0] = short.raw_input_contents[0][:-4]
        self.assertStatus(lambda: stub.ModelInfer(short), grpc.StatusCode.INVALID_ARGUMENT,
                          "input 'x': 1020 bytes of data")
        classify = self.request("mlp", {"x": self.x})
        classify.outputs.add(name="y").parameters["classification"].int64_param = 3
        self.assertStatus(lambda: stub.ModelInfer(classify), grpc.StatusCode.INVALID_ARGUMENT,
                          "parameter 'classification' is not supported")
        self.assertStatus(lambda: stub.ModelInfer(pb.ModelInferRequest(model_name="mlp")),
                          grpc.StatusCode.INVALID_ARGUMENT, "input 'x' is missing")
        # An RPC of the protocol the server does not offer.
        index = self.channel.unary_unary("/inference.GRPCInferenceService/SystemSharedMemoryStatus",
                                         request_serializer=lambda m: b"", response_deserializer=lambda b: b)
        self.assertStatus(lambda: index(None), grpc.StatusCode.UNIMPLEMENTED, "")

    def test_stream_answers_each_request_in_order(self):
        good = self.request("mlp", {"x": self.x})
        bad = self.request("mlp", {"x": self.x.astype(np.float64)})
        replies = list(self.stub.ModelStreamInfer(iter([good, bad, good])))
        self.assertEqual([r.error_message for r in replies],
                         ["", "input 'x': datatype FP64, the model takes FP32", ""])
        np.testing.assert_array_equal(self.outputs(replies[2].infer_response)["y"], self.y)

    def test_statistics_count_what_was_served_over_both_protocols(self):
        import json

        def grpc_stats():
            r = self.stub.ModelStatistics(self.pb.ModelStatisticsRequest(name="dtypes"))
            self.assertEqual(len(r.model_stats), 1)
            return r.model_stats[0]

        def http_stats():
            status, _, body = self.server.client.request("GET", "/v2/models/dtypes/versions/1/stats")
            self.assertEqual(status, 200, body)
            return json.loads(body)["model_stats"][0]

        # (unittest runs one test at a time: no other request comes in between.)
        before = grpc_stats()
        for _ in range(3):
            self.stub.ModelInfer(self.request("dtypes", self.dx))
        self.assertStatus(lambda: self.stub.ModelInfer(self.request("dtypes", {"in_FP32": self.dx["in_FP32"]})),
                          grpc.StatusCode.INVALID_ARGUMENT, "is missing")
        after, h = grpc_stats(), http_stats()
        st = after.inference_stats
        self.assertEqual(st.success.count - before.inference_stats.success.count, 3)
        self.assertEqual(st.fail.count - before.inference_stats.fail.count, 1)
        self.assertEqual(after.inference_count - before.inference_count, 3 * 2)  # rows
        self.assertEqual(after.execution_count - before.execution_count, 3)      # a batch each (one client)
        self.assertGreater(st.success.ns, before.inference_stats.success.ns)
        self.assertGreater(st.compute_infer.ns, 0)
        self.assertGreater(after.last_inference, 1_600_000_000_000)  # ms since the epoch, after 2020
        self.assertIn(2, [b.batch_size for b in after.batch_stats])
        # HTTP reads the same counters.
        self.assertEqual((h["name"], h["version"], h["inference_count"], h["execution_count"]),
                         ("dtypes", "1", after.inference_count, after.execution_count))
        self.assertEqual(h["inference_stats"]["success"]["count"], st.success.count)
        self.assertEqual(h["inference_stats"]["fail"]["count"], st.fail.count)
        status, _, body = self.server.client.request("GET", "/v2/models/stats")
        self.assertEqual(sorted(m["name"] for m in json.loads(body)["model_stats"]), ["dtypes", "mlp"])
        self.assertStatus(lambda: self.stub.ModelStatistics(self.pb.ModelStatisticsRequest(name="nope")),
                          grpc.StatusCode.NOT_FOUND, "unknown model 'nope'")

    def test_concurrent_clients_are_batched_and_counted(self):
        errors, done = [], []

        def client(i):
            try:
                for _ in range(4):
                    rows = 1 + i % BATCH
                    r = self.stub.ModelInfer(self.request("mlp", {"x": self.x[:rows]}))
                    np.testing.assert_array_equal(self.outputs(r)["y"], self.y[:rows])
                    done.append(rows)
            except Exception as e:  # reported below, with the rest
                errors.append(repr(e))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        self.assertEqual(errors, [])
        self.assertEqual(len(done), 64)
        status, _, body = self.server.client.request("GET", "/metrics")
        self.assertEqual(status, 200)
        success = [line for line in body.decode().splitlines()
                   if line.startswith("poprt_inference_request_success_total") and 'model="mlp"' in line]
        self.assertEqual(len(success), 1, body.decode()[:2000])
        self.assertGreaterEqual(float(success[0].split()[-1]), 64)


if __name__ == "__main__":
    e2e_util.parse_args()
    if not os.access(e2e_util.tool_path("popef-serve"), os.X_OK):
        sys.exit("e2e: popef-serve is missing (use --bin-dir)")
    unittest.main(verbosity=2)
