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

# Version 2 (model/mlb.h): from byte 52, stype, head_dim, flags,
# rope_scaling, rope_factor, rope_low_freq_factor, rope_high_freq_factor,
# rope_orig_max_seq, bos, eos, eot, add_bos, reserved, tok_off, tok_bytes,
# tmpl_off, tmpl_bytes (to byte 136); the rest zero.
VERSION_2 = 2
_HEADER_V2 = struct.Struct("<4I3fI3i2I4Q")
assert 52 + _HEADER_V2.size == 136
FLAG_QKV_BIAS, FLAG_QK_NORM = 1, 2
ROPE_NONE, ROPE_LLAMA3 = 0, 1
STYPE_F32, STYPE_F16 = 0, 1
# A header dict's version-2 fields when absent; "tokenizer" (bytes) and
# "chat_template" (bytes, UTF-8) are the sections, placed by layout().
V2_DEFAULTS = dict(version=VERSION, stype=STYPE_F32, head_dim=0, flags=0, rope_scaling=ROPE_NONE,
                   rope_factor=0.0, rope_low_freq_factor=0.0, rope_high_freq_factor=0.0,
                   rope_orig_max_seq=0, bos=-1, eos=-1, eot=-1, add_bos=0, tokenizer=b"",
                   chat_template=b"")
V2_FIELDS = ("stype", "head_dim", "flags", "rope_scaling", "rope_factor", "rope_low_freq_factor",
             "rope_high_freq_factor", "rope_orig_max_seq", "bos", "eos", "eot", "add_bos")


def v2(h, key):
    return h.get(key, V2_DEFAULTS[key])


def head_dim(h):
    """The header's head_dim, or dim / n_heads (version 1, or 0)."""
    hd = v2(h, "head_dim") if v2(h, "version") >= VERSION_2 else 0
    return hd or h["dim"] // h["n_heads"]


class MlbError(ValueError):
    """A malformed .mlb file or a model that cannot be stored as .mlb."""


# ---------------------------------------------------------------- header
def pack_header(h):
    """h: dict with HEADER_FIELDS (and for version 2 the V2_DEFAULTS keys it
    sets) -> 256 header bytes (zero padded)."""
    version = v2(h, "version")
    raw = _HEADER.pack(MAGIC, version, h["dim"], h["n_layers"], h["n_heads"],
                       h["n_kv_heads"], h["hidden_dim"], h["vocab"], h["max_seq"],
                       h["rope_theta"], h["norm_eps"], h["wtype"],
                       int(h["shared_classifier"]))
    if version >= VERSION_2:
        (tok_off, tok_n), (tmpl_off, tmpl_n) = sections(h)
        raw += _HEADER_V2.pack(*(v2(h, k) for k in V2_FIELDS), 0, tok_off, tok_n, tmpl_off, tmpl_n)
    return raw + bytes(HEADER_BYTES - len(raw))


