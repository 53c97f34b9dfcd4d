"""PopEF files and their CBOR, in Python, for crafting malformed files (docs/POPEF.md).

decode_popef(bytes) -> [Blob]; encode_popef([Blob], fix_crc=True) -> bytes; cbor_decode /
cbor_encode for the metadata and executable payloads (definite lengths, as poprt writes them).
The encoder is deliberately plain: it writes what it is given, so tests can build files that a
careful writer never would (wrong CRCs, lying sizes, bad blob counts).
"""

import copy
import struct
import zlib


class Blob:
    def __init__(self, type_, name, payload, version=1, crc=None, size=None, magic=0x424F4C42):
        self.type, self.name, self.payload = type_, name, payload
        self.version, self.crc, self.size, self.magic = version, crc, size, magic


def decode_popef(data):
    (count,) = struct.unpack_from("<I", data, 12)
    o, blobs = 16, []
    for _ in range(count):
        magic, ver, typ, size, crc, nlen = struct.unpack_from("<IHHQII", data, o)
        name = data[o + 24:o + 24 + nlen]
        blobs.append(Blob(typ, name, data[o + 24 + nlen:o + 24 + nlen + size], ver, crc, None, magic))
        o += 24 + nlen + size
    assert o == len(data), "not a well-formed PopEF"
    return blobs


def encode_popef(blobs, fix_crc=True, count=None, version=1, flags=0, reserved=0):
    out = bytearray(b"POPEF\0" + struct.pack("<HHHI", version, flags, reserved, len(blobs) if count is None else count))
    for b in blobs:
        crc = zlib.crc32(b.payload) if (fix_crc or b.crc is None) else b.crc
        size = len(b.payload) if b.size is None else b.size
        out += struct.pack("<IHHQII", b.magic, b.version, b.type, size, crc, len(b.name)) + b.name + b.payload
    return bytes(out)


def find(blobs, type_, name=None):
    for b in blobs:
        if b.type == type_ and (name is None or b.name == name):
            return b
    raise KeyError((type_, name))


# ---- CBOR (RFC 8949), the subset poprt reads and writes ------------------------------------


class Float32(float):
    """A float written as CBOR float32 (as poprt writes floats that fit)."""


def cbor_decode(data):
    value, pos = _item(data, 0)
    assert pos == len(data), "trailing CBOR bytes"
    return value


def _head(data, pos):
    ib = data[pos]
    major, ai = ib >> 5, ib & 31
    pos += 1
    if ai < 24:
        return major, ai, ai, pos
    n = 1 << (ai - 24)
    return major, ai, int.from_bytes(data[pos:pos + n], "big"), pos + n


def _item(data, pos):
    major, ai, v, pos = _head(data, pos)
    if major == 0:
        return v, pos
    if major == 1:
        return -1 - v, pos
    if major == 2:
        return bytes(data[pos:pos + v]), pos + v
    if major == 3:
        return data[pos:pos + v].decode("utf-8"), pos + v
    if major == 4:
        items = []
        for _ in range(v):
            x, pos = _item(data, pos)
            items.append(x)
        return items, pos
    if major == 5:
        d = {}
        for _ in range(v):
            k, pos = _item(data, pos)
            d[k], pos = _item(data, pos)
        return d, pos
    if major == 7:
        if ai == 20:
            return False, pos
        if ai == 21:
            return True, pos
        if ai == 22:
            return None, pos
        raw = v.to_bytes({25: 2, 26: 4, 27: 8}[ai], "big")
        return (Float32(struct.unpack(">f", raw)[0]) if ai == 26 else
                struct.unpack(">e", raw)[0] if ai == 25 else struct.unpack(">d", raw)[0]), pos
    raise ValueError("CBOR major type %d not supported" % major)


def _encode_head(major, v):
    if v < 24:
        return bytes([major << 5 | v])
    for ai, n in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if v < 1 << (8 * n):
            return bytes([major << 5 | ai]) + v.to_bytes(n, "big")
    raise ValueError("integer too large for CBOR")


