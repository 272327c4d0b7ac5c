#!/usr/bin/env python3
"""Reference Llama forward pass in numpy float32, for checking the runtime.

Independent on purpose: it reads the ORIGINAL llama2.c legacy checkpoint
itself and shares no code with the C runtime or with tools/convert.py.

    forward_logits(ckpt_path, token_ids) -> np.ndarray (len, vocab), float32
        teacher-forced logits: row t is the prediction after token_ids[:t+1].

usage: python3 tests/ref_forward.py CKPT.bin [-z TOK.bin] [-n STEPS]
           [--tokens ID ...] [--check PROVENANCE.md]
  greedy-decodes from BOS (or prints top logits for --tokens); --check
  compares the greedy text with the first "Verified output" block of a
  PROVENANCE.md (exit 1 on mismatch).
"""
import argparse
import struct
import sys

import numpy as np

F32 = np.float32
BOS = 1


# ======================================================== checkpoint
def load_legacy(path):
    """llama2.c legacy (v0) checkpoint -> (cfg, weights).
    Header: int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size
    (negative: separate classifier), seq_len. Then fp32, (out, in) matrices:
    tok_emb (vocab, dim); per-layer stacks rms_att, wq, wk, wv, wo, rms_ffn,
    w1, w2, w3; rms_final (dim); freq_cis_real/imag (seq_len, head_dim/2),
    unused here; wcls (vocab, dim) if separate."""
    with open(path, "rb") as f:
        raw = f.read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = struct.unpack_from("<7i", raw, 0)
    shared = vocab > 0
    vocab = abs(vocab)
    hd = dim // n_heads
    kv_dim = n_kv * hd
    cfg = dict(dim=dim, hidden_dim=hidden, n_layers=n_layers, n_heads=n_heads,
               n_kv_heads=n_kv, vocab=vocab, seq_len=seq_len, rope_theta=10000.0,
               norm_eps=1e-5)
    data = np.frombuffer(raw, dtype="<f4", offset=28)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        if pos + n > data.size:
            raise ValueError(f"{path}: truncated checkpoint")
        a = data[pos:pos + n].reshape(shape)
        pos += n
        return a

    L = n_layers
    tok_emb = take(vocab, dim)
    stacks = dict(attn_norm=take(L, dim), wq=take(L, dim, dim), wk=take(L, kv_dim, dim),
                  wv=take(L, kv_dim, dim), wo=take(L, dim, dim), ffn_norm=take(L, dim),
                  w1=take(L, hidden, dim), w2=take(L, dim, hidden), w3=take(L, hidden, dim))
    final_norm = take(dim)
    take(seq_len, hd // 2)  # freq_cis_real: RoPE is recomputed below
    take(seq_len, hd // 2)  # freq_cis_imag
    wcls = tok_emb if shared else take(vocab, dim)
    layers = [{k: v[l] for k, v in stacks.items()} for l in range(L)]
    w = dict(tok_emb=tok_emb, layers=layers, final_norm=final_norm, wcls=wcls)
    return cfg, w


# ======================================================== forward pass
def rmsnorm(x, w, eps):
    """x: (T, n); each row scaled by 1/sqrt(mean(x^2) + eps), then by w."""
    ms = np.mean(x * x, axis=-1, keepdims=True, dtype=F32)
    return x * (F32(1) / np.sqrt(ms + F32(eps))) * w


def rope_tables(n_pos, head_dim, theta, freq_factors=None):
    """cos, sin (n_pos, head_dim/2): angle pos * theta^(-2i/head_dim), each
    frequency divided by freq_factors[i] when given (Llama 3's scaling, as
    GGUF's rope_freqs.weight holds it)."""
    i2 = np.arange(0, head_dim, 2, dtype=F32)
    freq = F32(1) / np.power(F32(theta), i2 / F32(head_dim))
    if freq_factors is not None:
        freq = freq / np.asarray(freq_factors, dtype=F32)
    ang = np.arange(n_pos, dtype=F32)[:, None] * freq[None, :]
    return np.cos(ang), np.sin(ang)


def rope(x, cos, sin, neox=False):
    """x: (T, heads, head_dim); rotates interleaved pairs (2i, 2i+1), or
    with neox the halves (i, i + head_dim/2) (GPT-NeoX, Qwen)."""
    h = x.shape[-1] // 2
    x0, x1 = (x[..., :h], x[..., h:]) if neox else (x[..., 0::2], x[..., 1::2])
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(x)
    if neox:
        out[..., :h], out[..., h:] = x0 * c - x1 * s, x0 * s + x1 * c
    else:
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
    return out


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True, dtype=F32)


def silu(x):
    with np.errstate(over="ignore"):  # exp(-x) = inf for x << 0 gives -0
        return x / (F32(1) + np.exp(-x))


def attention(q, k, v, n_heads, n_kv):
    """Causal GQA. q: (T, n_heads, hd); k, v: (T, n_kv, hd) -> (T, n_heads*hd).
    Query head h reads kv head h // (n_heads // n_kv)."""
    T, _, hd = q.shape
    group = n_heads // n_kv
    kk = np.repeat(k, group, axis=1)             # (T, n_heads, hd)
    vv = np.repeat(v, group, axis=1)
    s = np.einsum("thd,shd->hts", q, kk) / F32(np.sqrt(hd))   # (n_heads, T, T)
    s = np.where(np.tri(T, dtype=bool)[None], s, F32(-np.inf)).astype(F32)
    p = softmax(s)
    return np.einsum("hts,shd->thd", p, vv).reshape(T, n_heads * hd)


def forward(cfg, w, tokens):
    """Teacher-forced logits (T, vocab), float32, for token ids at positions
    0..T-1. w: weights as returned by load_legacy or load_gguf (any float
    arrays); cfg may add head_dim, neox, rope_freqs, and layers bq/bk/bv,
    q_norm/k_norm (biases after the projections, head norms before RoPE)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, dim, nh, nkv = len(tokens), cfg["dim"], cfg["n_heads"], cfg["n_kv_heads"]
    hd, eps = cfg.get("head_dim") or dim // nh, cfg["norm_eps"]
    neox = cfg.get("neox", False)
    cos, sin = rope_tables(T, hd, cfg.get("rope_theta", 10000.0), cfg.get("rope_freqs"))
    x = np.asarray(w["tok_emb"], dtype=F32)[tokens]              # (T, dim)
    for lw in w["layers"]:
        lw = {k: np.asarray(v, dtype=F32) for k, v in lw.items()}
        h = rmsnorm(x, lw["attn_norm"], eps)
        q, k, v = h @ lw["wq"].T, h @ lw["wk"].T, h @ lw["wv"].T
        if "bq" in lw:  # Qwen2
            q, k, v = q + lw["bq"], k + lw["bk"], v + lw["bv"]
        q, k, v = q.reshape(T, nh, hd), k.reshape(T, nkv, hd), v.reshape(T, nkv, hd)
        if "q_norm" in lw:  # Qwen3: RMSNorm of each head
            q, k = rmsnorm(q, lw["q_norm"], eps), rmsnorm(k, lw["k_norm"], eps)
        q, k = rope(q, cos, sin, neox), rope(k, cos, sin, neox)
        x = x + attention(q, k, v, nh, nkv) @ lw["wo"].T
        h = rmsnorm(x, lw["ffn_norm"], eps)
        g = silu(h @ lw["w1"].T) * (h @ lw["w3"].T)
        x = x + g @ lw["w2"].T
    x = rmsnorm(x, np.asarray(w["final_norm"], dtype=F32), eps)
    return (x @ np.asarray(w["wcls"], dtype=F32).T).astype(F32)


def load_gguf(path):
    """A GGUF file of architecture llama, qwen2 or qwen3 (F32/F16 or any
    type the gguf package dequantizes) -> (cfg, weights), read here with the
    package, independently of tools/: weights as the file stores them
    (Qwen's q/k rows in NeoX order, so cfg['neox'])."""
    import gguf
    r = gguf.GGUFReader(path)

    def get(key, default=None):
        f = r.get_field(key)
        return default if f is None else f.contents()

    arch = get("general.architecture")
    a = arch + "."
    dim, nh = get(a + "embedding_length"), get(a + "attention.head_count")
    cfg = dict(dim=dim, hidden_dim=get(a + "feed_forward_length"), n_layers=get(a + "block_count"),
               n_heads=nh, n_kv_heads=get(a + "attention.head_count_kv", nh),
               head_dim=get(a + "attention.key_length", dim // nh),
               rope_theta=get(a + "rope.freq_base", 10000.0),
               norm_eps=get(a + "attention.layer_norm_rms_epsilon"), neox=arch in ("qwen2", "qwen3"))
    t = {x.name: np.asarray(gguf.dequantize(x.data, x.tensor_type), F32).reshape(
        tuple(reversed([int(n) for n in x.shape]))) for x in r.tensors}
    cfg["vocab"] = t["token_embd.weight"].shape[0]
    cfg["rope_freqs"] = t.get("rope_freqs.weight")
    names = dict(attn_norm="attn_norm.weight", wq="attn_q.weight", wk="attn_k.weight",
                 wv="attn_v.weight", wo="attn_output.weight", ffn_norm="ffn_norm.weight",
                 w1="ffn_gate.weight", w2="ffn_down.weight", w3="ffn_up.weight",
                 bq="attn_q.bias", bk="attn_k.bias", bv="attn_v.bias",
                 q_norm="attn_q_norm.weight", k_norm="attn_k_norm.weight")
    layers = [{k: t[f"blk.{l}.{n}"] for k, n in names.items() if f"blk.{l}.{n}" in t}
              for l in range(cfg["n_layers"])]
    w = dict(tok_emb=t["token_embd.weight"], layers=layers, final_norm=t["output_norm.weight"],
             wcls=t.get("output.weight", t["token_embd.weight"]))
    return cfg, w


def forward_logits(ckpt_path, token_ids):
    cfg, w = load_legacy(ckpt_path)
    return forward(cfg, w, token_ids)


def greedy(cfg, w, steps, prompt=(BOS,)):
    """Argmax decoding (recomputes the prefix each step: simple, fine for
    tiny models). Stops at BOS like llama2.c run.c."""
    ids = list(prompt)
    while len(ids) < steps:
        nxt = int(np.argmax(forward(cfg, w, ids)[-1]))
        if nxt == BOS:
            break
        ids.append(nxt)
    return ids


# ======================================================== tokenizer (decode only)
def load_tokenizer(path):
    """llama2.c tokenizer.bin -> list of piece bytes."""
    with open(path, "rb") as f:
        raw = f.read()
    pieces, pos = [], 4
    while pos < len(raw):
        _score, n = struct.unpack_from("<fI", raw, pos)
        pieces.append(raw[pos + 8:pos + 8 + n])
        pos += 8 + n
    return pieces


def decode(pieces, ids):
    """llama2.c run.c decode: drop the leading space after BOS; <0xXX> pieces
    are raw bytes."""
    out, prev = b"", None
    for t in ids:
        p = pieces[t]
        if t == BOS and prev is None:
            prev = t
            continue
        if prev == BOS and p.startswith(b" "):
            p = p[1:]
        if len(p) == 6 and p.startswith(b"<0x") and p.endswith(b">"):
            p = bytes([int(p[3:5], 16)])
        out += p
        prev = t
    return out.decode("utf-8", errors="replace")


def verified_output(provenance_path):
    """The first fenced block after a 'Verified output' heading."""
    text = open(provenance_path, encoding="utf-8").read()
    after = text[text.index("Verified output"):]
    start = after.index("```\n") + 4
    return after[start:after.index("```", start)].rstrip("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ckpt")
    ap.add_argument("-z", "--tokenizer")
    ap.add_argument("-n", "--steps", type=int, default=64)
    ap.add_argument("--tokens", type=int, nargs="+")
    ap.add_argument("--check", metavar="PROVENANCE.md")
    a = ap.parse_args()
    cfg, w = load_legacy(a.ckpt)
    if a.tokens:
        logits = forward(cfg, w, a.tokens)
        for t, row in enumerate(logits):
            top = np.argsort(-row)[:5]
            print(t, " ".join(f"{i}:{row[i]:.4f}" for i in top))
        return 0
    ids = greedy(cfg, w, a.steps)
    print(" ".join(map(str, ids)))
    if a.tokenizer:
        text = decode(load_tokenizer(a.tokenizer), ids)
        print(text)
        if a.check:
            want = verified_output(a.check)
            ok = want.startswith(text) or text.startswith(want)
            print(("ok" if ok else "MISMATCH") + f" - {len(text)} chars vs verified output")
            return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
