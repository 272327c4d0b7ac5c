#!/usr/bin/env python3
"""Tests of tools/convert.py and tools/gen_random.py (DESIGN §7.4 and more).

Run from the repo root: python3 tests/test_convert.py
env MODELS: the shared models folder (default ../shared/models); groups that
need it are skipped when it is absent. Converted files go to a temp dir only.

Protocol (tests/results.sh): "ok - <what>" per passing group, "FAIL - <what>:
<details>" per failure, "SKIP - <what>: <why>", and the counts of individual
checks in the results file (tests/py_checks.py).

The .mlb reader here is written from model/mlb.h on purpose, not imported
from tools/mlb.py, so the writer is checked against the spec, not itself.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import ref_forward  # noqa: E402  (independent fp32 reader and forward pass)
from py_checks import write_results  # noqa: E402

MODELS = os.environ.get("MODELS", "../shared/models")
S260 = os.path.join(MODELS, "stories260K")
PY = sys.executable
CONVERT = os.path.join(ROOT, "tools", "convert.py")
GEN = os.path.join(ROOT, "tools", "gen_random.py")
Q8, Q4 = 8, 2
WTYPES = {"q8_0": Q8, "q4_0": Q4}


# ======================================================== reporting
class Report:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def group(self, what):
        return Group(self, what)

    def skip(self, what, why, n=1):
        self.skipped += n
        print(f"SKIP - {what}: {why}")

    def run(self, name, body):
        """body(self, tmp) in a fresh temp folder, removed after; an exception
        escaping it (a bug in the test itself) is one failure. -> exit code,
        after the summary line."""
        tmp = tempfile.mkdtemp(prefix=name + "_")
        try:
            body(self, tmp)
        except Exception:
            self.failed += 1
            print(f"FAIL - {name}.py: " + traceback.format_exc().replace("\n", " | "))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return self.summary()

    def summary(self):
        write_results(self.passed, self.failed, self.skipped)
        return 1 if self.failed else 0


class Group:
    """Counts each check; prints one ok line, or one FAIL line per failure.
    An exception inside the group is one failure, with its last frame."""

    def __init__(self, rep, what):
        self.rep, self.what, self.fails = rep, what, []

    def check(self, cond, details=""):
        if cond:
            self.rep.passed += 1
        else:
            self.rep.failed += 1
            self.fails.append(details)
        return bool(cond)

    def __enter__(self):
        return self

    def __exit__(self, etype, e, tb):
        if etype is not None:
            self.rep.failed += 1
            where = traceback.extract_tb(tb)[-1]
            self.fails.append(f"{etype.__name__}: {e} (line {where.lineno})")
        for f in self.fails[:5]:
            print(f"FAIL - {self.what}: {f}")
        if len(self.fails) > 5:
            print(f"FAIL - {self.what}: ... and {len(self.fails) - 5} more")
        if not self.fails:
            print(f"ok - {self.what}")
        return True  # the next group still runs


def run(*args):
    """-> (returncode, stdout, stderr) of a python tool."""
    p = subprocess.run([PY] + list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


# ======================================================== .mlb from the spec
HEADER = struct.Struct("<4s8I2f2I")
FIELDS = ("magic", "version", "dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim",
          "vocab", "max_seq", "rope_theta", "norm_eps", "wtype", "shared_classifier")


def spec_tensors(h):
    """[(name, (rows, cols) or (n,))] in the model/mlb.h order."""
    dim, hid, vocab = h["dim"], h["hidden_dim"], h["vocab"]
    kv = h["n_kv_heads"] * dim // h["n_heads"]
    t = [("tok_emb", (vocab, dim))]
    for l in range(h["n_layers"]):
        t += [(f"{l}.attn_norm", (dim,)), (f"{l}.wq", (dim, dim)), (f"{l}.wk", (kv, dim)),
              (f"{l}.wv", (kv, dim)), (f"{l}.wo", (dim, dim)), (f"{l}.ffn_norm", (dim,)),
              (f"{l}.w1", (hid, dim)), (f"{l}.w2", (dim, hid)), (f"{l}.w3", (hid, dim))]
    t.append(("final_norm", (dim,)))
    if h["shared_classifier"] == 0:
        t.append(("wcls", (vocab, dim)))
    return t


class Mlb:
    """A .mlb file parsed per model/mlb.h: header, array offsets, tensors."""

    def __init__(self, path):
        self.raw = open(path, "rb").read()
        self.h = dict(zip(FIELDS, HEADER.unpack_from(self.raw, 0)))
        self.shapes = dict(spec_tensors(self.h))
        self.arrays, end = {}, 256   # name -> (offset, nbytes)
        for name, shape in spec_tensors(self.h):
            n = int(np.prod(shape))
            parts = [(name, 4 * n)] if len(shape) == 1 else [
                (name + ".q", n if self.h["wtype"] == Q8 else n // 2), (name + ".d", n // 8)]
            for aname, nbytes in parts:
                off = (end + 63) // 64 * 64
                self.arrays[aname] = (off, nbytes)
                end = off + nbytes
        self.expected_size = end

    def array(self, aname, dtype):
        off, nbytes = self.arrays[aname]
        return np.frombuffer(self.raw, dtype=dtype, count=nbytes // np.dtype(dtype).itemsize,
                             offset=off)

    def q_values(self, name):
        """Quant values (rows, cols) as int: Q8 int8, Q4 nibble - 8."""
        rows, cols = self.shapes[name]
        if self.h["wtype"] == Q8:
            return self.array(name + ".q", np.int8).reshape(rows, cols).astype(np.int32)
        b = self.array(name + ".q", np.uint8).reshape(rows * cols // 32, 16)
        lo, hi = (b & 15).astype(np.int32), (b >> 4).astype(np.int32)
        return (np.concatenate([lo, hi], axis=1) - 8).reshape(rows, cols)

    def scales(self, name):
        rows, cols = self.shapes[name]
        return self.array(name + ".d", "<f4").reshape(rows, cols // 32)

    def dequant(self, name):
        """float64 (rows, cols): q * d, per 32-block."""
        rows, cols = self.shapes[name]
        q = self.q_values(name).reshape(-1, 32).astype(np.float64)
        return (q * self.scales(name).reshape(-1, 1)).reshape(rows, cols)

    def norm(self, name):
        return self.array(name, "<f4")

    def tensor_bytes(self):
        return self.raw[256:]


def source_tensors(cfg, w, hidden):
    """{spec name: fp32 array} from ref_forward.load_legacy, FFN padded."""
    pad = hidden - cfg["hidden_dim"]
    out = {"tok_emb": w["tok_emb"], "final_norm": w["final_norm"]}
    for l, lw in enumerate(w["layers"]):
        for k, v in lw.items():
            if k in ("w1", "w3"):
                v = np.pad(v, ((0, pad), (0, 0)))
            elif k == "w2":
                v = np.pad(v, ((0, 0), (0, pad)))
            out[f"{l}.{k}"] = v
    if w["wcls"] is not w["tok_emb"]:
        out["wcls"] = w["wcls"]
    return out


def mlb_weights(m):
    """Dequantized .mlb in ref_forward's weight layout."""
    h = m.h
    f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
    layers = [{k: f32(m.norm(f"{l}.{k}") if "norm" in k else m.dequant(f"{l}.{k}"))
               for k in ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3")}
              for l in range(h["n_layers"])]
    tok = f32(m.dequant("tok_emb"))
    wcls = tok if h["shared_classifier"] else f32(m.dequant("wcls"))
    cfg = dict(dim=h["dim"], n_heads=h["n_heads"], n_kv_heads=h["n_kv_heads"],
               norm_eps=h["norm_eps"], rope_theta=h["rope_theta"])
    return cfg, dict(tok_emb=tok, layers=layers, final_norm=m.norm("final_norm"), wcls=wcls)


# ======================================================== check helpers
def check_layout(g, m, label):
    """Offsets 64-aligned, gaps and header padding zero, size == layout."""
    g.check(len(m.raw) == m.expected_size,
            f"{label}: size {len(m.raw)}, layout says {m.expected_size}")
    g.check(all(off % 64 == 0 for off, _ in m.arrays.values()), f"{label}: unaligned array")
    g.check(m.raw[52:256] == bytes(204), f"{label}: header padding not zero")
    prev, nonzero_gap = 256, 0
    for off, nbytes in sorted(m.arrays.values()):
        nonzero_gap += any(m.raw[prev:off])
        prev = off + nbytes
    g.check(nonzero_gap == 0, f"{label}: {nonzero_gap} gaps hold non-zero bytes")


def check_quant_rule(g, m, src, label):
    """Every matrix: scales follow the rule exactly (Q8: d = amax/127; Q4:
    d = m/-8, m the first element of largest |x|), quants in range, and
    dequantized values within d/2 of the source (Q4 +7: within d)."""
    wt = m.h["wtype"]
    for name, shape in m.shapes.items():
        if len(shape) == 1:
            g.check(np.array_equal(m.norm(name), src[name].ravel()), f"{label} {name}: norm differs")
            continue
        x = np.ascontiguousarray(src[name], dtype=np.float32).reshape(-1, 32)
        d = m.scales(name).reshape(-1)
        q = m.q_values(name).reshape(-1, 32)
        if wt == Q8:
            want_d = np.max(np.abs(x), axis=1) / np.float32(127)
            in_range = (np.abs(q) <= 127).all()
        else:
            first = x[np.arange(len(x)), np.argmax(np.abs(x), axis=1)]
            want_d = first / np.float32(-8)
            in_range = ((q >= -8) & (q <= 7)).all()
        g.check(np.array_equal(d, want_d.astype(np.float32)),
                f"{label} {name}: {np.sum(d != want_d)} scales break the rule")
        g.check(in_range, f"{label} {name}: quant out of range")
        err = np.abs(q * d[:, None].astype(np.float64) - x)
        # float32 rounding of x*id adds a few ulps of q: allow 1e-4 of d
        tol = np.abs(d)[:, None].astype(np.float64) * (0.5 + 1e-4)
        if wt == Q4:
            tol = np.where(q == 7, 2 * tol, tol)
        bad = int(np.sum(err > tol))
        g.check(bad == 0, f"{label} {name}: {bad} elements beyond d/2 (max err/d "
                          f"{np.max(err / np.maximum(np.abs(d[:, None]), 1e-30)):.4f})")


def convert(src, out, wtype="q8_0", *extra):
    return run(CONVERT, src, out, "--wtype", wtype, *extra)


def fake_legacy(path, dim, hidden, n_layers, n_heads, n_kv, vocab, seq, seed=0,
                shared=True, edit=None, truncate=0):
    """A small llama2.c legacy checkpoint; edit(dict of arrays) may set values."""
    rng = np.random.RandomState(seed)
    hd, kv = dim // n_heads, n_kv * dim // n_heads
    L = n_layers
    t = dict(tok_emb=rng.randn(vocab, dim), attn_norm=np.ones((L, dim)),
             wq=rng.randn(L, dim, dim), wk=rng.randn(L, kv, dim), wv=rng.randn(L, kv, dim),
             wo=rng.randn(L, dim, dim), ffn_norm=np.ones((L, dim)),
             w1=rng.randn(L, hidden, dim), w2=rng.randn(L, dim, hidden),
             w3=rng.randn(L, hidden, dim), final_norm=np.ones(dim),
             cos=np.zeros((seq, hd // 2)), sin=np.zeros((seq, hd // 2)))
    if not shared:
        t["wcls"] = rng.randn(vocab, dim)
    t = {k: (v * 0.1).astype(np.float32) if k.startswith("w") or k == "tok_emb" else
         v.astype(np.float32) for k, v in t.items()}
    if edit:
        edit(t)
    blob = struct.pack("<7i", dim, hidden, n_layers, n_heads, n_kv,
                       vocab if shared else -vocab, seq)
    blob += b"".join(v.tobytes() for v in t.values())
    with open(path, "wb") as f:
        f.write(blob[:len(blob) - truncate])
    return t


# ======================================================== groups: real models
def test_stories(rep, tmp):
    """stories260K from the legacy, v1 and HF copies, both wtypes."""
    sources = {"legacy": os.path.join(S260, "stories260K.bin"),
               "v1": os.path.join(S260, "stories260K_v1.bin"),
               "hf": os.path.join(MODELS, "stories260K-hf")}
    cfg, w = ref_forward.load_legacy(sources["legacy"])
    src = source_tensors(cfg, w, 192)
    files = {}
    for wname, wt in WTYPES.items():
        for sname, path in sources.items():
            out = os.path.join(tmp, f"s260_{sname}_{wname}.mlb")
            label = f"stories260K {sname} {wname}"
            with rep.group(f"convert {label}: header, layout") as g:
                # Version 1 here, to compare the three layouts; the HF folder's
                # default (a one-file model) is checked below.
                rc, so, se = convert(path, out, wname, *(["--mlb-version", "1"] if sname == "hf" else []))
                if not g.check(rc == 0, f"exit {rc}: {se.strip()[-300:]}"):
                    continue
                g.check("padding to 192" in so, "no hidden_dim padding notice")
                if sname == "hf":
                    # its tokenizer.model, beside the model as llama2.c's tokenizer.py exports it
                    tok = out[:-len(".mlb")] + ".tokenizer.bin"
                    want_tok = open(os.path.join(S260, "tok512.bin"), "rb").read()
                    g.check(os.path.isfile(tok) and open(tok, "rb").read() == want_tok,
                            f"HF: {tok} is not tok512.bin byte for byte")
                    # and by default inside the model: .mlb version 2 with tok512.bin embedded
                    one = out[:-len(".mlb")] + "_onefile.mlb"
                    rc1, _, se1 = convert(path, one, wname)
                    if g.check(rc1 == 0, f"default HF conversion: exit {rc1}: {se1.strip()[-300:]}"):
                        blob = open(one, "rb").read()  # the v2 header: version at 4, tok_off/tok_bytes at 104
                        ver, = struct.unpack_from("<I", blob, 4)
                        toff, tlen = struct.unpack_from("<QQ", blob, 104)
                        g.check(ver == 2 and blob[toff:toff + tlen] == want_tok,
                                "HF default: version 2 with tok512.bin embedded byte for byte")
                m = Mlb(out)
                files[sname, wname] = m
                want = dict(magic=b"MLB1", version=1, dim=64, n_layers=5, n_heads=8,
                            n_kv_heads=4, hidden_dim=192, vocab=512, max_seq=512,
                            rope_theta=10000.0, norm_eps=float(np.float32(1e-5)),
                            wtype=wt, shared_classifier=1)
                for k, v in want.items():
                    g.check(m.h[k] == v, f"header {k} = {m.h[k]!r}, expected {v!r}")
                check_layout(g, m, label)
        with rep.group(f"stories260K {wname}: legacy, v1 and HF give byte-identical tensors") as g:
            ms = [files.get((s, wname)) for s in sources]
            if g.check(all(ms), "a conversion failed"):
                g.check(ms[0].tensor_bytes() == ms[1].tensor_bytes(), "legacy != v1")
                g.check(ms[0].tensor_bytes() == ms[2].tensor_bytes(),
                        "legacy != HF (wq/wk un-permutation?)")
                g.check(ms[0].raw[:256] == ms[2].raw[:256], "legacy and HF headers differ")
        with rep.group(f"stories260K {wname}: quantization rule and error vs fp32 source") as g:
            if g.check(("legacy", wname) in files, "no converted file"):
                check_quant_rule(g, files["legacy", wname], src, wname)
        with rep.group(f"stories260K {wname}: FFN padding 172 -> 192 is exactly zero") as g:
            m = files.get(("legacy", wname))
            if g.check(m is not None, "no converted file"):
                for l in range(5):
                    for k in ("w1", "w3"):
                        g.check(not m.scales(f"{l}.{k}")[172:].any(), f"{l}.{k}: padded rows d != 0")
                        g.check(not m.q_values(f"{l}.{k}")[172:].any(), f"{l}.{k}: padded rows q != 0")
                    g.check(not m.dequant(f"{l}.w2")[:, 172:].any(), f"{l}.w2: padded cols != 0")
                    g.check(not m.q_values(f"{l}.w2")[:, 172:].any(), f"{l}.w2: padded q != 0")
    return files


def test_reference(rep, files):
    """ref_forward reproduces run.c's verified greedy text; the Q8_0/Q4_0
    files, dequantized, stay close to it (the conversion keeps meaning)."""
    ckpt = os.path.join(S260, "stories260K.bin")
    cfg, w = ref_forward.load_legacy(ckpt)
    with rep.group("ref_forward: greedy stories260K matches run.c's verified output") as g:
        ids = ref_forward.greedy(cfg, w, 48)
        text = ref_forward.decode(ref_forward.load_tokenizer(os.path.join(S260, "tok512.bin")), ids)
        want = ref_forward.verified_output(os.path.join(S260, "PROVENANCE.md"))
        g.check(len(ids) == 48, f"stopped after {len(ids)} tokens")
        g.check(want.startswith(text), f"got {text[:80]!r}..., want {want[:80]!r}...")
        g.check(text.startswith("Once upon a time"), f"got {text[:40]!r}")
    ref = ref_forward.forward(cfg, w, ids)
    for wname, min_agree, max_diff in (("q8_0", 0.95, 1.0), ("q4_0", 0.7, 15.0)):
        with rep.group(f"stories260K {wname} dequantized: logits close to fp32") as g:
            m = files.get(("hf", wname))
            if not g.check(m is not None, "no converted file"):
                continue
            qcfg, qw = mlb_weights(m)
            logits = ref_forward.forward(qcfg, qw, ids)
            agree = float(np.mean(logits.argmax(1) == ref.argmax(1)))
            diff = float(np.max(np.abs(logits - ref)))
            g.check(agree >= min_agree, f"top-1 agreement {agree:.3f} < {min_agree}")
            g.check(diff <= max_diff, f"max |logit diff| {diff:.3f} > {max_diff}")


def test_other_models(rep, tmp):
    """The other llama2.c models (MHA, other widths) convert and check out."""
    for folder, fname in (("aidreams260K", "aidreams260K.bin"),
                          ("stories260K-xs-retrain", "stories260K_xs_retrain.bin"),
                          ("zh-poem-750K", "poem_model.bin")):
        path = os.path.join(MODELS, folder, fname)
        if not os.path.exists(path):
            rep.skip(f"convert {fname}", "not in MODELS")
            continue
        with rep.group(f"convert {fname} q8_0: layout and quantization") as g:
            out = os.path.join(tmp, fname + ".mlb")
            rc, _, se = convert(path, out)
            if g.check(rc == 0, f"exit {rc}: {se.strip()[-300:]}"):
                cfg, w = ref_forward.load_legacy(path)
                m = Mlb(out)
                g.check(m.h["dim"] == cfg["dim"] and m.h["vocab"] == cfg["vocab"], "header shape")
                g.check(m.h["hidden_dim"] == (cfg["hidden_dim"] + 31) // 32 * 32, "hidden_dim")
                check_layout(g, m, fname)
                check_quant_rule(g, m, source_tensors(cfg, w, m.h["hidden_dim"]), fname)


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)}, parsed here independently."""
    raw = open(path, "rb").read()
    n = struct.unpack_from("<Q", raw, 0)[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in header.items()}


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, shape, bytes)}; header padded to 8 bytes."""
    header, pos = {}, 0
    for k, (dt, shape, b) in tensors.items():
        header[k] = {"dtype": dt, "shape": shape, "data_offsets": [pos, pos + len(b)]}
        pos += len(b)
    hj = json.dumps(header).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(b for _, _, b in tensors.values()))


def to_half(dtype, x):
    """float32 array -> (raw bytes of dtype, the float32 values they hold)."""
    if dtype == "F16":
        h = x.astype("<f2")
        return h.tobytes(), h.astype(np.float32)
    hi = (x.view("<u4") >> 16).astype("<u2")   # BF16 by truncation
    return hi.tobytes(), (hi.astype(np.uint32) << 16).view(np.float32)


def test_hf_dtypes(rep, tmp):
    """stories260K-hf re-encoded as F16 and BF16, sharded (with and without
    an index): must equal the legacy checkpoint rounded the same way."""
    st = read_safetensors(os.path.join(MODELS, "stories260K-hf", "model.safetensors"))
    legacy = open(os.path.join(S260, "stories260K.bin"), "rb").read()
    names = sorted(st)
    for dtype, with_index in (("F16", True), ("BF16", False)):
        with rep.group(f"HF {dtype} safetensors in 2 shards ({'with' if with_index else 'no'} "
                       "index) == legacy rounded to the same values") as g:
            d = os.path.join(tmp, f"hf_{dtype}")
            os.makedirs(d)
            shutil.copy(os.path.join(MODELS, "stories260K-hf", "config.json"), d)
            shards = {}
            for i, part in enumerate((names[:len(names) // 2], names[len(names) // 2:])):
                fname = f"model-{i + 1:05d}-of-00002.safetensors"
                tensors = {}
                for k in part:
                    b = to_half(dtype, np.frombuffer(st[k][2], dtype="<f4"))[0]
                    tensors[k] = (dtype, st[k][1], b)
                    shards[k] = fname
                write_safetensors(os.path.join(d, fname), tensors)
            if with_index:
                with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
                    json.dump({"metadata": {}, "weight_map": shards}, f)
            # rounding is elementwise, so it commutes with any layout change
            vals = to_half(dtype, np.frombuffer(legacy, dtype="<f4", offset=28).copy())[1]
            ref = os.path.join(tmp, f"legacy_{dtype}.bin")
            with open(ref, "wb") as f:
                f.write(legacy[:28] + vals.astype("<f4").tobytes())
            a, b = os.path.join(tmp, f"hf_{dtype}.mlb"), os.path.join(tmp, f"lg_{dtype}.mlb")
            r1, r2 = convert(d, a), convert(ref, b)
            if g.check(r1[0] == 0 and r2[0] == 0, f"exit {r1[0]}/{r2[0]}: {(r1[2] + r2[2])[-300:]}"):
                g.check(open(a, "rb").read() == open(b, "rb").read(), "files differ")


# ======================================================== groups: synthetic
def test_synthetic_blocks(rep, tmp):
    """Hand-made blocks with known answers, and an unshared classifier."""
    def edit(t):
        e = t["tok_emb"]
        e[0] = 0                                   # all-zero block
        e[1] = 0; e[1, 5] = -3.0                   # one negative element
        e[2] = 0; e[2, 0] = 1.0; e[2, 1] = -1.0    # +max first, then -max
        e[3] = np.linspace(-1, 1, 32)
        e[4] = 1e-39                               # subnormals
    src = os.path.join(tmp, "blocks.bin")
    t = fake_legacy(src, 32, 32, 1, 2, 1, 8, 4, seed=3, shared=False, edit=edit)
    for wname, wt in WTYPES.items():
        with rep.group(f"synthetic blocks {wname}: zero block, signs, clamp, unshared wcls") as g:
            out = os.path.join(tmp, f"blocks_{wname}.mlb")
            rc, _, se = convert(src, out, wname)
            if not g.check(rc == 0, f"exit {rc}: {se.strip()[-300:]}"):
                continue
            m = Mlb(out)
            check_layout(g, m, "blocks")
            g.check(m.h["shared_classifier"] == 0 and "wcls.q" in m.arrays, "wcls missing")
            d, q = m.scales("tok_emb")[:, 0], m.q_values("tok_emb")
            g.check(d[0] == 0 and not q[0].any(), f"zero block: d {d[0]}, q {q[0][:4]}")
            if wt == Q8:
                g.check(d[1] == np.float32(3) / np.float32(127) and q[1, 5] == -127, f"row1: d {d[1]} q {q[1, 5]}")
                g.check(q[2, 0] == 127 and q[2, 1] == -127, f"row2: {q[2, :2]}")
            else:
                g.check(d[1] == np.float32(0.375) and q[1, 5] == -8, f"row1: d {d[1]} q {q[1, 5]}")
                # m = +1 (first), d = -1/8: +1 -> -8; -1 -> +8, clamped to +7
                g.check(d[2] == np.float32(-0.125) and q[2, 0] == -8 and q[2, 1] == 7,
                        f"row2: d {d[2]} q {q[2, :2]}")
            g.check(np.isfinite(m.dequant("tok_emb")).all(), "subnormal block not finite")
            src_t = {"tok_emb": t["tok_emb"], "final_norm": t["final_norm"], "wcls": t["wcls"]}
            for k in ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3"):
                src_t[f"0.{k}"] = t[k][0]
            check_quant_rule(g, m, src_t, wname)


# ======================================================== groups: errors
def expect_error(g, label, args, out):
    rc, _, se = run(*args)
    g.check(rc != 0, f"{label}: exit code 0")
    g.check(any(l.startswith(("convert: error", "gen_random: error")) for l in se.splitlines()),
            f"{label}: no 'error:' message, stderr: {se.strip()[-200:]!r}")
    left = [f for f in os.listdir(os.path.dirname(out)) if f.startswith(os.path.basename(out))]
    g.check(not left, f"{label}: left behind {left}")


def hf_variant(tmp, name, edit_config, truncate=0):
    """A copy of stories260K-hf with an edited config.json."""
    src = os.path.join(MODELS, "stories260K-hf")
    d = os.path.join(tmp, name)
    os.makedirs(d)
    with open(os.path.join(src, "config.json")) as f:
        c = json.load(f)
    edit_config(c)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f)
    st = open(os.path.join(src, "model.safetensors"), "rb").read()
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(st[:len(st) - truncate])
    return d


def test_errors(rep, tmp, have_models):
    errdir = os.path.join(tmp, "err")
    os.makedirs(errdir)
    out = os.path.join(errdir, "out.mlb")
    with rep.group("a missing Python package: one line saying which and how to install it, no traceback") as g:
        # python -S: no site-packages, so neither numpy nor gguf imports
        for tool, args, want in (("convert.py", [os.path.join(tmp, "x"), out], "needs numpy (python3 -m pip install numpy)"),
                                 ("tokfile.py", ["--gguf", os.path.join(tmp, "x"), "-o", out],
                                  "needs the gguf package (python3 -m pip install gguf)")):
            p = subprocess.run([PY, "-S", os.path.join(ROOT, "tools", tool)] + args, capture_output=True, text=True,
                               timeout=60)
            g.check(p.returncode == 1 and want in p.stderr and "Traceback" not in p.stderr,
                    f"{tool} without its package: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")
    with rep.group("progress: a line per layer on a terminal, none into a pipe") as g:
        p = os.path.join(tmp, "three_layers.bin")
        fake_legacy(p, 32, 64, 3, 2, 1, 8, 4)
        rc, so, se = run(CONVERT, p, os.path.join(tmp, "three_layers.mlb"))
        g.check(rc == 0 and "layer 1/" not in se + so, f"into a pipe: exit {rc}, {se.strip()[-200:]!r}")
        if shutil.which("script"):
            r = subprocess.run(["script", "-qec", f"{sys.executable} {CONVERT} {p} "
                                f"{os.path.join(tmp, 'three_layers_tty.mlb')}", "/dev/null"],
                               capture_output=True, text=True)
            g.check(r.returncode == 0 and "convert: layer 3/3" in r.stdout,
                    f"on a terminal (script): exit {r.returncode}, {r.stdout[-300:]!r}")
    with rep.group("converter errors: synthetic inputs") as g:
        p = os.path.join(tmp, "dim48.bin")
        fake_legacy(p, 48, 64, 1, 4, 2, 8, 4)
        expect_error(g, "dim 48", [CONVERT, p, out], out)
        p = os.path.join(tmp, "trunc_small.bin")
        fake_legacy(p, 32, 64, 1, 2, 1, 8, 4, truncate=100)
        expect_error(g, "truncated small checkpoint", [CONVERT, p, out], out)
        p = os.path.join(tmp, "nan.bin")
        # NaN in the last tensor: the error comes mid-write, the .tmp must go
        fake_legacy(p, 32, 64, 1, 2, 1, 8, 4, shared=False,
                    edit=lambda t: t["wcls"].__setitem__((7, 31), np.nan))
        expect_error(g, "NaN weight", [CONVERT, p, out], out)
        p = os.path.join(tmp, "story.txt")
        with open(p, "w") as f:
            f.write("Once upon a time there was a little dog named Max.\n" * 4)
        expect_error(g, "a text file", [CONVERT, p, out], out)
        rc, _, se = run(CONVERT, p, out)
        g.check("not a model file" in se, f"a text file: not called 'not a model file': {se.strip()[-200:]!r}")
        p = os.path.join(tmp, "v3.bin")
        with open(p, "wb") as f:
            f.write(struct.pack("<Ii", 0x616B3432, 3) + bytes(248))
        expect_error(g, "ak42 version 3", [CONVERT, p, out], out)
        expect_error(g, "missing input", [CONVERT, os.path.join(tmp, "nope.bin"), out], out)
        p = os.path.join(tmp, "ok.bin")
        fake_legacy(p, 32, 64, 1, 2, 1, 8, 4)
        expect_error(g, "--wtype q5_0", [CONVERT, p, out, "--wtype", "q5_0"], out)
        expect_error(g, "gen_random --dim 48", [GEN, out, "--dim", "48"], out)
        expect_error(g, "gen_random --n-kv-heads 3", [GEN, out, "--n-kv-heads", "3"], out)
    if not have_models:
        rep.skip("converter errors: real model inputs", f"no {S260}")
        return
    with rep.group("converter errors: real model inputs") as g:
        expect_error(g, "runq v2 file",
                     [CONVERT, os.path.join(S260, "stories260K_q8_g8.bin"), out], out)
        g.check("version 2" in run(CONVERT, os.path.join(S260, "stories260K_q8_g8.bin"), out)[2],
                "v2 message does not say 'version 2'")
        p = os.path.join(tmp, "trunc.bin")
        with open(os.path.join(S260, "stories260K.bin"), "rb") as f:
            data = f.read()
        with open(p, "wb") as f:
            f.write(data[:len(data) // 2])
        expect_error(g, "truncated stories260K.bin", [CONVERT, p, out], out)
        p = os.path.join(tmp, "trunc_v1.bin")
        with open(os.path.join(S260, "stories260K_v1.bin"), "rb") as f:
            data = f.read()
        with open(p, "wb") as f:
            f.write(data[:-4])
        expect_error(g, "truncated stories260K_v1.bin", [CONVERT, p, out], out)
        for name, edit in (("mistral", lambda c: c.update(model_type="mistral")),
                           ("sliding_window", lambda c: c.update(sliding_window=4096)),
                           ("attention_bias", lambda c: c.update(attention_bias=True)),
                           ("mlp_bias", lambda c: c.update(mlp_bias=True)),
                           ("rope_scaling", lambda c: c.update(rope_scaling={"type": "linear", "factor": 2.0})),
                           ("gelu", lambda c: c.update(hidden_act="gelu")),
                           ("head_dim", lambda c: c.update(head_dim=16))):
            d = hf_variant(tmp, "hf_" + name, edit)
            expect_error(g, f"HF {name}", [CONVERT, d, out], out)
        d = hf_variant(tmp, "hf_truncated", lambda c: None, truncate=1000)
        expect_error(g, "HF truncated safetensors", [CONVERT, d, out], out)


def tiny_hf(d, edit_config=None, edit_tensors=None):
    """A minimal synthetic Hugging Face Llama folder (F32, 1 layer), so the
    tensor checks run without the models folder."""
    os.makedirs(d)
    cfg = dict(model_type="llama", hidden_size=32, intermediate_size=64, num_hidden_layers=1,
               num_attention_heads=2, num_key_value_heads=1, vocab_size=8,
               max_position_embeddings=16, rms_norm_eps=1e-5, tie_word_embeddings=True)
    if edit_config:
        edit_config(cfg)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    rng = np.random.RandomState(3)
    shapes = {"model.embed_tokens.weight": [8, 32], "model.norm.weight": [32]}
    for name, shape in (("input_layernorm", [32]), ("post_attention_layernorm", [32]),
                        ("self_attn.q_proj", [32, 32]), ("self_attn.k_proj", [16, 32]),
                        ("self_attn.v_proj", [16, 32]), ("self_attn.o_proj", [32, 32]),
                        ("mlp.gate_proj", [64, 32]), ("mlp.down_proj", [32, 64]),
                        ("mlp.up_proj", [64, 32])):
        shapes[f"model.layers.0.{name}.weight"] = shape
    t = {k: ["F32", v, (rng.randn(*v) * 0.1).astype("<f4").tobytes()] for k, v in shapes.items()}
    if edit_tensors:
        edit_tensors(t)
    write_safetensors(os.path.join(d, "model.safetensors"), {k: tuple(v) for k, v in t.items()})
    return d


def test_hf_tensor_errors(rep, tmp):
    """Missing, misshapen or mistyped HF tensors and an unsupported config:
    a message naming the tensor or field, exit 1, no output file."""
    errdir = os.path.join(tmp, "hf_err")
    os.makedirs(errdir)
    out = os.path.join(errdir, "out.mlb")
    q = "model.layers.0.self_attn.q_proj.weight"
    with rep.group("converter errors: HF tensors missing, misshapen, mistyped; unsupported config") as g:
        ok_dir = tiny_hf(os.path.join(tmp, "hf_ok"))
        rc, _, se = convert(ok_dir, out)
        g.check(rc == 0, f"the intact tiny HF folder: exit {rc}: {se.strip()[-300:]}")
        if os.path.exists(out):
            os.remove(out)
        cases = (
            ("missing tensor", None, lambda t: t.pop("model.layers.0.mlp.up_proj.weight"),
             "tensor model.layers.0.mlp.up_proj.weight is missing"),
            ("wrong shape", None, lambda t: t[q].__setitem__(1, [32, 16]),
             f"tensor {q} has shape [32, 16], expected [32, 32]"),
            ("transposed shape", None,
             lambda t: t["model.layers.0.mlp.down_proj.weight"].__setitem__(1, [64, 32]),
             "has shape [64, 32], expected [32, 64]"),
            ("unsupported dtype", None, lambda t: t[q].__setitem__(0, "I64"), "has dtype I64"),
            ("data shorter than its shape", None, lambda t: t[q].__setitem__(2, t[q][2][:-8]),
             f"tensor {q} has 4088 bytes of data, expected 4096"),
            ("architecture gpt2", lambda c: c.update(model_type="gpt2"), None,
             "unsupported config: model_type 'gpt2'"),
            ("missing config field", lambda c: c.pop("num_hidden_layers"), None,
             "missing field 'num_hidden_layers'"),
        )
        for i, (label, ec, et, want) in enumerate(cases):
            d = tiny_hf(os.path.join(tmp, f"hf_err{i}"), ec, et)
            expect_error(g, label, [CONVERT, d, out], out)
            se = run(CONVERT, d, out)[2]
            g.check(want in se, f"{label}: stderr lacks {want!r}: {se.strip()[-300:]!r}")
        expect_error(g, "--wtype f16", [CONVERT, ok_dir, out, "--wtype", "f16"], out)
        se = run(CONVERT, ok_dir, out, "--wtype", "f16")[2]
        g.check("--wtype" in se and "q8_0" in se, f"--wtype message: {se.strip()[-300:]!r}")


# ======================================================== groups: gen_random
def test_gen_random(rep, tmp):
    a = os.path.join(tmp, "r_a.mlb")
    b = os.path.join(tmp, "r_b.mlb")
    c = os.path.join(tmp, "r_c.mlb")
    shape = ["--dim", "64", "--n-layers", "2", "--n-heads", "4", "--n-kv-heads", "2",
             "--hidden-dim", "128", "--vocab", "300", "--max-seq", "64"]
    with rep.group("gen_random: seeded determinism, header, layout") as g:
        ta, tb = os.path.join(tmp, "tok_a.bin"), os.path.join(tmp, "tok_b.bin")
        leg = os.path.join(tmp, "r_a_legacy.bin")
        rcs = [run(GEN, a, *shape, "--seed", "1", "--tokenizer", ta, "--legacy-out", leg)[0],
               run(GEN, b, *shape, "--seed", "1", "--tokenizer", tb)[0],
               run(GEN, c, *shape, "--seed", "2")[0]]
        if not g.check(rcs == [0, 0, 0], f"exit codes {rcs}"):
            return
        ra, rb, rc_ = (open(p, "rb").read() for p in (a, b, c))
        g.check(ra == rb, "same seed gave different bytes")
        g.check(ra[256:] != rc_[256:], "different seeds gave the same weights")
        g.check(open(ta, "rb").read() == open(tb, "rb").read(), "tokenizer not deterministic")
        m = Mlb(a)
        want = dict(magic=b"MLB1", version=1, dim=64, n_layers=2, n_heads=4, n_kv_heads=2,
                    hidden_dim=128, vocab=300, max_seq=64, wtype=Q8, shared_classifier=1)
        for k, v in want.items():
            g.check(m.h[k] == v, f"header {k} = {m.h[k]!r}, expected {v!r}")
        check_layout(g, m, "gen_random")
    with rep.group("gen_random: --legacy-out converts to the identical .mlb") as g:
        out = os.path.join(tmp, "r_a_conv.mlb")
        rc, _, se = convert(leg, out)
        if g.check(rc == 0, f"exit {rc}: {se.strip()[-300:]}"):
            g.check(open(out, "rb").read() == ra, "convert(legacy-out) != gen_random .mlb")
        cfg, w = ref_forward.load_legacy(leg)
        logits = ref_forward.forward(cfg, w, [1, 5, 200, 7, 299, 42])
        spread = float(np.std(logits))
        g.check(np.isfinite(logits).all(), "non-finite logits")
        g.check(0.5 < spread < 20, f"logit std {spread:.3f} not in (0.5, 20)")
    with rep.group("gen_random: tokenizer.bin matches the vocab") as g:
        raw = open(ta, "rb").read()
        maxlen, pos, pieces = struct.unpack_from("<I", raw, 0)[0], 4, []
        while pos < len(raw):
            _, n = struct.unpack_from("<fI", raw, pos)
            pieces.append(raw[pos + 8:pos + 8 + n])
            pos += 8 + n
        g.check(len(pieces) == 300, f"{len(pieces)} pieces")
        g.check(pieces[:3] == [b"<unk>", b"\n<s>\n", b"\n</s>\n"], f"specials {pieces[:3]}")
        g.check(pieces[3] == b"<0x00>" and pieces[258] == b"<0xFF>", "byte tokens")
        g.check(len(set(pieces)) == len(pieces), "duplicate pieces")
        g.check(maxlen == max(map(len, pieces)), f"max_token_length {maxlen}")
        g.check(all(32 <= c < 127 for p in pieces[259:] for c in p), "non-printable piece")
    with rep.group("gen_random: --unshared and q4_0") as g:
        u = os.path.join(tmp, "r_u.mlb")
        rc, _, se = run(GEN, u, "--unshared", "--wtype", "q4_0", "--seed", "5")
        if g.check(rc == 0, f"exit {rc}: {se.strip()[-300:]}"):
            m = Mlb(u)
            g.check(m.h["shared_classifier"] == 0 and m.h["wtype"] == Q4, "header")
            check_layout(g, m, "gen_random unshared q4_0")


def run_all(rep, tmp):
    have_models = os.path.isdir(S260) and os.path.isdir(os.path.join(MODELS, "stories260K-hf"))
    if have_models:
        files = test_stories(rep, tmp)
        test_reference(rep, files)
        test_hf_dtypes(rep, tmp)
        test_other_models(rep, tmp)
    else:
        for what in ("convert stories260K (legacy, v1, HF) x (q8_0, q4_0)",
                     "ref_forward and dequantized logits", "HF F16/BF16 sharded",
                     "other models"):
            rep.skip(what, f"models folder {S260} (or stories260K-hf) absent")
    test_synthetic_blocks(rep, tmp)
    test_errors(rep, tmp, have_models)
    test_hf_tensor_errors(rep, tmp)
    test_gen_random(rep, tmp)


def main():
    return Report().run("test_convert", run_all)


if __name__ == "__main__":
    sys.exit(main())
