#!/usr/bin/env python3
"""Convert a Llama checkpoint to a .mlb model file (model/mlb.h).

usage: python3 tools/convert.py INPUT OUTPUT.mlb [--wtype q8_0|q4_0] [--scales auto|f16|f32]
                                [--tokenizer OUT.bin]

INPUT is one of
  * a llama2.c legacy checkpoint (v0: 7 int32 header, fp32 weights, RoPE tables),
  * a llama2.c `export.py --version 1` file (magic "ak42", version 1, fp32),
  * a Hugging Face Llama folder (config.json + *.safetensors, F32/F16/BF16),
  * a Llama GGUF file (v2, v3; tools/gguf_in.py, needs the `gguf` package):
    its tokenizer is written too, as a llama2.c tokenizer.bin (--tokenizer;
    default OUTPUT with .mlb replaced by .tokenizer.bin); so is a Hugging
    Face folder's tokenizer.model (tools/sp_model.py).
Matrices are quantized to Q8_0 (default) or Q4_0; norms stay F32. A GGUF
file with blocks of 4 bits or fewer (Q4_0, Q4_1, Q2_K, Q3_K, Q4_K) and no Q8_0
ones defaults to Q4_0. GGUF
Q8_0/Q4_0 tensors of the output's type are copied block for block (with
--scales f16, bit for bit: fp16 block scales as GGUF's, .mlb version 2;
--scales f32 widens them exactly). The default, --scales auto, is f16 for a
GGUF file (unless --mlb-version 1; its other tensors are re-quantized with the
scale rounded to fp16, or f32 when one is beyond fp16's range) and f32 for
every other input, whose output it leaves as it was. Errors go
to stderr as "convert: error: ..." with exit code 1, and leave every file
as it was: outputs are written to temporaries and renamed into place only
when both are complete (tools/outfile.py), an output that is the input is
refused, and the header is checked against the loader's rules (mlb.py
check_shape), so a model written here loads. numpy only, plus gguf for GGUF
input.
"""
import argparse
import glob
import json
import os
import struct
import sys

try:
    import numpy as np
except ImportError as e:  # a message, not a traceback, for the one package every conversion needs
    sys.exit(f"convert.py: needs numpy (python3 -m pip install numpy), which is not importable here ({e})")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_in  # noqa: E402  (tools/gguf_in.py: GGUF input; imports the gguf package lazily)
import mlb  # noqa: E402  (tools/mlb.py, shared with gen_random.py)
import outfile  # noqa: E402  (tools/outfile.py: outputs never destroy a user's file)
import sp_model  # noqa: E402  (tools/sp_model.py: a HF folder's tokenizer.model as tokenizer.bin)

LAYER_KINDS = ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3")
AK42_MAGIC = 0x616B3432  # "ak42" little-endian, llama2.c export.py versioned files


class ConvertError(Exception):
    """A user-facing error: printed as 'convert: error: <message>'."""


# ======================================================== llama2.c inputs
class StackedFile:
    """fp32 tensors stored back to back, each stacked over layers if it is a
    per-layer tensor: the layout of both llama2.c formats."""

    def __init__(self, path, base, entries, what):
        """entries: [(key, shape)] in file order; key None = skipped data."""
        self.path = path
        n_floats = sum(int(np.prod(s)) for _, s in entries)
        expected = base + 4 * n_floats
        size = os.path.getsize(path)
        if size != expected:
            hint = "truncated" if size < expected else "trailing bytes, or a different format"
            raise ConvertError(f"{path}: {size} bytes, but a {what} of this shape has "
                               f"{expected} bytes ({hint})")
        flat = np.memmap(path, dtype="<f4", mode="r", offset=base, shape=(n_floats,))
        self.arrays, pos = {}, 0
        for key, shape in entries:
            n = int(np.prod(shape))
            if key is not None:
                self.arrays[key] = flat[pos:pos + n].reshape(shape)
            pos += n

    def get(self, key, layer=None):
        a = self.arrays[key]
        return a if layer is None else a[layer]


def llama2c_config(dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len, shared):
    return dict(dim=dim, hidden_dim=hidden, n_layers=n_layers, n_heads=n_heads,
                n_kv_heads=n_kv_heads, vocab=vocab, max_seq=seq_len,
                rope_theta=10000.0, norm_eps=1e-5, shared_classifier=int(shared))


def check_header_ints(path, names, vals):
    for n, v in zip(names, vals):
        if v <= 0:
            raise ConvertError(f"{path}: header field {n} = {v}, expected > 0 "
                               "(not a llama2.c checkpoint?)")


def per_layer_shapes(c):
    """Per-layer tensor shapes, (rows, cols) = (out, in)."""
    dim, hid = c["dim"], c["hidden_dim"]
    hd = mlb.head_dim(c)
    q_dim, kv_dim = c["n_heads"] * hd, c["n_kv_heads"] * hd
    return dict(attn_norm=(dim,), wq=(q_dim, dim), wk=(kv_dim, dim), wv=(kv_dim, dim),
                bq=(q_dim,), bk=(kv_dim,), bv=(kv_dim,), q_norm=(hd,), k_norm=(hd,),
                wo=(dim, q_dim), ffn_norm=(dim,), w1=(hid, dim), w2=(dim, hid), w3=(hid, dim))


