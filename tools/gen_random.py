#!/usr/bin/env python3
"""Write a seeded random-weight Llama model as .mlb (for tests of any shape).

usage: python3 tools/gen_random.py OUTPUT.mlb [--dim 64] [--n-layers 2]
           [--n-heads 4] [--n-kv-heads 2] [--hidden-dim 128] [--vocab 256]
           [--max-seq 64] [--wtype q8_0|q4_0] [--seed 1] [--unshared]
           [--rope-theta 10000] [--norm-eps 1e-5]
           [--tokenizer OUT.bin] [--legacy-out OUT.bin]

The same arguments always give the same bytes, on any machine and numpy
version: the random numbers come from a counter-based splitmix64 stream and
only exactly-rounded float operations (no libm, no numpy Generator).
--tokenizer writes a matching llama2.c tokenizer.bin; --legacy-out writes
the fp32 weights as a llama2.c legacy checkpoint, which tools/convert.py
turns into the identical .mlb and tests/ref_forward.py can run.
"""
import argparse
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlb  # noqa: E402
import outfile  # noqa: E402  (tools/outfile.py)


# ======================================================== random numbers
_U64 = np.uint64
_GOLDEN = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1


def _mix(z):
    """splitmix64 finalizer on a uint64 array (wrap-around is intended)."""
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


def _stream_key(seed, index):
    """A 64-bit start state per (seed, tensor index), so each tensor's values
    do not depend on the order or shape of the others."""
    z = np.array([(seed * _GOLDEN + index * 0xD1B54A32D192ED03 + 1) & _M64], dtype=_U64)
    return int(_mix(z)[0])


def normalish(seed, index, shape):
    """~N(0, 1) float32: Irwin-Hall sum of four 16-bit uniforms from each
    64-bit splitmix64 output, rescaled to unit variance (bounded by ±3.46)."""
    n = int(np.prod(shape))
    with np.errstate(over="ignore"):
        state = _U64(_stream_key(seed, index)) + np.arange(1, n + 1, dtype=_U64) * _U64(_GOLDEN)
        r = _mix(state)
    s = np.zeros(n, dtype=np.int64)
    for k in range(4):
        s += ((r >> _U64(16 * k)) & _U64(0xFFFF)).astype(np.int64)
    # (s + 2) / 65536 is the sum of four U(0,1) centred on their half-steps
    u = (s.astype(np.float64) + 2.0) / 65536.0 - 2.0
    return (u * np.sqrt(3.0)).astype(np.float32).reshape(shape)


# ======================================================== weights
def random_weights(h, seed):
    """{name: float32 array} in .mlb order. Scales keep activations O(1):
    matrices ~ 1/sqrt(fan_in) (residual-stream outputs wo, w2 further
    / sqrt(2 n_layers)), norms ~ 1 ± 0.1, embedding 3/sqrt(dim) so logits
    have a spread of a few units (greedy choices are not near-ties)."""
    L = h["n_layers"]
    out = {}
    for i, (name, shape) in enumerate(mlb.tensor_plan(h)):
        x = normalish(seed, i, shape)
        kind = name.rsplit(".", 1)[-1]
        if len(shape) == 1:
            x = np.float32(1) + np.float32(0.1) * x
        elif kind in ("tok_emb", "wcls"):
            x = x * np.float32(3 / np.sqrt(h["dim"]))
        else:
            scale = 1 / np.sqrt(shape[1])
            if kind in ("wo", "w2"):
                scale /= np.sqrt(2 * L)
            x = x * np.float32(scale)
        out[name] = x
    return out


def write_legacy(path, h, w):
    """The same weights as a llama2.c legacy (v0) checkpoint, fp32."""
    L, dim = h["n_layers"], h["dim"]
    hd = dim // h["n_heads"]
    vocab = h["vocab"] if h["shared_classifier"] else -h["vocab"]
    # RoPE tables (seq_len, head_dim/2), as llama2.c's export wrote them
    freqs = np.float32(1) / np.power(np.float32(h["rope_theta"]),
                                     np.arange(0, hd, 2, dtype=np.float32) / np.float32(hd))
    ang = np.outer(np.arange(h["max_seq"], dtype=np.float32), freqs).astype(np.float32)
    parts = [w["tok_emb"]]
    for kind in ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3"):
        parts += [w[f"layers.{l}.{kind}"] for l in range(L)]
    parts += [w["final_norm"], np.cos(ang), np.sin(ang)]
    if not h["shared_classifier"]:
        parts.append(w["wcls"])
    with outfile.atomic(path) as f:  # a temporary beside path, renamed when complete
        f.write(struct.pack("<7i", dim, h["hidden_dim"], L, h["n_heads"],
                            h["n_kv_heads"], vocab, h["max_seq"]))
        for p in parts:
            f.write(np.ascontiguousarray(p, dtype="<f4").tobytes())


