#!/usr/bin/python3
"""Writes the malformed-input corpus that manifest.tsv describes into a folder:

    make_corpus.py --out DIR --bin-dir BUILD/bin

Each case breaks one thing in an otherwise valid file: truncated or bit-flipped bytes, huge or
negative dims, cycles, path traversal, wrong dtypes, zero-size tensors, bad checksums, sizes
that lie. ONNX cases are built with onnx.helper; PopEF cases start from small models compiled
with BIN/poprt-convert (base.popef: y = Relu(x @ W + b), x float32[2,4]; host.popef: a NonZero
on the host; conv.popef: a Conv whose inputs arrive by exchange gathers) and are edited with
popef_io (checksums recomputed unless the case is about the checksum). Also written: x.npy, a
valid input for base.popef, and the files external data cases refer to.
"""

import argparse
import io
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import popef_io as pio  # noqa: E402

F = TensorProto.FLOAT
META, EXE, TENSOR, FEED, OPAQUE = 1, 2, 3, 4, 5


def vi(name, dims, t=F):
    return helper.make_tensor_value_info(name, t, dims)


def model(nodes, inputs, outputs, inits=(), opset=13, domains=(), check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                          [helper.make_opsetid(d, v) for d, v in domains])
    m.ir_version = 7
    if check:
        onnx.checker.check_model(m)
    return m