def unpack_header(buf):
    if len(buf) < HEADER_BYTES:
        raise MlbError(f"file has {len(buf)} bytes, less than the {HEADER_BYTES}-byte header")
    vals = _HEADER.unpack_from(buf, 0)
    if vals[0] != MAGIC:
        raise MlbError(f"bad magic {vals[0]!r}, expected {MAGIC!r}")
    if vals[1] not in (VERSION, VERSION_2):
        raise MlbError(f"version {vals[1]}, expected {VERSION} or {VERSION_2}")
    h = dict(zip(HEADER_FIELDS, vals[2:]), version=vals[1])
    if vals[1] >= VERSION_2:
        w = _HEADER_V2.unpack_from(buf, 52)
        h.update(zip(V2_FIELDS, w[:12]))
        if w[12] or any(buf[136:HEADER_BYTES]):
            raise MlbError("reserved header bytes are not zero")
        h["_sections"] = ((w[13], w[14]), (w[15], w[16]))
    return h


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
    hd = v2(h, "head_dim") if v2(h, "version") >= VERSION_2 else 0
    if not hd and h["dim"] % h["n_heads"]:
        raise MlbError(f"n_heads: expected a divisor of dim {h['dim']}, got {h['n_heads']}")
    if not hd and (h["dim"] // h["n_heads"]) % 2:
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
    if v2(h, "version") >= VERSION_2:
        check_v2(h)


def check_v2(h):
    """The loader's version-2 rules (model/loader.c parse_v2), its words."""
    if v2(h, "stype") not in (STYPE_F32, STYPE_F16):
        raise MlbError(f"stype: expected 0 (F32) or 1 (F16), got {v2(h, 'stype')}")
    if v2(h, "flags") & ~(FLAG_QKV_BIAS | FLAG_QK_NORM):
        raise MlbError(f"flags: unknown bits in {v2(h, 'flags'):#x}")
    hd = v2(h, "head_dim")
    if hd:
        if hd % 2 or hd > MAX_DIM:
            raise MlbError(f"head_dim: expected 0 or an even value up to {MAX_DIM}, got {hd}")
        q_dim = h["n_heads"] * hd
        if q_dim > MAX_DIM or q_dim % QK:
            raise MlbError(f"head_dim: n_heads {h['n_heads']} * head_dim {hd} = {q_dim}, expected a "
                           f"multiple of {QK} up to {MAX_DIM}")
    rope = [_f32(v2(h, k)) for k in ("rope_factor", "rope_low_freq_factor", "rope_high_freq_factor")]
    if v2(h, "rope_scaling") == ROPE_NONE:
        if any(rope) or v2(h, "rope_orig_max_seq"):
            raise MlbError("rope_factor, rope_low/high_freq_factor, rope_orig_max_seq: expected 0 "
                           "without rope_scaling")
    elif v2(h, "rope_scaling") == ROPE_LLAMA3:
        if not (math.isfinite(rope[0]) and rope[0] > 0):
            raise MlbError(f"rope_factor: expected a finite value > 0, got {rope[0]}")
        if not (math.isfinite(rope[1]) and rope[1] > 0):
            raise MlbError(f"rope_low_freq_factor: expected a finite value > 0, got {rope[1]}")
        if not (math.isfinite(rope[2]) and rope[2] > rope[1]):
            raise MlbError(f"rope_high_freq_factor: expected a finite value > rope_low_freq_factor "
                           f"{rope[1]}, got {rope[2]}")
        if not 1 <= v2(h, "rope_orig_max_seq") <= MAX_SEQ:
            raise MlbError(f"rope_orig_max_seq: expected 1..{MAX_SEQ}, got {v2(h, 'rope_orig_max_seq')}")
    else:
        raise MlbError(f"rope_scaling: expected 0 (none) or 1 (llama3), got {v2(h, 'rope_scaling')}")
    for k in ("bos", "eos", "eot"):
        if not -1 <= v2(h, k) < h["vocab"]:
            raise MlbError(f"{k}: expected -1 (none) or a token id 0..{h['vocab'] - 1}, got {v2(h, k)}")
    if v2(h, "add_bos") not in (0, 1) or (v2(h, "add_bos") and v2(h, "bos") < 0):
        raise MlbError(f"add_bos: expected 0 or 1 (1 needs a bos), got {v2(h, 'add_bos')} with bos "
                       f"{v2(h, 'bos')}")
    if b"\0" in bytes(v2(h, "chat_template")):
        raise MlbError("chat template: a NUL byte (expected UTF-8 text without NUL)")


# ---------------------------------------------------------------- layout
def tensor_plan(h):
    """[(name, shape)] in file order; 1-D shapes are F32 norms, 2-D are
    (rows, cols) matrices stored in h['wtype']."""
    dim, hid, vocab = h["dim"], h["hidden_dim"], h["vocab"]
    hd = head_dim(h)
    q_dim, kv_dim = h["n_heads"] * hd, h["n_kv_heads"] * hd
    flags = v2(h, "flags") if v2(h, "version") >= VERSION_2 else 0
    plan = [("tok_emb", (vocab, dim))]
    for l in range(h["n_layers"]):
        p = f"layers.{l}."
        plan += [(p + "attn_norm", (dim,)), (p + "wq", (q_dim, dim)),
                 (p + "wk", (kv_dim, dim)), (p + "wv", (kv_dim, dim))]
        if flags & FLAG_QKV_BIAS:
            plan += [(p + "bq", (q_dim,)), (p + "bk", (kv_dim,)), (p + "bv", (kv_dim,))]
        if flags & FLAG_QK_NORM:
            plan += [(p + "q_norm", (hd,)), (p + "k_norm", (hd,))]
        plan += [(p + "wo", (dim, q_dim)), (p + "ffn_norm", (dim,)),
                 (p + "w1", (hid, dim)), (p + "w2", (dim, hid)), (p + "w3", (hid, dim))]
    plan.append(("final_norm", (dim,)))
    if not h["shared_classifier"]:
        plan.append(("wcls", (vocab, dim)))
    return plan


def quant_bytes(wtype, n):
    """Bytes of quants for n elements (core/quant.h ml_quant_bytes)."""
    return n if wtype == TYPE_Q8_0 else n // 2 if wtype == TYPE_Q4_0 else n * 4


def scale_bytes(h):
    """Bytes of one block scale (core/quant.h ml_scale_bytes)."""
    return 2 if v2(h, "stype") == STYPE_F16 else 4


def scale_dtype(h):
    """The little-endian dtype of h's X.d arrays."""
    return "<f2" if v2(h, "stype") == STYPE_F16 else "<f4"


def align_up(n, a=ALIGN):
    return (n + a - 1) // a * a


def arrays_end(h):
    """The end of the last tensor array (where the sections may start)."""
    return _array_layout(h)[1]


def sections(h):
    """((tok_off, tok_bytes), (tmpl_off, tmpl_bytes)) of a version-2 header:
    each at the next multiple of 64 after what precedes it; (0, 0) if absent."""
    end, out = arrays_end(h), []
    for key in ("tokenizer", "chat_template"):
        n = len(v2(h, key))
        off = align_up(end) if n else 0
        out.append((off, n))
        end = off + n if n else end
    return tuple(out)


def layout(h):
    """[(array_name, offset, nbytes)] in file order, and the file size.
    Matrices contribute 'X.q' then 'X.d'; norms one array 'X'; a version-2
    file's sections are 'tokenizer' and 'chat_template' (when present)."""
    arrays, end = _array_layout(h)
    if v2(h, "version") >= VERSION_2:
        for name, (off, n) in zip(("tokenizer", "chat_template"), sections(h)):
            if n:
                arrays.append((name, off, n))
                end = off + n
    return arrays, end


def _array_layout(h):
    arrays, end = [], HEADER_BYTES
    for name, shape in tensor_plan(h):
        if len(shape) == 1:
            parts = [(name, shape[0] * 4)]
        else:
            n = shape[0] * shape[1]
            parts = [(name + ".q", quant_bytes(h["wtype"], n)), (name + ".d", n // QK * scale_bytes(h))]
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


class F16Overflow(MlbError):
    """A block's scale is beyond fp16's range (65504)."""


def _f16_scales(d):
    """d (float32) rounded to fp16 (numpy: to nearest, ties to even, as
    core/quant.h ml_f32_to_f16), and 1/d16 in float32 (0 where d16 is 0)."""
    with np.errstate(over="ignore"):
        d16 = d.astype(np.float16)
    if not np.isfinite(d16).all():
        i = int(np.flatnonzero(~np.isfinite(d16))[0])
        raise F16Overflow(f"block {i}: scale {float(d[i]):g} overflows fp16 (max 65504)")
    inv = np.zeros_like(d)
    np.divide(np.float32(1), d16.astype(np.float32), out=inv, where=d16 != 0)
    return d16, inv


def quantize_q8_0(x, f16=False):
    """(rows, cols) float32 -> q int8 (rows, cols), d float32 (rows, cols/32).
    d = amax/127, q = trunc(x*id + copysign(0.5, x)) with id = 127/amax: the
    same float32 operations as the C quantize_q8 kernel (DESIGN §5).
    f16: d is rounded to fp16 first (d float16) and id = 1/d16, so the quants
    fit the scale the file stores (clipped to +-127 when d16 < d)."""
    b = _blocks(x)
    amax = np.max(np.abs(b), axis=1)
    d = amax / np.float32(127)
    if f16:
        d, inv = _f16_scales(d)
    else:
        inv = np.zeros_like(amax)
        np.divide(np.float32(127), amax, out=inv, where=amax != 0)
    # A block of subnormals can make 127/amax overflow to inf; then 0*inf is
    # NaN, which must quantize to 0 like any other zero.
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.trunc(b * inv[:, None] + np.copysign(np.float32(0.5), b))
    v = np.nan_to_num(v, nan=0.0, posinf=127.0, neginf=-127.0)
    q = np.clip(v, -127, 127).astype(np.int8)
    return q.reshape(x.shape), d.reshape(x.shape[0], -1)


def quantize_q4_0(x, f16=False):
    """(rows, cols) float32 -> q uint8 (rows, cols/2), d float32 (rows, cols/32).
    ggml's Q4_0 rule: m = the signed element of largest |x| (first one),
    d = m / -8, q = min(15, trunc(x/d + 8.5)); so m maps to exactly -8 and
    the full [-8, 7] range is used. Byte j of a block holds element j in the
    low nibble and element 16+j in the high nibble (model/mlb.h).
    f16: d is rounded to fp16 first (d float16), q uses 1/d16."""
    b = _blocks(x)
    m = b[np.arange(len(b)), np.argmax(np.abs(b), axis=1)]
    # +0.0, not -0.0, for an all-zero block (0 / -8 is -0.0)
    d = np.where(m == 0, np.float32(0), m / np.float32(-8)).astype(np.float32)
    if f16:
        d, inv = _f16_scales(d)
    else:
        inv = np.zeros_like(d)
        np.divide(np.float32(1), d, out=inv, where=d != 0)
    # Same overflow guard as Q8_0: NaN (0*inf) is a zero, stored as 8.
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.trunc(b * inv[:, None] + np.float32(8.5))
    v = np.nan_to_num(v, nan=8.0, posinf=15.0, neginf=0.0)
    nib = np.clip(v, 0, 15).astype(np.uint8)
    packed = nib[:, :QK // 2] | (nib[:, QK // 2:] << 4)
    return packed.reshape(x.shape[0], -1), d.reshape(x.shape[0], -1)


def quantize(wtype, x, f16=False):
    """f16: fp16 block scales (d float16), else float32."""
    return quantize_q8_0(x, f16) if wtype == TYPE_Q8_0 else quantize_q4_0(x, f16)


class Quantized:
    """A matrix already in a .mlb weight type (q, d as quantize returns
    them; d float16 or float32), stored as-is: a lossless import of another
    format's blocks. fp16 d goes to an fp32-scale file exactly; fp32 d goes
    to an fp16-scale file only when every scale is an fp16 value."""

    def __init__(self, wtype, q, d):
        self.wtype, self.q, self.d = wtype, q, d
        self.shape = (d.shape[0], d.shape[1] * QK)

    def values(self):
        return dequantize(self.wtype, self.q, self.d)

    def pad_rows(self, n):
        """n more rows of zeros, quantized exactly as quantize() would."""
        zq, zd = quantize(self.wtype, np.zeros((n, self.shape[1]), np.float32))
        return Quantized(self.wtype, np.concatenate([self.q, zq]),
                         np.concatenate([self.d, zd.astype(self.d.dtype)]))


def dequantize(wtype, q, d):
    """Inverse of quantize: (rows, cols) float32."""
    rows = d.shape[0]
    if wtype == TYPE_Q8_0:
        v = q.reshape(-1, QK).astype(np.float32)
    else:
        p = q.reshape(-1, QK // 2)
        v = np.concatenate([p & 0x0F, p >> 4], axis=1).astype(np.float32) - np.float32(8)
    return (v * d.reshape(-1, 1).astype(np.float32)).reshape(rows, -1)


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
    f16 = v2(h, "stype") == STYPE_F16
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
                if f16 and d.dtype != np.float16:
                    d16 = d.astype(np.float16)
                    if not np.array_equal(d16.astype(d.dtype), d):
                        raise MlbError(f"{name}: its block scales are not all fp16 values; "
                                       "use fp32 scales")
                    d = d16
            else:
                try:
                    q, d = quantize(h["wtype"], x, f16)
                except F16Overflow as e:
                    raise F16Overflow(f"{name}: {e}") from None
            _write_at(f, offsets[name + ".q"], q)
            _write_at(f, offsets[name + ".d"], d.astype(scale_dtype(h)))
        if on_tensor:
            on_tensor(name, x, q, d)
    if next(it, None) is not None:
        raise MlbError("more tensors than the header describes")
    for aname in ("tokenizer", "chat_template"):
        if aname in offsets:
            _write_at(f, offsets[aname], np.frombuffer(bytes(v2(h, aname)), np.uint8))
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
    secs = h.pop("_sections", None)
    if secs:  # lengths for layout(); the offsets must be layout()'s
        h["tokenizer"], h["chat_template"] = b"x" * secs[0][1], b"x" * secs[1][1]
    check_shape(h)
    arrays, size = layout(h)
    if secs and secs != sections(h):
        raise MlbError(f"{path}: sections at {secs}, expected {sections(h)}")
    if len(data) != size:
        raise MlbError(f"{path}: file is {len(data)} bytes, layout says {size}")
    shapes = dict(tensor_plan(h))
    out = {}
    for aname, off, nbytes in arrays:
        raw = data[off:off + nbytes]
        base, _, part = aname.rpartition(".")
        if aname in ("tokenizer", "chat_template"):
            h[aname] = bytes(raw)
            continue
        if part == "q" and base in shapes:
            rows, cols = shapes[base]
            dt = np.int8 if h["wtype"] == TYPE_Q8_0 else np.uint8
            out[aname] = raw.view(dt).reshape(rows, -1)
        elif part == "d" and base in shapes:
            out[aname] = raw.view(scale_dtype(h)).reshape(shapes[base][0], -1)
        else:
            out[aname] = raw.view("<f4")
    return h, out
