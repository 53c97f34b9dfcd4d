"""The exported-model zoo's recipes: real architectures from torchvision and torch.nn, built with
seeded random weights and exported with torch.onnx.export the way users export them.

Each entry says how to build the module, its inputs (name -> shape; a leading "batch" makes the
batch dim dynamic, as most exports do), the opset (11-17, spread so that every exporter path
shows up: LayerNormalization only exists from 17, GridSample from 16, ...) and its tier: "fast"
models run in the default test suite, the rest in the labelled zoo group (tests/CMakeLists.txt).

Detectors with random weights produce near-tied scores, so a detector entry exports its raw
heads (the class logits and box regressions before decoding and NMS), not post-NMS boxes.
The quantized zoo (QUANTIZED, at the end) names a base entry and a format of scripts/quantize.py.
Imported by scripts/zoo.py only: torch is imported lazily, inside the builders.
"""

import collections

# known: {precision: why} for a check that fails today and why; the zoo test expects it to
# fail, and fails when it passes (so the entry is updated), as unittest's expectedFailure. A why
# starting "tolerance:" says the tools succeed and only the comparison fails: a compile or run
# failure is then a failure of the test too, and a pass is accepted (ONNX Runtime's float
# rounding, the reference, differs between CPUs).
Entry = collections.namedtuple("Entry", "name tier opset inputs build known", defaults=({},))

# Rounding these models' weights to float16 alone (ONNX Runtime, float32 math) already gives an
# output cosine below 0.999 (inception_v3 0.99898, fcn_resnet50 0.99429): their fp16 needs a
# mixed-precision policy keeping the sensitive layers' weights in float32.
FP16_WEIGHTS_FLOOR = "float16 weights alone give cosine < 0.999 in ONNX Runtime: needs a mixed-precision policy"


def _tv(name, **kwargs):
    """A torchvision classification/video/segmentation builder with random weights."""
    def build():
        import torchvision
        module = torchvision.models
        for part in name.split(".")[:-1]:
            module = getattr(module, part)
        return getattr(module, name.split(".")[-1])(weights=None, **kwargs)
    return build


def _first_output(build):
    """Wraps a model returning a dict (torchvision segmentation) to return its "out" tensor."""
    def wrapped():
        import torch

        class Out(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = build()

            def forward(self, x):
                return self.m(x)["out"]
        return Out()
    return wrapped


def _detector_heads(name, **kwargs):
    """A torchvision detector's backbone and head: (class logits, box regressions)."""
    def build():
        import torch
        import torchvision

        class Heads(torch.nn.Module):
            def __init__(self):
                super().__init__()
                m = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None, **kwargs)
                self.backbone, self.head = m.backbone, m.head

            def forward(self, x):
                features = list(self.backbone(x).values())
                out = self.head(features)
                return out["cls_logits"], out["bbox_regression"]
        return Heads()
    return build


def _raft_small():
    import torch
    import torchvision

    class Flow(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = torchvision.models.optical_flow.raft_small(weights=None)

        def forward(self, a, b):
            return self.m(a, b, num_flow_updates=3)[-1]
    return Flow()


def _transformer_encoder():
    import torch
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=3)


