#!/usr/bin/python3
"""End to end: the exported-model zoo (scripts/zoo.py, scripts/zoo_models.py). Each model of the
tier is exported from PyTorch with random weights (once: kept in --zoo-dir), run by ONNX Runtime,
compiled by poprt-convert and run by popef-run in float32 (rtol 1e-3, atol 1e-4 against ONNX
Runtime) and float16 (cosine >= 0.999 or within 1e-2); the quantized zoo's models (QDQ, QOperator,
dynamic) at cosine >= 0.999 against ONNX Runtime running the same quantized model. One subTest per model; the zoo's table is
printed at the end.

    /usr/bin/python3 tests/e2e/test_zoo.py --bin-dir build/bin --tier fast --zoo-dir build/zoo

Skipped when PyTorch (python3-torch, python3-torchvision) or ONNX Runtime is unavailable.
"""

import argparse
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import e2e_util  # noqa: E402
import zoo  # noqa: E402
from test_roundtrip_shared_models import ort_env  # noqa: E402

ARGS = None


class ZooTest(e2e_util.E2ETestCase):
    @classmethod
    def setUpClass(cls):
        try:
            import torch  # noqa: F401
            import torchvision  # noqa: F401
        except ImportError as e:
            raise unittest.SkipTest("PyTorch is unavailable: %s" % e)
        cls.node_env, why = ort_env()
        if cls.node_env is None:
            raise unittest.SkipTest("ONNX Runtime reference unavailable: " + why)

    def test_every_model_matches_onnx_runtime(self):
        os.makedirs(ARGS.zoo_dir, exist_ok=True)
        rows = []
        for entry in zoo.select(ARGS.tier, ARGS.only):
            with self.subTest(model=entry.name):
                r = zoo.check_entry(entry, ARGS.zoo_dir, e2e_util.BIN_DIR, self.tmp, ("fp32", "fp16"), self.node_env)
                rows.append(zoo.table_row(r))
                self.assertTrue(r["ok"], "%s\n%s" % (zoo.table_row(r), failure_details(r)))
        sys.stderr.write("\n%s\n%s\n" % (zoo.TABLE_HEADER, "\n".join(rows)))


def failure_details(r):
    """What failed in a zoo row: the export's or a tool's error, or the outputs out of tolerance."""
    if "export_failure" in r:
        return r["export_failure"]
    lines = []
    for precision in ("fp32", "fp16", "int8"):
        p = r.get(precision, {})
        if "failure" in p:
            lines.append("%s: %s" % (precision, p["failure"]))
        if "unexpected" in p:
            lines.append("%s: %s (known: %s)" % (precision, p["unexpected"], p["known"]))
        elif "known" in p and p["ok"] and not p["known"].startswith("tolerance:"):
            lines.append("%s passes, but scripts/zoo_models.py lists it as known to fail (%s): update the entry"
                         % (precision, p["known"]))
        lines += ["%s output %s: %s" % (precision, o["output"], o) for o in p.get("outputs", []) if not o["ok"]]
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--tier", choices=("fast", "all"), default="fast")
    ap.add_argument("--only", default="")
    ap.add_argument("--zoo-dir", default=os.path.join(e2e_util.REPO_DIR, "build", "zoo"))
    ARGS, rest = ap.parse_known_args()
    sys.argv[1:] = rest
    e2e_util.main()
