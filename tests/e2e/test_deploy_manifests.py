#!/usr/bin/python3
"""Offline checks of deploy/: the KServe manifests parse and agree with each other and with the
container build, and the runtime's command line is one popef-serve accepts: the test starts the
built popef-serve with the ServingRuntime's args (ports moved to free ones) on a repository laid
out at a temporary /mnt/models stand-in and probes the paths the manifests probe.

    /usr/bin/python3 tests/e2e/test_deploy_manifests.py --bin-dir build/bin
"""

import os
import re
import shutil
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from test_serve import Server, compile_model, MLP  # noqa: E402

DEPLOY = os.path.join(e2e_util.REPO_DIR, "deploy")


def load(name):
    with open(os.path.join(DEPLOY, "kserve", name)) as f:
        return yaml.safe_load(f)


def flag(args, name):
    for a in args:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


class DeployManifestTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.runtime = load("servingruntime.yaml")
        cls.service = load("inferenceservice.yaml")
        with open(os.path.join(DEPLOY, "Dockerfile")) as f:
            cls.dockerfile = f.read()
        cls.container = cls.runtime["spec"]["containers"][0]

    def test_runtime_declares_the_format_protocols_ports_and_probes(self):
        rt = self.runtime
        self.assertEqual((rt["apiVersion"], rt["kind"]), ("serving.kserve.io/v1alpha1", "ServingRuntime"))
        self.assertIn("popef", [f["name"] for f in rt["spec"]["supportedModelFormats"]])
        self.assertEqual(set(rt["spec"]["protocolVersions"]), {"v2", "grpc-v2"})
        c = self.container
        self.assertEqual(c["name"], "kserve-container")
        args = c["args"]
        self.assertEqual(flag(args, "--model_repository"), "/mnt/models")  # where KServe puts storageUri
        http = int(flag(args, "--http_port"))
        self.assertEqual([p["containerPort"] for p in c["ports"]], [http])
        for probe, path in (("livenessProbe", "/v2/health/live"), ("readinessProbe", "/v2/health/ready")):
            self.assertEqual(c[probe]["httpGet"], {"path": path, "port": http})
        self.assertEqual(rt["metadata"]["annotations"]["prometheus.kserve.io/port"], str(http))
        self.assertTrue(c["securityContext"]["runAsNonRoot"])

    def test_service_uses_the_runtime(self):
        s = self.service
        self.assertEqual((s["apiVersion"], s["kind"]), ("serving.kserve.io/v1beta1", "InferenceService"))
        model = s["spec"]["predictor"]["model"]
        self.assertEqual(model["runtime"], self.runtime["metadata"]["name"])
        self.assertEqual(model["modelFormat"]["name"], "popef")
        self.assertRegex(model["storageUri"], r"^(s3|gs|pvc|https?)://")

    def test_container_build_agrees_with_the_runtime(self):
        d = self.dockerfile
        self.assertRegex(d, r"(?m)^FROM debian:12")
        self.assertRegex(d, r"(?m)^USER 1000$")
        self.assertEqual(self.container["securityContext"]["runAsUser"], 1000)
        entry = re.search(r'ENTRYPOINT \[(.*?)\]', d, re.S).group(1)
        words = [w.strip().strip('"') for w in entry.replace("\\\n", " ").split(",")]
        self.assertEqual(words[0], "popef-serve")
        self.assertEqual(words[words.index("--model_repository") + 1], "/mnt/models")
        exposed = set(int(p) for p in re.search(r"(?m)^EXPOSE (.*)$", d).group(1).split())
        self.assertEqual(exposed, {int(words[words.index("--http_port") + 1]), int(words[words.index("--grpc_port") + 1])})
        self.assertIn(int(flag(self.container["args"], "--http_port")), exposed)
        self.assertIn(int(flag(self.container["args"], "--grpc_port")), exposed)

    def test_popef_serve_runs_the_runtimes_command_line(self):
        work = tempfile.mkdtemp(prefix="poprt-e2e-deploy-")
        try:
            popef = compile_model(MLP, os.path.join(work, "out"), ["--batch_size", "4"])
            models = os.path.join(work, "mnt", "models")
            os.makedirs(os.path.join(models, "mlp", "1"))
            shutil.copy(popef, os.path.join(models, "mlp", "1", "model.popef"))
            args = [a for a in self.container["args"] if not a.startswith(("--http_port", "--grpc_port", "--host"))]
            args = [("--model_repository=" + models) if a.startswith("--model_repository") else a for a in args]
            server = Server(args)  # on free ports
            try:
                for probe in ("livenessProbe", "readinessProbe"):
                    status, _, _ = server.client.request("GET", self.container[probe]["httpGet"]["path"])
                    self.assertEqual(status, 200, probe)
                status, meta = server.client.get_json("/v2/models/mlp")
                self.assertEqual((status, meta["versions"]), (200, ["1"]))
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            shutil.rmtree(work, True)


if __name__ == "__main__":
    e2e_util.parse_args()
    unittest.main(verbosity=2)