def layer_kinds(c):
    """The per-layer tensors of config c, in .mlb order (model/mlb.h)."""
    flags = mlb.v2(c, "flags") if mlb.v2(c, "version") >= mlb.VERSION_2 else 0
    kinds = ["attn_norm", "wq", "wk", "wv"]
    kinds += ["bq", "bk", "bv"] if flags & mlb.FLAG_QKV_BIAS else []
    kinds += ["q_norm", "k_norm"] if flags & mlb.FLAG_QK_NORM else []
    return tuple(kinds + ["wo", "ffn_norm", "w1", "w2", "w3"])


class LegacySource:
    """llama2.c v0: int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads,
    vocab_size (negative = unshared classifier), seq_len; then fp32 in run.c
    order, with freq_cis_real/imag (seq_len, head_dim/2) before wcls."""
    what = "llama2.c legacy checkpoint"

    def __init__(self, path, head):
        if len(head) < 28:
            raise ConvertError(f"{path}: {len(head)} bytes, too short for a llama2.c header")
        vals = struct.unpack_from("<7i", head, 0)
        dim, hid, n_layers, n_heads, n_kv, vocab, seq = vals
        names = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "|vocab_size|", "seq_len")
        check_header_ints(path, names, (dim, hid, n_layers, n_heads, n_kv, abs(vocab), seq))
        self.cfg = llama2c_config(dim, hid, n_layers, n_heads, n_kv, abs(vocab), seq, vocab > 0)
        check_config(self.cfg, path)
        shapes = per_layer_shapes(self.cfg)
        L, rope = n_layers, (seq, dim // n_heads // 2)
        entries = [("tok_emb", (abs(vocab), dim))]
        entries += [(k, (L,) + shapes[k]) for k in LAYER_KINDS]
        entries += [("final_norm", (dim,)), (None, rope), (None, rope)]
        if vocab < 0:
            entries.append(("wcls", (-vocab, dim)))
        self.file = StackedFile(path, 28, entries, self.what)

    def tensor(self, kind, layer=None):
        return self.file.get(kind, layer)


class V1Source:
    """llama2.c export.py --version 1: 256-byte header (magic, version, 7
    int32, uint8 shared_classifier), then fp32: all attn norms, all ffn
    norms, final norm, tok_emb, then wq..w3 each stacked over layers, wcls."""
    what = "llama2.c version 1 export"

    def __init__(self, path, head):
        if len(head) < 256:
            raise ConvertError(f"{path}: {len(head)} bytes, shorter than the 256-byte v1 header")
        vals = struct.unpack_from("<7i", head, 8)
        dim, hid, n_layers, n_heads, n_kv, vocab, seq = vals
        names = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "max_seq_len")
        check_header_ints(path, names, vals)
        shared = head[36]
        self.cfg = llama2c_config(dim, hid, n_layers, n_heads, n_kv, vocab, seq, shared)
        check_config(self.cfg, path)
        shapes = per_layer_shapes(self.cfg)
        L = n_layers
        entries = [("attn_norm", (L, dim)), ("ffn_norm", (L, dim)), ("final_norm", (dim,)),
                   ("tok_emb", (vocab, dim))]
        entries += [(k, (L,) + shapes[k]) for k in ("wq", "wk", "wv", "wo", "w1", "w2", "w3")]
        if not shared:
            entries.append(("wcls", (vocab, dim)))
        self.file = StackedFile(path, 256, entries, self.what)

    def tensor(self, kind, layer=None):
        return self.file.get(kind, layer)


def open_llama2c(path):
    with open(path, "rb") as f:
        head = f.read(256)
    if len(head) >= 8 and struct.unpack_from("<I", head, 0)[0] == AK42_MAGIC:
        version = struct.unpack_from("<i", head, 4)[0]
        if version == 1:
            return V1Source(path, head)
        if version == 2:
            gs = struct.unpack_from("<i", head, 37)[0] if len(head) >= 41 else "?"
            raise ConvertError(
                f"{path} is a llama2.c version 2 export (runq.c Q8_0, group size {gs}): its "
                "weights are already quantized in another block layout; convert the fp32 "
                "legacy or --version 1 checkpoint instead")
        raise ConvertError(f"{path}: llama2.c export version {version} is not supported "
                           "(only the legacy format and version 1 are)")
    # The legacy format has no magic number: a text file (or any file that
    # starts with text) would read as absurd sizes. Say what it is instead.
    if len(head) >= 28 and all(32 <= b < 127 or b in b"\t\n\r" for b in head[:28]):
        raise ConvertError(f"{path}: not a model file (it starts with text: {head[:28].decode()!r}); "
                           "expected a llama2.c checkpoint, a GGUF file or a Hugging Face folder")
    return LegacySource(path, head)


# ======================================================== Hugging Face input
HF_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}


