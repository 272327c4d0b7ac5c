"""Shared .mlb helpers: header, layout, Q8_0/Q4_0 quantizers, writer, reader.

The file format is defined by model/mlb.h and its tensor table
(model/mlb_layout.c, authoritative) and core/quant.h; this module mirrors
them, and tests/test_mlb_layout.py checks that layout() and write_mlb() put
every array where the C table does. Used by tools/convert.py and tools/gen_random.py.
numpy only. All quantization arithmetic is float32, like the C kernels.
"""
import math
import struct

import numpy as np

import outfile  # tools/outfile.py: temporary beside the target, renamed when complete

# ---------------------------------------------------------------- constants
# core/quant.h and model/mlb.h
QK = 32
ALIGN = 64
HEADER_BYTES = 256
MAGIC = b"MLB1"
VERSION = 1
TYPE_F32, TYPE_Q4_0, TYPE_Q8_0 = 0, 2, 8
WTYPES = {"q8_0": TYPE_Q8_0, "q4_0": TYPE_Q4_0}
WTYPE_NAMES = {v: k.upper() for k, v in WTYPES.items()}

# magic, version, dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab,
# max_seq, rope_theta, norm_eps, wtype, shared_classifier (52 bytes)
_HEADER = struct.Struct("<4s8I2f2I")
assert _HEADER.size == 52
HEADER_FIELDS = ("dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim",
                 "vocab", "max_seq", "rope_theta", "norm_eps", "wtype",
                 "shared_classifier")


class MlbError(ValueError):
    """A malformed .mlb file or a model that cannot be stored as .mlb."""


# ---------------------------------------------------------------- header
def pack_header(h):
    """h: dict with HEADER_FIELDS -> 256 header bytes (zero padded)."""
    raw = _HEADER.pack(MAGIC, VERSION, h["dim"], h["n_layers"], h["n_heads"],
                       h["n_kv_heads"], h["hidden_dim"], h["vocab"], h["max_seq"],
                       h["rope_theta"], h["norm_eps"], h["wtype"],
                       int(h["shared_classifier"]))
    return raw + bytes(HEADER_BYTES - len(raw))


def unpack_header(buf):
    if len(buf) < HEADER_BYTES:
        raise MlbError(f"file has {len(buf)} bytes, less than the {HEADER_BYTES}-byte header")
    vals = _HEADER.unpack_from(buf, 0)
    if vals[0] != MAGIC:
        raise MlbError(f"bad magic {vals[0]!r}, expected {MAGIC!r}")
    if vals[1] != VERSION:
        raise MlbError(f"version {vals[1]}, expected {VERSION}")
    return dict(zip(HEADER_FIELDS, vals[2:]))


# The loader's header rules (model/loader.c parse_header), field by field:
# (field, lowest, highest); a bound naming another field is that field's
# value. tests/test_mlb_limits.py checks, against the built loader, that a
# header passes check_shape() exactly when the loader accepts it.
MAX_DIM, MAX_LAYERS, MAX_VOCAB, MAX_SEQ = 1 << 16, 1024, 1 << 22, 1 << 20
LIMITS = (("dim", 1, MAX_DIM), ("n_layers", 1, MAX_LAYERS), ("n_heads", 1, "dim"),
          ("n_kv_heads", 1, "n_heads"), ("hidden_dim", 1, 4 * MAX_DIM),
          ("vocab", 1, MAX_VOCAB), ("max_seq", 1, MAX_SEQ))


