"""Random-weight Llama GGUF files at ml_bench's model shapes, for llama-bench
(tools/bench_vs_llamacpp.py): the shapes of app/bench_shapes.h, the Llama-2
vocabulary of ../shared/models/llama2-tokenizer/tokenizer.bin, every matrix
in one type. Each is written once in F32 (normal weights scaled by
1/sqrt(cols), norms 1), turned into Q8_0 and Q4_0 by `llama-quantize --pure`
(llama.cpp's own quantizer, every 2-D tensor in the one type, like our .mlb),
and kept in the cache folder; the F32 file is deleted once both exist
(TinyLlama's is 4.4 GB). Decode speed depends on the shapes and types, not
on the values.

Today's families (write_family, below; `tools/gguf_random.py FAMILY OUT
[--qtype q8_0] [--spm] [--hf DIR]`) carry their own kind of vocabulary:
byte-level BPE with the family's pre-tokenizer, special tokens, BOS/EOS
and chat template; --hf DIR also writes it as tokenizer.json and
tokenizer_config.json (a Hugging Face folder's).
"""
import os
import re
import shutil
import subprocess

import numpy as np

import gguf_in
import gguf_out
import mlb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# MODELS: the folder of real models, as for make (default ../shared/models)
TOKENIZER = os.path.join(os.environ.get("MODELS", os.path.join(os.path.dirname(ROOT), "shared", "models")),
                         "llama2-tokenizer", "tokenizer.bin")
GGUF_TYPES = {"q8_0": "Q8_0", "q4_0": "Q4_0"}
_SHAPE_FIELDS = ("dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim", "vocab", "max_seq",
                 "shared_classifier")


def bench_shapes(header=os.path.join(ROOT, "app", "bench_shapes.h")):
    """{name: our header fields} of ml_bench's --shape table, read from its
    C source so the two engines always get the same shapes."""
    # the Llama-2-vocabulary rows (version 1: their head_dim, flags, llama3 are 0);
    # today's models (names with '-' and '.') are REAL's, below
    rows = re.findall(r'\{"(\w+)",((?:\s*\d+,?){8})(?:\s*0,\s*0,\s*0)?\}', open(header).read())
    if not rows:
        raise ValueError(f"{header}: no shape rows found")
    return {name: dict(zip(_SHAPE_FIELDS, (int(v) for v in nums.split(","))))
            for name, nums in rows}


def all_shapes():
    """bench_shapes() and today's models (REAL), {name: our header fields}."""
    out = bench_shapes()
    out.update({name: dict(shape, max_seq=2048) for name, (_, shape, _) in REAL.items()})
    return out


def write_f32(path, cfg, tokenizer=TOKENIZER, seed=1):
    """A Llama GGUF in F32 with random weights at shape cfg."""
    if not os.path.exists(tokenizer):
        raise OSError(f"{tokenizer}: no Llama-2 tokenizer there (set MODELS to the folder of "
                      "llama2-tokenizer/tokenizer.bin)")
    pieces = mlb.tokenizer_pieces_from(open(tokenizer, "rb").read(), cfg["vocab"])
    rng = np.random.default_rng(seed)

    def tensor(shape):
        if len(shape) == 1:
            return lambda: np.ones(shape, np.float32)
        return lambda: rng.standard_normal(shape, dtype=np.float32) * np.float32(shape[1] ** -0.5)

    tensors = {gguf_in.gguf_name(name): gguf_out.Deferred(shape, tensor(shape))
               for name, shape in mlb.tensor_plan(cfg)}
    gguf_out.write_gguf(path, gguf_out.llama_meta(cfg, gguf_out.gguf_vocab(pieces)), tensors)


def f32_bytes(cfg):
    return sum(4 * int(np.prod(shape)) for _, shape in mlb.tensor_plan(cfg))  # (v1 plan: near enough)


