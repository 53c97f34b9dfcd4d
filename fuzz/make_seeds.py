#!/usr/bin/python3
"""Makes the seed corpus of every fuzz target, at run time (nothing here is committed):

    make_seeds.py --out DIR [--bin-dir BUILD/bin] [--per-source N]

DIR/<target>/ gets, per target:
  onnx_import, shape_inference   small generated models (one per feature the importer handles:
                                 subgraphs, sequences, old opsets, custom domains, external data
                                 in data.bin, dynamic dims...), models/mlp.onnx, the models of
                                 ../shared/models under 256 KiB and a sample of the ONNX backend
                                 test data (/usr/share/libonnx-testdata)
  npy                            arrays of every dtype, order, byte order and header version numpy
                                 writes, and the small .npy inputs of ../shared/models
  tensor_proto                   a kind byte (0 tensor, 1 sequence, 2 optional, 3 optional
                                 sequence; see fuzz_tensor_proto.cpp) + TensorProto / SequenceProto
                                 / OptionalProto: every dtype in raw_data and in its typed field,
                                 external data, and backend test inputs
  serve_request                  KServe v2 infer requests (JSON, binary) for fuzz_serve_request's layouts
  config                         --config_yaml files, keyword-argument JSON, a sharding config
  host_array                     fuzz_host_array's anchor and array descriptions
  popef, executable              PopEFs compiled with BIN/poprt-convert from small generated models
                                 (device ops, host fallback) on a 4-tile target, and their
                                 executable blobs; skipped when poprt-convert is not built

External data in the seeds names data.bin (4 KiB), the file each fuzz target's scratch folder holds.
Needs Debian's python3-onnx and python3-numpy.
"""

import argparse
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SHARED_MODELS = os.path.join(REPO, "..", "shared", "models")
BACKEND = "/usr/share/libonnx-testdata/data"

F = TensorProto.FLOAT


def vi(name, dims, t=F):
    return helper.make_tensor_value_info(name, t, dims)


def model(nodes, inputs, outputs, inits=(), opset=13, domains=(), ir=None):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                          [helper.make_opsetid(d, v) for d, v in domains])
    m.ir_version = ir or (3 if opset < 8 else 7)
    return m