def _transformer():
    import torch

    class Seq2Seq(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.t = torch.nn.Transformer(d_model=96, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                          dim_feedforward=192, batch_first=True)
            self.register_buffer("causal", torch.nn.Transformer.generate_square_subsequent_mask(12))

        def forward(self, src, tgt):
            return self.t(src, tgt, tgt_mask=self.causal)
    return Seq2Seq()


def _recurrent(kind):
    """A two-layer (bidirectional for GRU) recurrent net with its state as inputs and outputs."""
    def build():
        import torch

        class Rnn(torch.nn.Module):
            def __init__(self):
                super().__init__()
                if kind == "lstm":
                    self.rnn = torch.nn.LSTM(40, 64, num_layers=2, batch_first=True)
                else:
                    self.rnn = torch.nn.GRU(40, 64, num_layers=2, batch_first=True, bidirectional=True)
                self.fc = torch.nn.Linear(64 * (1 if kind == "lstm" else 2), 10)

            def forward(self, x, *state):
                y, new_state = self.rnn(x, state if kind == "lstm" else state[0])
                if kind == "lstm":
                    return (self.fc(y),) + tuple(new_state)
                return self.fc(y), new_state
        return Rnn()
    return build


def _unet():
    import torch
    nn = torch.nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.mid = block(3, 16), block(16, 32), block(32, 64)
            self.up2, self.u2 = nn.ConvTranspose2d(64, 32, 2, stride=2), block(64, 32)
            self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.u1, self.out = block(32 + 16, 16), nn.Conv2d(16, 2, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(nn.functional.max_pool2d(a, 2))
            c = self.mid(nn.functional.max_pool2d(b, 2))
            b = self.u2(torch.cat([self.up2(c), b], 1))
            return self.out(self.u1(torch.cat([self.up1(b), a], 1)))
    return UNet()


IMG = {"image": [1, 3, 224, 224]}
B_IMG = {"image": ["batch", 3, 224, 224]}

ZOO = [
    # The fast tier: small models covering convs, depthwise convs, channel shuffles, attention,
    # recurrent state and a UNet, a few seconds each.
    Entry("mobilenet_v3_small", "fast", 13, IMG, _tv("mobilenet_v3_small")),
    Entry("squeezenet1_1", "fast", 11, IMG, _tv("squeezenet1_1")),
    Entry("shufflenet_v2_x0_5", "fast", 12, IMG, _tv("shufflenet_v2_x0_5")),
    Entry("resnet18", "fast", 14, {"image": ["batch", 3, 112, 112]}, _tv("resnet18")),
    Entry("transformer_encoder", "fast", 17, {"tokens": ["batch", 32, 128]}, _transformer_encoder),
    Entry("transformer", "fast", 14, {"src": [2, 16, 96], "tgt": [2, 12, 96]}, _transformer),
    Entry("lstm_state", "fast", 11, {"x": [2, 20, 40], "h0": [2, 2, 64], "c0": [2, 2, 64]}, _recurrent("lstm")),
    Entry("gru_bidirectional", "fast", 14, {"x": [2, 20, 40], "h0": [4, 2, 64]}, _recurrent("gru")),
    Entry("unet_small", "fast", 13, {"image": [1, 3, 64, 64]}, _unet),
    # Classification CNNs of every family.
    Entry("resnet50", "all", 13, B_IMG, _tv("resnet50")),
    Entry("resnext50_32x4d", "all", 14, IMG, _tv("resnext50_32x4d")),
    Entry("densenet121", "all", 11, IMG, _tv("densenet121")),
    Entry("inception_v3", "all", 12, {"image": [1, 3, 299, 299]}, _tv("inception_v3", aux_logits=False, init_weights=False),
          {"fp16": FP16_WEIGHTS_FLOOR}),
    Entry("googlenet", "all", 13, IMG, _tv("googlenet", aux_logits=False, init_weights=False)),
    Entry("mobilenet_v2", "all", 11, B_IMG, _tv("mobilenet_v2")),
    Entry("mobilenet_v3_large", "all", 16, IMG, _tv("mobilenet_v3_large")),
    Entry("efficientnet_b0", "all", 13, IMG, _tv("efficientnet_b0")),
    Entry("efficientnet_v2_s", "all", 15, IMG, _tv("efficientnet_v2_s")),
    Entry("regnet_y_400mf", "all", 13, IMG, _tv("regnet_y_400mf")),
    Entry("regnet_x_400mf", "all", 12, IMG, _tv("regnet_x_400mf")),
    Entry("convnext_tiny", "all", 13, IMG, _tv("convnext_tiny")),
    Entry("shufflenet_v2_x1_0", "all", 13, B_IMG, _tv("shufflenet_v2_x1_0")),
    Entry("squeezenet1_0", "all", 13, IMG, _tv("squeezenet1_0")),
    Entry("mnasnet1_0", "all", 13, IMG, _tv("mnasnet1_0")),
    Entry("vgg11_bn", "all", 13, IMG, _tv("vgg11_bn")),
    # Vision transformers.
    Entry("vit_b_16", "all", 17, IMG, _tv("vit_b_16")),
    Entry("swin_t", "all", 14, IMG, _tv("swin_t")),
    Entry("maxvit_t", "all", 16, IMG, _tv("maxvit_t")),
    # Segmentation, detection heads, video, optical flow.
    Entry("fcn_resnet50", "all", 13, {"image": [1, 3, 320, 320]},
          _first_output(_tv("segmentation.fcn_resnet50", weights_backbone=None, aux_loss=False)),
          {"fp32": "tolerance: 5 of 2,150,400 values beyond atol 1e-4 (max 1.4e-4; the reference evaluator's double "
                   "sums too): float32 rounding of 18,432-term sums in ONNX Runtime",
           "fp16": FP16_WEIGHTS_FLOOR}),
    Entry("deeplabv3_mobilenet_v3_large", "all", 13, {"image": [1, 3, 320, 320]},
          _first_output(_tv("segmentation.deeplabv3_mobilenet_v3_large", weights_backbone=None, aux_loss=False))),
    Entry("lraspp_mobilenet_v3_large", "all", 13, {"image": [1, 3, 320, 320]},
          _first_output(_tv("segmentation.lraspp_mobilenet_v3_large", weights_backbone=None))),
    Entry("ssdlite320_heads", "all", 13, {"image": [1, 3, 320, 320]}, _detector_heads("ssdlite320_mobilenet_v3_large")),
    Entry("retinanet_resnet50_fpn_heads", "all", 13, {"image": [1, 3, 320, 320]},
          _detector_heads("retinanet_resnet50_fpn")),
    Entry("r3d_18", "all", 13, {"clip": [1, 3, 8, 112, 112]}, _tv("video.r3d_18")),
    Entry("r2plus1d_18", "all", 13, {"clip": [1, 3, 8, 112, 112]}, _tv("video.r2plus1d_18")),
    Entry("raft_small", "all", 16, {"frame1": [1, 3, 128, 128], "frame2": [1, 3, 128, 128]}, _raft_small),
]

# The quantized zoo: zoo models written by the project's quantizer (scripts/quantize.py) in the
# three forms deployment pipelines produce, checked against ONNX Runtime running the same
# quantized model (cosine >= 0.999; poprt compiles them in float32 on the same integers).
# Quantized nets amplify an ulp: a float op between quantized ones that rounds differently from
# ONNX Runtime's puts a value on the other side of a rounding step, and the flip spreads.
FLOAT_OPS_ULP = ("tolerance: every quantized op matches ONNX Runtime's bit for bit (checked layer by layer), but float "
                 "ops between them differ from ONNX Runtime's by an ulp and the values rounded the other way spread")
# Under --precision fp16 the quantized ops' integer arithmetic stays float32, but a dynamically
# quantized model's float glue between them (the Mul by the scales, the bias Add, Relu6) runs in
# float16, and its rounding moves values across the next DynamicQuantizeLinear's steps.
DYNAMIC_GLUE_FP16 = "tolerance: the float16 glue between dynamically quantized ops moves values across quantization steps"
QEntry = collections.namedtuple("QEntry", "name tier base format known", defaults=({},))

QUANTIZED = [
    QEntry("resnet18_qdq", "fast", "resnet18", "qdq"),
    QEntry("resnet18_qoperator", "fast", "resnet18", "qoperator"),
    QEntry("resnet18_dynamic", "fast", "resnet18", "dynamic"),
    QEntry("transformer_encoder_dynamic", "fast", "transformer_encoder", "dynamic"),
    QEntry("mobilenet_v2_qdq", "all", "mobilenet_v2", "qdq"),
    QEntry("mobilenet_v2_qoperator", "all", "mobilenet_v2", "qoperator"),
    QEntry("mobilenet_v2_dynamic", "all", "mobilenet_v2", "dynamic", {"fp16": DYNAMIC_GLUE_FP16 + " (cosine 0.988)"}),
    QEntry("resnet50_qdq", "all", "resnet50", "qdq"),
    QEntry("squeezenet1_1_qoperator", "all", "squeezenet1_1", "qoperator"),
    QEntry("efficientnet_b0_qdq", "all", "efficientnet_b0", "qdq"),
    QEntry("transformer_qdq", "all", "transformer", "qdq"),
    QEntry("transformer_encoder_qoperator", "all", "transformer_encoder", "qoperator"),
    QEntry("vit_b_16_dynamic", "all", "vit_b_16", "dynamic"),
    QEntry("deeplabv3_mobilenet_v3_large_dynamic", "all", "deeplabv3_mobilenet_v3_large", "dynamic",
           {"int8": FLOAT_OPS_ULP + ": a residual Add after a HardSigmoid gate, 1 of 64,000 values of block 5 first "
                    "(cosine 0.9985)",
            "fp16": DYNAMIC_GLUE_FP16 + " (cosine 0.993)"}),
]
