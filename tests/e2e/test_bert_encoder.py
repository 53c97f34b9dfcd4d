#!/usr/bin/python3
"""End to end: a tiny BERT encoder from scripts/make_bert_encoder.py (the generator of the cost
model's BERT-Base calibration, docs/COST_MODEL.md) converts with the attention, LayerNorm and GELU
fusions all firing, runs on the device with `popef-run`, and matches numpy computing HF's
BertLayer in float64 from the model's own weights (rtol 1e-4, atol 1e-5).

    /usr/bin/python3 tests/e2e/test_bert_encoder.py --bin-dir /work/main/build/bin
"""

import json
import math
import os
import sys
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

GENERATOR = os.path.join(e2e_util.REPO_DIR, "scripts", "make_bert_encoder.py")
LAYERS, HIDDEN, HEADS, SEQ, BATCH = 2, 64, 4, 16, 2
erf = np.vectorize(math.erf)


def layer_norm(x, gamma, beta):
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-12) * gamma + beta


def bert_reference(w, h, mask, heads_count=HEADS):
    """HF BertEncoder in float64; w maps parameter names to arrays (Linear weights as [in, out]);
    h is [batch, seq, hidden]; the layers are the ones w has."""
    def linear(x, stem):
        return x @ w[stem + ".weight"] + w[stem + ".bias"]

    batch, seq, hidden = h.shape
    layers = len({name.split(".")[2] for name in w if name.startswith("encoder.layer.")})
    d = hidden // heads_count
    ext = (1.0 - mask[:, None, None, :]) * -10000.0
    for layer in range(layers):
        p = "encoder.layer.%d." % layer

        def heads(x):
            return x.reshape(batch, seq, heads_count, d).transpose(0, 2, 1, 3)

        q, k, v = (heads(linear(h, p + "attention.self." + n)) for n in ("query", "key", "value"))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + ext
        e = np.exp(s - s.max(-1, keepdims=True))
        ctx = ((e / e.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        h1 = layer_norm(linear(ctx, p + "attention.output.dense") + h,
                        w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        i = linear(h1, p + "intermediate.dense")
        o = linear(i * 0.5 * (1.0 + erf(i / math.sqrt(2.0))), p + "output.dense")
        h = layer_norm(o + h1, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    return h


class BertEncoderTest(e2e_util.E2ETestCase):
    def test_tiny_encoder_fuses_and_matches_numpy(self):
        model = self.path("bert.onnx")
        flags = {"--layers": LAYERS, "--hidden": HIDDEN, "--heads": HEADS, "--seq": SEQ, "--batch": BATCH, "--seed": 3}
        r = e2e_util.run_cmd([sys.executable, GENERATOR, "--out", model] + [str(x) for kv in flags.items() for x in kv])
        self.assertOk(r)
        out_dir, summary = self.path("out"), self.path("summary.json")
        r = e2e_util.run_tool("poprt-convert", ["--input_model", model, "--output_dir", out_dir, "--export_popef",
                                                "--ipu_version", "ipu21", "--summary_json", summary])
        self.assertOk(r)
        with open(summary) as f:
            s = json.load(f)
        counters = {p["name"]: p["counters"] for p in s["passes"]}
        self.assertEqual(counters["fuse_attention"].get("attention"), LAYERS)
        self.assertEqual(counters["fuse_layernorm"].get("layernorm_affine"), 2 * LAYERS)
        self.assertEqual(counters["fuse_gelu"].get("gelu_erf"), LAYERS)

        rng = np.random.default_rng(7)
        h = rng.standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32)
        mask = np.ones((BATCH, SEQ), np.float32)
        mask[1, SEQ - 5:] = 0  # padding in the second sequence
        w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(model).graph.initializer}
        expected = bert_reference(w, h.astype(np.float64), mask.astype(np.float64))
        # A wrong mask, head split or GELU would move the output by far more than the tolerance.
        self.assertGreater(np.abs(expected - bert_reference(w, h.astype(np.float64), np.ones_like(mask, np.float64))).max(), 1e-3)

        exp_dir = self.mkdir("expected")
        np.save(os.path.join(exp_dir, "output_0_last_hidden_state.npy"), expected.astype(np.float32))
        np.save(self.path("h.npy"), h)
        np.save(self.path("mask.npy"), mask)
        r = e2e_util.run_tool("popef-run", [os.path.join(out_dir, "executable.popef"),
                                            "--input", "hidden_states=" + self.path("h.npy"),
                                            "--input", "attention_mask=" + self.path("mask.npy"),
                                            "--expected_dir", exp_dir, "--rtol", "1e-4", "--atol", "1e-5"])
        self.assertOk(r)
        self.assertIn("IPU estimate", r.stdout)

    def test_twelve_layers_resolve_every_shape(self):
        # Each exported layer's Reshape targets fold only once the layer before is typed, about two
        # shape_fixpoint rounds a layer: all 12 layers must fuse and run on the device.
        model = self.path("bert12.onnx")
        self.assertOk(e2e_util.run_cmd([sys.executable, GENERATOR, "--out", model, "--layers", "12", "--hidden", "32",
                                        "--heads", "2", "--seq", "8", "--batch", "1"]))
        summary = self.path("summary12.json")
        self.assertOk(e2e_util.run_tool("poprt-convert", ["--input_model", model, "--output_dir", self.path("out12"),
                                                          "--export_popef", "--summary_json", summary]))
        with open(summary) as f:
            s = json.load(f)
        counters = {p["name"]: p["counters"] for p in s["passes"]}
        self.assertEqual(counters["fuse_attention"].get("attention"), 12)
        self.assertEqual(s["placement"]["host_nodes"], [])


if __name__ == "__main__":
    e2e_util.main()