# ======================================================== tokenizer
# Words whose prefixes become BPE pieces; each prefix extends a shorter piece
# by one character, so llama2.c's pairwise merge loop can reach every piece.
_WORDS = (" the", " and", " a", " to", " was", " he", " she", " it", " of", " in",
          " Once", " upon", " time", " there", " little", " girl", " boy", " play",
          " with", " day", " said", " happy", " big", " saw", " they", " her", " his",
          "ing", "ed", "er", "an", "on", "at", "en", "or", "ll", "ou", "is", "re")
_LETTERS = " etaoinshrdlucmfwypvbgkqjxz"


def tokenizer_pieces(vocab):
    """[(bytes, score)] for ids 0..vocab-1: <unk>, BOS, EOS, byte tokens
    <0x00>.. (as many as fit, all 256 when vocab >= 259), then printable
    ASCII characters and multi-character pieces (higher score = merged first)."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"]
    pieces += [b"<0x%02X>" % i for i in range(min(256, vocab - 3))]
    seen = set(pieces)
    extra = [bytes([c]) for c in range(0x20, 0x7F)]
    for word in _WORDS:
        extra += [word[:k].encode() for k in range(2, len(word) + 1)]

    def longer():  # endless: all strings over _LETTERS of length 2, 3, ...
        level = list(_LETTERS)
        while True:
            level = [s + c for s in level for c in _LETTERS]
            yield from (s.encode() for s in level)

    source, gen = iter(extra), longer()
    specials = len(pieces)
    while len(pieces) < vocab:
        p = next(source, None) or next(gen)
        if p not in seen:
            seen.add(p)
            pieces.append(p)
    scores = [0.0] * specials + [float(-i) for i in range(vocab - specials)]
    return list(zip(pieces[:vocab], scores))


def write_tokenizer(path, vocab):
    outfile.write_bytes(path, mlb.tokenizer_bytes(tokenizer_pieces(vocab)), "the tokenizer")


# ======================================================== main
class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"gen_random: error: {message}", file=sys.stderr)
        sys.exit(1)


def main(argv=None):
    ap = Parser(prog="gen_random", description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="output .mlb file")
    for flag, default in (("--dim", 64), ("--n-layers", 2), ("--n-heads", 4),
                          ("--n-kv-heads", 2), ("--hidden-dim", 128), ("--vocab", 256),
                          ("--max-seq", 64), ("--seed", 1)):
        ap.add_argument(flag, type=int, default=default, help=f"(default {default})")
    ap.add_argument("--wtype", default="q8_0", type=str.lower, choices=sorted(mlb.WTYPES))
    ap.add_argument("--unshared", action="store_true", help="separate classifier wcls")
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--norm-eps", type=float, default=1e-5)
    ap.add_argument("--tokenizer", metavar="OUT.bin", help="also write a llama2.c tokenizer.bin")
    ap.add_argument("--legacy-out", metavar="OUT.bin",
                    help="also write the fp32 weights as a llama2.c legacy checkpoint")
    a = ap.parse_args(argv)
    h = dict(dim=a.dim, n_layers=a.n_layers, n_heads=a.n_heads, n_kv_heads=a.n_kv_heads,
             hidden_dim=a.hidden_dim, vocab=a.vocab, max_seq=a.max_seq,
             rope_theta=a.rope_theta, norm_eps=a.norm_eps, wtype=mlb.WTYPES[a.wtype],
             shared_classifier=0 if a.unshared else 1)
    try:
        if a.seed < 0:
            raise mlb.MlbError(f"seed must be >= 0, got {a.seed}")
        if a.tokenizer and a.vocab < 3:
            raise mlb.MlbError(f"a tokenizer needs vocab >= 3, got {a.vocab}")
        mlb.check_shape(h)
        w = random_weights(h, a.seed)
        size = mlb.write_mlb(a.output, h, w.items())
        if a.legacy_out:
            write_legacy(a.legacy_out, h, w)
        if a.tokenizer:
            write_tokenizer(a.tokenizer, a.vocab)
    except (mlb.MlbError, OSError) as e:
        print(f"gen_random: error: {e}", file=sys.stderr)
        return 1
    print(f"{a.output}: random model seed {a.seed}, dim {a.dim}, n_layers {a.n_layers}, "
          f"n_heads {a.n_heads}/{a.n_kv_heads}, hidden_dim {a.hidden_dim}, vocab {a.vocab}, "
          f"max_seq {a.max_seq}, {a.wtype.upper()}, "
          f"{'shared' if h['shared_classifier'] else 'separate'} classifier, {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
