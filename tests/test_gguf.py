#!/usr/bin/env python3
"""Tests of GGUF input to tools/convert.py (tools/gguf_in.py).

GGUF files are written here with the `gguf` package's own writer and
quantizers: stories260K's weights (legacy checkpoint) with tok512.vocab as
F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (tensors whose rows are not a
whole number of blocks, w2 with its 172 columns, stay F16 as llama.cpp's
quantizer leaves them), and a synthetic dim-256 Llama in a Q4_K_M-like mix of
Q4_K, Q5_K and Q6_K (K-quants need rows of 256; stories260K's are 64 and 172
wide, and the package has no K-quantizer, so its blocks are random bytes with
sane scales: any bytes are valid K-quant data).

Run from the repo root: python3 tests/test_gguf.py. env: MODELS (groups
that need stories260K are skipped, loudly, when it is absent), BUILD (folder
with ml_run), RUNNER. The gguf package must be importable: without it this
test FAILS (CI installs it). Protocol as tests/test_convert.py.
"""
import importlib.metadata
import os
import shlex
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "tools"))
import mlb  # noqa: E402
import ref_forward  # noqa: E402
import test_fidelity  # noqa: E402  (story_text)
from gen_random import tokenizer_pieces  # noqa: E402
from gguf_out import gguf_vocab, llama_meta, token_type, write_gguf  # noqa: E402
from test_convert import (CONVERT, Q4, Q8, S260, Mlb, Report, check_layout,  # noqa: E402
                          check_quant_rule, mlb_weights, run, source_tensors)

BUILD = os.environ.get("BUILD", "build/scalar")
RUNNER = shlex.split(os.environ.get("RUNNER", ""))
TOK512 = os.path.join(S260, "tok512.bin")
NAMES = dict(attn_norm="attn_norm", wq="attn_q", wk="attn_k", wv="attn_v", wo="attn_output",
             ffn_norm="ffn_norm", w1="ffn_gate", w2="ffn_down", w3="ffn_up")
try:
    import gguf
    GT = gguf.GGMLQuantizationType
    V = gguf.GGUFValueType
except ImportError as e:
    gguf = None
    GGUF_MISSING = str(e)


# ======================================================== writing GGUF files
def tok512_vocab():
    """stories260K's SentencePiece vocabulary from tok512.vocab (piece TAB
    score), independent of tok512.bin."""
    tokens, scores = [], []
    for line in open(os.path.join(S260, "tok512.vocab"), encoding="utf-8"):
        p, s = line.rstrip("\n").split("\t")
        tokens.append(p)
        scores.append(float(s))
    return tokens, scores, [token_type(i, t) for i, t in enumerate(tokens)]


