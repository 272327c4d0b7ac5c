"""Writing Llama GGUF files with the `gguf` package (llama.cpp's gguf-py,
from PyPI): the files tests/test_gguf.py feeds to convert.py, and the
random-weight models tools/bench_vs_llamacpp.py gives llama-bench.

The package is imported when a file is written, so modules importing this
one (and their tests) run without it.
"""
import collections

import numpy as np

# tokenizer.ggml.token_type values (llama.cpp's llama_token_type)
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_BYTE = 1, 2, 3, 6

# An F32 tensor written from make() when its turn comes: a model larger
# than memory is never held whole (TinyLlama in F32 is 4.4 GB).
Deferred = collections.namedtuple("Deferred", "shape make")


def token_type(i, text):
    """The type llama.cpp's converter gives SentencePiece token i: <unk>,
    then <s> and </s>, then byte-fallback pieces "<0xNN>", then the rest."""
    if i == 0:
        return TYPE_UNKNOWN
    if i in (1, 2):
        return TYPE_CONTROL
    return TYPE_BYTE if text.startswith("<0x") else TYPE_NORMAL


def gguf_vocab(pieces):
    """llama2.c pieces [(bytes, score)] -> GGUF tokens, scores, types, as
    llama.cpp's converter writes a SentencePiece model (the inverse of
    llama2.c's tokenizer.py export: BOS/EOS wrapped in newlines, the
    visible space U+2581 written as a space)."""
    tokens = [{1: "<s>", 2: "</s>"}.get(i, p.decode("utf-8").replace(" ", "\u2581"))
              for i, (p, _) in enumerate(pieces)]
    return tokens, [s for _, s in pieces], [token_type(i, t) for i, t in enumerate(tokens)]


def llama_meta(c, vocab):
    """Metadata of a Llama GGUF, {key: (value, type, array item type)};
    c: our header fields (dim, n_layers, ...), vocab: gguf_vocab's triple."""
    import gguf
    V = gguf.GGUFValueType
    tokens, scores, types = vocab
    a = "llama."
    u32 = lambda v: (v, V.UINT32, None)  # noqa: E731
    return {"general.architecture": ("llama", V.STRING, None),
            a + "context_length": u32(c["max_seq"]), a + "embedding_length": u32(c["dim"]),
            a + "block_count": u32(c["n_layers"]), a + "feed_forward_length": u32(c["hidden_dim"]),
            a + "attention.head_count": u32(c["n_heads"]),
            a + "attention.head_count_kv": u32(c["n_kv_heads"]),
            a + "attention.layer_norm_rms_epsilon": (1e-5, V.FLOAT32, None),
            a + "rope.freq_base": (10000.0, V.FLOAT32, None),
            a + "rope.dimension_count": u32(c["dim"] // c["n_heads"]),
            "tokenizer.ggml.model": ("llama", V.STRING, None),
            "tokenizer.ggml.tokens": (tokens, V.ARRAY, V.STRING),
            "tokenizer.ggml.scores": (scores, V.ARRAY, V.FLOAT32),
            "tokenizer.ggml.token_type": (types, V.ARRAY, V.INT32),
            "tokenizer.ggml.unknown_token_id": u32(0), "tokenizer.ggml.bos_token_id": u32(1),
            "tokenizer.ggml.eos_token_id": u32(2)}


def write_gguf(path, meta, tensors):
    """meta: exactly the file's keys (architecture included), as llama_meta.
    tensors: {gguf name: float array (F32/F16/F64 by dtype), (raw uint8
    blocks (rows, bytes per row), GGMLQuantizationType), or Deferred}.
    Tensor infos first, then each tensor's data in turn."""
    import gguf
    w = gguf.GGUFWriter(path, meta.get("general.architecture", ("none",))[0])
    w.kv_data[0].clear()
    for k, (v, t, sub) in meta.items():
        w.add_key_value(k, v, t, sub)
    for name, x in tensors.items():
        if isinstance(x, Deferred):
            w.add_tensor_info(name, x.shape, np.dtype(np.float32), 4 * int(np.prod(x.shape)))
        elif isinstance(x, tuple):
            w.add_tensor_info(name, x[0].shape, x[0].dtype, x[0].nbytes, raw_dtype=x[1])
        else:
            w.add_tensor_info(name, x.shape, x.dtype, x.nbytes)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for x in tensors.values():
        w.write_tensor_data(np.ascontiguousarray(x.make(), dtype=np.float32) if isinstance(x, Deferred)
                            else x[0] if isinstance(x, tuple) else x)
    w.close()
