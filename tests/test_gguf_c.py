#!/usr/bin/env python3
"""ml_run -m X.gguf (model/gguf_mlb.c): the C converter's cached .mlb is
byte-identical to `python3 tools/convert.py X.gguf out.mlb` for the GGUFs it
takes, the cache is reused while the GGUF is unchanged and redone when it
changes, and what it does not take is refused naming it (convert.py refuses it too).

GGUF files as tests/test_gguf.py writes them (the `gguf` package): stories260K
(hidden_dim 172: the FFN padding) in F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
Q5_1; a random 1-layer model with GQA, an unshared classifier and a chat
template; the K-quant mixes of test_gguf.kquant_model (Q2_K to Q6_K); the tiny
Qwen2 and Qwen3 models of tools/gguf_random.py (Q8_0, F32); byte-level BPE
vocabularies under each pre-tokenizer (the tokenizer file of tools/tokfile.py).
Run from the repo root. env: MODELS (stories260K groups skip loudly without
it), BUILD (folder with ml_run), RUNNER. Protocol as tests/test_convert.py.
"""
import glob
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_gguf as tg  # noqa: E402  (its writers; imports test_convert, gguf_out)

BUILD = tg.BUILD
ML_RUN = os.path.join(BUILD, "ml_run")


def ml_run(gguf_path, cache, *args):
    env = dict(os.environ, ML_CACHE_DIR=cache)
    p = subprocess.run(tg.RUNNER + [ML_RUN, "-m", gguf_path, "-n", "6", "-i", "Once", "--temp", "0", *args],
                       capture_output=True, env=env, timeout=300)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def tokenize(gguf_path, cache, text):
    """ml_tokenize's ids of text with the GGUF's vocabulary (converted into cache)."""
    env = dict(os.environ, ML_CACHE_DIR=cache)
    p = subprocess.run(tg.RUNNER + [os.path.join(BUILD, "ml_tokenize"), "-m", gguf_path, "--ids", "-i", text],
                       capture_output=True, env=env, timeout=300)
    return p.stdout.decode(errors="replace").split() if p.returncode == 0 else f"exit {p.returncode}"


def same_as_python(g, label, path, cache, tmp):
    want = os.path.join(tmp, "py.mlb")
    rc, _, se = tg.run(tg.CONVERT, path, want)
    if not g.check(rc == 0, f"{label}: convert.py exit {rc}: {se[-300:]}"):
        return
    rc, so, se = ml_run(path, cache)
    if not g.check(rc == 0 and "converting" in se and "(once" in se, f"{label}: ml_run exit {rc}: {se[-400:]}"):
        return
    got = [f for f in glob.glob(os.path.join(cache, "*.mlb")) if os.path.basename(path)[:-5] in f]
    if not g.check(len(got) == 1, f"{label}: cached files {got}"):
        return
    a, b = open(got[0], "rb").read(), open(want, "rb").read()
    first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
    g.check(a == b, f"{label}: C {len(a)} bytes, Python {len(b)} bytes, first difference at {first}")
    rc2, so2, se2 = ml_run(path, cache)
    g.check(rc2 == 0 and "converting" not in se2 and so2 == so, f"{label}: second run: exit {rc2}, {se2[-300:]}")


