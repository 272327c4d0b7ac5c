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


def rope_tables(n_pos, head_dim, theta):
    """cos, sin (n_pos, head_dim/2): angle pos * theta^(-2i/head_dim)."""
    i2 = np.arange(0, head_dim, 2, dtype=F32)
    freq = F32(1) / np.power(F32(theta), i2 / F32(head_dim))
    ang = np.arange(n_pos, dtype=F32)[:, None] * freq[None, :]
    return np.cos(ang), np.sin(ang)


def rope(x, cos, sin):
    """x: (T, heads, head_dim); rotates interleaved pairs (2i, 2i+1)."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(x)
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
    0..T-1. w: weights as returned by load_legacy (any float arrays)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, dim, nh, nkv = len(tokens), cfg["dim"], cfg["n_heads"], cfg["n_kv_heads"]
    hd, eps = dim // nh, cfg["norm_eps"]
    cos, sin = rope_tables(T, hd, cfg.get("rope_theta", 10000.0))
    x = np.asarray(w["tok_emb"], dtype=F32)[tokens]              # (T, dim)
    for lw in w["layers"]:
        lw = {k: np.asarray(v, dtype=F32) for k, v in lw.items()}
        h = rmsnorm(x, lw["attn_norm"], eps)
        q = rope((h @ lw["wq"].T).reshape(T, nh, hd), cos, sin)
        k = rope((h @ lw["wk"].T).reshape(T, nkv, hd), cos, sin)
        v = (h @ lw["wv"].T).reshape(T, nkv, hd)
        x = x + attention(q, k, v, nh, nkv) @ lw["wo"].T
        h = rmsnorm(x, lw["ffn_norm"], eps)
        g = silu(h @ lw["w1"].T) * (h @ lw["w3"].T)
        x = x + g @ lw["w2"].T
    x = rmsnorm(x, np.asarray(w["final_norm"], dtype=F32), eps)
    return (x @ np.asarray(w["wcls"], dtype=F32).T).astype(F32)


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