def arr(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def onnx_seeds():
    """Small models, each showing the importer something different."""
    m = {}
    m["mlp"] = model([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
                      helper.make_node("Relu", ["a"], ["y"])],
                     [vi("x", [2, 4])], [vi("y", [2, 3])],
                     [numpy_helper.from_array(arr((4, 3)), "w"), numpy_helper.from_array(arr((3,), 1), "b")])
    m["conv_pool"] = model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Softmax", ["f"], ["y"], axis=1)],
        [vi("x", [1, 2, 6, 6])], [vi("y", [1, 3])],
        [numpy_helper.from_array(arr((3, 2, 3, 3)), "w"), numpy_helper.from_array(arr((3,)), "b")])
    m["layout"] = model([
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Concat", ["r", "r"], ["c"], axis=0),
        helper.make_node("Gather", ["c", "idx"], ["y"], axis=0)],
        [vi("x", [2, 3])], [vi("y", [2, 6])],
        [numpy_helper.from_array(np.array([1, 6], np.int64), "shape"),
         numpy_helper.from_array(np.array([1, 0], np.int64), "idx")])
    m["norms"] = model([
        helper.make_node("LayerNormalization", ["x", "s", "b"], ["l"], axis=-1, epsilon=1e-5),
        helper.make_node("ReduceMean", ["l"], ["y"], axes=[1], keepdims=0)],
        [vi("x", [2, 4])], [vi("y", [2])],
        [numpy_helper.from_array(arr((4,)), "s"), numpy_helper.from_array(arr((4,), 2), "b")], opset=17)
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t", [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", [2])])
    m["if"] = model([helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                     helper.make_node("Greater", ["s", "zero"], ["c"]),
                     helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
                    [vi("x", [2])], [vi("y", [2])], [numpy_helper.from_array(np.float32(0), "zero")])
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2])])
    m["loop"] = model([helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
                      [vi("x", [2])], [vi("y", [2])], [numpy_helper.from_array(np.int64(3), "n")])
    m["sequence"] = model([helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
                           helper.make_node("SequenceAt", ["s", "i"], ["y"])],
                          [vi("x", [2, 2])], [vi("y", [2, 2])], [numpy_helper.from_array(np.int64(1), "i")])
    m["opset7"] = model([helper.make_node("Add", ["x", "x"], ["a"]), helper.make_node("Softmax", ["a"], ["y"])],
                        [vi("x", [2, 3])], [vi("y", [2, 3])], opset=7)
    m["dynamic"] = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["batch", 4])], [vi("y", ["batch", 4])])
    m["graphcore_gelu"] = model([helper.make_node("Gelu", ["x"], ["y"], domain="ai.graphcore")],
                                [vi("x", [2, 4])], [vi("y", [2, 4])], domains=[("ai.graphcore", 1)])
    m["host_ops"] = model([helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Shape", ["nz"], ["y"])],
                          [vi("x", [3])], [vi("y", [2], TensorProto.INT64)])
    m["strings"] = model([helper.make_node("Identity", ["s"], ["y"])], [], [vi("y", [2], TensorProto.STRING)],
                         [helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", b"c"])])
    w = TensorProto(name="w", data_type=F, dims=[4, 4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "data.bin"), ("offset", "64"), ("length", "64")):
        e = w.external_data.add()
        e.key, e.value = k, v
    m["external"] = model([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", [1, 4])], [vi("y", [1, 4])], [w])
    return m


def npy_seeds():
    out = {}
    rng = np.random.default_rng(1)
    for dt in ("f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1", "c8", "c16"):
        a = (rng.uniform(-3, 3, (2, 3)) * 10).astype(dt)
        out["le_" + dt] = a
        if np.dtype(dt).itemsize > 1:
            out["be_" + dt] = a.astype(np.dtype(dt).newbyteorder(">"))
    out["fortran"] = np.asfortranarray(arr((3, 4, 2)))
    out["scalar"] = np.float32(2.5)
    out["empty"] = np.zeros((0, 3), np.float32)
    out["rank5"] = arr((1, 2, 1, 3, 2))
    out["strings"] = np.array(["ab", "", "héllo"])
    seeds = {}
    for name, a in out.items():
        b = io.BytesIO()
        np.save(b, a)
        seeds[name + ".npy"] = b.getvalue()
    for version in ((2, 0), (3, 0)):
        b = io.BytesIO()
        np.lib.format.write_array(b, arr((2, 2)), version=version)
        seeds["v%d.npy" % version[0]] = b.getvalue()
    return seeds


def serve_request_seeds():
    """KServe v2 infer requests for fuzz_serve_request's three layouts: a layout byte, the
    Inference-Header-Content-Length value and a newline, then the body (JSON, or JSON + binary)."""
    import json

    def req(layout, header, binary=b"", length=None):
        text = json.dumps(header).encode()
        return bytes([layout]) + (b"" if length is None and not binary else str(len(text)).encode()) + b"\n" + text + binary

    seeds = {
        "json_rows": req(0, {"id": "q", "inputs": [
            {"name": "a", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2], [3, 4]]},
            {"name": "b", "shape": [2], "datatype": "INT32", "data": [5, 6]}]}),
        "binary_in_out": req(0, {"inputs": [
            {"name": "a", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
            {"name": "b", "shape": [1], "datatype": "INT32", "data": [1]}],
            "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}, struct.pack("<2f", 1, 2)),
        "fixed_shapes": req(1, {"inputs": [
            {"name": "m", "shape": [2], "datatype": "BOOL", "data": [True, False]},
            {"name": "h", "shape": [3, 1], "datatype": "FP16", "parameters": {"binary_data_size": 6}}],
            "parameters": {"binary_data_output": True}}, struct.pack("<3e", 1, 2, 3)),
        "axis1": req(2, {"inputs": [
            {"name": "x", "shape": [2, 1, 4], "datatype": "UINT16", "data": list(range(8))},
            {"name": "e", "shape": [0, 1], "datatype": "FP64", "data": []}],
            "outputs": [{"name": "d"}, {"name": "o", "parameters": {"binary_data": True}}]}),
    }
    return seeds


def config_seeds():
    """--config_yaml files and keyword-argument objects: every kind of value the table takes, a
    models: list, and a sharding config."""
    return {
        "flags.yaml": b"input_shape: [x=1,3,224,224]\nprecision: fp16\nbatch_size: 4\nexport_popef: true\n"
                      b"available_memory_proportion: 0.3\npasses: fuse_gelu,fold_constants\nnum_ipus: 2\n",
        "models.yaml": b"output_dir: out\nmodels:\n  - a.onnx\n  - input_model: b.onnx\n    precision: fp16\n",
        "kwargs.json": b'{"precision": "fp16", "batch_size": 8, "check": true, "check_rtol": 0.01}',
        "sharding.yaml": b"- node: conv1\n  device: 0\n  stage: 0\n- node: fc\n  device: 1\n  stage: 1\n",
        "anchors.yaml": b"base: &b {precision: fp16}\nlogging_level: info\n<<: *b\n",
    }


def host_array_seeds():
    """fuzz_host_array's byte strings: an anchor (dtype, rank, dims) and an array to hand it."""
    return {
        "matching": bytes([0, 2, 2, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
        "strided": bytes([1, 3, 2, 1, 4, 0, 1, 0, 0, 2, 0, 40, 1, 7, 0, 0, 1, 1]),
        "scalar_output": bytes([2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1]),
    }


def tensor_proto_seeds():
    seeds = {}
    rng = np.random.default_rng(2)
    types = {"float": np.float32, "double": np.float64, "int8": np.int8, "int16": np.int16, "int32": np.int32,
             "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
             "bool": np.bool_, "float16": np.float16, "complex64": np.complex64, "complex128": np.complex128}
    for name, t in types.items():
        a = (rng.uniform(0, 5, (2, 3))).astype(t)
        raw = numpy_helper.from_array(a, name)
        seeds["raw_%s.pb" % name] = b"\0" + raw.SerializeToString()
        typed = helper.make_tensor(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape, a.flatten().tolist(), raw=False) \
            if name not in ("complex64", "complex128") else None
        if typed is not None:
            seeds["typed_%s.pb" % name] = b"\0" + typed.SerializeToString()
    seeds["string.pb"] = b"\0" + helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", b"c"]).SerializeToString()
    seeds["scalar.pb"] = b"\0" + numpy_helper.from_array(np.float32(1.5), "x").SerializeToString()
    seeds["empty.pb"] = b"\0" + numpy_helper.from_array(np.zeros((0, 2), np.float32), "x").SerializeToString()
    ext = TensorProto()
    ext.name, ext.data_type = "x", F
    ext.dims.extend([2, 4])
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "data.bin"), ("offset", "128"), ("length", "32")):
        e = ext.external_data.add()
        e.key, e.value = k, v
    seeds["external.pb"] = b"\0" + ext.SerializeToString()
    seq = onnx.SequenceProto()
    seq.name, seq.elem_type = "s", onnx.SequenceProto.TENSOR
    seq.tensor_values.extend([numpy_helper.from_array(arr((2,)), ""), numpy_helper.from_array(arr((3,)), "")])
    seeds["sequence.pb"] = b"\1" + seq.SerializeToString()
    opt = onnx.OptionalProto()
    opt.name, opt.elem_type = "o", onnx.OptionalProto.TENSOR
    opt.tensor_value.CopyFrom(numpy_helper.from_array(arr((2, 2)), ""))
    seeds["optional.pb"] = b"\2" + opt.SerializeToString()
    opt_seq = onnx.OptionalProto()
    opt_seq.name, opt_seq.elem_type = "o", onnx.OptionalProto.SEQUENCE
    opt_seq.sequence_value.CopyFrom(seq)
    seeds["optional_sequence.pb"] = b"\3" + opt_seq.SerializeToString()
    seeds["optional_empty.pb"] = b"\2" + onnx.OptionalProto(name="o").SerializeToString()
    return seeds


def backend_dirs(per_source):
    """A spread-out sample of the backend test folders (every k-th, in a stable order)."""
    dirs = []
    if not os.path.isdir(BACKEND):
        return dirs
    for suite in sorted(os.listdir(BACKEND)):
        d = os.path.join(BACKEND, suite)
        tests = sorted(os.listdir(d))
        step = max(1, len(tests) // per_source) if per_source else 1
        dirs += [os.path.join(d, t) for t in tests[::step]]
    return dirs


def popef_blobs(data):
    """(type, name, payload) of each blob of a PopEF (docs/POPEF.md)."""
    (count,) = struct.unpack_from("<I", data, 12)
    o, blobs = 16, []
    for _ in range(count):
        _magic, _ver, typ, size, _crc, nlen = struct.unpack_from("<IHHQII", data, o)
        name = data[o + 24:o + 24 + nlen]
        blobs.append((typ, name, data[o + 24 + nlen:o + 24 + nlen + size]))
        o += 24 + nlen + size
    return blobs


def popef_seeds(bin_dir, onnx_models, tmp):
    """PopEFs of small models on a 4-tile target: device lowering of each codelet family, host
    fallback (NonZero), control flow on the host (If)."""
    convert = os.path.join(bin_dir or "", "poprt-convert")
    if not bin_dir or not os.access(convert, os.X_OK):
        print("make_seeds: no poprt-convert in %r: no popef/executable seeds" % bin_dir, file=sys.stderr)
        return {}
    models = dict((k, onnx_models[k]) for k in ("mlp", "conv_pool", "layout", "norms", "if", "host_ops", "graphcore_gelu"))
    models["attention_like"] = model([
        helper.make_node("MatMul", ["q", "kt"], ["s"]), helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"])],
        [vi("q", [1, 2, 4])], [vi("y", [1, 2, 4])],
        [numpy_helper.from_array(arr((1, 4, 3)), "kt"), numpy_helper.from_array(arr((1, 3, 4)), "v")])
    models["elementwise"] = model([
        helper.make_node("Mul", ["x", "c"], ["m"]), helper.make_node("Sub", ["m", "x"], ["s"]),
        helper.make_node("Sigmoid", ["s"], ["g"]), helper.make_node("Clip", ["g", "lo", "hi"], ["y"])],
        [vi("x", [2, 3])], [vi("y", [2, 3])],
        [numpy_helper.from_array(arr((3,)), "c"), numpy_helper.from_array(np.float32(0.1), "lo"),
         numpy_helper.from_array(np.float32(0.9), "hi")])
    seeds = {}
    for name, m in sorted(models.items()):
        src = os.path.join(tmp, name + ".onnx")
        onnx.save(m, src)
        out = os.path.join(tmp, name + "_out")
        r = subprocess.run([convert, "--input_model", src, "--export_popef", "--tiles_per_ipu", "4",
                            "--output_dir", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            print("make_seeds: %s did not compile (skipped): %s" % (name, r.stderr.decode().strip()), file=sys.stderr)
            continue
        with open(os.path.join(out, "executable.popef"), "rb") as f:
            seeds[name] = f.read()
    return seeds


def write(out_dir, target, name, data):
    d = os.path.join(out_dir, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--bin-dir")
    ap.add_argument("--per-source", type=int, default=150,
                    help="backend test folders to sample per suite (0: all)")
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    counts = {}

    models = onnx_seeds()
    for name, m in models.items():
        for t in ("onnx_import", "shape_inference"):
            write(a.out, t, name + ".onnx", m.SerializeToString())
    shipped = [os.path.join(REPO, "models", "mlp.onnx")]
    if os.path.isdir(SHARED_MODELS):
        shipped += [os.path.join(SHARED_MODELS, f) for f in sorted(os.listdir(SHARED_MODELS))
                    if f.endswith(".onnx") and os.path.getsize(os.path.join(SHARED_MODELS, f)) <= 256 * 1024]
        for d in sorted(os.listdir(SHARED_MODELS)):
            p = os.path.join(SHARED_MODELS, d)
            if os.path.isdir(p):
                for f in sorted(os.listdir(p)):
                    if f.startswith("input_") and f.endswith(".npy") and os.path.getsize(os.path.join(p, f)) <= 64 * 1024:
                        write(a.out, "npy", d + "_" + f, open(os.path.join(p, f), "rb").read())
    for p in shipped:
        if os.path.exists(p):
            data = open(p, "rb").read()
            for t in ("onnx_import", "shape_inference"):
                write(a.out, t, "shipped_" + os.path.basename(p), data)
    for d in backend_dirs(a.per_source):
        tag = os.path.basename(os.path.dirname(d)) + "_" + os.path.basename(d)
        mp = os.path.join(d, "model.onnx")
        if os.path.exists(mp):
            data = open(mp, "rb").read()
            for t in ("onnx_import", "shape_inference"):
                write(a.out, t, tag + ".onnx", data)
        ds = os.path.join(d, "test_data_set_0")
        if os.path.isdir(ds):
            for f in sorted(os.listdir(ds)):
                if f.startswith("input_") and f.endswith(".pb") and os.path.getsize(os.path.join(ds, f)) <= 64 * 1024:
                    raw = open(os.path.join(ds, f), "rb").read()
                    kind = b"\1" if "sequence" in tag else b"\2" if "optional" in tag else b"\0"
                    write(a.out, "tensor_proto", tag + "_" + f, kind + raw)
    for name, data in npy_seeds().items():
        write(a.out, "npy", name, data)
    for name, data in tensor_proto_seeds().items():
        write(a.out, "tensor_proto", name, data)
    for target, seeds in (("serve_request", serve_request_seeds()), ("config", config_seeds()),
                          ("host_array", host_array_seeds())):
        for name, data in seeds.items():
            write(a.out, target, name, data)
    with tempfile.TemporaryDirectory(prefix="poprt-seeds-") as tmp:
        for name, data in popef_seeds(a.bin_dir, models, tmp).items():
            write(a.out, "popef", name + ".popef", data)
            for typ, bname, payload in popef_blobs(data):
                if typ == 2:
                    write(a.out, "executable", name + ".exe", payload)
    for t in sorted(os.listdir(a.out)):
        counts[t] = len(os.listdir(os.path.join(a.out, t)))
    print("make_seeds: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))


if __name__ == "__main__":
    main()
