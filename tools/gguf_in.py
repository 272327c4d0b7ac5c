"""GGUF input for tools/convert.py: a Llama-architecture GGUF file (v2, v3)
read with the `gguf` package (llama.cpp's gguf-py, from PyPI).

Hyper-parameters come from the `llama.*` metadata, the tokenizer from
`tokenizer.ggml.*` (model "llama": SentencePiece pieces, scores, types).
Q8_0 and Q4_0 tensors whose type is the output's are kept block for block
(fp16 scales widened to fp32, quants copied: GGUF Q4_0 packs element j in
the low nibble of byte j and element 16+j in the high nibble, as we do);
F32, F16, BF16, Q4_1, Q5_0, Q5_1 and the K-quants Q4_K, Q5_K, Q6_K are
dequantized by the package and re-quantized. GGUF keeps wq/wk in the
original Llama order (llama.cpp's converter undoes Hugging Face's
permutation), which is ours: RoPE on interleaved pairs, no permutation.

Only numpy is imported here; the gguf package is imported when a GGUF file
is opened, so convert.py runs without it for its other inputs.
"""
import re
import struct

import numpy as np

import mlb

MAGIC = b"GGUF"
VERSIONS = (2, 3)
# GGUF types stored block for block when the output has the same type.
LOSSLESS = {"Q8_0": mlb.TYPE_Q8_0, "Q4_0": mlb.TYPE_Q4_0}
# Types dequantized with the package, then quantized like any float input:
# the float types, and what llama.cpp's Q4_K_M / Q5_K_M / Q6_K mixes hold
# (Q5_0, Q5_1 and Q8_0 are its fallbacks for rows not a multiple of 256).
DEQUANTIZED = ("F32", "F16", "BF16", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K")
# our tensor kind -> GGUF tensor name stem (llama.cpp's LLM_TENSOR names)
NAMES = dict(tok_emb="token_embd", final_norm="output_norm", wcls="output",
             attn_norm="attn_norm", wq="attn_q", wk="attn_k", wv="attn_v", wo="attn_output",
             ffn_norm="ffn_norm", w1="ffn_gate", w2="ffn_down", w3="ffn_up")
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
        return f"blk.{parts[1]}.{NAMES[parts[2]]}.weight"
    return f"{NAMES[plan_name]}.weight"


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

    def __init__(self, path):
        self.path = path
        version = _check_head(path)
        self.gguf = _import_gguf(path)
        try:
            self.reader = self.gguf.GGUFReader(path)
        except Exception as e:  # the package raises ValueError, IndexError, ...
            raise GGUFError(f"{path}: unreadable GGUF file (truncated or corrupt?): "
                            f"{type(e).__name__}: {e}")
        self.cfg = self._config()
        self.tensors = self._check_tensors()
        self.tokenizer = self._tokenizer()
        counts = {}
        for t in self.tensors.values():
            counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
        types = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        self.what = f"GGUF v{version}, Llama; tensors: {types}"
        # The output keeps the file's own 4-bit blocks when it has no 8-bit ones.
        self.native_wtype = "q4_0" if "Q4_0" in counts and "Q8_0" not in counts else None
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
        if arch != "llama":
            raise GGUFError(f"{self.path}: architecture {arch!r} is not supported (only 'llama')")
        a = "llama."
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
        head_dim = cfg["dim"] // cfg["n_heads"]
        unsupported = []
        if self._int(a + "expert_count", 0) > 0:
            unsupported.append(f"{a}expert_count = {self._int(a + 'expert_count')} "
                               "(mixture of experts)")
        rot = self._int(a + "rope.dimension_count", head_dim)
        if rot != head_dim:
            unsupported.append(f"{a}rope.dimension_count = {rot}: a partial rotary dimension "
                               f"(head_dim is {head_dim}; RoPE must rotate all of it)")
        scaling = self._get(a + "rope.scaling.type", "none")
        factor = self._float(a + "rope.scaling.factor", 1.0)
        if scaling != "none" or factor not in (0.0, 1.0):
            unsupported.append(f"rope scaling (type {scaling!r}, factor {factor:g}; "
                               "plain RoPE only)")
        for key in ("attention.key_length", "attention.value_length"):
            n = self._int(a + key, head_dim)
            if n != head_dim:
                unsupported.append(f"{a}{key} = {n} (head_dim is embedding_length / "
                                   f"head_count = {head_dim})")
        if unsupported:
            raise GGUFError(f"{self.path}: unsupported: " + "; ".join(unsupported))
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
        if by_name:
            extra = sorted(by_name)
            hint = " (rope_freqs: RoPE scaling factors, not supported)" \
                if "rope_freqs.weight" in by_name else ""
            raise GGUFError(f"{self.path}: unexpected tensors {', '.join(extra[:4])}"
                            f"{', ...' if len(extra) > 4 else ''}{hint}: a Llama without "
                            "biases has none")
        return out

    def tensor(self, kind, layer=None):
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
        d = np.ascontiguousarray(b[:, :, :2]).view("<f2").reshape(rows, -1).astype(np.float32)
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
    def _tokenizer(self):
        """llama2.c tokenizer.bin bytes, as llama2.c's tokenizer.py exports a
        SentencePiece model: U+2581 -> ' ', BOS "\\n<s>\\n", EOS "\\n</s>\\n"."""
        t = "tokenizer.ggml."
        model = self._get(t + "model")
        if model != "llama":
            raise GGUFError(f"{self.path}: tokenizer model {model!r} is not supported (only "
                            "'llama', SentencePiece: the llama2.c tokenizer)")
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
        if n != self.cfg["vocab"]:
            raise GGUFError(f"{self.path}: {n} tokens, but token_embd.weight has "
                            f"{self.cfg['vocab']} rows")
        vocab_key = self._int("llama.vocab_size", n)
        if vocab_key != n:
            raise GGUFError(f"{self.path}: llama.vocab_size = {vocab_key}, but {n} tokens")
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
        return mlb.tokenizer_bytes(pieces)