def encode(x, qtype):
    """float32 matrix -> what write_gguf stores for qtype; rows that are not
    a whole number of blocks stay F16, as llama.cpp's quantizer does."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim == 1 or qtype == "F32":
        return x
    if qtype == "F16" or x.shape[1] % gguf.GGML_QUANT_SIZES[GT[qtype]][0]:
        return x.astype(np.float16)
    return gguf.quantize(x, GT[qtype]), GT[qtype]


def llama_tensors(w, qtype):
    """ref_forward weights -> {gguf name: encoded} (Llama order: GGUF keeps
    wq/wk as the original checkpoint has them)."""
    t = {"token_embd.weight": encode(w["tok_emb"], qtype)}
    for l, lw in enumerate(w["layers"]):
        for k, v in lw.items():
            t[f"blk.{l}.{NAMES[k]}.weight"] = encode(v, qtype)
    t["output_norm.weight"] = encode(w["final_norm"], qtype)
    if w["wcls"] is not w["tok_emb"]:
        t["output.weight"] = encode(w["wcls"], qtype)
    return t


def decoded(t):
    """What a stored tensor holds, as float32 (the package's dequantizer)."""
    if isinstance(t, tuple):
        return gguf.dequantize(t[0], t[1])
    return np.asarray(t, dtype=np.float32)


def spec_name(gname):
    """GGUF name -> test_convert's spec name (blk.3.attn_q.weight -> 3.wq)."""
    parts = gname.split(".")
    if parts[0] == "blk":
        return f"{parts[1]}." + {v: k for k, v in NAMES.items()}[parts[2]]
    return {"token_embd": "tok_emb", "output_norm": "final_norm", "output": "wcls"}[parts[0]]


def as_weights(tensors, n_layers):
    """{gguf name: encoded} -> ref_forward weights of the decoded values."""
    d = {spec_name(k): decoded(v) for k, v in tensors.items()}
    layers = [{k: d[f"{l}.{k}"] for k in NAMES} for l in range(n_layers)]
    return dict(tok_emb=d["tok_emb"], layers=layers, final_norm=d["final_norm"],
                wcls=d.get("wcls", d["tok_emb"]))


def convert(*args):
    """The converter writing version 1 (this test reads that layout; version
    2, the default for a GGUF with a tokenizer, is tests/test_arch.py's)."""
    return run(CONVERT, *args, "--mlb-version", "1")


# ======================================================== stories260K
def stories(rep, tmp):
    cfg, w = ref_forward.load_legacy(os.path.join(S260, "stories260K.bin"))
    c = dict(cfg, max_seq=cfg["seq_len"])
    meta = llama_meta(c, tok512_vocab())
    files = {}
    for qt in ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        path = os.path.join(tmp, f"s260_{qt}.gguf")
        files[qt] = llama_tensors(w, qt)
        write_gguf(path, meta, files[qt])
    legacy = os.path.join(S260, "stories260K.bin")

    with rep.group("stories260K F32 GGUF (v3 and v2) == legacy checkpoint, both wtypes; "
                   "tokenizer == tok512.bin") as g:
        v2 = os.path.join(tmp, "s260_F32_v2.gguf")
        raw = bytearray(open(os.path.join(tmp, "s260_F32.gguf"), "rb").read())
        g.check(struct.unpack_from("<I", raw, 4)[0] == 3, "the writer did not write v3")
        struct.pack_into("<I", raw, 4, 2)  # v2 differs from v3 only on big-endian hosts
        open(v2, "wb").write(raw)
        for wt in ("q8_0", "q4_0"):
            want = os.path.join(tmp, f"legacy_{wt}.mlb")
            r0 = convert(legacy, want, "--wtype", wt)
            for label, src in (("v3", os.path.join(tmp, "s260_F32.gguf")), ("v2", v2)):
                out = os.path.join(tmp, f"s260_F32_{label}_{wt}.mlb")
                rc, so, se = convert(src, out, "--wtype", wt)
                if g.check(rc == 0 and r0[0] == 0, f"{label} {wt}: exit {rc}/{r0[0]}: {se[-300:]}"):
                    g.check(open(out, "rb").read() == open(want, "rb").read(),
                            f"{label} {wt}: .mlb differs from the legacy conversion")
                    tok = out[:-4] + ".tokenizer.bin"
                    g.check(open(tok, "rb").read() == open(TOK512, "rb").read(),
                            f"{label} {wt}: {tok} differs from tok512.bin")
                    g.check(f"tokenizer (512 pieces, llama2.c format) -> {tok}" in so,
                            "the report does not say where the tokenizer went")

    with rep.group("stories260K F16 and BF16 GGUF == legacy with the same values") as g:
        for qt in ("F16", "BF16"):
            vals = {spec_name(k): decoded(v) for k, v in files[qt].items()}
            lw = [{k: vals[f"{l}.{k}"] for k in NAMES} for l in range(cfg["n_layers"])]
            head = open(legacy, "rb").read(28)
            ref = os.path.join(tmp, f"legacy_{qt}.bin")
            with open(ref, "wb") as f:  # legacy layout: see ref_forward.load_legacy
                f.write(head + vals["tok_emb"].tobytes())
                for k in NAMES:
                    f.write(b"".join(l[k].astype("<f4").tobytes() for l in lw))
                f.write(vals["final_norm"].tobytes())
                f.write(bytes(2 * 4 * cfg["seq_len"] * cfg["dim"] // cfg["n_heads"] // 2))
            a, b = os.path.join(tmp, f"g_{qt}.mlb"), os.path.join(tmp, f"l_{qt}.mlb")
            r1, r2 = convert(os.path.join(tmp, f"s260_{qt}.gguf"), a), convert(ref, b)
            if g.check(r1[0] == 0 and r2[0] == 0,
                       f"{qt}: exit {r1[0]}/{r2[0]}: {(r1[2] + r2[2])[-300:]}"):
                g.check(open(a, "rb").read() == open(b, "rb").read(), f"{qt}: files differ")

    mlbs = {}
    for qt, wt, args in (("Q8_0", Q8, ()), ("Q4_0", Q4, ())):
        with rep.group(f"stories260K {qt} GGUF: blocks imported losslessly (fp16 d kept by "
                       "the default --scales auto, same quants and nibble order), default wtype follows the file") as g:
            out = os.path.join(tmp, f"s260_{qt}.mlb")
            rc, so, se = convert(os.path.join(tmp, f"s260_{qt}.gguf"), out, *args)
            if not g.check(rc == 0, f"exit {rc}: {se[-300:]}"):
                continue
            m = mlbs[qt] = Mlb(out)
            g.check(m.h["wtype"] == wt, f"header wtype {m.h['wtype']}, expected {wt}")
            check_layout(g, m, qt)
            lossless = 0
            for gname, t in files[qt].items():
                name, want = spec_name(gname), decoded(t)
                if isinstance(t, tuple):
                    lossless += 1
                    rows = want.shape[0]
                    got = m.dequant(name)[:rows]
                    g.check(np.array_equal(got, want.astype(np.float64)),
                            f"{name}: {np.sum(got != want)} values differ from the GGUF's")
                    g.check(not m.dequant(name)[rows:].any(), f"{name}: padded rows not zero")
                    if qt == "Q4_0":  # the packed bytes themselves: same nibble order
                        nb = t[0].reshape(rows, -1, 18)[:, :, 2:].reshape(rows, -1)
                        qb = m.array(name + ".q", np.uint8).reshape(m.shapes[name][0], -1)[:rows]
                        g.check(np.array_equal(nb, qb), f"{name}: Q4_0 bytes differ")
                elif len(want.shape) == 1:
                    g.check(np.array_equal(m.norm(name), want), f"{name}: norm differs")
            g.check(lossless == 1 + 4 * cfg["n_layers"] + 2 * cfg["n_layers"],
                    f"{lossless} tensors quantized in the GGUF")
            g.check("0.000e+00" in so and "vs the GGUF's dequantized values" in so,
                    "no RMSE table against the GGUF's values")

    f16_scales(rep, tmp, files)
    auto_scales(rep, tmp)

    for qt in ("Q8_0", "Q4_1", "Q5_0", "Q5_1"):
        with rep.group(f"stories260K {qt} GGUF --wtype q4_0: dequantized and re-quantized "
                       "by the rule") as g:
            out = os.path.join(tmp, f"s260_{qt}_to_q4.mlb")
            rc, so, se = convert(os.path.join(tmp, f"s260_{qt}.gguf"), out, "--wtype", "q4_0")
            if g.check(rc == 0, f"exit {rc}: {se[-300:]}"):
                m = Mlb(out)
                src = source_tensors(cfg, as_weights(files[qt], cfg["n_layers"]), 192)
                check_quant_rule(g, m, src, qt)
                g.check("rmse" in so, "no RMSE table")

    # Teacher-forced story through ml_run with the imported tokenizer,
    # against the fp32 reference on the original checkpoint (test_fidelity).
    ml_run = os.path.join(ROOT, BUILD, "ml_run")
    prompt = test_fidelity.story_text(os.path.join(S260, "PROVENANCE.md"))
    for qt, min_top1 in (("Q8_0", 0.95), ("Q4_0", 0.75)):
        with rep.group(f"stories260K {qt} GGUF import: ml_run logits vs the numpy reference, "
                       f"top-1 >= {min_top1:.0%}") as g:
            if not g.check(qt in mlbs, "no imported file"):
                continue
            if not g.check(os.path.exists(ml_run), f"{ml_run} not built"):
                continue
            out = os.path.join(tmp, f"s260_{qt}.mlb")
            lf, idf = os.path.join(tmp, "l.f32"), os.path.join(tmp, "ids.txt")
            p = subprocess.run(RUNNER + [ml_run, "-m", out, "-z", out[:-4] + ".tokenizer.bin",
                                         "-i", prompt, "-n", "0", "--temp", "0", "--logits", lf,
                                         "--ids", idf], capture_output=True, timeout=300)
            if not g.check(p.returncode == 0, f"ml_run exit {p.returncode}: {p.stderr[-300:]!r}"):
                continue
            got = np.fromfile(lf, dtype="<f4").reshape(-1, 512)
            ids = [int(x) for x in open(idf).read().split()][:got.shape[0]]
            ref = ref_forward.forward(cfg, w, ids)
            top1 = float(np.mean(got.argmax(1) == ref.argmax(1)))
            print(f"# {qt} GGUF: {len(ids)} positions, top-1 {top1:.2%}, "
                  f"max |dlogit| {np.abs(got - ref).max():.3f}")
            g.check(len(ids) > 100, f"only {len(ids)} positions")
            g.check(top1 >= min_top1, f"top-1 agreement {top1:.2%} < {min_top1:.0%}")
            # and the imported model equals its own dequantized weights' forward
            qcfg, qw = mlb_weights(mlbs[qt])
            mine = ref_forward.forward(qcfg, qw, ids)
            g.check(np.mean(mine.argmax(1) == got.argmax(1)) >= 0.98,
                    "ml_run disagrees with the forward pass of the .mlb's own values")


def f16_scales(rep, tmp, files):
    """--scales f16: every GGUF Q8_0/Q4_0 block's quants and fp16 scale bits
    land in the .mlb as they are (matrices take the GGUF's bytes), and
    ml_run's logits equal, bit for bit, those of the same model with fp32
    scales (fp16 -> fp32 is exact, and every kernel converts exactly). That
    model is the fp16 file's arrays with d widened (tools/mlb.py), not a
    --scales f32 conversion: w2 (172 columns) is F16 in the GGUF and gets
    quantized, and a Q8_0 scale amax/127 rounded to fp16 is another scale."""
    ml_run = os.path.join(ROOT, BUILD, "ml_run")
    prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside."
    for qt in ("Q8_0", "Q4_0"):
        with rep.group(f"stories260K {qt} GGUF --scales f16: blocks bit for bit; ml_run logits "
                       "== the same model's with fp32 scales, bit for bit") as g:
            out = os.path.join(tmp, f"s260_{qt}_f16.mlb")
            rc, so, se = run(CONVERT, os.path.join(tmp, f"s260_{qt}.gguf"), out, "--scales", "f16")
            if not g.check(rc == 0, f"exit {rc}: {se[-300:]}"):
                continue
            g.check("fp16 block scales" in so, "the report does not name the scale type")
            h, arrays = mlb.read_mlb(out)
            g.check(h["version"] == mlb.VERSION_2 and h["stype"] == mlb.STYPE_F16,
                    f"version {h['version']} stype {h.get('stype')}, expected 2 and 1")
            same = n = 0
            for gname, t in files[qt].items():
                if not isinstance(t, tuple):
                    continue
                n += 1
                name = spec_name(gname)
                name = f"layers.{name}" if name[0].isdigit() else name  # tools/mlb.py's names
                blocks = t[0].reshape(t[0].shape[0], -1, 2 + (32 if qt == "Q8_0" else 16))
                rows = blocks.shape[0]
                qb = np.ascontiguousarray(arrays[name + ".q"][:rows]).view(np.uint8)
                db = np.ascontiguousarray(arrays[name + ".d"][:rows]).view(np.uint8)
                ok = (np.array_equal(qb, blocks[:, :, 2:].reshape(rows, -1))
                      and np.array_equal(db, blocks[:, :, :2].reshape(rows, -1)))
                g.check(ok, f"{name}: quants or scale bits differ from the GGUF's blocks")
                g.check(qb.nbytes + db.nbytes == t[0].nbytes,
                        f"{name}: {qb.nbytes + db.nbytes} bytes of blocks, the GGUF's {t[0].nbytes}")
                same += ok
            g.check(n > 20 and same == n, f"{same} of {n} quantized tensors the same")
            wide = os.path.join(tmp, f"s260_{qt}_f16_widened.mlb")
            h, arrays = mlb.read_mlb(out)
            mlb.write_mlb(wide, dict(h, stype=mlb.STYPE_F32), [
                (n, mlb.Quantized(h["wtype"], arrays[n + ".q"], arrays[n + ".d"].astype(np.float32))
                 if len(shape) == 2 else np.array(arrays[n])) for n, shape in mlb.tensor_plan(h)])
            g.check(os.path.getsize(wide) > os.path.getsize(out), "the fp32-scale file is not larger")
            if not g.check(os.path.exists(ml_run), f"{ml_run} not built"):
                continue
            logits = []
            for path in (wide, out):
                lf = path + ".logits"
                p = subprocess.run(RUNNER + [ml_run, "-m", path, "-z", TOK512, "-i", prompt,
                                             "-n", "0", "--temp", "0", "--logits", lf],
                                   capture_output=True, timeout=120)
                if g.check(p.returncode == 0, f"ml_run {path}: exit {p.returncode}: {p.stderr[-300:]!r}"):
                    logits.append(open(lf, "rb").read())
            if len(logits) == 2:
                g.check(len(logits[0]) >= 4 * 512 * 10, f"only {len(logits[0])} bytes of logits")
                g.check(logits[0] == logits[1], "fp16-scale logits differ from the fp32-scale ones")


def auto_scales(rep, tmp):
    """--scales auto, the default: fp16 for a GGUF (the bytes of --scales
    f16: Q8_0/Q4_0 tensors of the output's type copied, others re-quantized
    with fp16 scales), unless --mlb-version 1; fp32 for a llama2.c checkpoint
    and a Hugging Face folder (the bytes of --scales f32: those outputs do
    not move)."""
    hf = os.path.join(os.path.dirname(S260), "stories260K-hf")
    cases = [("Q8_0 GGUF", os.path.join(tmp, "s260_Q8_0.gguf"), (), "f16"),
             ("Q4_0 GGUF", os.path.join(tmp, "s260_Q4_0.gguf"), (), "f16"),
             ("Q8_0 GGUF --mlb-version 1", os.path.join(tmp, "s260_Q8_0.gguf"), ("--mlb-version", "1"), "f32"),
             ("Q8_0 GGUF --wtype q4_0 (nothing copied)", os.path.join(tmp, "s260_Q8_0.gguf"),
              ("--wtype", "q4_0"), "f16"),
             ("F32 GGUF", os.path.join(tmp, "s260_F32.gguf"), (), "f16"),
             ("F16 GGUF --wtype q4_0", os.path.join(tmp, "s260_F16.gguf"), ("--wtype", "q4_0"), "f16"),
             ("llama2.c checkpoint", os.path.join(S260, "stories260K.bin"), (), "f32"),
             ("Hugging Face folder", hf, (), "f32")]
    for label, src, args, want in cases:
        with rep.group(f"stories260K {label}: the default scales are {want}, the bytes of --scales {want}") as g:
            if not g.check(os.path.exists(src), f"{src} is absent"):
                continue
            a, b = os.path.join(tmp, "auto.mlb"), os.path.join(tmp, f"explicit_{want}.mlb")
            rc, so, se = run(CONVERT, src, a, *args)
            rc2, _, se2 = run(CONVERT, src, b, *args, "--scales", want)
            if not g.check(rc == 0 and rc2 == 0, f"exit {rc}/{rc2}: {(se + se2)[-300:]}"):
                continue
            g.check(f"{'fp16' if want == 'f16' else 'fp32'} block scales" in so,
                    f"the report names another scale type: {so[-300:]}")
            g.check(open(a, "rb").read() == open(b, "rb").read(), f"the default differs from --scales {want}")
            h, _ = mlb.read_mlb(a)
            g.check(h.get("stype", 0) == (mlb.STYPE_F16 if want == "f16" else mlb.STYPE_F32),
                    f"stype {h.get('stype')}")


# ======================================================== K-quants
def random_blocks(rng, rows, cols, qtype):
    """Valid blocks of a K-quant: random bytes, then the fp16 super-block
    scales set so that values are about +-0.1 (Q4_K, Q5_K: d and dmin first,
    dmin offsetting the mean quant; Q6_K, Q3_K: d last, their quants signed;
    Q2_K: d and dmin last). Other
    types keep random scales (only used for a type that must be refused)."""
    bs, ts = gguf.GGML_QUANT_SIZES[qtype]
    b = rng.randint(0, 256, size=(rows * cols // bs, ts)).astype(np.uint8)
    d = rng.uniform(0.5, 1.0, size=(len(b), 1)).astype(np.float32)
    if qtype == GT.Q6_K:
        b[:, -2:] = (d * 7.5e-5).astype(np.float16).view(np.uint8)
    elif qtype == GT.Q3_K:  # d last; 6-bit scales minus 32, quants -4..3
        b[:, -2:] = (d * 1e-3).astype(np.float16).view(np.uint8)
    elif qtype == GT.Q2_K:  # d and dmin last; 4-bit scales and mins, quants 0..3
        b[:, -4:] = np.concatenate([d * 0.02, d * 0.02], axis=1).astype(np.float16).view(np.uint8)
    elif qtype in (GT.Q4_K, GT.Q5_K):
        d, mid = (d * 3e-4, 7.5) if qtype == GT.Q4_K else (d * 1.5e-4, 15.5)
        b[:, :4] = np.concatenate([d, d * mid], axis=1).astype(np.float16).view(np.uint8)
    return b.reshape(rows, -1), qtype


def kquant_model(rng, extra=None):
    """A 2-layer dim-256 Llama mixing Q4_K, Q5_K and Q6_K like a Q4_K_M file
    (attn_v, ffn_down and output in Q6_K; layer 1 partly Q5_K), unshared
    classifier; F32 norms."""
    c = dict(dim=256, hidden_dim=512, n_layers=2, n_heads=4, n_kv_heads=2, max_seq=64)
    vocab = gguf_vocab(tokenizer_pieces(300))
    kv = c["n_kv_heads"] * c["dim"] // c["n_heads"]
    shapes = dict(wq=(256, 256), wk=(kv, 256), wv=(kv, 256), wo=(256, 256),
                  w1=(512, 256), w2=(256, 512), w3=(512, 256))
    t = {"token_embd.weight": random_blocks(rng, 300, 256, GT.Q4_K)}
    for l in range(2):
        for k, shape in shapes.items():
            qt = GT.Q6_K if k in ("wv", "w2") else GT.Q5_K if l == 1 and k in ("wq", "w1") \
                else GT.Q4_K
            t[f"blk.{l}.{NAMES[k]}.weight"] = random_blocks(rng, *shape, qt)
        for k in ("attn_norm", "ffn_norm"):
            t[f"blk.{l}.{k}.weight"] = rng.uniform(0.5, 1.5, 256).astype(np.float32)
    t["output_norm.weight"] = np.ones(256, np.float32)
    t["output.weight"] = random_blocks(rng, 300, 256, GT.Q6_K)
    if extra:
        extra(t)
    return c, llama_meta(c, vocab), t


def kquants(rep, tmp):
    c, meta, t = kquant_model(np.random.RandomState(7))
    path = os.path.join(tmp, "kq.gguf")
    write_gguf(path, meta, t)
    types = {x[1].name for x in t.values() if isinstance(x, tuple)}
    for wt in ("q8_0", "q4_0"):
        with rep.group(f"K-quant mix ({', '.join(sorted(types))}) -> {wt}: re-quantized by the "
                       "rule from the package's dequantization, RMSE printed") as g:
            out = os.path.join(tmp, f"kq_{wt}.mlb")
            rc, so, se = convert(path, out, "--wtype", wt)
            if not g.check(rc == 0, f"exit {rc}: {se[-300:]}"):
                continue
            m = Mlb(out)
            check_layout(g, m, "K-quant mix")
            g.check(m.h["shared_classifier"] == 0 and m.h["dim"] == 256 and
                    m.h["hidden_dim"] == 512 and m.h["vocab"] == 300, f"header {m.h}")
            src = {spec_name(k): decoded(v) for k, v in t.items()}
            check_quant_rule(g, m, src, "K-quant mix")
            g.check("vs the GGUF's dequantized values" in so and "w2" in so, f"report: {so[-400:]}")
            w = as_weights(t, 2)
            ids = [1] + list(range(3, 300, 7))
            ref = ref_forward.forward(dict(c, norm_eps=1e-5, rope_theta=10000.0), w, ids)
            qcfg, qw = mlb_weights(m)
            got = ref_forward.forward(qcfg, qw, ids)
            top1 = float(np.mean(got.argmax(1) == ref.argmax(1)))
            want = 0.95 if wt == "q8_0" else 0.6
            g.check(top1 >= want, f"top-1 agreement with the GGUF's values {top1:.2%} < {want:.0%}")


# ======================================================== refusals
def small_model(rng):
    """A 1-layer dim-32 F32 Llama with a gen_random vocabulary."""
    c = dict(dim=32, hidden_dim=64, n_layers=1, n_heads=2, n_kv_heads=1, max_seq=16)
    t = {"token_embd.weight": rng.randn(300, 32).astype(np.float32) * 0.1,
         "output_norm.weight": np.ones(32, np.float32)}
    for k, shape in dict(attn_norm=(32,), wq=(32, 32), wk=(16, 32), wv=(16, 32), wo=(32, 32),
                         ffn_norm=(32,), w1=(64, 32), w2=(32, 64), w3=(64, 32)).items():
        t[f"blk.0.{NAMES[k]}.weight"] = (rng.randn(*shape) * 0.1).astype(np.float32)
    return c, llama_meta(c, gguf_vocab(tokenizer_pieces(300))), t


def expect_refusal(g, label, path, want, errdir, *args):
    rc, _, se = convert(path, os.path.join(errdir, "out.mlb"), *args)
    g.check(rc != 0, f"{label}: exit code 0")
    g.check(any(l.startswith("convert: error: ") for l in se.splitlines()) and want in se,
            f"{label}: stderr lacks 'convert: error: ...{want}...': {se.strip()[-300:]!r}")
    g.check(not os.listdir(errdir), f"{label}: left behind {os.listdir(errdir)}")
    for f in os.listdir(errdir):
        os.remove(os.path.join(errdir, f))


def refusals(rep, tmp):
    errdir = os.path.join(tmp, "err")
    os.makedirs(errdir)
    rng = np.random.RandomState(1)
    c, meta, t = small_model(rng)
    ok = os.path.join(tmp, "small.gguf")
    write_gguf(ok, meta, t)
    with rep.group("small F32 GGUF: the intact file converts") as g:
        out = os.path.join(tmp, "small.mlb")
        rc, _, se = convert(ok, out)
        g.check(rc == 0, f"exit {rc}: {se[-300:]}")
        g.check(os.path.exists(os.path.join(tmp, "small.tokenizer.bin")), "no tokenizer")
        tokp = os.path.join(tmp, "elsewhere.bin")
        rc, _, se = convert(ok, out, "--tokenizer", tokp)
        g.check(rc == 0 and open(tokp, "rb").read() ==
                open(os.path.join(tmp, "small.tokenizer.bin"), "rb").read(), "--tokenizer")

    def variant(name, edit_meta=None, edit_tensors=None):
        m, tt = dict(meta), dict(t)
        if edit_meta:
            edit_meta(m)
        if edit_tensors:
            edit_tensors(tt)
        p = os.path.join(tmp, name + ".gguf")
        write_gguf(p, m, tt)
        return p

    def setkey(key, val, typ):
        return lambda m: m.__setitem__(key, (val, typ, None))

    raw = open(ok, "rb").read()
    with rep.group("GGUF refused: truncated, wrong magic, other versions") as g:
        for label, data, want in (
                ("truncated in the tensor data", raw[:-100], "truncated or corrupt"),
                ("truncated in the metadata", raw[:200], "truncated or corrupt"),
                ("6 bytes", raw[:6], "too short for a GGUF header"),
                ("wrong magic", b"GGML" + raw[4:], "bad magic b'GGML'"),
                ("version 1", raw[:4] + struct.pack("<I", 1) + raw[8:], "GGUF version 1"),
                ("version 4", raw[:4] + struct.pack("<I", 4) + raw[8:], "GGUF version 4"),
                ("big-endian", raw[:4] + struct.pack(">I", 3) + raw[8:], "big-endian")):
            p = os.path.join(tmp, "bad.gguf")
            open(p, "wb").write(data)
            expect_refusal(g, label, p, want, errdir)

    cases = [
        ("missing embedding_length", lambda m: m.pop("llama.embedding_length"), None,
         "metadata key llama.embedding_length is missing"),
        ("missing rms epsilon", lambda m: m.pop("llama.attention.layer_norm_rms_epsilon"), None,
         "llama.attention.layer_norm_rms_epsilon is missing"),
        ("missing architecture", lambda m: m.pop("general.architecture"), None,
         "general.architecture is missing"),
        ("missing tokenizer model", lambda m: m.pop("tokenizer.ggml.model"), None,
         "tokenizer.ggml.model is missing"),
        ("missing scores", lambda m: m.pop("tokenizer.ggml.scores"), None,
         "tokenizer.ggml.scores is missing"),
        ("another architecture", setkey("general.architecture", "gpt2", V.STRING), None,
         "architecture 'gpt2' is not supported"),
        ("another tokenizer model", setkey("tokenizer.ggml.model", "bert", V.STRING), None,
         "tokenizer model 'bert' is not supported"),
        ("rope scaling", lambda m: (setkey("llama.rope.scaling.type", "linear", V.STRING)(m),
                                    setkey("llama.rope.scaling.factor", 4.0, V.FLOAT32)(m)), None,
         "rope scaling (type 'linear', factor 4"),
        ("partial rotary dimension", setkey("llama.rope.dimension_count", 8, V.UINT32), None,
         "llama.rope.dimension_count = 8: a partial rotary dimension"),
        ("mixture of experts", setkey("llama.expert_count", 8, V.UINT32), None,
         "llama.expert_count = 8"),
        ("BOS id 5", setkey("tokenizer.ggml.bos_token_id", 5, V.UINT32), None,
         "tokenizer.ggml.bos_token_id = 5"),
        ("string where a number belongs", setkey("llama.block_count", "1", V.STRING), None,
         "llama.block_count is '1', expected an integer"),
        ("token count != embedding rows",
         lambda m: m.__setitem__("tokenizer.ggml.tokens", (m["tokenizer.ggml.tokens"][0][:299],
                                                          V.ARRAY, V.STRING)), None,
         "tokenizer.ggml.scores has 300 entries, tokenizer.ggml.tokens 299"),
        ("block_count beyond the tensors", setkey("llama.block_count", 1 << 40, V.UINT64), None,
         "llama.block_count = 1099511627776, but the file has only 11 tensors"),
        ("missing tensor", None, lambda t: t.pop("blk.0.ffn_up.weight"),
         "tensor blk.0.ffn_up.weight is missing"),
        ("transposed tensor", None, lambda t: t.__setitem__(
            "blk.0.ffn_down.weight", np.ascontiguousarray(t["blk.0.ffn_down.weight"].T)),
         "tensor blk.0.ffn_down.weight has shape [64, 32], expected [32, 64]"),
        ("unsupported type F64", None, lambda t: t.__setitem__(
            "blk.0.attn_q.weight", t["blk.0.attn_q.weight"].astype(np.float64)),
         "tensor blk.0.attn_q.weight has type F64"),
        ("bias tensor", None,
         lambda t: t.__setitem__("blk.0.attn_q.bias", np.zeros(32, np.float32)),
         "unexpected tensors blk.0.attn_q.bias"),
        ("rope_freqs tensor", None, lambda t: t.__setitem__("rope_freqs.weight",
                                                            np.ones(8, np.float32)),
         "rope_freqs: RoPE scaling factors"),
        ("Inf scale in a Q8_0 block", None, lambda t: t.__setitem__(
            "blk.0.attn_k.weight", inf_block(t["blk.0.attn_k.weight"])),
         "layer 0 wk contains NaN or Inf"),
    ]
    with rep.group("GGUF refused, naming what was found: missing keys, other architecture, "
                   "tokenizer, rope scaling, partial rotary, tensors") as g:
        for i, (label, em, et, want) in enumerate(cases):
            expect_refusal(g, label, variant(f"case{i}", em, et), want, errdir)
    with rep.group("GGUF refused: an i-quant type, IQ4_NL (not handled)") as g:
        rng2 = np.random.RandomState(3)
        _, kmeta, kt = kquant_model(
            rng2, lambda t: t.__setitem__("blk.0.attn_q.weight",
                                          random_blocks(rng2, 256, 256, GT.IQ4_NL)))
        p = os.path.join(tmp, "iq4nl.gguf")
        write_gguf(p, kmeta, kt)
        expect_refusal(g, "IQ4_NL", p, "tensor blk.0.attn_q.weight has type IQ4_NL", errdir)


def inf_block(x):
    """x quantized to Q8_0 with the first block's fp16 scale set to +Inf."""
    b = gguf.quantize(x, GT.Q8_0)
    b[0, :2] = np.array([np.inf], np.float16).view(np.uint8)
    return b, GT.Q8_0


def without_package(rep, tmp):
    """The gguf package hidden: GGUF input names it; other inputs still convert."""
    fake = os.path.join(tmp, "nogguf", "gguf")
    os.makedirs(fake)
    open(os.path.join(fake, "__init__.py"), "w").write("raise ImportError('hidden by test_gguf')\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(fake))
    errdir = os.path.join(tmp, "err_nogguf")
    os.makedirs(errdir)
    with rep.group("without the gguf package: GGUF input refused naming it, a llama2.c "
                   "checkpoint still converts") as g:
        rng = np.random.RandomState(2)
        c, meta, t = small_model(rng)
        p = os.path.join(tmp, "small_np.gguf")
        write_gguf(p, meta, t)
        out = os.path.join(errdir, "out.mlb")
        r = subprocess.run([sys.executable, CONVERT, p, out], capture_output=True, text=True,
                           env=env)
        g.check(r.returncode == 1 and "needs the 'gguf' Python package" in r.stderr,
                f"exit {r.returncode}: {r.stderr[-300:]!r}")
        g.check(not os.listdir(errdir), f"left behind {os.listdir(errdir)}")
        leg = os.path.join(tmp, "small_legacy.bin")
        hdr = struct.pack("<7i", 32, 64, 1, 2, 1, 300, 16)
        body = [t["token_embd.weight"]] + [t[f"blk.0.{NAMES[k]}.weight"] for k in NAMES] + \
               [t["output_norm.weight"], np.zeros(2 * 16 * 8, np.float32)]
        open(leg, "wb").write(hdr + b"".join(np.asarray(x, "<f4").tobytes() for x in body))
        r = subprocess.run([sys.executable, CONVERT, leg, out], capture_output=True, text=True,
                           env=env)
        g.check(r.returncode == 0, f"legacy input: exit {r.returncode}: {r.stderr[-300:]!r}")
        # the same weights through GGUF (package present) give the same file
        out2 = os.path.join(tmp, "small_np.mlb")
        rc, _, se = convert(p, out2)
        g.check(rc == 0 and open(out, "rb").read() == open(out2, "rb").read(),
                f"GGUF and legacy copies of the small model differ (exit {rc}: {se[-200:]})")


def run_all(rep, tmp):
    print(f"# gguf package {importlib.metadata.version('gguf')} from {gguf.__file__}")
    if os.path.isdir(S260):
        stories(rep, tmp)
    else:
        rep.skip("stories260K GGUF imports (F32/F16/BF16/Q8_0/Q4_0/..., tokenizer, ml_run "
                 "logits)", f"models folder {S260} absent", n=20)
    kquants(rep, tmp)
    refusals(rep, tmp)
    without_package(rep, tmp)


def main():
    rep = Report()
    if gguf is None:  # CI installs it: a missing package is a failure, not a skip
        rep.failed += 1
        print(f"FAIL - the gguf package is not importable ({GGUF_MISSING}): "
              f"{sys.executable} -m pip install gguf")
        return rep.summary()
    return rep.run("test_gguf", run_all)


if __name__ == "__main__":
    sys.exit(main())