def stories(rep, tmp, cache):
    cfg, w = tg.ref_forward.load_legacy(os.path.join(tg.S260, "stories260K.bin"))
    meta = tg.llama_meta(dict(cfg, max_seq=cfg["seq_len"]), tg.tok512_vocab())
    for qt in ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        with rep.group(f"stories260K {qt} GGUF: the C conversion == convert.py, byte for byte") as g:
            path = os.path.join(tmp, f"s260_{qt}.gguf")
            tg.write_gguf(path, meta, tg.llama_tensors(w, qt))
            same_as_python(g, qt, path, cache, tmp)
    # Quantized and float matrices in one file: fp16 block scales (--scales
    # auto), the copied blocks keep theirs, the others are quantized with the
    # scale rounded to fp16 first. The F32 embedding's first rows hold blocks
    # whose fp16 scale is -0 (Q4_0: +1e-9 / -8), a subnormal, a tie to even
    # (down and up) and zero blocks (+0 and -0 values).
    emb = w["tok_emb"].copy()
    emb[0, :32], emb[0, 32:] = 1e-9, 0.0
    emb[1, :32], emb[1, 32:] = 0.01, 0.01
    emb[1, 0], emb[1, 32] = -8 * (1 + 2.0 ** -11), -8 * (1 + 3 * 2.0 ** -11)
    emb[2, :32], emb[2, 32:] = np.linspace(-1e-5, 0.9e-5, 32), -0.0
    for label, q8 in (("Q4_0 + F32 embedding", None), ("Q4_0 + F32 embedding + a Q8_0 wq", "blk.0.attn_q.weight")):
        with rep.group(f"stories260K {label} GGUF (ffn_down F16, padded): the C conversion == convert.py, "
                       "byte for byte") as g:
            path = os.path.join(tmp, f"s260_mix{1 if q8 else 0}.gguf")
            t = tg.llama_tensors(w, "Q4_0")
            t["token_embd.weight"] = emb
            if q8:
                t[q8] = tg.encode(tg.decoded(t[q8]).reshape(-1, 64), "Q8_0")
            tg.write_gguf(path, meta, t)
            same_as_python(g, label, path, cache, tmp)