def mlp(w=None, extra_inits=()):
    """The base model: y = Relu(x @ W + b), x float32[2,4]."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.uniform(-1, 1, (4, 3)).astype(np.float32), "W") if w is None else w
    b = numpy_helper.from_array(rng.uniform(-1, 1, (3,)).astype(np.float32), "b")
    return model([helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                  helper.make_node("Add", ["h", "b"], ["a"], name="add"),
                  helper.make_node("Relu", ["a"], ["y"], name="relu")],
                 [vi("x", [2, 4])], [vi("y", [2, 3])], [w, b] + list(extra_inits), check=False)


def external(name, location, dims=(4, 3), offset=None, length=None):
    t = TensorProto(name=name, data_type=F, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return t


# ---- ONNX cases (poprt-convert) ---------------------------------------------------------------


def onnx_cases(out):
    c = {}
    good = mlp().SerializeToString()
    c["onnx_empty.onnx"] = b""
    c["onnx_truncated.onnx"] = good[: len(good) // 2]
    c["onnx_random.onnx"] = np.random.default_rng(3).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    c["onnx_bit_flip.onnx"] = bytes(good[:10]) + bytes([good[10] ^ 0x80]) + good[11:]
    c["onnx_no_graph.onnx"] = helper.make_model(helper.make_graph([], "g", [], [])).SerializeToString()[:0] + \
        onnx.ModelProto(ir_version=7, opset_import=[helper.make_opsetid("", 13)]).SerializeToString()
    m = mlp()
    m.opset_import[0].version = 18
    c["onnx_opset18.onnx"] = m.SerializeToString()
    m = mlp()
    m.opset_import[0].version = 0
    c["onnx_opset0.onnx"] = m.SerializeToString()
    # libonnx's pooling shape inference divides by the stride unchecked (found by fuzz_shape_inference)
    c["onnx_pool_stride_zero.onnx"] = model(
        [helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2], strides=[0])],
        [vi("x", [2, 4, 8])], [vi("y", [2, 4, 4])], check=False).SerializeToString()
    # libonnx's inference functions that index dims or use attributes as indices unchecked
    # (lib/onnx/inference_rules.cpp; the first found by fuzz_shape_inference)
    c["onnx_convtranspose_weight_rank.onnx"] = model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct")],
        [vi("x", [1, 1, 3, 4, 5]), vi("w", [3])], [vi("y", [1, 2, 5, 6, 7])], check=False).SerializeToString()
    c["onnx_gathernd_batch_dims.onnx"] = model(
        [helper.make_node("GatherND", ["x", "i"], ["y"], name="gnd", batch_dims=-7)],
        [vi("x", [2, 3]), vi("i", [2, 1], TensorProto.INT64)], [vi("y", [2])], check=False).SerializeToString()
    c["onnx_stft_signal_rank.onnx"] = model(
        [helper.make_node("STFT", ["x", "step"], ["y"], name="stft")],
        [vi("x", [16]), vi("step", [], TensorProto.INT64)], [vi("y", [1, 2, 3, 2])], opset=17, check=False).SerializeToString()
    # a cycle: a -> b -> a (listed in any order, no topological sort exists)
    cyc = model([helper.make_node("Relu", ["x", ], ["p"], name="start"),
                 helper.make_node("Add", ["p", "b2"], ["a2"], name="n1"),
                 helper.make_node("Relu", ["a2"], ["b2"], name="n2"),
                 helper.make_node("Identity", ["a2"], ["y"], name="out")],
                [vi("x", [2])], [vi("y", [2])], check=False)
    c["onnx_cycle.onnx"] = cyc.SerializeToString()
    # a node output named b"\xff": protobuf's proto2 parser keeps such bytes; names go into JSON later
    nu = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2])], [vi("y", [2])], check=False)
    c["onnx_name_not_utf8.onnx"] = nu.SerializeToString().replace(b"\x01y", b"\x01\xff")
    dup = model([helper.make_node("Relu", ["x"], ["y"], name="r1"), helper.make_node("Neg", ["x"], ["y"], name="r2")],
                [vi("x", [2])], [vi("y", [2])], check=False)
    c["onnx_duplicate_value.onnx"] = dup.SerializeToString()
    w = numpy_helper.from_array(np.zeros((4, 3), np.float32), "W")
    c["onnx_duplicate_initializer.onnx"] = mlp(extra_inits=[w]).SerializeToString()
    di = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2]), vi("x", [2])], [vi("y", [2])], check=False)
    c["onnx_duplicate_input.onnx"] = di.SerializeToString()
    mi = model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add_missing")], [vi("x", [2])], [vi("y", [2])],
               check=False)
    c["onnx_missing_input.onnx"] = mi.SerializeToString()
    nop = model([helper.make_node("Relu", ["x"], ["t"])], [vi("x", [2])], [vi("y", [2])], check=False)
    c["onnx_output_never_produced.onnx"] = nop.SerializeToString()
    c["onnx_unknown_op.onnx"] = model([helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob")],
                                      [vi("x", [2])], [vi("y", [2])], check=False).SerializeToString()
    sm = helper.make_node("Softmax", ["x"], ["y"], name="sm")
    sm.attribute.append(helper.make_attribute("axis", 1.5))  # a FLOAT where Softmax takes an INT
    c["onnx_wrong_attr_type.onnx"] = model([sm], [vi("x", [2, 2])], [vi("y", [2, 2])], check=False).SerializeToString()
    gl = helper.make_node("Gelu", ["x"], ["y"], name="gelu", domain="ai.graphcore")
    gl.attribute.append(helper.make_attribute("approximate", 1))  # an INT where Gelu takes a STRING
    c["onnx_graphcore_attr_type.onnx"] = model([gl], [vi("x", [2])], [vi("y", [2])], domains=[("ai.graphcore", 1)],
                                               check=False).SerializeToString()
    c["onnx_graphcore_arity.onnx"] = model([helper.make_node("Gelu", ["x", "x"], ["y"], name="gelu2", domain="ai.graphcore")],
                                           [vi("x", [2])], [vi("y", [2])], domains=[("ai.graphcore", 1)],
                                           check=False).SerializeToString()
    neg = TensorProto(name="W", data_type=F, dims=[-4, 3])
    c["onnx_negative_dim.onnx"] = mlp(w=neg).SerializeToString()
    huge = TensorProto(name="W", data_type=F, dims=[1 << 40, 1 << 40])
    c["onnx_huge_dims.onnx"] = mlp(w=huge).SerializeToString()
    lie = numpy_helper.from_array(np.zeros((4, 3), np.float32), "W")
    lie.raw_data = lie.raw_data[:20]
    c["onnx_raw_data_short.onnx"] = mlp(w=lie).SerializeToString()
    few = helper.make_tensor("W", F, [4, 3], [0.0] * 12)
    del few.float_data[5:]
    c["onnx_float_data_count.onnx"] = mlp(w=few).SerializeToString()
    wrong_field = TensorProto(name="W", data_type=F, dims=[4, 3])
    wrong_field.int64_data.extend([1] * 12)
    c["onnx_wrong_field.onnx"] = mlp(w=wrong_field).SerializeToString()
    bad_type = numpy_helper.from_array(np.zeros((4, 3), np.float32), "W")
    bad_type.data_type = 99
    c["onnx_bad_data_type.onnx"] = mlp(w=bad_type).SerializeToString()
    c["onnx_dtype_mismatch.onnx"] = mlp(w=numpy_helper.from_array(np.zeros((4, 3), np.int32), "W")).SerializeToString()
    c["onnx_zero_size_weight.onnx"] = mlp(w=numpy_helper.from_array(np.zeros((0, 3), np.float32), "W")).SerializeToString()
    big = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1 << 40, 1 << 40])], [vi("y", [1 << 40, 1 << 40])],
                check=False)
    c["onnx_shape_overflow.onnx"] = big.SerializeToString()
    sp = mlp()
    sp.graph.sparse_initializer.add().values.CopyFrom(numpy_helper.from_array(np.zeros(1, np.float32), "s"))
    sp.graph.sparse_initializer[0].indices.CopyFrom(numpy_helper.from_array(np.zeros(1, np.int64), "si"))
    sp.graph.sparse_initializer[0].dims.append(4)
    c["onnx_sparse_initializer.onnx"] = sp.SerializeToString()
    # deeply nested If branches: protobuf's recursion limit, not our stack, must refuse it
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "leaf", [], [vi("e", [2])])
    inner = leaf
    for i in range(1, 120):
        node = helper.make_node("If", ["c"], ["t%d" % i], then_branch=inner, else_branch=leaf)
        inner = helper.make_graph([node], "b%d" % i, [], [vi("t%d" % i, [2])])
    deep = model([helper.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=leaf)],
                 [vi("c", [], TensorProto.BOOL), vi("x", [2])], [vi("y", [2])], check=False)
    c["onnx_deep_nesting.onnx"] = deep.SerializeToString()
    # external data: the folder holds weights.bin (48 bytes = float32[4,3]) and a symlink out
    with open(os.path.join(out, "weights.bin"), "wb") as f:
        f.write(np.arange(12, dtype=np.float32).tobytes())
    link = os.path.join(out, "escape.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("/etc/hostname", link)
    c["onnx_ext_absolute.onnx"] = mlp(w=external("W", "/etc/hostname")).SerializeToString()
    c["onnx_ext_dotdot.onnx"] = mlp(w=external("W", "../malformed/weights.bin")).SerializeToString()
    c["onnx_ext_symlink.onnx"] = mlp(w=external("W", "escape.bin")).SerializeToString()
    c["onnx_ext_missing.onnx"] = mlp(w=external("W", "no_such_weights.bin")).SerializeToString()
    c["onnx_ext_short.onnx"] = mlp(w=external("W", "weights.bin", offset=16)).SerializeToString()
    c["onnx_ext_length.onnx"] = mlp(w=external("W", "weights.bin", length=40)).SerializeToString()
    c["onnx_tensor_cap.onnx"] = mlp(w=numpy_helper.from_array(np.zeros((4, 3), np.float32), "W"),
                                    extra_inits=[numpy_helper.from_array(np.zeros(1024, np.float32), "big")]).SerializeToString()
    c["onnx_dynamic_dim.onnx"] = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["batch", 4])],
                                       [vi("y", ["batch", 4])]).SerializeToString()
    return c


# ---- PopEF cases (popef-run and popef-dump) ---------------------------------------------------


def compile_base(bin_dir, out):
    """base.popef (MLP), host.popef (NonZero on the host), conv.popef (gathers)."""
    convert = os.path.join(bin_dir, "poprt-convert")
    models = {
        "base": mlp(),
        "host": model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["nz"]),
                       helper.make_node("Shape", ["nz"], ["y"])], [vi("x", [2, 4])], [vi("y", [2], TensorProto.INT64)]),
        "conv": model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], [vi("x", [1, 2, 5, 5])],
                      [vi("y", [1, 3, 5, 5])],
                      [numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")]),
    }
    popefs = {}
    for name, m in models.items():
        src = os.path.join(out, "_%s.onnx" % name)
        onnx.save(m, src)
        tmp = os.path.join(out, "_%s_out" % name)
        r = subprocess.run([convert, "--input_model", src, "--export_popef", "--tiles_per_ipu", "4", "--output_dir", tmp],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            sys.exit("make_corpus: cannot compile %s: %s" % (name, r.stderr.decode()))
        with open(os.path.join(tmp, "executable.popef"), "rb") as f:
            popefs[name] = f.read()
        shutil.rmtree(tmp)
        os.remove(src)
    return popefs


def edit(data, fn, fix_crc=True):
    """Decodes a PopEF, lets fn(blobs) change it, encodes it again."""
    blobs = pio.decode_popef(data)
    r = fn(blobs)
    return pio.encode_popef(blobs if r is None else r, fix_crc=fix_crc)


def edit_cbor(data, type_, fn):
    """Edits the CBOR payload (metadata or executable) of a PopEF with fn(doc)."""
    def change(blobs):
        b = pio.find(blobs, type_)
        doc = pio.cbor_decode(b.payload)
        doc = fn(doc) or doc
        b.payload = pio.cbor_encode(doc)
    return edit(data, change)


def tensor_payload(dtype, shape, data):
    h = pio.cbor_encode({"dtype": dtype, "shape": shape})
    return struct.pack("<Q", len(h)) + h + data


def popef_cases(p):
    base, host, conv = p["base"], p["host"], p["conv"]
    c = {}
    c["popef_empty.popef"] = b""
    c["popef_bad_magic.popef"] = b"PQPEF\0" + base[6:]
    c["popef_short_header.popef"] = base[:11]
    c["popef_version2.popef"] = base[:6] + b"\x02\x00" + base[8:]
    c["popef_flags.popef"] = base[:8] + b"\x01\x00" + base[10:]
    c["popef_blob_count_huge.popef"] = base[:12] + struct.pack("<I", 0x7FFFFFFF) + base[16:]
    c["popef_blob_count_zero.popef"] = base[:12] + struct.pack("<I", 0) + base[16:]
    c["popef_truncated.popef"] = base[: len(base) * 2 // 3]
    c["popef_trailing_bytes.popef"] = base + b"\0\0\0"
    flip = bytearray(base)
    flip[len(base) - 20] ^= 0x10  # inside the last payload (the opaque ONNX copy): the CRC must catch it
    c["popef_bit_flip.popef"] = bytes(flip)

    def bad_blob_magic(blobs):
        blobs[1].magic = 0x424F4C43
    c["popef_blob_magic.popef"] = edit(base, bad_blob_magic)

    def unknown_type(blobs):
        blobs[-1].type = 9
    c["popef_unknown_blob_type.popef"] = edit(base, unknown_type)

    def lying_size(blobs):
        blobs[-1].size = len(blobs[-1].payload) + 1000
    c["popef_payload_size_lies.popef"] = edit(base, lying_size)

    def long_name(blobs):
        blobs[-1].name = b"n" * 5000
    c["popef_name_too_long.popef"] = edit(base, long_name)
    c["popef_no_metadata.popef"] = edit(base, lambda blobs: [b for b in blobs if b.type != META])
    c["popef_two_metadata.popef"] = edit(base, lambda blobs: blobs + [pio.find(blobs, META)])

    def bad_crc(blobs):
        blobs[0].crc = 0x12345678
    c["popef_bad_crc.popef"] = edit(base, bad_crc, fix_crc=False)
    c["popef_metadata_not_cbor.popef"] = edit(base, lambda blobs: setattr(pio.find(blobs, META), "payload", b"\xff\x00"))
    c["popef_metadata_bad_dtype.popef"] = edit_cbor(base, META, lambda md: md["anchors"][0].update(dtype="float33"))
    c["popef_metadata_negative_dim.popef"] = edit_cbor(base, META, lambda md: md["anchors"][0].update(shape=[2, -3]))
    c["popef_metadata_missing_key.popef"] = edit_cbor(base, META, lambda md: md.pop("num_ipus") and None)
    c["popef_anchor_shape.popef"] = edit_cbor(base, META, lambda md: md["anchors"][0].update(shape=[4, 2]))
    c["popef_anchor_missing.popef"] = edit_cbor(base, META, lambda md: md["anchors"].pop(1) and None)
    c["popef_no_executable.popef"] = edit_cbor(base, META, lambda md: md.update(executable_name="nope"))
    c["popef_num_ipus.popef"] = edit_cbor(base, META, lambda md: md.update(num_ipus=2))

    def tensor_huge_shape(blobs):
        w = pio.find(blobs, TENSOR, b"W")
        w.payload = tensor_payload("float32", [1 << 40, 1 << 40], b"\0" * 48)
    c["popef_tensor_huge_shape.popef"] = edit(base, tensor_huge_shape)

    def tensor_wrong_dtype(blobs):
        w = pio.find(blobs, TENSOR, b"W")
        w.payload = tensor_payload("float64", [4, 3], b"\0" * 96)
    c["popef_weight_dtype.popef"] = edit(base, tensor_wrong_dtype)

    def tensor_bfloat16(blobs):  # a float32 stream takes a float16, int8 or int16 blob (widened), no other narrower dtype
        w = pio.find(blobs, TENSOR, b"W")
        w.payload = tensor_payload("bfloat16", [4, 3], b"\0" * 24)
    c["popef_weight_bfloat16.popef"] = edit(base, tensor_bfloat16)

    def tensor_zero_size(blobs):
        w = pio.find(blobs, TENSOR, b"W")
        w.payload = tensor_payload("float32", [0, 3], b"")
    c["popef_weight_zero_size.popef"] = edit(base, tensor_zero_size)
    c["popef_weight_missing.popef"] = edit(base, lambda blobs: [b for b in blobs if not (b.type == TENSOR and b.name == b"W")])
    c["popef_weight_unknown.popef"] = edit(base, lambda blobs: blobs + [pio.Blob(TENSOR, b"stray", tensor_payload("float32", [1], b"\0" * 4))])
    c["popef_feed_mismatch.popef"] = edit(base, lambda blobs: blobs + [pio.Blob(FEED, b"x", tensor_payload("float32", [3], b"\0" * 12))])

    # the executable blob
    def vertices(edit_vertices, index=0):  # a compute set's packed vertices, unpacked, edited, packed
        def apply(exe):
            cs = exe["compute_sets"][index]
            vs = pio.unpack_vertices(cs["vertices"])
            edit_vertices(vs)
            cs["vertices"] = pio.pack_vertices(vs)
        return apply

    def vertex_field_oob(vs):
        vs[0][3][0][0] = 1 << 30
    c["exe_vertex_field_oob.popef"] = edit_cbor(base, EXE, vertices(vertex_field_oob))

    def unknown_codelet(vs):
        vs[0][1] = 99
    c["exe_unknown_codelet.popef"] = edit_cbor(base, EXE, vertices(unknown_codelet))

    def vertex_count(vs):  # the Relu: params [fn, count]
        vs[0][4][1] += 1
    c["exe_vertex_count_lies.popef"] = edit_cbor(base, EXE, vertices(vertex_count, -1))

    def unary_count_wraps(vs):  # the MatMul vertex made a Unary [fn 0, count] on 8 bytes whose count, 2^62 + 2
        out = list(vs[0][3][0])    # floats, is 8 bytes in 64-bit arithmetic (the check once multiplied)
        out[1] = 8
        vs[0] = [vs[0][0], 1, vs[0][2], [out, list(out)], [0, (1 << 62) + 2], []]
    c["exe_unary_count_wraps.popef"] = edit_cbor(base, EXE, vertices(unary_count_wraps))

    def misaligned(vs):
        vs[0][3][0][0] += 2
    c["exe_vertex_misaligned.popef"] = edit_cbor(base, EXE, vertices(misaligned, -1))

    def packed_vertices(edit_bytes):  # the first compute set's packed vertices, edited as bytes
        def apply(exe):
            exe["compute_sets"][0]["vertices"] = edit_bytes(exe["compute_sets"][0]["vertices"])
        return apply
    c["exe_vertices_truncated.popef"] = edit_cbor(base, EXE, packed_vertices(lambda b: b[:-1]))
    c["exe_vertices_count_lies.popef"] = edit_cbor(base, EXE, packed_vertices(lambda b: b"\xff\xff\x03" + b[1:]))
    # one Unary vertex (flags 15, tile 0, codelet 1, float32, a field) declaring 2^20 params in 5 bytes
    c["exe_vertices_params_lie.popef"] = edit_cbor(base, EXE, packed_vertices(
        lambda b: b"\x01\x0f\x00\x01\x01\x01\x00\x80\x80\x40\x00\x00\x08\x00\x08"))
    c["exe_vertices_inherit_first.popef"] = edit_cbor(base, EXE, packed_vertices(lambda b: b"\x01\x00\x00\x00"))
    c["exe_vertices_flags.popef"] = edit_cbor(base, EXE, packed_vertices(lambda b: b[:1] + b"\x1f" + b[2:]))

    def vertices_as_arrays(exe):  # version 5 stores vertices packed: the version 4 array form is refused
        cs = exe["compute_sets"][0]
        cs["vertices"] = [[v[0], v[1], "float32", [f[:2] for f in v[3]], v[4], v[5]] for v in pio.unpack_vertices(cs["vertices"])]
    c["exe_vertices_as_arrays.popef"] = edit_cbor(base, EXE, vertices_as_arrays)

    def stream_copy_oob(exe):
        s = [s for s in exe["streams"] if s["role"] == 0][0]
        s["copies"][0][4] = exe["tile_bytes"][s["copies"][0][3]]  # [host_offset, reps, host_stride, tile, tile_offset, bytes]
    c["exe_stream_copy_oob.popef"] = edit_cbor(base, EXE, stream_copy_oob)

    def stream_empty_repeats(exe):  # 2^40 repeats of nothing: unbounded work for no bytes
        s = [s for s in exe["streams"] if s["role"] == 0][0]
        s["copies"][0][1], s["copies"][0][5] = 1 << 40, 0
    c["exe_stream_empty_repeats.popef"] = edit_cbor(base, EXE, stream_empty_repeats)

    def stream_host_oob(exe):
        s = [s for s in exe["streams"] if s["role"] == 0][0]
        s["copies"][0][0] = 1 << 40
    c["exe_stream_host_oob.popef"] = edit_cbor(base, EXE, stream_host_oob)

    def exchange_oob(exe):  # the base model's matmul gathers its operands: add a copy to a far offset
        e = exe["exchanges"][0]
        e["copies"] = pio.pack_copies(pio.unpack_copies(e["copies"]) + [[0, 0, 0, 1 << 30, 4]])
    c["exe_exchange_copy_oob.popef"] = edit_cbor(base, EXE, exchange_oob)

    def packed(edit_bytes):  # the first exchange's packed copies, edited
        def apply(exe):
            exe["exchanges"][0]["copies"] = edit_bytes(exe["exchanges"][0]["copies"])
        return apply
    c["exe_copies_truncated.popef"] = edit_cbor(base, EXE, packed(lambda b: pio.pack_copies([[0, 0, 1, 0, 1 << 20]])[:-1]))
    c["exe_copies_count_lies.popef"] = edit_cbor(base, EXE, packed(lambda b: b"\xff\xff\x03" + b"\x00" * 5))
    c["exe_copies_trailing.popef"] = edit_cbor(base, EXE, packed(lambda b: b + b"\x00"))
    c["exe_copies_tile_64bit.popef"] = edit_cbor(base, EXE, packed(lambda b: pio.pack_copies([[1 << 40, 0, 0, 0, 4]])))
    c["exe_copies_overlong.popef"] = edit_cbor(base, EXE, packed(lambda b: b"\x01" + b"\xff" * 10 + b"\x01" + b"\x00" * 4))

    def regions_count_lies(exe):  # a layout's packed regions: more than its bytes can hold
        exe["layouts"][0]["regions"] = b"\x05" + b"\x00" * 3
    c["exe_regions_count_lies.popef"] = edit_cbor(base, EXE, regions_count_lies)

    def arrays_in_v5(exe):  # versions 4 and 5 store copies packed: the old array form is refused
        exe["exchanges"][0]["copies"] = [list(c) for c in pio.unpack_copies(exe["exchanges"][0]["copies"])]
    c["exe_copies_as_arrays.popef"] = edit_cbor(base, EXE, arrays_in_v5)

    def gather_oob(exe):
        e = [e for e in exe["exchanges"] if e["gathers"]][0]
        e["gathers"][0][6] = 1 << 30  # dst_offset
    c["exe_exchange_gather_oob.popef"] = edit_cbor(base, EXE, gather_oob)

    def step_oob(exe):
        exe["main"]["steps"].append([3, 1000])
    c["exe_step_index_oob.popef"] = edit_cbor(base, EXE, step_oob)

    def step_kind(exe):
        exe["main"]["steps"].append([7, 0])
    c["exe_step_kind.popef"] = edit_cbor(base, EXE, step_kind)

    def load_input(exe):
        i = [k for k, s in enumerate(exe["streams"]) if s["role"] == 0][0]
        exe["load"]["steps"].append([0, i])
    c["exe_load_streams_input.popef"] = edit_cbor(base, EXE, load_input)

    def output_never_written(exe):
        exe["main"]["steps"] = [s for s in exe["main"]["steps"] if s[0] != 1]
    c["exe_output_never_written.popef"] = edit_cbor(base, EXE, output_never_written)

    def tile_too_big(exe):
        exe["tile_bytes"][0] = exe["target"]["bytes_per_tile"] + 1
    c["exe_tile_bytes.popef"] = edit_cbor(base, EXE, tile_too_big)

    def huge_tiles(exe):  # offsets inside a tile are 32 bits in the simulator
        exe["target"]["bytes_per_tile"] = 1 << 33
    c["exe_tile_over_4gib.popef"] = edit_cbor(base, EXE, huge_tiles)

    def zero_tiles(exe):
        exe["target"]["tiles_per_ipu"] = 0
    c["exe_zero_tiles.popef"] = edit_cbor(base, EXE, zero_tiles)

    def version6(exe):
        exe["version"] = 6
    c["exe_version6.popef"] = edit_cbor(base, EXE, version6)
    c["exe_device_cap.popef"] = base  # refused under POPRT_MAX_DEVICE_BYTES=1024 (see the manifest)

    def truncated_exe(blobs):
        e = pio.find(blobs, EXE)
        e.payload = e.payload[: len(e.payload) // 2]
    c["exe_truncated.popef"] = edit(base, truncated_exe)

    def gather_overlap(exe):
        g = [e for e in exe["exchanges"] if e["gathers"]][0]["gathers"][0]
        g[3], g[7] = 1 << 40, 0  # 2^40 repeats onto the same destination row
        g[1], g[2], g[4] = 0, 50, 0  # of 50 float32 elements from the start
    c["exe_gather_repeats.popef"] = edit_cbor(conv, EXE, gather_overlap)

    def gather_oob(exe):
        g = [e for e in exe["exchanges"] if e["gathers"]][0]["gathers"][0]
        g[1] = 1 << 20  # starts past the end of its layout
    c["exe_gather_oob.popef"] = edit_cbor(conv, EXE, gather_oob)

    def host_garbage(exe):
        exe["host_programs"][0]["onnx"] = b"\x08\x07garbage"
    c["exe_host_program_garbage.popef"] = edit_cbor(host, EXE, host_garbage)

    def host_stream_index(exe):
        exe["host_programs"][0]["inputs"][0] = 999
    c["exe_host_program_stream.popef"] = edit_cbor(host, EXE, host_stream_index)
    return c


# ---- model inputs (popef-run --input x=FILE) --------------------------------------------------


def npy_bytes(a, version=None):
    b = io.BytesIO()
    if version:
        np.lib.format.write_array(b, a, version=version)
    else:
        np.save(b, a)
    return b.getvalue()


def npy_with_header(header, body):
    h = header.encode("latin1")
    pad = (64 - (10 + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + body


def input_cases():
    x = np.random.default_rng(1).uniform(-1, 1, (2, 4)).astype(np.float32)
    good = npy_bytes(x)
    body = x.tobytes()
    c = {}
    c["npy_empty.npy"] = b""
    c["npy_bad_magic.npy"] = b"\x93NUMPX" + good[6:]
    c["npy_version9.npy"] = good[:6] + b"\x09\x00" + good[8:]
    c["npy_truncated.npy"] = good[:-5]
    c["npy_trailing.npy"] = good + b"\0" * 4
    c["npy_header_len_lies.npy"] = good[:8] + struct.pack("<H", 60000) + good[10:]
    c["npy_huge_shape.npy"] = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", body)
    c["npy_negative_dim.npy"] = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 4), }", body)
    c["npy_bad_descr.npy"] = npy_with_header("{'descr': '<f9', 'fortran_order': False, 'shape': (2, 4), }", body)
    c["npy_object.npy"] = npy_with_header("{'descr': '|O', 'fortran_order': False, 'shape': (2, 4), }", body)
    c["npy_zero_width_strings.npy"] = npy_with_header("{'descr': '<U0', 'fortran_order': False, 'shape': (8589934592,), }", b"")
    c["npy_not_a_dict.npy"] = npy_with_header("[1, 2, 3]", body)
    c["npy_wrong_dtype.npy"] = npy_bytes(x.astype(np.float64))
    c["npy_zero_size.npy"] = npy_bytes(np.zeros((0, 4), np.float32))
    c["npy_wrong_shape.npy"] = npy_bytes(x.T.copy())
    t = numpy_helper.from_array(x, "x").SerializeToString()
    c["pb_truncated.pb"] = t[:-3]
    lie = numpy_helper.from_array(x, "x")
    lie.dims[0] = 3
    c["pb_dims_lie.pb"] = lie.SerializeToString()
    c["pb_wrong_dtype.pb"] = numpy_helper.from_array(x.astype(np.int32), "x").SerializeToString()
    ext = external("x", "../x.bin", dims=(2, 4))
    c["pb_ext_dotdot.pb"] = ext.SerializeToString()
    return c, good


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--bin-dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cases = onnx_cases(a.out)
    popefs = compile_base(a.bin_dir, a.out)
    cases.update(popef_cases(popefs))
    inputs, x = input_cases()
    cases.update(inputs)
    for name, data in cases.items():
        with open(os.path.join(a.out, name), "wb") as f:
            f.write(data)
    for name in ("base", "host", "conv"):
        with open(os.path.join(a.out, name + ".popef"), "wb") as f:
            f.write(popefs[name])
    with open(os.path.join(a.out, "x.npy"), "wb") as f:
        f.write(x)
    print("make_corpus: %d malformed files in %s" % (len(cases), a.out))


if __name__ == "__main__":
    main()