def _f32(v):
    """v as the header's float32 stores it (inf when it overflows)."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)
    except (struct.error, TypeError):
        return math.nan


def check_shape(h):
    """Exactly the loader's header rules (model/loader.c), in its order, with
    its words: a header passing here loads (DESIGN §6). Any Python value is
    refused with an MlbError, never a traceback."""
    for k, lo, hi in LIMITS:
        v, hi = h[k], h[hi] if isinstance(hi, str) else hi
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise MlbError(f"header field {k}: expected {lo}..{hi}, got {v}")
    if h["dim"] % QK:
        raise MlbError(f"dim: expected a multiple of {QK} (the quantization block), got {h['dim']}")
    if h["hidden_dim"] % QK:
        raise MlbError(f"hidden_dim: expected a multiple of {QK}, got {h['hidden_dim']}")
    if h["dim"] % h["n_heads"]:
        raise MlbError(f"n_heads: expected a divisor of dim {h['dim']}, got {h['n_heads']}")
    if (h["dim"] // h["n_heads"]) % 2:
        raise MlbError(f"head_dim (dim/n_heads): expected even (RoPE rotates pairs), got "
                       f"{h['dim'] // h['n_heads']}")
    if h["n_heads"] % h["n_kv_heads"]:
        raise MlbError(f"n_kv_heads: expected a divisor of n_heads {h['n_heads']}, got {h['n_kv_heads']}")
    if h["wtype"] not in WTYPE_NAMES:
        raise MlbError(f"wtype: expected {TYPE_Q8_0} (Q8_0) or {TYPE_Q4_0} (Q4_0), got {h['wtype']}")
    if h["shared_classifier"] not in (0, 1):
        raise MlbError(f"shared_classifier: expected 0 or 1, got {h['shared_classifier']}")
    theta, eps = _f32(h["rope_theta"]), _f32(h["norm_eps"])
    if not (math.isfinite(theta) and theta > 1.0):
        raise MlbError(f"rope_theta: expected a finite value > 1 (as float32), got {h['rope_theta']}")
    if not (math.isfinite(eps) and 0.0 <= eps <= 1.0):
        raise MlbError(f"norm_eps: expected a finite value in [0, 1] (as float32), got {h['norm_eps']}")


# ---------------------------------------------------------------- layout
def tensor_plan(h):
    """[(name, shape)] in file order; 1-D shapes are F32 norms, 2-D are
    (rows, cols) matrices stored in h['wtype']."""
    dim, hid, vocab = h["dim"], h["hidden_dim"], h["vocab"]
    kv_dim = h["n_kv_heads"] * (dim // h["n_heads"])
    plan = [("tok_emb", (vocab, dim))]
    for l in range(h["n_layers"]):
        p = f"layers.{l}."
        plan += [(p + "attn_norm", (dim,)), (p + "wq", (dim, dim)),
                 (p + "wk", (kv_dim, dim)), (p + "wv", (kv_dim, dim)),
                 (p + "wo", (dim, dim)), (p + "ffn_norm", (dim,)),
                 (p + "w1", (hid, dim)), (p + "w2", (dim, hid)), (p + "w3", (hid, dim))]
    plan.append(("final_norm", (dim,)))
    if not h["shared_classifier"]:
        plan.append(("wcls", (vocab, dim)))
    return plan


def quant_bytes(wtype, n):
    """Bytes of quants for n elements (core/quant.h ml_quant_bytes)."""
    return n if wtype == TYPE_Q8_0 else n // 2 if wtype == TYPE_Q4_0 else n * 4


def align_up(n, a=ALIGN):
    return (n + a - 1) // a * a


def layout(h):
    """[(array_name, offset, nbytes)] in file order, and the file size.
    Matrices contribute 'X.q' then 'X.d'; norms one array 'X'."""
    arrays, end = [], HEADER_BYTES
    for name, shape in tensor_plan(h):
        if len(shape) == 1:
            parts = [(name, shape[0] * 4)]
        else:
            n = shape[0] * shape[1]
            parts = [(name + ".q", quant_bytes(h["wtype"], n)), (name + ".d", n // QK * 4)]
        for aname, nbytes in parts:
            off = align_up(end)
            arrays.append((aname, off, nbytes))
            end = off + nbytes
    return arrays, end


# ---------------------------------------------------------------- quantizers
def _blocks(x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] % QK:
        raise MlbError(f"cannot quantize shape {x.shape}: need 2-D with cols % {QK} == 0")
    return x.reshape(-1, QK)


def quantize_q8_0(x):
    """(rows, cols) float32 -> q int8 (rows, cols), d float32 (rows, cols/32).
    d = amax/127, q = trunc(x*id + copysign(0.5, x)) with id = 127/amax: the
    same float32 operations as the C quantize_q8 kernel (DESIGN §5)."""
    b = _blocks(x)
    amax = np.max(np.abs(b), axis=1)
    d = amax / np.float32(127)
    inv = np.zeros_like(amax)
    np.divide(np.float32(127), amax, out=inv, where=amax != 0)
    # A block of subnormals can make 127/amax overflow to inf; then 0*inf is
    # NaN, which must quantize to 0 like any other zero.
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.trunc(b * inv[:, None] + np.copysign(np.float32(0.5), b))
    v = np.nan_to_num(v, nan=0.0, posinf=127.0, neginf=-127.0)
    q = np.clip(v, -127, 127).astype(np.int8)
    return q.reshape(x.shape), d.reshape(x.shape[0], -1)


def quantize_q4_0(x):
    """(rows, cols) float32 -> q uint8 (rows, cols/2), d float32 (rows, cols/32).
    ggml's Q4_0 rule: m = the signed element of largest |x| (first one),
    d = m / -8, q = min(15, trunc(x/d + 8.5)); so m maps to exactly -8 and
    the full [-8, 7] range is used. Byte j of a block holds element j in the
    low nibble and element 16+j in the high nibble (model/mlb.h)."""
    b = _blocks(x)
    m = b[np.arange(len(b)), np.argmax(np.abs(b), axis=1)]
    # +0.0, not -0.0, for an all-zero block (0 / -8 is -0.0)
    d = np.where(m == 0, np.float32(0), m / np.float32(-8)).astype(np.float32)
    inv = np.zeros_like(d)
    np.divide(np.float32(1), d, out=inv, where=d != 0)
    # Same overflow guard as Q8_0: NaN (0*inf) is a zero, stored as 8.
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.trunc(b * inv[:, None] + np.float32(8.5))
    v = np.nan_to_num(v, nan=8.0, posinf=15.0, neginf=0.0)
    nib = np.clip(v, 0, 15).astype(np.uint8)
    packed = nib[:, :QK // 2] | (nib[:, QK // 2:] << 4)
    return packed.reshape(x.shape[0], -1), d.reshape(x.shape[0], -1)


def quantize(wtype, x):
    return quantize_q8_0(x) if wtype == TYPE_Q8_0 else quantize_q4_0(x)


class Quantized:
    """A matrix already in a .mlb weight type (q, d as quantize returns
    them), stored as-is: a lossless import of another format's blocks."""

    def __init__(self, wtype, q, d):
        self.wtype, self.q, self.d = wtype, q, d
        self.shape = (d.shape[0], d.shape[1] * QK)

    def values(self):
        return dequantize(self.wtype, self.q, self.d)

    def pad_rows(self, n):
        """n more rows of zeros, quantized exactly as quantize() would."""
        zq, zd = quantize(self.wtype, np.zeros((n, self.shape[1]), np.float32))
        return Quantized(self.wtype, np.concatenate([self.q, zq]), np.concatenate([self.d, zd]))