def model_files(shape, cfg, quantize_bin, folder, log):
    """{"q8_0": path, "q4_0": path} of the shape's quantized GGUF files in
    folder, written if missing (write the F32 file, quantize, delete it)."""
    out = {t: os.path.join(folder, f"{shape}-{g}.gguf") for t, g in GGUF_TYPES.items()}
    missing = [t for t, p in out.items() if not os.path.exists(p)]
    if not missing:
        return out
    os.makedirs(folder, exist_ok=True)
    need = f32_bytes(cfg) * 1.6  # the F32 file and its Q8_0 and Q4_0 copies
    free = shutil.disk_usage(folder).free
    if free < need:
        raise OSError(f"{folder}: {free / 1e9:.1f} GB free, {shape}'s GGUF files need {need / 1e9:.1f} GB")
    f32 = os.path.join(folder, f"{shape}-F32.gguf")
    log(f"writing {f32} ({f32_bytes(cfg) / 1e9:.2f} GB of random F32 weights)")
    try:
        if shape in REAL:  # today's families: their architecture and a made-up vocabulary
            fam, real, hd = REAL[shape]
            write_family(f32 + ".part", fam, dict(real, max_seq=cfg["max_seq"]), hd)
        else:
            write_f32(f32 + ".part", cfg)
        os.replace(f32 + ".part", f32)
        for t in missing:
            log(f"llama-quantize --pure {os.path.basename(f32)} -> {GGUF_TYPES[t]}")
            r = subprocess.run(["nice", "-n", "19", quantize_bin, "--pure", f32, out[t] + ".part", GGUF_TYPES[t]],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode:
                raise OSError(f"llama-quantize {GGUF_TYPES[t]} of {f32} failed:\n{r.stdout[-2000:]}")
            os.replace(out[t] + ".part", out[t])
    finally:
        for p in (f32, f32 + ".part") + tuple(p + ".part" for p in out.values()):
            if os.path.exists(p):
                os.remove(p)
    return out


# ======================================================== today's families
# Random-weight GGUF files of the architectures convert.py imports besides
# llama2.c's Llama: Llama 3 (rope_freqs: Llama 3's scaling), Qwen2 (q/k/v
# biases) and Qwen3 (q/k norms, head_dim != dim / n_heads), at a tiny shape
# (tests: tests/test_arch.py, tests/test_arch.sh) and at the real shapes of
# ml_bench --shape. Qwen's q/k rows are in GPT-NeoX order (rotate halves), as
# llama.cpp's converter stores them; Llama's in interleaved pairs. The
# vocabulary is the family's kind, byte-level BPE (VOCABS): made here at the
# tiny shape (no download), GPT-2's from the cache at the real shapes when
# it is there; --spm gives a SentencePiece-like one instead (synth_pieces).
FAMILIES = {
    "llama3": dict(arch="llama", rope_theta=500000.0, norm_eps=1e-5, rope_factor=32.0),
    "qwen2": dict(arch="qwen2", rope_theta=1000000.0, norm_eps=1e-6, flags=mlb.FLAG_QKV_BIAS),
    "qwen3": dict(arch="qwen3", rope_theta=1000000.0, norm_eps=1e-6, flags=mlb.FLAG_QK_NORM),
}
# tiny shapes: fast everywhere (qemu rows too); qwen3's head_dim 32 with dim 64 and 4 heads
TINY = dict(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=160, vocab=384, max_seq=128,
            shared_classifier=1)
TINY_HEAD_DIM = {"qwen3": 32}
# the real shapes (ml_bench --shape, app/bench_shapes.h): family, shape fields, head_dim
REAL = {
    "smollm2-135m": ("llama", dict(dim=576, n_layers=30, n_heads=9, n_kv_heads=3, hidden_dim=1536,
                                   vocab=49152, max_seq=8192, shared_classifier=1), 0),
    "qwen2.5-0.5b": ("qwen2", dict(dim=896, n_layers=24, n_heads=14, n_kv_heads=2, hidden_dim=4864,
                                   vocab=151936, max_seq=32768, shared_classifier=1), 0),
    "qwen3-0.6b": ("qwen3", dict(dim=1024, n_layers=28, n_heads=16, n_kv_heads=8, hidden_dim=3072,
                                 vocab=151936, max_seq=40960, shared_classifier=1), 128),
    "llama3.2-1b": ("llama3", dict(dim=2048, n_layers=16, n_heads=32, n_kv_heads=8, hidden_dim=8192,
                                   vocab=128256, max_seq=131072, shared_classifier=1), 0),
}
FAMILIES["llama"] = dict(arch="llama", rope_theta=100000.0, norm_eps=1e-5)  # SmolLM2: plain Llama


# Each family's kind of vocabulary: byte-level BPE (tokenizer.ggml.model
# "gpt2"), its pre-tokenizer as llama.cpp names it, its special tokens (after
# the normal ones), BOS/EOS, add-BOS and a chat template.
CHATML = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA3_TMPL = ("{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n'"
               " + m['content'] + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
               "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
VOCABS = {
    "llama3": dict(pre="llama-bpe", specials=["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                              "<|end_header_id|>", "<|eot_id|>"],
                   bos="<|begin_of_text|>", eos="<|eot_id|>", add_bos=True, template=LLAMA3_TMPL),
    "qwen2": dict(pre="qwen2", specials=QWEN_SPECIALS, bos="<|endoftext|>", eos="<|im_end|>", add_bos=False,
                  template=CHATML),
    "qwen3": dict(pre="qwen2", specials=QWEN_SPECIALS, bos="<|endoftext|>", eos="<|im_end|>", add_bos=False,
                  template=CHATML),
    "llama": dict(pre="smollm", specials=QWEN_SPECIALS, bos="<|im_start|>", eos="<|im_end|>", add_bos=False,
                  template=CHATML),
}
# the words the synthetic merges spell (each built left to right, one byte a merge)
SYNTH_WORDS = ("café naïve über 日本 東京 😀 "
               "the of and to in is was a he she it with as on be at by had are but from or have an they "
               "which one you were her all there would their we him been has when who will more no if out "
               "so said what up its about into than them can only other new some could time these two may "
               "then do first any my now once upon little girl named lily loved play outside sea day "
               "don't it's we'll").split()
GPT2_VOCAB = os.path.join(os.environ.get("ML_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "legacy-ml")),
                          "gpt2.tiktoken")


def synth_bpe_words(n_normal):
    """[(left bytes, right bytes)] merges in rank order, at most n_normal - 256:
    each word of SYNTH_WORDS with a leading space, then without, grown one
    byte at a time, then the pairs of the 16 commonest letters."""
    have, merges = {bytes([b]) for b in range(256)}, []
    words = [w.encode() for w in SYNTH_WORDS]
    words = [b" " + w for w in words] + words
    words += [bytes([a, b]) for a in b"etaoinshrdlucmfw" for b in b"etaoinshrdlucmfw"]
    for w in words:
        left = w[:1]
        for i in range(1, len(w)):
            new = left + w[i:i + 1]
            if new not in have and 256 + len(merges) < n_normal:
                have.add(new)
                merges.append((left, w[i:i + 1]))
            left = new
    return merges


def gpt2_bpe(n_normal):
    """GPT-2's tokens and merges (tests/test_bpe_corpus.py's cache: gpt2.tiktoken
    and its .merges), the first n_normal ranks (a token's parts rank lower),
    or None when the cache does not hold them."""
    import base64
    if not (os.path.exists(GPT2_VOCAB) and os.path.exists(GPT2_VOCAB + ".merges")):
        return None
    ranks = {}
    for line in open(GPT2_VOCAB, "rb"):
        if line.strip():
            t, r = line.split()
            if int(r) < n_normal:
                ranks[base64.b64decode(t)] = int(r)
    merges = []
    for line in open(GPT2_VOCAB + ".merges", "rb"):
        a, b = (base64.b64decode(x) for x in line.split())
        if a + b in ranks:
            merges.append((a, b))
    return sorted(ranks, key=ranks.get), merges


def family_bpe(family, vocab):
    """(tokens as bytes, types, merges [(left, right)], the VOCABS entry) of
    the family's byte-level BPE vocabulary of vocab ids: the 256 bytes, the
    merges' results, padding, the specials last. At most 60000 normal tokens
    come from GPT-2's (when cached, for the real shapes); else synthetic."""
    import tokfile
    v = VOCABS[family]
    n_normal = vocab - len(v["specials"])
    real = gpt2_bpe(min(n_normal, 50257)) if vocab > 4096 else None
    if real:
        tokens, merges = real
    else:
        merges = synth_bpe_words(n_normal)
        tokens = [bytes([b]) for b in range(256)] + [a + b for a, b in merges]
    types = [tokfile.TYPE_NORMAL] * len(tokens)
    tokens += [b"[PAD%d]" % i for i in range(len(tokens), n_normal)]
    types += [tokfile.TYPE_UNUSED] * (n_normal - len(types))
    tokens += [s.encode() for s in v["specials"]]
    types += [tokfile.TYPE_CONTROL] * len(v["specials"])
    return tokens, types, merges, v


def gguf_bpe_meta(family, vocab):
    """The tokenizer.ggml.* keys of the family's BPE vocabulary."""
    import gguf
    import tokfile
    V = gguf.GGUFValueType
    tokens, types, merges, v = family_bpe(family, vocab)
    m = tokfile.byte_to_unicode()
    show = lambda b: "".join(m[x] for x in b)  # noqa: E731
    names = [show(t) if ty == tokfile.TYPE_NORMAL else t.decode() for t, ty in zip(tokens, types)]
    ident = lambda s: tokens.index(s.encode())  # noqa: E731
    return {"tokenizer.ggml.model": ("gpt2", V.STRING, None),
            "tokenizer.ggml.pre": (v["pre"], V.STRING, None),
            "tokenizer.ggml.tokens": (names, V.ARRAY, V.STRING),
            "tokenizer.ggml.token_type": (types, V.ARRAY, V.INT32),
            "tokenizer.ggml.merges": ([show(a) + " " + show(b) for a, b in merges], V.ARRAY, V.STRING),
            "tokenizer.ggml.bos_token_id": (ident(v["bos"]), V.UINT32, None),
            "tokenizer.ggml.eos_token_id": (ident(v["eos"]), V.UINT32, None),
            "tokenizer.ggml.eot_token_id": (ident(v["eos"]), V.UINT32, None),
            "tokenizer.ggml.add_bos_token": (v["add_bos"], V.BOOL, None),
            "tokenizer.chat_template": (v["template"], V.STRING, None)}


def hf_tokenizer_files(folder, family, vocab):
    """tokenizer.json and tokenizer_config.json of the family's BPE vocabulary
    in a Hugging Face folder (the GGUF's own, as HF's files spell it); returns
    the BOS and EOS ids (config.json's bos_token_id, eos_token_id)."""
    import json
    import tokfile
    tokens, types, merges, v = family_bpe(family, vocab)
    m = tokfile.byte_to_unicode()
    show = lambda b: "".join(m[x] for x in b)  # noqa: E731
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    if v["pre"] == "smollm":
        pt = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level]}
    else:
        pt = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": tokfile.PATTERNS[v["pre"]]}, "behavior": "Isolated",
             "invert": False}, dict(byte_level, use_regex=False)]}
    added = [{"id": i, "content": t.decode(), "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, (t, ty) in enumerate(zip(tokens, types))
             if ty == tokfile.TYPE_CONTROL]
    # Qwen2's tokenizer.json normalizes to NFC (what its GGUF pre implies)
    norm = {"type": "NFC"} if v["pre"] == "qwen2" else None
    tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": norm,
          "pre_tokenizer": pt, "post_processor": None,
          "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                    "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                    "ignore_merges": v["pre"] == "llama-bpe",
                    "vocab": {show(t): i for i, (t, ty) in enumerate(zip(tokens, types))
                              if ty == tokfile.TYPE_NORMAL},
                    "merges": [show(a) + " " + show(b) for a, b in merges]}}
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    tc = {"bos_token": v["bos"], "eos_token": v["eos"], "add_bos_token": v["add_bos"],
          "chat_template": v["template"]}
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tc, f, ensure_ascii=False)
    return tokens.index(v["bos"].encode()), tokens.index(v["eos"].encode())