class SafetensorsIndex:
    """Tensor name -> lazy float32 loader over one or more .safetensors files.
    Format: u64 LE header length, JSON header {name: {dtype, shape,
    data_offsets: [begin, end]}} (offsets relative to the data start), data."""

    def __init__(self, files):
        self.entries = {}
        for path in files:
            self._read_header(path)

    def _read_header(self, path):
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            raw = f.read(8)
            if len(raw) < 8:
                raise ConvertError(f"{path}: too short for a safetensors file")
            hlen = struct.unpack("<Q", raw)[0]
            if hlen > size - 8:
                raise ConvertError(f"{path}: header length {hlen} exceeds the file size {size}")
            try:
                header = json.loads(f.read(hlen))
            except ValueError as e:
                raise ConvertError(f"{path}: bad safetensors JSON header: {e}")
            if not isinstance(header, dict):
                raise ConvertError(f"{path}: safetensors header is not a JSON object")
        data = np.memmap(path, dtype=np.uint8, mode="r") if size > 8 + hlen else np.zeros(0, np.uint8)
        for name, info in header.items():
            if name == "__metadata__":
                continue
            if name in self.entries:
                raise ConvertError(f"tensor {name} appears in two safetensors files")
            try:
                begin, end = (int(o) + 8 + hlen for o in info["data_offsets"])
                dtype, shape = str(info["dtype"]), tuple(int(n) for n in info["shape"])
            except (KeyError, TypeError, ValueError, OverflowError):  # 1e400 is inf: OverflowError
                raise ConvertError(f"{path}: malformed header entry for {name}: {str(info)[:200]}")
            if not (8 + hlen <= begin <= end <= size):
                raise ConvertError(f"{path}: tensor {name} data [{begin}, {end}) is outside "
                                   f"the file ({size} bytes; truncated?)")
            self.entries[name] = (path, data, dtype, shape, begin, end)

    def __contains__(self, name):
        return name in self.entries

    def names(self):
        return self.entries.keys()

    def check(self, name, shape):
        """Presence, dtype and shape, without reading data."""
        if name not in self.entries:
            raise ConvertError(f"tensor {name} is missing from the safetensors files")
        path, _, dtype, got, begin, end = self.entries[name]
        if dtype not in HF_DTYPES:
            raise ConvertError(f"{path}: tensor {name} has dtype {dtype}; "
                               f"supported: {', '.join(HF_DTYPES)}")
        if got != tuple(shape):
            raise ConvertError(f"{path}: tensor {name} has shape {list(got)}, "
                               f"expected {list(shape)}")
        itemsize = 4 if dtype == "F32" else 2
        if end - begin != itemsize * int(np.prod(shape)):
            raise ConvertError(f"{path}: tensor {name} has {end - begin} bytes of data, "
                               f"expected {itemsize * int(np.prod(shape))}")

    def load(self, name, shape):
        self.check(name, shape)
        _, data, dtype, _, begin, end = self.entries[name]
        raw = data[begin:end].view(HF_DTYPES[dtype])
        if dtype == "BF16":
            # bfloat16 is the top half of a float32: shift into place.
            x = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            x = raw.astype(np.float32)
        return x.reshape(shape)