def dequantize(wtype, q, d):
    """Inverse of quantize: (rows, cols) float32."""
    rows = d.shape[0]
    if wtype == TYPE_Q8_0:
        v = q.reshape(-1, QK).astype(np.float32)
    else:
        p = q.reshape(-1, QK // 2)
        v = np.concatenate([p & 0x0F, p >> 4], axis=1).astype(np.float32) - np.float32(8)
    return (v * d.reshape(-1, 1)).reshape(rows, -1)


# ---------------------------------------------------------------- writer
def write_mlb(path, h, tensors, on_tensor=None, out=None):
    """Write a .mlb file atomically (tools/outfile.py): to a fresh temporary
    beside path, renamed over it when complete.

    h: header dict (HEADER_FIELDS). tensors: iterable of (name, float32
    array or Quantized of h's wtype) in tensor_plan(h) order. on_tensor(name,
    x, q, d) is called for each matrix after quantization (q, d None for
    norms; x the float values of a Quantized). Returns the size.
    out: an outfile.AtomicFile the caller commits (with other files);
    otherwise this commits. On any error the temporary is removed and path
    keeps what it held."""
    check_shape(h)
    own = out is None
    if own:
        out = outfile.AtomicFile(path, "the output")
    try:
        size = _write_body(out.f, h, tensors, on_tensor)
        if own:
            out.commit()
    except BaseException:
        # Also on KeyboardInterrupt: never leave a partial file behind.
        out.abort()
        raise
    return size


class _Counted:
    """A file's write() that counts: tell() also works on a pipe or device."""

    def __init__(self, f):
        self.f, self.n = f, 0

    def write(self, b):
        self.f.write(b)
        self.n += len(b)

    def tell(self):
        return self.n


def _write_body(f, h, tensors, on_tensor):
    f = _Counted(f)
    arrays, size = layout(h)
    offsets = {a: off for a, off, _ in arrays}
    f.write(pack_header(h))
    it = iter(tensors)
    for name, shape in tensor_plan(h):
        got = next(it, None)
        if got is None:
            raise MlbError(f"tensor stream ended before {name}")
        gname, x = got
        if gname != name or tuple(x.shape) != shape:
            raise MlbError(f"expected {name} {shape}, got {gname} {tuple(x.shape)}")
        if len(shape) == 1:
            _write_at(f, offsets[name], np.asarray(x, dtype="<f4"))
            q = d = None
        else:
            if isinstance(x, Quantized):
                if x.wtype != h["wtype"]:
                    raise MlbError(f"{name} is {WTYPE_NAMES[x.wtype]}, the file "
                                   f"{WTYPE_NAMES[h['wtype']]}")
                q, d, x = x.q, x.d, x.values()
            else:
                q, d = quantize(h["wtype"], x)
            _write_at(f, offsets[name + ".q"], q)
            _write_at(f, offsets[name + ".d"], d.astype("<f4"))
        if on_tensor:
            on_tensor(name, x, q, d)
    if next(it, None) is not None:
        raise MlbError("more tensors than the header describes")
    if f.tell() != size:
        raise MlbError(f"wrote {f.tell()} bytes, layout says {size}")
    return size


def _write_at(f, off, arr):
    pos = f.tell()
    if off < pos:
        raise MlbError(f"array overlaps previous one at offset {off}")
    f.write(bytes(off - pos))  # zero gap up to the 64-byte boundary
    f.write(np.ascontiguousarray(arr).tobytes())


# ---------------------------------------------------------------- tokenizer
def tokenizer_bytes(pieces):
    """llama2.c tokenizer.bin from [(piece bytes, score)] in id order: u32
    max_token_length, then per token f32 score, u32 len, the bytes."""
    out = [struct.pack("<I", max(len(p) for p, _ in pieces))]
    for p, score in pieces:
        out += [struct.pack("<fI", score, len(p)), p]
    return b"".join(out)


def tokenizer_pieces_from(buf, vocab):
    """tokenizer_bytes' inverse: the first vocab [(piece bytes, score)] of a
    llama2.c tokenizer.bin image (the file holds no count of its own)."""
    pieces, off = [], 4
    for i in range(vocab):
        if off + 8 > len(buf):
            raise MlbError(f"tokenizer: {len(buf)} bytes end before token {i} of {vocab}")
        score, n = struct.unpack_from("<fI", buf, off)
        if off + 8 + n > len(buf):
            raise MlbError(f"tokenizer: token {i} of {n} bytes runs past the end ({len(buf)} bytes)")
        pieces.append((bytes(buf[off + 8:off + 8 + n]), score))
        off += 8 + n
    return pieces


# ---------------------------------------------------------------- reader
def read_mlb(path):
    """-> (header dict, {array_name: np array view}); matrices as q (rows,
    cols or cols/2) and d (rows, cols/32), norms as float32 (n,).
    Validates the header and that the file size matches the layout."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    h = unpack_header(bytes(data[:HEADER_BYTES]))
    check_shape(h)
    arrays, size = layout(h)
    if len(data) != size:
        raise MlbError(f"{path}: file is {len(data)} bytes, layout says {size}")
    shapes = dict(tensor_plan(h))
    out = {}
    for aname, off, nbytes in arrays:
        raw = data[off:off + nbytes]
        base, _, part = aname.rpartition(".")
        if part == "q" and base in shapes:
            rows, cols = shapes[base]
            dt = np.int8 if h["wtype"] == TYPE_Q8_0 else np.uint8
            out[aname] = raw.view(dt).reshape(rows, -1)
        elif part == "d" and base in shapes:
            out[aname] = raw.view("<f4").reshape(shapes[base][0], -1)
        else:
            out[aname] = raw.view("<f4")
    return h, out