def synth_pieces(vocab):
    """[(piece bytes, score)]: <unk>, BOS, EOS (llama2.c's spelling), the 256
    byte-fallback pieces, printable ASCII, " x" and a few pairs, then
    fillers; scores favour the earlier merges."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % i for i in range(256)]
    pieces += [bytes([c]) for c in range(32, 127)]
    pieces += [b" " + bytes([c]) for c in range(97, 123)]
    pieces += [a + b for a in (b"t", b"h", b"e", b"a", b"n", b"o", b"s", b"r")
               for b in (b"h", b"e", b"a", b"n", b"o", b"s", b"r", b"t")]
    pieces += [b"<t%d>" % i for i in range(max(0, vocab - len(pieces)))]
    return [(p, 0.0 if i < 3 + 256 else -float(i)) for i, p in enumerate(pieces[:vocab])]


def family_header(family, shape, head_dim=0):
    """Our header fields for family at shape (a dict of TINY's keys)."""
    f = FAMILIES[family]
    h = dict(shape, rope_theta=f["rope_theta"], norm_eps=f["norm_eps"], version=mlb.VERSION_2,
             flags=f.get("flags", 0), head_dim=head_dim)
    return h


def family_meta(family, h, vocab=None):
    """The GGUF keys of family at header h: its BPE vocabulary, or with vocab
    (gguf_vocab's triple) a SentencePiece one."""
    import gguf
    V = gguf.GGUFValueType
    f = FAMILIES[family]
    a = f["arch"] + "."
    hd = mlb.head_dim(h)
    u32 = lambda v: (v, V.UINT32, None)  # noqa: E731
    meta = {"general.architecture": (f["arch"], V.STRING, None),
            a + "context_length": u32(h["max_seq"]), a + "embedding_length": u32(h["dim"]),
            a + "block_count": u32(h["n_layers"]), a + "feed_forward_length": u32(h["hidden_dim"]),
            a + "attention.head_count": u32(h["n_heads"]),
            a + "attention.head_count_kv": u32(h["n_kv_heads"]),
            a + "attention.layer_norm_rms_epsilon": (f["norm_eps"], V.FLOAT32, None),
            a + "rope.freq_base": (f["rope_theta"], V.FLOAT32, None),
            a + "rope.dimension_count": u32(hd)}
    if vocab is None:
        meta.update(gguf_bpe_meta(family, h["vocab"]))
    else:
        tokens, scores, types = vocab
        meta.update({
            "tokenizer.ggml.model": ("llama", V.STRING, None),
            "tokenizer.ggml.tokens": (tokens, V.ARRAY, V.STRING),
            "tokenizer.ggml.scores": (scores, V.ARRAY, V.FLOAT32),
            "tokenizer.ggml.token_type": (types, V.ARRAY, V.INT32),
            "tokenizer.ggml.unknown_token_id": u32(0), "tokenizer.ggml.bos_token_id": u32(1),
            "tokenizer.ggml.eos_token_id": u32(2),
            "tokenizer.chat_template": ("{% for m in messages %}{{ m['content'] }}{% endfor %}",
                                        V.STRING, None)})
    if hd * h["n_heads"] != h["dim"]:
        meta[a + "attention.key_length"] = u32(hd)
        meta[a + "attention.value_length"] = u32(hd)
    return meta


def write_family(path, family, shape=None, head_dim=None, seed=7, qtype="f32", spm=False):
    """A random-weight GGUF of family ("llama3", "qwen2", "qwen3", "llama")
    at shape (default TINY), deterministic for a seed. Matrices normal /
    sqrt(cols), in F32 or (qtype "q8_0") quantized by the gguf package;
    norms in [0.8, 1.2), biases normal * 0.5, F32. The vocabulary is the
    family's byte-level BPE (family_bpe), or with spm SentencePiece-like
    (synth_pieces, as llama2.c's models)."""
    shape = shape or TINY
    hd = TINY_HEAD_DIM.get(family, 0) if head_dim is None else head_dim
    h = family_header(family, shape, hd)
    rng = np.random.default_rng(seed)

    def tensor(name, shape):
        if len(shape) == 2:
            return lambda: rng.standard_normal(shape, dtype=np.float32) * np.float32(shape[1] ** -0.5)
        if name.split(".")[-1] in ("bq", "bk", "bv"):
            return lambda: rng.standard_normal(shape, dtype=np.float32) * np.float32(0.5)
        return lambda: rng.uniform(0.8, 1.2, shape).astype(np.float32)

    tensors = {gguf_in.gguf_name(name): gguf_out.Deferred(shape, tensor(name, shape))
               for name, shape in mlb.tensor_plan(h)}
    if qtype == "q8_0":
        import gguf
        Q8 = gguf.GGMLQuantizationType.Q8_0
        tensors = {n: (gguf.quants.quantize(x.make(), Q8), Q8) if len(x.shape) == 2 else x
                   for n, x in tensors.items()}
    f = FAMILIES[family]
    if "rope_factor" in f:
        factors = gguf_in.llama3_factors(f["rope_theta"], mlb.head_dim(h), f["rope_factor"])
        tensors["rope_freqs.weight"] = factors
    meta = family_meta(family, h, gguf_out.gguf_vocab(synth_pieces(h["vocab"])) if spm else None)
    gguf_out.write_gguf(path, meta, tensors)
    return h


def main_families(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description="random-weight GGUF of a model family")
    ap.add_argument("family", choices=sorted(FAMILIES) + sorted(REAL))
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--qtype", choices=("f32", "q8_0"), default="f32")
    ap.add_argument("--spm", action="store_true", help="a SentencePiece vocabulary instead of the family's BPE")
    ap.add_argument("--hf", metavar="DIR", help="also write the vocabulary's tokenizer.json and "
                    "tokenizer_config.json into DIR (a Hugging Face folder)")
    a = ap.parse_args(argv)
    if a.family in REAL:
        fam, shape, hd = REAL[a.family]
        h = write_family(a.out, fam, shape, hd, a.seed, a.qtype, a.spm)
    else:
        fam = a.family
        h = write_family(a.out, a.family, seed=a.seed, qtype=a.qtype, spm=a.spm)
    if a.hf:
        os.makedirs(a.hf, exist_ok=True)
        hf_tokenizer_files(a.hf, fam, h["vocab"])
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main_families())