def safetensors_files(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        try:
            with open(index) as f:
                weight_map = json.load(f)["weight_map"]
        except (ValueError, KeyError) as e:
            raise ConvertError(f"{index}: not a safetensors index ({e})")
        return [os.path.join(folder, n) for n in sorted(set(weight_map.values()))]
    single = os.path.join(folder, "model.safetensors")
    if os.path.exists(single):
        return [single]
    files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    if not files:
        raise ConvertError(f"{folder}: no *.safetensors files")
    return files


def _num(v):
    """v as a float, or v itself when it is not a number (compares unequal)."""
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return v


def hf_config(folder):
    """config.json -> our config dict; refuses what the runtime cannot run."""
    path = os.path.join(folder, "config.json")
    try:
        with open(path) as f:
            c = json.load(f)
    except FileNotFoundError:
        raise ConvertError(f"{folder}: no config.json (not a Hugging Face model folder)")
    except ValueError as e:
        raise ConvertError(f"{path}: bad JSON: {e}")
    unsupported = []
    mt = c.get("model_type")
    if mt not in HF_ARCHS:
        unsupported.append(f"model_type {mt!r} (only {', '.join(repr(a) for a in HF_ARCHS)})")
    if c.get("mlp_bias"):
        unsupported.append("mlp_bias=true (biases on q/k/v only, Qwen2's)")
    if c.get("attention_bias") and mt != "qwen2":
        unsupported.append(f"attention_bias=true for model_type {mt!r} (q/k/v biases are Qwen2's)")
    window = c.get("use_sliding_window", True) if mt in ("qwen2", "qwen3") else True
    if c.get("sliding_window") is not None and window:
        unsupported.append(f"sliding_window={c['sliding_window']} (full attention only)")
    if c.get("num_experts") or c.get("num_local_experts"):
        unsupported.append("mixture of experts (num_experts)")
    # transformers 5 writes rope_parameters {rope_type, rope_theta, ...} in
    # place of rope_theta and rope_scaling: the same fields, one dict.
    params = c.get("rope_parameters")
    if params is not None and not isinstance(params, dict):
        unsupported.append(f"rope_parameters={json.dumps(params)} (expected an object)")
        params = None
    if params is not None:
        if "rope_theta" in params:
            if c.get("rope_theta") is not None and _num(c["rope_theta"]) != _num(params["rope_theta"]):
                unsupported.append(f"rope_theta {c['rope_theta']} and rope_parameters.rope_theta "
                                   f"{params['rope_theta']} disagree")
            c["rope_theta"] = params["rope_theta"]
        if params.get("rope_type", params.get("type", "default")) != "default":
            if c.get("rope_scaling") not in (None, params):
                unsupported.append("both rope_scaling and rope_parameters scale RoPE")
            c["rope_scaling"] = params
        if _num(params.get("partial_rotary_factor", 1.0)) != 1.0:
            unsupported.append(f"rope_parameters.partial_rotary_factor={params['partial_rotary_factor']} "
                               "(a partial rotary dimension)")
    if _num(c.get("partial_rotary_factor") or 1.0) != 1.0:
        unsupported.append(f"partial_rotary_factor={c['partial_rotary_factor']} (a partial rotary dimension)")
    scaling = c.get("rope_scaling")
    rope = {}
    if isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) == "default":
        scaling = None  # HF's name for plain RoPE
    if scaling is not None:
        kind = scaling.get("rope_type", scaling.get("type")) if isinstance(scaling, dict) else None
        if kind != "llama3":
            unsupported.append(f"rope_scaling={json.dumps(scaling)} (plain RoPE and 'llama3' only)")
        else:
            try:
                rope = dict(version=mlb.VERSION_2, rope_scaling=mlb.ROPE_LLAMA3,
                            rope_factor=float(scaling["factor"]),
                            rope_low_freq_factor=float(scaling["low_freq_factor"]),
                            rope_high_freq_factor=float(scaling["high_freq_factor"]),
                            rope_orig_max_seq=int(scaling["original_max_position_embeddings"]))
            except (KeyError, TypeError, ValueError) as e:
                unsupported.append(f"rope_scaling {json.dumps(scaling)}: {e}")
    if c.get("hidden_act", "silu") != "silu":
        unsupported.append(f"hidden_act {c['hidden_act']!r} (only 'silu')")
    try:
        dim, n_heads = int(c["hidden_size"]), int(c["num_attention_heads"])
        head_dim = int(c.get("head_dim") or dim // n_heads)
        cfg = dict(dim=dim, hidden_dim=int(c["intermediate_size"]),
                   n_layers=int(c["num_hidden_layers"]), n_heads=n_heads,
                   n_kv_heads=int(c.get("num_key_value_heads") or n_heads),
                   vocab=int(c["vocab_size"]),
                   max_seq=int(c.get("max_position_embeddings", 2048)),
                   # LlamaConfig defaults when absent
                   rope_theta=float(c.get("rope_theta", 10000.0)),
                   norm_eps=float(c.get("rms_norm_eps", 1e-6)),
                   tie=bool(c.get("tie_word_embeddings", False)))
    except KeyError as e:
        raise ConvertError(f"{path}: missing field {e}")
    except (TypeError, ValueError, OverflowError, ZeroDivisionError) as e:
        raise ConvertError(f"{path}: a field is not a number of the expected kind ({e})")
    flags = HF_ARCHS.get(mt, 0)
    cfg.update(rope)
    if flags or head_dim * n_heads != dim:
        cfg.update(version=mlb.VERSION_2, flags=flags, head_dim=0 if head_dim * n_heads == dim else head_dim)
    if unsupported:
        raise ConvertError(f"{path}: unsupported config: " + "; ".join(unsupported))
    cfg["model_type"] = mt
    for k in ("bos", "eos"):
        v = c.get(k + "_token_id")
        cfg["_" + k] = v if isinstance(v, int) else -1
    return cfg


def hf_unpermute(w, n_heads):
    """HF's converter permutes q/k rows so RoPE rotates halves (j, j+hd/2);
    we rotate interleaved pairs (2j, 2j+1): HF row h*hd + p*hd/2 + j is our
    row h*hd + 2j + p."""
    return gguf_in.neox_to_pairs(w, n_heads)  # also a bias or a head norm (1-D)


HF_ARCHS = {"llama": 0, "qwen2": mlb.FLAG_QKV_BIAS, "qwen3": mlb.FLAG_QK_NORM}


class HFSource:
    what = "Hugging Face folder"
    NAMES = dict(attn_norm="input_layernorm", ffn_norm="post_attention_layernorm",
                 wq="self_attn.q_proj", wk="self_attn.k_proj", wv="self_attn.v_proj",
                 wo="self_attn.o_proj", w1="mlp.gate_proj", w2="mlp.down_proj",
                 w3="mlp.up_proj", q_norm="self_attn.q_norm", k_norm="self_attn.k_norm")
    BIASES = dict(bq="self_attn.q_proj", bk="self_attn.k_proj", bv="self_attn.v_proj")

    def __init__(self, folder, with_tokenizer=True):
        c = hf_config(folder)
        self.what = f"Hugging Face {c.pop('model_type')} folder"
        bos, eos = c.pop("_bos"), c.pop("_eos")
        self.st = SafetensorsIndex(safetensors_files(folder))
        shared = c.pop("tie") or "lm_head.weight" not in self.st
        self.cfg = dict(c, shared_classifier=int(shared))
        check_config(self.cfg, folder)
        self.tokenizer, self.embedded, self.special, self.chat_template = None, None, {}, b""
        if with_tokenizer:
            self._tokenizer(folder, bos, eos)
        known = {name for _, _, name, _ in self._plan()}
        biases = [n for n in self.st.names() if n.endswith(".bias") and n not in known]
        if biases:
            raise ConvertError(f"{folder}: bias tensors are not supported here ({biases[0]}, ...; "
                               "the format holds Qwen2's q/k/v biases only)")
        # Check every tensor's presence, dtype and shape before writing.
        for kind, layer, name, shape in self._plan():
            self.st.check(name, shape)
        # Its SentencePiece tokenizer.model, written beside the model as a
        # tokenizer.bin and embedded in it (one-file model).
        sp = os.path.join(folder, "tokenizer.model")
        if not with_tokenizer:
            pass
        elif os.path.isfile(sp):
            self.tokenizer = sp_model.tokenizer_bin(sp, self.cfg["vocab"])
            if self.embedded is None:
                self.embedded = self.tokenizer
                self.special = dict(bos=1, eos=2, eot=-1, add_bos=1)
        elif self.embedded is None:
            print(f"convert: note: {folder} has no tokenizer.model, so no tokenizer.bin is written; "
                  "ml_run -z needs the model's llama2.c tokenizer.bin")

    def _plan(self):
        c = self.cfg
        dim, vocab = c["dim"], c["vocab"]
        shapes = per_layer_shapes(c)
        yield "tok_emb", None, "model.embed_tokens.weight", (vocab, dim)
        for l in range(c["n_layers"]):
            for k in layer_kinds(c):
                suffix = "bias" if k in self.BIASES else "weight"
                yield k, l, f"model.layers.{l}.{(self.BIASES.get(k) or self.NAMES[k])}.{suffix}", shapes[k]
        yield "final_norm", None, "model.norm.weight", (dim,)
        if not c["shared_classifier"]:
            yield "wcls", None, "lm_head.weight", (vocab, dim)

    def tensor(self, kind, layer=None):
        for k, l, name, shape in self._plan():
            if k == kind and l == layer:
                x = self.st.load(name, shape)
                if kind in ("wq", "bq"):
                    x = hf_unpermute(x, self.cfg["n_heads"])
                elif kind in ("wk", "bk"):
                    x = hf_unpermute(x, self.cfg["n_kv_heads"])
                elif kind in ("q_norm", "k_norm"):
                    x = hf_unpermute(x, 1)
                return x
        raise KeyError(kind)

    def _tokenizer(self, folder, bos, eos):
        """A byte-level BPE tokenizer.json (GPT-2 style: a ByteLevel
        pre-tokenizer or decoder) becomes the embedded BPE file of
        tools/tokfile.py; other vocabularies are not embedded (-z at run)."""
        path = os.path.join(folder, "tokenizer.json")
        try:
            with open(path, encoding="utf-8") as f:
                tj = json.load(f)
        except FileNotFoundError:
            return
        except ValueError as e:
            raise ConvertError(f"{path}: bad JSON: {e}")
        if "ByteLevel" not in json.dumps([tj.get("pre_tokenizer"), tj.get("decoder")]):
            return
        vocab = self.cfg["vocab"]

        def padded(tokfile, tf):
            # Qwen2/Qwen3 checkpoints pad the embedding past the tokenizer's
            # ids (151936 rows, 151665 tokens): unused tokens fill the gap,
            # as llama.cpp's converter writes them ([PAD<id>]).
            try:
                tf.pad_to(vocab)
            except tokfile.TokFileError:
                raise ConvertError(f"{path}: {len(tf.tokens)} tokens, more than the model's "
                                   f"vocab_size {vocab}")
            return tf
        try:
            self.embedded = gguf_in.bpe_bytes(lambda tokfile: padded(tokfile, tokfile.bpe_from_hf(folder)), folder)
        except gguf_in.GGUFError as e:
            raise ConvertError(str(e))
        tc = {}
        try:
            with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
                tc = json.load(f)
        except (OSError, ValueError):
            pass
        tmpl = tc.get("chat_template")
        self.chat_template = tmpl.encode() if isinstance(tmpl, str) else b""
        # config.json's ids first; the tokenizer's (tokenizer_config.json's
        # names, its end-of-turn token) where config.json has none
        import tokfile
        tf = tokfile.TokFile.from_bytes(self.embedded)
        bos, eos = (bos if bos >= 0 else tf.bos), (eos if eos >= 0 else tf.eos)
        # add_bos: the tokenizer's rule (add_bos_token, else Llama 3's post-processor)
        self.special = dict(bos=bos, eos=eos, eot=tf.eot, add_bos=int(bool(tf.add_bos) and bos >= 0))


# ======================================================== checks, padding
def check_config(c, where, wtype=mlb.TYPE_Q8_0):
    """The loader's header rules (mlb.check_shape, with hidden_dim as it will
    be padded), checked before any data is read: a model written here loads."""
    h = dict(c, hidden_dim=padded_hidden(c["hidden_dim"]) if isinstance(c["hidden_dim"], int)
             else c["hidden_dim"], wtype=wtype)
    try:
        for k, lo, hi in mlb.LIMITS:  # the ranges first: the rules below divide
            if k in ("dim", "n_heads", "n_kv_heads"):
                v, hi = h[k], h[hi] if isinstance(hi, str) else hi
                if not isinstance(v, int) or not lo <= v <= hi:
                    raise mlb.MlbError(f"header field {k}: expected {lo}..{hi}, got {v}")
    except mlb.MlbError as e:
        raise ConvertError(f"{where}: {e}")
    dim, n_heads, n_kv = c["dim"], c["n_heads"], c["n_kv_heads"]
    problem = None
    own_hd = mlb.v2(c, "version") >= mlb.VERSION_2 and mlb.v2(c, "head_dim")
    if dim % mlb.QK:
        problem = (f"dim {dim} is not a multiple of {mlb.QK}: every matrix is quantized "
                   f"along dim in blocks of {mlb.QK}")
    elif own_hd:
        pass  # mlb.check_shape below has head_dim's rules
    elif dim % n_heads:
        problem = f"dim {dim} is not a multiple of n_heads {n_heads}"
    elif (dim // n_heads) % 2:
        problem = f"head_dim {dim // n_heads} is odd; RoPE rotates pairs"
    elif n_heads % n_kv:
        problem = f"n_heads {n_heads} is not a multiple of n_kv_heads {n_kv}"
    if problem:
        raise ConvertError(f"{where}: {problem}")
    try:
        mlb.check_shape(h)
    except mlb.MlbError as e:
        raise ConvertError(f"{where}: {e} (the runtime's loader would refuse the model)")


def padded_hidden(hidden):
    return (hidden + mlb.QK - 1) // mlb.QK * mlb.QK


def tensor_stream(src, h):
    """(name, float32 (rows, cols) or (n,)) in .mlb order, hidden padded.
    Zero-padding the FFN is exact: a zero row of w1/w3 gives silu(0)*0 = 0,
    which then meets a zero column of w2."""
    hid0, hid = src.cfg["hidden_dim"], h["hidden_dim"]

    def fetch(kind, layer=None):
        x = src.tensor(kind, layer)
        if isinstance(x, mlb.Quantized):
            # Stored as-is; its columns are whole blocks, so only rows pad.
            finite = np.isfinite(x.d).all()
            if hid != hid0 and kind in ("w1", "w3"):
                x = x.pad_rows(hid - hid0)
        else:
            x = np.ascontiguousarray(x, dtype=np.float32)
            finite = np.isfinite(x).all()
            if hid != hid0 and kind in ("w1", "w3"):
                x = np.pad(x, ((0, hid - hid0), (0, 0)))
            elif hid != hid0 and kind == "w2":
                x = np.pad(x, ((0, 0), (0, hid - hid0)))
        if not finite:
            where = kind if layer is None else f"layer {layer} {kind}"
            raise ConvertError(f"{where} contains NaN or Inf")
        return x

    # Progress on a terminal: a line rewritten per layer (a large model takes minutes).
    tty = sys.stderr.isatty()
    yield "tok_emb", fetch("tok_emb")
    for l in range(h["n_layers"]):
        if tty:
            print(f"\rconvert: layer {l + 1}/{h['n_layers']} ...", end="", file=sys.stderr, flush=True)
        for kind in layer_kinds(h):
            yield f"layers.{l}.{kind}", fetch(kind, l)
    if tty:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    yield "final_norm", fetch("final_norm")
    if not h["shared_classifier"]:
        yield "wcls", fetch("wcls")


# ======================================================== report
class ErrorStats:
    """Quantization error per tensor kind, aggregated over layers. Padding
    is excluded from the counts (its error is exactly zero)."""

    def __init__(self, wtype, hid0, hid):
        self.wtype, self.hid0, self.hid = wtype, hid0, hid
        self.kinds = {}

    def __call__(self, name, x, q, d):
        if q is None:
            return  # F32 norms are stored exactly
        kind = name.rsplit(".", 1)[-1]
        err = (mlb.dequantize(self.wtype, q, d) - x).astype(np.float64)
        n = x.size // self.hid * self.hid0 if kind in ("w1", "w2", "w3") else x.size
        s = self.kinds.setdefault(kind, [0.0, 0, 0.0, 0.0])
        s[0] += float(np.sum(err * err))
        s[1] += n
        s[2] += float(np.sum(x.astype(np.float64) ** 2))
        s[3] = max(s[3], float(np.max(np.abs(err))))

    def print(self):
        print(f"  {'tensor':<8} {'elements':>10} {'rmse':>10} {'rel_rmse':>9} {'max_err':>10}")
        for kind, (sse, n, ss, mx) in self.kinds.items():
            rmse, rms = (sse / n) ** 0.5, (ss / n) ** 0.5
            rel = f"{100 * rmse / rms:.3f}%" if rms else "-"
            print(f"  {kind:<8} {n:>10} {rmse:>10.3e} {rel:>9} {mx:>10.3e}")


# ======================================================== main
class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"convert: error: {message}", file=sys.stderr)
        sys.exit(1)


def open_source(path, with_tokenizer=True):
    if os.path.isdir(path):
        return HFSource(path, with_tokenizer)
    if not os.path.isfile(path):
        raise ConvertError(f"{path}: no such file or folder")
    with open(path, "rb") as f:
        head = f.read(4)
    if gguf_in.looks_like_gguf(path, head):
        src = gguf_in.GGUFSource(path, with_tokenizer)
        check_config(src.cfg, path)
        return src
    return open_llama2c(path)


def tokenizer_path(out):
    """Where a GGUF file's tokenizer goes by default: x.mlb -> x.tokenizer.bin."""
    stem = out[:-len(".mlb")] if out.endswith(".mlb") else out
    return stem + ".tokenizer.bin"


def same_path(a, b):
    """a and b are one file: the same existing file, or the same new name."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def mlb_version(src, h, asked):
    """Version 2 when the model needs one of its fields, or when there is a
    tokenizer to embed (one-file models); version 1 only when asked, and
    then the model must not need version 2 (ConvertError naming what)."""
    embedded = getattr(src, "embedded", None)
    if asked == 1:
        if mlb.v2(h, "version") >= mlb.VERSION_2:
            need = [k for k in ("head_dim", "flags", "rope_scaling") if mlb.v2(h, k)]
            raise ConvertError(f"--mlb-version 1: this model needs version 2 (its {', '.join(need)})")
        return dict(h, version=mlb.VERSION)
    if mlb.v2(h, "version") < mlb.VERSION_2 and not embedded and asked != 2:
        return h
    h = dict(h, version=mlb.VERSION_2, tokenizer=embedded or b"",
             chat_template=getattr(src, "chat_template", b"") if embedded else b"")
    h.update(getattr(src, "special", None) or {})
    return h


def write_outputs(src, h, out, tok_out, tokenizer):
    """The model (and tokenizer) written: both complete in temporaries, then
    both renamed, so each target holds its old content or the new one, never
    a part. Returns (error stats, model bytes, the committed files)."""
    c = src.cfg
    stats = ErrorStats(h["wtype"], c["hidden_dim"], h["hidden_dim"])
    staged = []
    try:
        if tokenizer is not None:
            staged.append(outfile.AtomicFile(tok_out, "the tokenizer"))
            staged[-1].f.write(tokenizer)
        staged.append(outfile.AtomicFile(out, "the output"))
        size = mlb.write_mlb(out, h, tensor_stream(src, h), on_tensor=stats, out=staged[-1])
        for s in reversed(staged):
            s.commit()
    except BaseException:
        for s in staged:
            s.abort()
        raise
    return stats, size, staged


def convert(inp, out, wtype_name, tok_out=None, asked_version=None, with_tokenizer=True,
            scales="auto"):
    named_tok = tok_out is not None
    # Before any work: no output is the input (by device and inode).
    inputs = [("the input", inp)]
    outfile.check_not_input("the output", out, inputs)
    if named_tok:
        outfile.check_not_input("--tokenizer", tok_out, inputs)
    src = open_source(inp, with_tokenizer)
    tokenizer = getattr(src, "tokenizer", None)
    if named_tok and tokenizer is None:
        raise ConvertError(f"--tokenizer: {inp} has no tokenizer to write (only GGUF files and Hugging Face folders with a tokenizer.model have one)")
    tok_out = tok_out or tokenizer_path(out)
    if tokenizer is not None:
        if same_path(tok_out, out):
            raise ConvertError(f"the tokenizer and the model would both be written to {out}")
        outfile.check_not_input("the tokenizer", tok_out, inputs)
    if wtype_name is None:
        wtype_name = getattr(src, "native_wtype", None) or "q8_0"
        if wtype_name != "q8_0":
            print(f"convert: note: no --wtype: {wtype_name}, {src.native_note}")
    if isinstance(src, gguf_in.GGUFSource):
        src.keep_wtype = mlb.WTYPES[wtype_name]
    c = src.cfg
    h = dict(c, hidden_dim=padded_hidden(c["hidden_dim"]), wtype=mlb.WTYPES[wtype_name])
    if h["hidden_dim"] != c["hidden_dim"]:
        print(f"convert: note: hidden_dim {c['hidden_dim']} is not a multiple of {mlb.QK}; "
              f"zero-padding to {h['hidden_dim']} (w1/w3 gain zero rows, w2 zero columns; "
              "exact since silu(0)*0 = 0)")
    check_config(c, inp, h["wtype"])
    # auto: fp16 for a GGUF, whose own scales are fp16 (its Q8_0/Q4_0 blocks
    # of the output's type copy bit for bit, others are re-quantized with the
    # scale rounded to fp16 as ggml rounds it; a scale beyond fp16's range
    # falls back to fp32), fp32 for other inputs (their output as before).
    # model/gguf_mlb.c, which writes the default wtype, follows the same rule.
    auto = scales == "auto"
    if auto:
        scales = "f16" if isinstance(src, gguf_in.GGUFSource) and asked_version != 1 else "f32"
    if scales == "f16":
        if asked_version == 1:
            raise ConvertError("--scales f16 needs .mlb version 2 (--mlb-version 1 has fp32 scales only)")
        h = dict(h, version=mlb.VERSION_2, stype=mlb.STYPE_F16)
    h = mlb_version(src, h, asked_version)
    try:
        mlb.check_shape(h)
    except mlb.MlbError as e:
        raise ConvertError(f"{inp}: {e}")
    try:
        stats, size, staged = write_outputs(src, h, out, tok_out, tokenizer)
    except mlb.F16Overflow as e:
        if not auto:
            raise ConvertError(f"{e}; --scales f32 converts it") from None
        print(f"convert: note: {e}; fp32 scales instead")
        h = dict(h, stype=mlb.STYPE_F32)
        stats, size, staged = write_outputs(src, h, out, tok_out, tokenizer)
    for s in reversed(staged):
        if s.replaces:
            what = "tokenizer (written beside the model; --tokenizer puts it elsewhere)" \
                if s.what == "the tokenizer" and not named_tok else s.what[4:]
            print(f"convert: note: replaced the existing {what} {s.path}")

    print(f"{inp} ({src.what}) -> {out}")
    base = getattr(src, "error_base", "fp32 source")
    print(f"  {mlb.WTYPE_NAMES[h['wtype']]} quantization error (vs {base}):")
    stats.print()
    padded = f" (padded from {c['hidden_dim']})" if h["hidden_dim"] != c["hidden_dim"] else ""
    print(f"  shape: dim {h['dim']}, hidden_dim {h['hidden_dim']}{padded}, n_layers "
          f"{h['n_layers']}, n_heads {h['n_heads']}, n_kv_heads {h['n_kv_heads']}, vocab "
          f"{h['vocab']}, max_seq {h['max_seq']}, rope_theta {h['rope_theta']:g}, norm_eps "
          f"{h['norm_eps']:g}, {'shared' if h['shared_classifier'] else 'separate'} classifier")
    print(f"  wtype {mlb.WTYPE_NAMES[h['wtype']]}, {'fp16' if mlb.v2(h, 'stype') else 'fp32'} block "
          f"scales, file {size} bytes")
    if tokenizer is not None:
        print(f"  tokenizer ({c['vocab']} pieces, llama2.c format) -> {tok_out}")
    if mlb.v2(h, "version") >= mlb.VERSION_2:
        kind = "none" if not h["tokenizer"] else "llama2.c" if tokenizer is not None else "BPE"
        print(f"  .mlb version 2: head_dim {mlb.head_dim(h)}, flags {mlb.v2(h, 'flags')}, rope_scaling "
              f"{mlb.v2(h, 'rope_scaling')}, embedded tokenizer {kind} ({len(h['tokenizer'])} bytes), "
              f"chat template {len(h['chat_template'])} bytes, bos {mlb.v2(h, 'bos')} eos "
              f"{mlb.v2(h, 'eos')} eot {mlb.v2(h, 'eot')} add_bos {mlb.v2(h, 'add_bos')}")


def main(argv=None):
    ap = Parser(prog="convert", description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="llama2.c .bin (legacy or v1), Hugging Face folder or GGUF "
                    "file (Llama, Qwen2, Qwen3)")
    ap.add_argument("output", help="output .mlb file")
    ap.add_argument("--wtype", type=str.lower, choices=sorted(mlb.WTYPES),
                    help="weight type (default q8_0; for a GGUF file with Q4_0, Q4_1, Q2_K, Q3_K "
                    "or Q4_K matrices and none Q8_0, q4_0)")
    ap.add_argument("--tokenizer", metavar="OUT.bin",
                    help="GGUF or Hugging Face input: where to write its tokenizer (default: "
                    "OUTPUT with .mlb replaced by .tokenizer.bin)")
    ap.add_argument("--mlb-version", type=int, choices=(1, 2),
                    help="1: a version-1 file (no embedded tokenizer; refused for a model that "
                    "needs version 2); 2: version 2 even without a tokenizer to embed. Default: "
                    "2 when the model needs it or has a tokenizer to embed, else 1")
    ap.add_argument("--scales", choices=("auto", "f16", "f32"), default="auto",
                    help="block scale type: f16 (.mlb version 2; a GGUF Q8_0/Q4_0 matrix is copied "
                    "bit for bit, and the file is GGUF's size), f32 (any version) or auto (default: "
                    "f16 for a GGUF file, unless --mlb-version 1 or a scale overflows fp16; "
                    "else f32)")
    ap.add_argument("--no-tokenizer", action="store_true",
                    help="do not read, write or embed the input's tokenizer")
    args = ap.parse_args(argv)
    try:
        convert(args.input, args.output, args.wtype, args.tokenizer, args.mlb_version,
                not args.no_tokenizer, args.scales)
    except (ConvertError, gguf_in.GGUFError, mlb.MlbError, sp_model.SPError, OSError) as e:
        print(f"convert: error: {e}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"convert: error: out of memory converting {args.input}", file=sys.stderr)
        return 1
    except RecursionError:  # json's parser on a header of nested brackets
        print(f"convert: error: {args.input}: a JSON header or file nests too deeply", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
