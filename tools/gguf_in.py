"""GGUF input for tools/convert.py: a Llama-architecture GGUF file (v2, v3)
read with the `gguf` package (llama.cpp's gguf-py, from PyPI).

Hyper-parameters come from the `llama.*` metadata, the tokenizer from
`tokenizer.ggml.*` (model "llama": SentencePiece pieces, scores, types).
Q8_0 and Q4_0 tensors whose type is the output's are kept block for block
(fp16 scales widened to fp32, quants copied: GGUF Q4_0 packs element j in
the low nibble of byte j and element 16+j in the high nibble, as we do);
F32, F16, BF16, Q4_1, Q5_0, Q5_1 and the K-quants Q2_K to Q6_K are
dequantized by the package and re-quantized. GGUF keeps wq/wk in the
original Llama order (llama.cpp's converter undoes Hugging Face's
permutation), which is ours: RoPE on interleaved pairs, no permutation.

Only numpy is imported here; the gguf package is imported when a GGUF file
is opened, so convert.py runs without it for its other inputs.
"""
import re
import struct
import warnings

import numpy as np

import mlb

MAGIC = b"GGUF"
VERSIONS = (2, 3)
# GGUF types stored block for block when the output has the same type.
LOSSLESS = {"Q8_0": mlb.TYPE_Q8_0, "Q4_0": mlb.TYPE_Q4_0}
# Types dequantized with the package, then quantized like any float input:
# the float types, and what llama.cpp's Q4_K_M / Q5_K_M / Q6_K mixes hold
# (Q5_0, Q5_1 and Q8_0 are its fallbacks for rows not a multiple of 256).
DEQUANTIZED = ("F32", "F16", "BF16", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
# our tensor kind -> GGUF tensor name stem (llama.cpp's LLM_TENSOR names)
NAMES = dict(tok_emb="token_embd", final_norm="output_norm", wcls="output",
             attn_norm="attn_norm", wq="attn_q", wk="attn_k", wv="attn_v", wo="attn_output",
             ffn_norm="ffn_norm", w1="ffn_gate", w2="ffn_down", w3="ffn_up",
             q_norm="attn_q_norm", k_norm="attn_k_norm")
BIASES = dict(bq="attn_q", bk="attn_k", bv="attn_v")  # -> blk.N.attn_q.bias
# general.architecture -> the .mlb flags it needs; qwen2/qwen3 rotate halves
# (GPT-NeoX style), permuted here into our interleaved pairs.
ARCHS = {"llama": 0, "qwen2": mlb.FLAG_QKV_BIAS, "qwen3": mlb.FLAG_QK_NORM}
NEOX = ("qwen2", "qwen3")
# Llama 3's rope_scaling values besides the factor (every Llama 3.1/3.2 config).
LLAMA3_LOW, LLAMA3_HIGH, LLAMA3_ORIG = 1.0, 4.0, 8192
SPACE = "\u2581".encode()   # SentencePiece's visible space
TOKEN_BYTE = 6              # tokenizer.ggml.token_type of "<0xNN>" byte-fallback pieces
_MISSING = object()


class GGUFError(Exception):
    """A GGUF file this converter cannot read or cannot represent."""


def looks_like_gguf(path, head):
    return head[:4] == MAGIC or path.lower().endswith(".gguf")


def gguf_name(plan_name):
    """mlb.tensor_plan name -> GGUF name: layers.3.wq -> blk.3.attn_q.weight."""
    parts = plan_name.split(".")
    if len(parts) == 3:
        if parts[2] in BIASES:
            return f"blk.{parts[1]}.{BIASES[parts[2]]}.bias"
        return f"blk.{parts[1]}.{NAMES[parts[2]]}.weight"
    return f"{NAMES[plan_name]}.weight"


def neox_to_pairs(x, n_heads):
    """Rows (or entries of a vector) of n_heads heads from GPT-NeoX's
    rotate-halves order (j, j+hd/2) to our interleaved pairs (2j, 2j+1):
    row h*hd + p*hd/2 + j goes to h*hd + 2j + p. A Quantized matrix keeps
    its blocks (they run along the columns): lossless."""
    def perm(a):
        rows = a.shape[0]
        hd = rows // n_heads
        return a.reshape(n_heads, 2, hd // 2, -1).transpose(0, 2, 1, 3).reshape(a.shape)
    if isinstance(x, mlb.Quantized):
        return mlb.Quantized(x.wtype, perm(x.q), perm(x.d))
    return perm(np.asarray(x))


def llama3_factors(theta, hd, factor, low=LLAMA3_LOW, high=LLAMA3_HIGH, orig=LLAMA3_ORIG):
    """The per-frequency divisors of Llama 3's rope scaling (what GGUF's
    rope_freqs.weight holds): 1 for short wavelengths, factor for long
    ones, blended between."""
    out = []
    for i in range(hd // 2):
        wavelen = 2 * np.pi * theta ** (2 * i / hd)
        if wavelen < orig / high:
            out.append(1.0)
        elif wavelen > orig / low:
            out.append(factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, np.float32)


def _import_gguf(path):
    try:
        import gguf
    except ImportError as e:
        raise GGUFError(f"{path} is a GGUF file: reading it needs the 'gguf' Python package "
                        f"(python3 -m pip install gguf), which is not importable here ({e})")
    return gguf


def _check_head(path):
    """Magic, version and byte order, before the package parses anything."""
    with open(path, "rb") as f:
        head = f.read(8)
    if len(head) < 8:
        raise GGUFError(f"{path}: {len(head)} bytes, too short for a GGUF header")
    if head[:4] != MAGIC:
        raise GGUFError(f"{path}: bad magic {head[:4]!r}, expected {MAGIC!r} (not a GGUF file)")
    version = struct.unpack_from("<I", head, 4)[0]
    if version & 0xFFFF == 0 and version:
        raise GGUFError(f"{path}: a big-endian GGUF file; only little-endian is supported")
    if version not in VERSIONS:
        raise GGUFError(f"{path}: GGUF version {version} is not supported (only 2 and 3)")
    return version


class GGUFSource:
    """A Llama GGUF file as a convert.py source: cfg, tensor(kind, layer),
    tokenizer (llama2.c tokenizer.bin bytes). Everything is checked here,
    before the converter writes anything."""
    error_base = "the GGUF's dequantized values"

    def __init__(self, path, with_tokenizer=True):
        self.path = path
        version = _check_head(path)
        self.gguf = _import_gguf(path)
        try:
            # A corrupt offset makes the package's numpy arithmetic overflow:
            # it warns on stderr, and the offsets are checked below anyway.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                self.reader = self.gguf.GGUFReader(path)
        except Exception as e:  # the package raises ValueError, IndexError, ...
            raise GGUFError(f"{path}: unreadable GGUF file (truncated or corrupt?): "
                            f"{type(e).__name__}: {e}")
        self.cfg = self._config()
        self.tensors = self._check_tensors()
        # tokenizer: a llama2.c tokenizer.bin (SentencePiece vocabularies) or
        # None; embedded: the bytes a .mlb version 2 carries (that file, or
        # the BPE tokenizer file of tools/tokfile.py); special: the header's
        # ids; chat_template: UTF-8 bytes or b"".
        self.tokenizer = self.embedded = None
        self.special, self.chat_template = {}, b""
        if with_tokenizer:
            self.tokenizer = self._tokenizer()
            self.special = self._special_ids()
            tmpl = self._get("tokenizer.chat_template", "")
            self.chat_template = tmpl.encode() if isinstance(tmpl, str) else b""
        counts = {}
        for t in self.tensors.values():
            counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
        types = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        self.what = f"GGUF v{version}, {self.arch}; tensors: {types}"
        # A file of 4 bits or fewer (Q4_0; Q4_K_M's Q4_K, Q3_K_M's Q3_K, ...) stays
        # 4-bit when it has no 8-bit blocks (model/gguf_mlb.c native_wtype, the same rule).
        four = sorted(k for k in ("Q4_0", "Q4_1", "Q2_K", "Q3_K", "Q4_K") if k in counts)
        self.native_wtype = "q4_0" if four and "Q8_0" not in counts else None
        requant = sorted(k for k in counts if k not in ("F32", "F16", "BF16", "Q4_0"))
        self.native_note = ("the type of the input's blocks, so they convert losslessly" if not requant else
                            f"for the input's {'/'.join(four)} blocks ({'Q4_0 copied, ' if 'Q4_0' in counts else ''}"
                            f"{'/'.join(requant)} re-quantized: --wtype q8_0 keeps more of their precision)")
        self.keep_wtype = None   # set by the converter: blocks of this type are copied

    # ---------------------------------------------------------- metadata
    def _get(self, key, default=_MISSING):
        f = self.reader.get_field(key)
        if f is None:
            if default is _MISSING:
                raise GGUFError(f"{self.path}: metadata key {key} is missing")
            return default
        try:
            return f.contents()
        except (UnicodeDecodeError, ValueError) as e:
            raise GGUFError(f"{self.path}: metadata key {key}: unreadable value ({e})")

    def _int(self, key, default=_MISSING):
        v = self._get(key, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise GGUFError(f"{self.path}: metadata key {key} is {v!r}, expected an integer")
        return v

    def _float(self, key, default=_MISSING):
        v = self._get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise GGUFError(f"{self.path}: metadata key {key} is {v!r}, expected a number")
        return float(v)

    def _config(self):
        arch = self._get("general.architecture")
        if arch not in ARCHS:
            raise GGUFError(f"{self.path}: architecture {arch!r} is not supported (only "
                            f"{', '.join(repr(a) for a in ARCHS)})")
        self.arch = arch
        a = arch + "."
        ints = dict(dim="embedding_length", hidden_dim="feed_forward_length",
                    n_layers="block_count", n_heads="attention.head_count",
                    max_seq="context_length")
        cfg = {k: self._int(a + key) for k, key in ints.items()}
        cfg["n_kv_heads"] = self._int(a + "attention.head_count_kv", cfg["n_heads"])
        for k, v in cfg.items():
            if v <= 0:
                raise GGUFError(f"{self.path}: {k} is {v}, expected > 0")
        # The loader's ranges (mlb.LIMITS) before anything is derived from
        # them (n_layers: against the tensors first, in _check_tensors).
        keys = dict(ints, n_kv_heads="attention.head_count_kv")
        for k, lo, hi in mlb.LIMITS:
            hi = cfg[hi] if isinstance(hi, str) else hi
            if k in cfg and k != "n_layers" and not lo <= cfg[k] <= hi:
                raise GGUFError(f"{self.path}: {a}{keys[k]} = {cfg[k]}: the runtime's {k} is {lo}..{hi}")
        cfg.update(rope_theta=self._float(a + "rope.freq_base", 10000.0),
                   norm_eps=self._float(a + "attention.layer_norm_rms_epsilon"))
        head_dim = self._int(a + "attention.key_length", cfg["dim"] // cfg["n_heads"])
        unsupported = []
        if self._get(a + "attention.sliding_window", None) is not None:
            unsupported.append(f"{a}attention.sliding_window (sliding-window attention)")
        if self._int(a + "expert_count", 0) > 0:
            unsupported.append(f"{a}expert_count = {self._int(a + 'expert_count')} "
                               "(mixture of experts)")
        rot = self._int(a + "rope.dimension_count", head_dim)
        if rot != head_dim:
            unsupported.append(f"{a}rope.dimension_count = {rot}: a partial rotary dimension "
                               f"(head_dim is {head_dim}; RoPE must rotate all of it)")
        scaling = self._get(a + "rope.scaling.type", "none")
        factor = self._float(a + "rope.scaling.factor", 1.0)
        if scaling not in ("none", "llama3") or (scaling == "none" and factor not in (0.0, 1.0)):
            unsupported.append(f"rope scaling (type {scaling!r}, factor {factor:g}; "
                               "plain RoPE and Llama 3's only)")
        n = self._int(a + "attention.value_length", head_dim)
        if n != head_dim:
            unsupported.append(f"{a}attention.value_length = {n} (the key length is {head_dim})")
        if head_dim % 2 or head_dim <= 0:
            unsupported.append(f"{a}attention.key_length = {head_dim} (RoPE rotates pairs)")
        if unsupported:
            raise GGUFError(f"{self.path}: unsupported: " + "; ".join(unsupported))
        flags = ARCHS[arch]
        if flags or head_dim != cfg["dim"] // cfg["n_heads"] or cfg["dim"] % cfg["n_heads"]:
            cfg.update(version=mlb.VERSION_2, flags=flags,
                       head_dim=0 if head_dim * cfg["n_heads"] == cfg["dim"] else head_dim)
        return cfg

    # ---------------------------------------------------------- tensors
    def _check_tensors(self):
        """{plan name: ReaderTensor}; presence, shape and type of every one,
        and no tensor left over (biases, rope_freqs, ...)."""
        by_name = {t.name: t for t in self.reader.tensors}
        # Data at an offset off the file's alignment would be read shifted
        # (the package does not check): name it, not its garbage values.
        align = int(getattr(self.reader, "alignment", 32))
        for t in self.reader.tensors:
            off = int(t.field.parts[-1][0])
            if off % align:
                raise GGUFError(f"{self.path}: tensor {t.name}: data offset {off} is not a multiple "
                                f"of the file's alignment {align} (general.alignment; default 32)")
        if self.cfg["n_layers"] > len(by_name):  # before planning 9 tensors per layer
            raise GGUFError(f"{self.path}: llama.block_count = {self.cfg['n_layers']}, but the "
                            f"file has only {len(by_name)} tensors")
        emb = by_name.get("token_embd.weight")
        if emb is None:
            raise GGUFError(f"{self.path}: tensor token_embd.weight is missing")
        self.cfg["vocab"] = int(emb.shape[-1]) if len(emb.shape) == 2 else 0
        self.cfg["shared_classifier"] = int("output.weight" not in by_name)
        out = {}
        for name, shape in mlb.tensor_plan(self.cfg):
            gname = gguf_name(name)
            t = by_name.pop(gname, None)
            if t is None:
                raise GGUFError(f"{self.path}: tensor {gname} is missing")
            got = tuple(int(n) for n in reversed(t.shape))  # GGUF lists ne0 (columns) first
            if got != shape:
                raise GGUFError(f"{self.path}: tensor {gname} has shape {list(got)}, "
                                f"expected {list(shape)} (rows, columns)")
            kind = t.tensor_type.name
            if kind not in LOSSLESS and kind not in DEQUANTIZED:
                raise GGUFError(f"{self.path}: tensor {gname} has type {kind}; supported: "
                                f"{', '.join(list(LOSSLESS) + list(DEQUANTIZED))}")
            if len(shape) == 1 and kind != "F32":
                raise GGUFError(f"{self.path}: norm {gname} has type {kind}, expected F32")
            out[name] = t
        freqs = by_name.pop("rope_freqs.weight", None)
        if freqs is not None:
            self._llama3(freqs)
        if by_name:
            extra = sorted(by_name)
            raise GGUFError(f"{self.path}: unexpected tensors {', '.join(extra[:4])}"
                            f"{', ...' if len(extra) > 4 else ''}: the format holds no "
                            f"such tensor for architecture {self.arch!r} (biases elsewhere, MoE, ...)")
        return out

    def _llama3(self, t):
        """rope_freqs.weight: Llama 3's rope scaling, as llama.cpp's converter
        computes it from the HF config; the header stores the parameters,
        recovered here (factor = the largest divisor, low/high/orig Llama
        3's) and checked against every entry."""
        hd = mlb.head_dim(self.cfg)
        got = np.asarray(self.gguf.dequantize(t.data, t.tensor_type), np.float32).reshape(-1)
        if self.arch != "llama" or got.size != hd // 2:
            raise GGUFError(f"{self.path}: rope_freqs.weight of {got.size} entries for "
                            f"architecture {self.arch!r} (expected Llama 3's, {hd // 2})")
        factor = float(got.max())
        want = llama3_factors(self.cfg["rope_theta"], hd, factor)
        if not (factor > 1 and np.isfinite(factor) and np.allclose(got, want, rtol=1e-5, atol=0)):
            raise GGUFError(f"{self.path}: rope_freqs: RoPE scaling factors that are not Llama 3's "
                            f"(factor {factor:g}, low/high frequency factors {LLAMA3_LOW:g}/"
                            f"{LLAMA3_HIGH:g}, original context {LLAMA3_ORIG}): another rope type")
        self.cfg.update(version=mlb.VERSION_2, rope_scaling=mlb.ROPE_LLAMA3, rope_factor=factor,
                        rope_low_freq_factor=LLAMA3_LOW, rope_high_freq_factor=LLAMA3_HIGH,
                        rope_orig_max_seq=LLAMA3_ORIG)

    def tensor(self, kind, layer=None):
        x = self._tensor(kind, layer)
        if self.arch in NEOX and kind in ("wq", "bq", "wk", "bk", "q_norm", "k_norm"):
            x = neox_to_pairs(x, 1 if kind.endswith("norm") else
                              self.cfg["n_heads"] if kind in ("wq", "bq") else self.cfg["n_kv_heads"])
        return x

    def _tensor(self, kind, layer=None):
        name = kind if layer is None else f"layers.{layer}.{kind}"
        t = self.tensors[name]
        wtype = LOSSLESS.get(t.tensor_type.name)
        if wtype is not None and wtype == self.keep_wtype:
            try:
                return self._blocks(t, wtype)
            except GGUFError as e:
                raise GGUFError(f"{self.path}: {e}")
        x = self.gguf.dequantize(t.data, t.tensor_type)
        return np.asarray(x, dtype=np.float32).reshape(tuple(reversed(t.shape.tolist())))

    @staticmethod
    def _blocks(t, wtype):
        """Q8_0 block: fp16 d, 32 int8. Q4_0 block: fp16 d, 16 bytes of
        nibble pairs (element j low, 16+j high): both exactly our q, d."""
        cols, rows = (int(n) for n in t.shape)
        qbytes = mlb.quant_bytes(wtype, mlb.QK)
        b = np.asarray(t.data, dtype=np.uint8).reshape(rows, cols // mlb.QK, 2 + qbytes)
        d = np.ascontiguousarray(b[:, :, :2]).view("<f2").reshape(rows, -1)  # kept fp16: exact either way
        q = np.ascontiguousarray(b[:, :, 2:]).reshape(rows, -1)
        if wtype == mlb.TYPE_Q8_0:
            q = q.view(np.int8)
            bad = np.flatnonzero(q == -128)
            if bad.size:  # the loader refuses it (model/loader.c check_q8_range)
                r, col = divmod(int(bad[0]), cols)
                raise GGUFError(f"tensor {t.name}: row {r} block {col // mlb.QK}: Q8_0 quant -128; the "
                                f"runtime's Q8_0 quants are -127..127 (symmetric)")
        return mlb.Quantized(wtype, q, d)

    # ---------------------------------------------------------- tokenizer
    def _special_ids(self):
        t = "tokenizer.ggml."
        if self.tokenizer is not None:  # llama2.c's fixed ids (model/tokenizer.h)
            bos, eos, add_bos = 1, 2, 1
        else:
            bos, eos = self._int(t + "bos_token_id", -1), self._int(t + "eos_token_id", -1)
            add_bos = int(bool(self._get(t + "add_bos_token", False)))
        return dict(bos=bos, eos=eos, eot=self._int(t + "eot_token_id", -1), add_bos=add_bos)

    def _check_rows(self, n):
        """A token per embedding row, as the runtime's loader requires of
        either tokenizer kind."""
        if n != self.cfg["vocab"]:
            raise GGUFError(f"{self.path}: {n} tokens, but token_embd.weight has "
                            f"{self.cfg['vocab']} rows")

    def _tokenizer(self):
        """llama2.c tokenizer.bin bytes, as llama2.c's tokenizer.py exports a
        SentencePiece model: U+2581 -> ' ', BOS "\\n<s>\\n", EOS "\\n</s>\\n";
        None for a BPE vocabulary (model 'gpt2'), whose file tools/tokfile.py
        writes into self.embedded."""
        t = "tokenizer.ggml."
        model = self._get(t + "model")
        if model == "gpt2":
            self.embedded = bpe_bytes(lambda tf: tf.bpe_from_gguf(self.reader), self.path)
            self._check_rows(len(self.reader.get_field(t + "tokens").data))
            return None
        if model != "llama":
            raise GGUFError(f"{self.path}: tokenizer model {model!r} is not supported (only "
                            "'llama', SentencePiece, and 'gpt2', byte-level BPE)")
        field = self.reader.get_field(t + "tokens")
        if field is None:
            raise GGUFError(f"{self.path}: metadata key {t}tokens is missing")
        tokens = [bytes(field.parts[i]) for i in field.data]
        n = len(tokens)
        scores = self._get(t + "scores")
        types = self._get(t + "token_type", [1] * n)
        for key, arr in (("scores", scores), ("token_type", types)):
            count = len(arr) if isinstance(arr, list) else "no"
            if count != n:
                raise GGUFError(f"{self.path}: {t}{key} has {count} entries, {t}tokens {n}")
        self._check_rows(n)
        vocab_key = self._int(self.arch + ".vocab_size", n)
        if vocab_key != n:
            raise GGUFError(f"{self.path}: {self.arch}.vocab_size = {vocab_key}, but {n} tokens")
        if not self._get(t + "add_space_prefix", True):
            raise GGUFError(f"{self.path}: {t}add_space_prefix is false; the llama2.c "
                            "tokenizer always adds the leading space")
        # The runtime's ids (model/tokenizer.h): <unk> 0, BOS 1, EOS 2.
        for key, want in (("unknown_token_id", 0), ("bos_token_id", 1), ("eos_token_id", 2)):
            got = self._int(t + key, want)
            if got != want:
                raise GGUFError(f"{self.path}: {t}{key} = {got}; the runtime's is {want}")
        pieces = []
        for i, (tok, score, ttype) in enumerate(zip(tokens, scores, types)):
            if ttype == TOKEN_BYTE and not re.fullmatch(rb"<0x[0-9A-F]{2}>", tok):
                raise GGUFError(f"{self.path}: byte token {i} is {tok!r}, expected <0xNN>")
            piece = {1: b"\n<s>\n", 2: b"\n</s>\n"}.get(i, tok.replace(SPACE, b" "))
            if not 1 <= len(piece) <= 1024:
                raise GGUFError(f"{self.path}: token {i} is {len(piece)} bytes long, "
                                "expected 1..1024")
            if not np.isfinite(score):
                raise GGUFError(f"{self.path}: token {i} has score {score}")
            pieces.append((piece, score))
        self.embedded = mlb.tokenizer_bytes(pieces)
        return self.embedded


def bpe_bytes(build, path):
    """The BPE tokenizer file of tools/tokfile.py (h-bpe's writer): build(tokfile)
    returns its tokenizer object, whose to_bytes() is the file."""
    try:
        import tokfile
    except ImportError:
        raise GGUFError(f"{path}: a byte-level BPE vocabulary: writing it needs tools/tokfile.py "
                        "(the BPE tokenizer file), which this tree does not have yet; "
                        "--no-tokenizer converts the model without it")
    return build(tokfile).to_bytes()