def small(rep, tmp, cache):
    rng = np.random.RandomState(3)
    c, meta, t = tg.small_model(rng)
    t["output.weight"] = (rng.randn(300, 32) * 0.1).astype(np.float32)
    meta["tokenizer.chat_template"] = ("{% for m in messages %}{{ m.content }}{% endfor %}", tg.V.STRING, None)
    meta["tokenizer.ggml.eot_token_id"] = (2, tg.V.UINT32, None)
    for qt in ("F16", "Q8_0"):
        with rep.group(f"random 1-layer {qt} GGUF (GQA, unshared classifier, chat template) == convert.py") as g:
            path = os.path.join(tmp, f"small_{qt}.gguf")
            tt = {k: tg.encode(v, qt) for k, v in t.items()}
            tg.write_gguf(path, meta, tt)
            same_as_python(g, qt, path, cache, tmp)
    with rep.group("an F32 GGUF with a weight whose block scale overflows fp16 (1e7 / 127): fp32 scales "
                   "from both converters, byte for byte (fp16 for the same file without it)") as g:
        for big in (False, True):
            path = os.path.join(tmp, f"small_big{int(big)}.gguf")
            tt = dict(t)
            if big:
                tt["blk.0.attn_q.weight"] = tt["blk.0.attn_q.weight"].copy()
                tt["blk.0.attn_q.weight"][3, 5] = 1e7
            tg.write_gguf(path, meta, tt)
            same_as_python(g, f"big {big}", path, cache, tmp)
            h, _ = tg.mlb.read_mlb(os.path.join(tmp, "py.mlb"))
            want = tg.mlb.STYPE_F32 if big else tg.mlb.STYPE_F16
            g.check(h.get("stype", 0) == want, f"big {big}: stype {h.get('stype')}, expected {want}")
        rc, so, _ = tg.run(tg.CONVERT, path, os.path.join(tmp, "big.mlb"))
        g.check(rc == 0 and "note: layers.0.wq: block 3: scale 78740.2 overflows fp16 (max 65504); fp32 scales instead"
                in so, f"convert.py's note: {so[-300:]}")
        rc, _, se = tg.run(tg.CONVERT, path, os.path.join(tmp, "big.mlb"), "--scales", "f16")
        g.check(rc == 1 and "layers.0.wq: block 3: scale 78740.2 overflows fp16 (max 65504); --scales f32 "
                "converts it" in se,
                f"--scales f16: exit {rc}, {se[-300:]}")
    with rep.group("a changed GGUF is converted again; refusals name what they refuse") as g:
        path = os.path.join(tmp, "small_Q8_0.gguf")
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        rc, _, se = ml_run(path, cache)
        g.check(rc == 0 and "converting" in se, f"touched GGUF: exit {rc}, {se[-300:]}")
        bad = dict(meta)
        bad["general.architecture"] = ("gemma", tg.V.STRING, None)
        p = os.path.join(tmp, "arch.gguf")
        tg.write_gguf(p, bad, t)
        rc, _, se = ml_run(p, cache)
        g.check(rc == 1 and "architecture 'gemma' is not supported" in se, f"architecture: exit {rc}, {se[-300:]}")
        iq = os.path.join(tmp, "iq4nl.gguf")
        kc, kmeta, kt = tg.kquant_model(np.random.RandomState(7))
        kt["blk.1.attn_output.weight"] = tg.random_blocks(np.random.RandomState(8), 256, 256, tg.GT.IQ4_NL)
        tg.write_gguf(iq, kmeta, kt)
        rc, _, se = ml_run(iq, cache)
        g.check(rc == 1 and "blk.1.attn_output.weight has type ggml type 20; supported: " in se,
                f"IQ4_NL: exit {rc}, {se[-300:]}")
        rc, _, se = tg.run(tg.CONVERT, iq, os.path.join(tmp, "iq4nl.mlb"))
        g.check(rc != 0 and "type IQ4_NL" in se, f"IQ4_NL, convert.py: exit {rc}: {se[-300:]}")
        data = open(path, "rb").read()
        for cut in (3, 20, 200, len(data) // 2, len(data) - 40):
            p = os.path.join(tmp, f"cut{cut}.gguf")
            open(p, "wb").write(data[:cut] if cut > 3 else b"GGUF")
            rc, _, se = ml_run(p, cache)
            g.check(rc == 1 and "ML_E_FORMAT" in se, f"truncated at {cut}: exit {rc}, {se[-300:]}")
        g.check(not glob.glob(os.path.join(cache, "*.tmp*")) and not glob.glob(os.path.join(cache, ".*")),
                f"temporaries left: {os.listdir(cache)}")


def kquants(rep, tmp, cache):
    """K-quant mixes convert as convert.py converts them (dequantized by the
    package's rule, re-quantized: Q4_0 for a file with Q2_K, Q3_K or Q4_K
    blocks, Q8_0 for one of Q5_K and Q6_K only); a NaN super-block scale is
    refused by both, naming the tensor."""
    c, meta, t = tg.kquant_model(np.random.RandomState(7))

    def redraw_q4k(*types):  # the mix's Q4_K tensors drawn again in types, in turn
        def extra(tt):
            for i, k in enumerate([k for k, v in tt.items() if isinstance(v, tuple) and v[1] == tg.GT.Q4_K]):
                rows, nbytes = tt[k][0].shape
                tt[k] = tg.random_blocks(np.random.RandomState(i), rows, nbytes // 144 * 256, types[i % len(types)])
        return extra
    t5 = tg.kquant_model(np.random.RandomState(7), redraw_q4k(tg.GT.Q5_K))[2]  # a Q5_K_M file's mix
    t2 = tg.kquant_model(np.random.RandomState(7), redraw_q4k(tg.GT.Q2_K, tg.GT.Q3_K))[2]  # Q3_K_M's, Q2_K's
    for label, tensors, want in (("Q4_K, Q5_K, Q6_K", t, tg.Q4), ("Q5_K, Q6_K", t5, tg.Q8),
                                 ("Q2_K, Q3_K, Q5_K, Q6_K", t2, tg.Q4)):
        with rep.group(f"K-quant mix ({label}) GGUF: the C conversion == convert.py, byte for byte; "
                       f"{tg.mlb.WTYPE_NAMES[want]} with fp16 scales") as g:
            path = os.path.join(tmp, f"kq{len(label)}.gguf")
            tg.write_gguf(path, meta, tensors)
            same_as_python(g, f"K-quant mix {label}", path, cache, tmp)
            h, _ = tg.mlb.read_mlb(os.path.join(tmp, "py.mlb"))
            g.check(h["wtype"] == want and h.get("stype", 0) == tg.mlb.STYPE_F16, f"header {h}")
    for qt, at in ((tg.GT.Q4_K, 0), (tg.GT.Q5_K, 2), (tg.GT.Q6_K, 208)):
        with rep.group(f"{qt.name} block with a NaN scale: refused by both converters, naming the tensor") as g:
            b, _ = tg.random_blocks(np.random.RandomState(9), 256, 256, qt)
            b = b.copy()
            b[5, at:at + 2] = np.array([0x7E00], np.uint16).view(np.uint8)  # row 5's first block: a NaN
            bad = dict(t)
            bad["blk.0.attn_q.weight"] = (b, qt)
            path = os.path.join(tmp, f"nan_{qt.name}.gguf")
            tg.write_gguf(path, meta, bad)
            rc, _, se = ml_run(path, cache)
            g.check(rc == 1 and "blk.0.attn_q.weight contains NaN or Inf (row 5" in se, f"C: exit {rc}, {se[-300:]}")
            g.check(not glob.glob(os.path.join(cache, "nan_*")), f"a refused file was cached: {os.listdir(cache)}")
            rc, _, se = tg.run(tg.CONVERT, path, os.path.join(tmp, "nan.mlb"))
            g.check(rc != 0 and "NaN" in se, f"convert.py: exit {rc}: {se[-300:]}")


def families(rep, tmp, cache):
    """Qwen2 (q/k/v biases) and Qwen3 (q/k norms, head_dim 32 with dim 64):
    tools/gguf_random.py's tiny models, Q8_0 and F32, and its Llama 3 (rope
    scaling: rope_freqs.weight); rope_freqs that are not Llama 3's are
    refused by both converters."""
    gen = os.path.join(tg.ROOT, "tools", "gguf_random.py")
    for fam in ("qwen2", "qwen3", "llama3"):
        for qt in ("q8_0", "f32"):
            with rep.group(f"{fam} {qt.upper()} GGUF (gguf_random.py): the C conversion == convert.py " +
                           ("(Llama 3 rope scaling)" if fam == "llama3" else "(the q/k permutation)")) as g:
                path = os.path.join(tmp, f"{fam}_{qt}.gguf")
                rc, _, se = tg.run(gen, "--qtype", qt, "--seed", "7", fam, path)
                if g.check(rc == 0, f"gguf_random.py: {se[-300:]}"):
                    same_as_python(g, f"{fam} {qt}", path, cache, tmp)
    with rep.group("rope_freqs.weight: a blended entry off Llama 3's by 1e-4, or a NaN, refused by both; "
                   "off by 5e-6 (within 1e-5) taken by both, the same bytes") as g:
        data = bytearray(open(os.path.join(tmp, "llama3_f32.gguf"), "rb").read())
        t = next(x for x in tg.gguf.GGUFReader(os.path.join(tmp, "llama3_f32.gguf")).tensors
                 if x.name == "rope_freqs.weight")
        freqs = np.array(t.data, np.float32)
        mid = [i for i, f in enumerate(freqs) if 1 < f < freqs.max()]  # between the two plateaus
        g.check(len(mid) > 0, f"no blended entry in {freqs}")
        for label, i, v in (("off", mid[0], freqs[mid[0]] * np.float32(1 + 1e-4)), ("NaN", 0, np.nan),
                            ("near", mid[-1], freqs[mid[-1]] * np.float32(1 + 5e-6))):
            bad = bytearray(data)
            at = int(t.data_offset) + 4 * i
            bad[at:at + 4] = np.float32(v).tobytes()
            path = os.path.join(tmp, f"llama3_{label}.gguf")
            open(path, "wb").write(bad)
            if label == "near":
                same_as_python(g, "rope_freqs off by 5e-6", path, cache, tmp)
                continue
            rc, _, se = ml_run(path, cache)
            g.check(rc == 1 and "RoPE scaling factors that are not Llama 3's" in se, f"{label}, C: exit {rc}: {se[-300:]}")
            rc, _, se = tg.run(tg.CONVERT, path, os.path.join(tmp, "llama3_bad.mlb"))
            g.check(rc != 0 and "not Llama 3's" in se, f"{label}, convert.py: exit {rc}: {se[-300:]}")


def bpe_vocab(n=300):
    """A byte-level BPE vocabulary of n tokens in GGUF form (GPT-2's printable
    characters): the 256 bytes in a shuffled order, merges of common pairs and
    of merges, then <|endoftext|>, <|im_end|> (control) and <tool> (user)."""
    import tokfile
    rng = np.random.RandomState(11)
    bmap = tokfile.byte_to_unicode()
    tokens = [bmap[b] for b in rng.permutation(256)]
    merges = []
    words = ["th", "he", "in", "an", " t", " a", "er", "on", "the", " th", "and", "ing", " the", "ll", "ell",
             "hell", "hello", " w", "or", "wor", "world", " world", "12", "123", "ä", "中文"]
    for w in words:
        raw = w.encode()
        text = "".join(bmap[b] for b in raw)
        if text in tokens:
            continue
        for cut in range(len(text) - 1, 0, -1):  # the longest known left part
            if text[:cut] in tokens and text[cut:] in tokens:
                merges.append(f"{text[:cut]} {text[cut:]}")
                tokens.append(text)
                break
    specials = ["<|endoftext|>", "<|im_end|>", "<tool>"]
    while len(tokens) < n - len(specials):
        tokens.append(f"[PAD{len(tokens)}]")
    types = [1] * len(tokens)
    types[-1] = 5  # an unused one
    tokens += specials
    types += [3, 3, 4]
    return tokens, types, merges


def bpe(rep, tmp, cache):
    """A Llama model with a byte-level BPE vocabulary (SmolLM2's form) and a
    Qwen2 one (qwen2 pre-tokenizer): the C-written tokenizer file is
    tools/tokfile.py's, so the .mlb is byte-identical."""
    rng = np.random.RandomState(4)
    c, meta, t = tg.small_model(rng)
    tokens, types, merges = bpe_vocab(300)
    for k in [k for k in meta if k.startswith("tokenizer.")]:
        del meta[k]
    V = tg.V
    meta.update({"tokenizer.ggml.model": ("gpt2", V.STRING, None),
                 "tokenizer.ggml.tokens": (tokens, V.ARRAY, V.STRING),
                 "tokenizer.ggml.token_type": (types, V.ARRAY, V.INT32),
                 "tokenizer.ggml.merges": (merges, V.ARRAY, V.STRING),
                 "tokenizer.ggml.bos_token_id": (297, V.UINT32, None),
                 "tokenizer.ggml.eos_token_id": (297, V.UINT32, None),
                 "tokenizer.chat_template": ("{{ messages }}", V.STRING, None)})
    import gguf
    import tokfile
    # pre as the GGUF names it: our pre-tokenizer, flags (llama.cpp's other names for the same split)
    for pre, add_bos, ours, flags in (("smollm", False, "smollm", 0), ("llama-bpe", True, "llama-bpe", 1),
                                      ("qwen2", False, "qwen2", 4), ("gpt-2", True, "gpt-2", 0),
                                      ("llama3", True, "llama-bpe", 1), ("deepseek-r1-qwen", True, "qwen2", 4)):
        with rep.group(f"byte-level BPE GGUF (pre {pre}, add_bos {add_bos}): the C conversion == convert.py") as g:
            m = dict(meta)
            m["tokenizer.ggml.pre"] = (pre, V.STRING, None)
            m["tokenizer.ggml.add_bos_token"] = (add_bos, V.BOOL, None)
            path = os.path.join(tmp, f"bpe_{pre}.gguf")
            tg.write_gguf(path, m, {k: tg.encode(v, "Q8_0") for k, v in t.items()})
            same_as_python(g, f"BPE {pre}", path, cache, tmp)
            tf = tokfile.bpe_from_gguf(gguf.GGUFReader(path))
            g.check(tf.pre == ours and tf.flags == flags, f"read as pre {tf.pre}, flags {tf.flags}: "
                                                          f"expected {ours}, {flags}")
            # NFC (flag 4) as the family's tokenizer.json has it: a decomposed "a" + U+0308 is "ä"'s ids
            ids = [tokenize(path, cache, t) for t in ("a\u0308", "\u00e4")]
            g.check((ids[0] == ids[1]) == bool(flags & 4), f"ml_tokenize: a+U+0308 {ids[0]}, \u00e4 {ids[1]}")
    with rep.group("byte-level BPE GGUF refusals: a merge of unknown tokens, a token outside GPT-2's map") as g:
        for label, edit, want in (
                ("merge", lambda m: m.__setitem__("tokenizer.ggml.merges", (merges + ["zz qq"], V.ARRAY, V.STRING)),
                 "names a token the vocabulary lacks"),
                ("token", lambda m: m.__setitem__("tokenizer.ggml.tokens",
                                                  (tokens[:5] + ["中"] + tokens[6:], V.ARRAY, V.STRING)),
                 "GPT-2's byte map")):
            m = dict(meta)
            edit(m)
            path = os.path.join(tmp, f"bpe_bad_{label}.gguf")
            tg.write_gguf(path, m, t)
            rc, _, se = ml_run(path, cache)
            g.check(rc == 1 and want in se, f"{label}: exit {rc}: {se[-300:]}")
    with rep.group("byte-level BPE GGUF with a token more than token_embd.weight's rows: both converters "
                   "refuse it, and no .mlb is cached") as g:
        m = dict(meta)
        m["tokenizer.ggml.tokens"] = (tokens + ["[EXTRA]"], V.ARRAY, V.STRING)
        m["tokenizer.ggml.token_type"] = (types + [1], V.ARRAY, V.INT32)
        path = os.path.join(tmp, "bpe_bad_count.gguf")
        tg.write_gguf(path, m, t)
        want = f"{len(tokens) + 1} tokens, but token_embd.weight has {len(tokens)} rows"
        rc, _, se = ml_run(path, cache)
        g.check(rc == 1 and want in se, f"ml_run: exit {rc}: {se[-300:]}")
        g.check(not glob.glob(os.path.join(cache, "bpe_bad_count*")), "a cached .mlb was left behind")
        rc, _, se = tg.run(tg.CONVERT, path, os.path.join(tmp, "bad_count.mlb"))
        g.check(rc != 0 and want in se, f"convert.py: exit {rc}: {se[-300:]}")


def duplicate_key(rep, tmp, cache):
    """A metadata key given twice (which value counts would be a guess):
    refused by both converters, naming the key. The entry is inserted raw
    after the file's last key, 64 bytes so the data stays aligned."""
    import struct
    src = os.path.join(os.path.dirname(HERE), "fuzz", "corpus", "gguf", "llama_q8_0.gguf")
    with rep.group("a metadata key twice: refused by both converters, naming it") as g:
        d = bytearray(open(src, "rb").read())
        n_kv = struct.unpack_from("<Q", d, 16)[0]
        at = 24
        fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

        def skip(t, at):
            if t == 8:
                return at + 8 + struct.unpack_from("<Q", d, at)[0]
            if t == 9:
                et, cnt = struct.unpack_from("<IQ", d, at)
                at += 12
                for _ in range(cnt):
                    at = skip(et, at)
                return at
            return at + fixed[t]

        for _ in range(n_kv):
            at += 8 + struct.unpack_from("<Q", d, at)[0]
            at = skip(struct.unpack_from("<I", d, at)[0], at + 4)
        key, val = b"general.architecture", b"llama" + b" " * 19
        entry = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(val)) + val
        d[at:at] = entry
        struct.pack_into("<Q", d, 16, n_kv + 1)
        path = os.path.join(tmp, "dupkey.gguf")
        open(path, "wb").write(d)
        rc, _, se = ml_run(path, cache)
        g.check(len(entry) == 64 and rc == 1 and "the metadata key general.architecture appears twice" in se,
                f"C: exit {rc}, {se[-300:]}")
        rc, _, se = tg.run(tg.CONVERT, path, os.path.join(tmp, "dupkey.mlb"))
        g.check(rc == 1 and "general.architecture" in se and "Traceback" not in se, f"convert.py: exit {rc}: {se[-300:]}")


def run_all(rep, tmp):
    cache = os.path.join(tmp, "cache")
    if os.path.exists(os.path.join(tg.S260, "stories260K.bin")):
        stories(rep, tmp, cache)
    else:
        rep.skip("stories260K GGUFs", f"{tg.S260} is absent", 10)
    small(rep, tmp, cache)
    kquants(rep, tmp, cache)
    families(rep, tmp, cache)
    bpe(rep, tmp, cache)
    duplicate_key(rep, tmp, cache)


def main():
    rep = tg.Report()
    if tg.gguf is None:  # CI installs it: a missing package is a failure, not a skip
        rep.failed += 1
        print(f"FAIL - the gguf package is not importable ({tg.GGUF_MISSING})")
        return rep.summary()
    return rep.run("test_gguf_c", run_all)


if __name__ == "__main__":
    sys.exit(main())