def cbor_encode(x):
    if x is True:
        return b"\xf5"
    if x is False:
        return b"\xf4"
    if x is None:
        return b"\xf6"
    if isinstance(x, int):
        return _encode_head(0, x) if x >= 0 else _encode_head(1, -1 - x)
    if isinstance(x, float):
        if x != x or x in (float("inf"), float("-inf")):
            return b"\xf9" + struct.pack(">e", x)  # NaN and infinities as float16, as poprt writes them
        if isinstance(x, Float32) or struct.unpack(">f", struct.pack(">f", x))[0] == x:
            return b"\xfa" + struct.pack(">f", x)
        return b"\xfb" + struct.pack(">d", x)
    if isinstance(x, bytes):
        return _encode_head(2, len(x)) + x
    if isinstance(x, str):
        b = x.encode("utf-8")
        return _encode_head(3, len(b)) + b
    if isinstance(x, list):
        return _encode_head(4, len(x)) + b"".join(cbor_encode(i) for i in x)
    if isinstance(x, dict):
        return _encode_head(5, len(x)) + b"".join(cbor_encode(k) + cbor_encode(v) for k, v in x.items())
    raise TypeError(type(x))


# ---- packed exchange copies (format 4) and vertices (format 5); docs/POPEF.md ------------------
def _varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _zigzag(a, b):
    d = (b - a) % (1 << 64)
    if d >= 1 << 63:
        d -= 1 << 64
    return ((d << 1) ^ (d >> 63)) % (1 << 64)


def pack_copies(copies):
    """[src_tile, src_offset, dst_tile, dst_offset, bytes] lists -> the packed byte string."""
    out = bytearray(_varint(len(copies)))
    prev = [0, 0, 0, 0, 0]
    for c in copies:
        out += _varint(_zigzag(prev[0], c[0])) + _varint(_zigzag(prev[1], c[1])) + _varint(_zigzag(prev[2], c[2]))
        out += _varint(_zigzag(prev[3] + prev[4], c[3])) + _varint(_zigzag(prev[4], c[4]))
        prev = list(c)
    return bytes(out)


class _VarintReader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def next(self):
        v, shift = 0, 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v


def _unzig(base, z):
    return (base + ((z >> 1) ^ -(z & 1))) % (1 << 64)


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def pack_vertices(vertices):
    """[tile, codelet, dtype, [[offset, bytes, field_dtype], ...], params, fparams] lists (dtypes as
    ONNX numbers, a field's 0 meaning the vertex's) -> the packed byte string. Every vertex is
    written with all its values (flags 15): plain, so a test can write what the compiler never would."""
    out = bytearray(_varint(len(vertices)))
    prev_tile = 0
    for tile, codelet, dtype, fields, params, fparams in vertices:
        out += _varint(15) + _varint(_zigzag(prev_tile, tile)) + _varint(codelet) + _varint(dtype) + _varint(len(fields))
        out += b"".join(_varint(f[2]) for f in fields) + _varint(len(params)) + _varint(len(fparams))
        out += b"".join(_varint(_zigzag(0, f[0])) for f in fields) + b"".join(_varint(_zigzag(0, f[1])) for f in fields)
        out += b"".join(_varint(_zigzag(0, p)) for p in params) + b"".join(struct.pack("<f", f) for f in fparams)
        prev_tile = tile
    return bytes(out)


def unpack_vertices(data):
    r, vertices = _VarintReader(data), []
    for _ in range(r.next()):
        flags = r.next()
        v = copy.deepcopy(vertices[-1]) if not flags & 1 else None
        tile = _unzig(vertices[-1][0] if vertices else 0, r.next())
        if flags & 1:
            codelet, dtype, nf = r.next(), r.next(), r.next()
            fdt = [r.next() for _ in range(nf)]
            npar, nfp = r.next(), r.next()
            v = [tile, codelet, dtype, [[0, 0, d] for d in fdt], [0] * npar, [0.0] * nfp]
        v[0] = tile
        for f in v[3]:
            f[0] = _unzig(f[0], r.next())
        if flags & 8:
            for f in v[3]:
                f[1] = _unzig(f[1], r.next())
        if flags & 2:
            v[4] = [_signed(_unzig(p % (1 << 64), r.next())) for p in v[4]]
        if flags & 4:
            v[5] = [struct.unpack_from("<f", data, r.pos + 4 * i)[0] for i in range(len(v[5]))]
            r.pos += 4 * len(v[5])
        vertices.append(v)
    return vertices


def unpack_copies(data):
    r, copies, prev = _VarintReader(data), [], [0, 0, 0, 0, 0]
    for _ in range(r.next()):
        c = [_unzig(prev[0], r.next()), _unzig(prev[1], r.next()), _unzig(prev[2], r.next()), 0, 0]
        c[3] = _unzig(prev[3] + prev[4], r.next())
        c[4] = _unzig(prev[4], r.next())
        copies.append(c)
        prev = c
    return copies
