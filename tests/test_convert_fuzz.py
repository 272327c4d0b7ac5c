#!/usr/bin/env python3
"""The converter refuses what the runtime would refuse, and never with a
traceback.

1. GGUF header fields out of the loader's range (norm_eps NaN, negative or
   1e30; rope.freq_base 0, negative or inf; a context of 2^31 or 2^40) and a
   tensor offset off the file's alignment: each refused, naming the field
   (or the offset and the alignment), leaving no file behind.
2. A fuzz loop, bounded in time (ML_FUZZ_SECONDS, default 20; ML_FUZZ_SEED
   repeats a run): mutations of valid GGUF files (bytes flipped, integers set
   to edge values, truncations), each converted in-process; every result is
   either a clean refusal ("convert: error: ...", exit 1, no file left) or a
   model the built ml_run loads and runs (or, without a build, one that
   tools/mlb.py reads back). Any other exception, or a hang, fails.

Run from the repo root: python3 tests/test_convert_fuzz.py
env BUILD (ml_run's folder, default build/scalar), RUNNER, MODELS.
Skipped without the gguf package.
"""
import contextlib
import io
import os
import random
import shlex
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "tools"))
import convert  # noqa: E402
import mlb  # noqa: E402
from py_checks import Checks  # noqa: E402

BUILD = os.environ.get("BUILD", "build/scalar")
RUNNER = shlex.split(os.environ.get("RUNNER", ""))
ML_RUN = os.path.join(BUILD, "ml_run")
try:
    import gguf
    import test_gguf
except ImportError as e:
    gguf = None
    GGUF_MISSING = str(e)


class Hang(Exception):
    pass


def on_alarm(signum, frame):
    raise Hang()


def convert_in_process(inp, out, *args, limit=10):
    """(exit code, stdout, stderr, traceback text or None) of convert.main."""
    so, se = io.StringIO(), io.StringIO()
    rc, tb = None, None
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(limit)
    try:
        with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
            rc = convert.main([inp, out, *args])
    except SystemExit as e:
        rc = e.code
    except Hang:
        tb = f"no answer in {limit} s"
    except BaseException:  # the failure this test is for
        tb = traceback.format_exc()
    finally:
        signal.alarm(0)
    return rc, so.getvalue(), se.getvalue(), tb


def loads(out, tok):
    """'' if the built ml_run loads the model (and the tokenizer), else why
    not. A run may still stop cleanly at a non-finite logit (random weights
    that overflow float32): that is the runtime's check, past loading."""
    if not os.access(ML_RUN, os.X_OK):
        try:
            mlb.read_mlb(out)
            return ""
        except Exception as e:
            return f"tools/mlb.py cannot read it back: {e}"
    # -n 0 (the whole context, at most -c 8): a mutated context length can be 1
    r = subprocess.run(RUNNER + [ML_RUN, "-m", out, "-z", tok, "-n", "0", "--temp", "0", "-c", "8"],
                       capture_output=True, timeout=60)
    err = r.stderr.decode(errors="replace")
    if r.returncode == 0 or (r.returncode == 1 and "ml_run: generating failed" in err):
        return ""
    return f"ml_run exit {r.returncode}: {err.strip()[-300:]}"


def leftovers(folder, keep):
    return sorted(set(os.listdir(folder)) - set(keep))


def field_offset(reader, part):
    """Where a reader's memmap slice starts in the file."""
    return part.ctypes.data - reader.data.ctypes.data


# ======================================================== fields out of range
def field_cases(c, tmp, base_meta, tensors):
    V = gguf.GGUFValueType
    out = os.path.join(tmp, "f", "out.mlb")
    os.makedirs(os.path.dirname(out))
    cases = [("norm_eps NaN", "llama.attention.layer_norm_rms_epsilon", float("nan"), V.FLOAT32, "norm_eps"),
             ("norm_eps negative", "llama.attention.layer_norm_rms_epsilon", -1e-5, V.FLOAT32, "norm_eps"),
             ("norm_eps 1e30", "llama.attention.layer_norm_rms_epsilon", 1e30, V.FLOAT32, "norm_eps"),
             ("rope.freq_base 0", "llama.rope.freq_base", 0.0, V.FLOAT32, "rope_theta"),
             ("rope.freq_base negative", "llama.rope.freq_base", -10000.0, V.FLOAT32, "rope_theta"),
             ("rope.freq_base inf", "llama.rope.freq_base", float("inf"), V.FLOAT32, "rope_theta"),
             ("rope.freq_base 1e39 as float64", "llama.rope.freq_base", 1e39, V.FLOAT64, "rope_theta"),
             ("context 2^31", "llama.context_length", 1 << 31, V.UINT32, "max_seq is 1..1048576"),
             ("context 2^40", "llama.context_length", 1 << 40, V.UINT64, "max_seq is 1..1048576"),
             ("context 0", "llama.context_length", 0, V.UINT32, "max_seq"),
             ("embedding_length 2^40", "llama.embedding_length", 1 << 40, V.UINT64, ""),
             ("head_count 2^40", "llama.attention.head_count", 1 << 40, V.UINT64,
              "llama.attention.head_count = 1099511627776: the runtime's n_heads is 1..32"),
             ("context_length 2^31 names the key", "llama.context_length", 1 << 31, V.UINT32,
              "llama.context_length = 2147483648: the runtime's max_seq is 1..1048576"),
             ("block_count 2^63", "llama.block_count", 1 << 63, V.UINT64, "")]
    for label, key, val, typ, want in cases:
        meta = dict(base_meta)
        meta[key] = (val, typ, None)
        p = os.path.join(tmp, "field.gguf")
        test_gguf.write_gguf(p, meta, tensors)
        rc, _, se, tb = convert_in_process(p, out)
        c.report(tb is None and rc == 1 and se.startswith("convert: error: ") and want in se
                 and not os.listdir(os.path.dirname(out)),
                 f"fields: {label}: refused naming '{want}' ({tb or se.strip()[-200:]})")

    # A Q8_0 quant of -128 (kept block for block, the loader would refuse it).
    t = dict(tensors)
    q, qt = test_gguf.encode(t["token_embd.weight"], "Q8_0")
    q = np.array(q, dtype=np.uint8)
    q.reshape(-1)[2 + 34 * 5] = 0x80  # block 5's first quant: row 5 (dim 32, one block a row)
    t["token_embd.weight"] = (q, qt)
    p = os.path.join(tmp, "q128.gguf")
    test_gguf.write_gguf(p, base_meta, t)
    rc, _, se, tb = convert_in_process(p, out, "--wtype", "q8_0")
    c.report(tb is None and rc == 1 and "tensor token_embd.weight: row 5 block 0: Q8_0 quant -128" in se
             and not os.listdir(os.path.dirname(out)),
             f"fields: a GGUF Q8_0 quant of -128 is refused, naming the block ({tb or se.strip()[-200:]})")

    # A tensor offset off the alignment: named, not blamed on the values.
    p = os.path.join(tmp, "aligned.gguf")
    test_gguf.write_gguf(p, base_meta, tensors)
    reader = gguf.GGUFReader(p)
    t = min(reader.tensors, key=lambda t: t.data_offset)
    pos = field_offset(reader, t.field.parts[-1])
    rel = int(t.field.parts[-1][0])
    del reader
    raw = bytearray(open(p, "rb").read())
    struct.pack_into("<Q", raw, pos, rel + 4)
    bad = os.path.join(tmp, "misaligned.gguf")
    open(bad, "wb").write(raw)
    rc, _, se, tb = convert_in_process(bad, out)
    c.report(tb is None and rc == 1 and f"data offset {rel + 4} is not a multiple of" in se
             and "alignment 32" in se and "NaN" not in se,
             f"fields: a tensor offset off the alignment is named with the alignment ({tb or se.strip()[-200:]})")


# ======================================================== the fuzz loop
EDGE = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 40, (1 << 63) - 1,
        (1 << 64) - 1, 0x7FC00000, 0x7F800000, 0xFF800000]


def mutate(rng, data, head_end):
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        # mostly in the header, metadata and tensor infos, sometimes in the data
        hi = min(head_end if rng.random() < 0.85 else len(b), len(b))
        if hi < 9:
            break
        op = rng.random()
        if op < 0.4:
            i = rng.randrange(hi)
            b[i] ^= 1 << rng.randrange(8)
        elif op < 0.8:
            width = rng.choice((1, 2, 4, 8))
            i = rng.randrange(max(1, hi - width))
            v = rng.choice(EDGE) & ((1 << (8 * width)) - 1)
            b[i:i + width] = v.to_bytes(width, "little")
        elif op < 0.9:
            del b[rng.randrange(len(b)):]
        else:
            i, n = rng.randrange(hi), rng.randint(1, 16)
            del b[i:i + n]
    return bytes(b)


def fuzz(c, tmp, seeds, seconds, seed):
    rng = random.Random(seed)
    work = os.path.join(tmp, "z")
    os.makedirs(work)
    inp, out = os.path.join(tmp, "in.gguf"), os.path.join(work, "out.mlb")
    tok = os.path.join(work, "out.tokenizer.bin")
    n = refused = loaded = failed = 0
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        data, head_end = seeds[n % len(seeds)]
        case = mutate(rng, data, head_end)
        open(inp, "wb").write(case)
        rc, _, se, tb = convert_in_process(inp, out)
        n += 1
        why = None
        if tb is not None:
            why = f"exception: {tb.strip().splitlines()[-1]}"
        elif rc == 1:
            if not se.startswith("convert: error: ") or leftovers(work, []):
                why = f"unclean refusal: {se.strip()[-200:]!r}, left {leftovers(work, [])}"
            refused += 1
        elif rc == 0:
            why = loads(out, tok) or None
            loaded += why is None
        else:
            why = f"exit {rc}"
        if why:
            failed += 1
            keep = os.path.join(tmp, f"fail{failed}.gguf")
            open(keep, "wb").write(case)
            if failed <= 5:
                c.report(False, f"fuzz: case {n} (seed {seed}): {why}\n{tb or ''}")
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
    c.report(failed == 0 and n > 0, f"fuzz: {n} mutated GGUF files in {seconds} s (seed {seed}): "
             f"{refused} refused cleanly, {loaded} converted and loaded, {failed} failed")


def safetensors_cases(c, tmp):
    """Hugging Face headers whose JSON parses into numbers too big for an
    int (1e400 is inf) or nests too deep for Python's parser: refused."""
    import shutil
    hf = os.path.join(os.environ.get("MODELS", os.path.join(ROOT, "..", "shared", "models")), "stories260K-hf")
    if not os.path.isfile(os.path.join(hf, "model.safetensors")):
        c.skip(f"convert: safetensors headers: no {hf}")
        return
    data = open(os.path.join(hf, "model.safetensors"), "rb").read()
    body = data[8 + struct.unpack("<Q", data[:8])[0]:]
    for what, head in (("an offset of 1e400", b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [1e400, 1e400]}}'),
                       ("a shape of 1e400", b'{"a": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}}'),
                       ("brackets nested 100000 deep", b"[" * 100000 + b"]" * 100000)):
        d = os.path.join(tmp, "hf")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(hf, d)
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head + body)
        out = os.path.join(tmp, "hf.mlb")
        rc, _, se, tb = convert_in_process(d, out)
        c.report(tb is None and rc == 1 and se.startswith("convert: error: ") and not os.path.exists(out),
                 f"convert: a safetensors header with {what}: refused (exit {rc}) {se.strip()[:120]!r}\n{tb or ''}")


def main(c):
    with tempfile.TemporaryDirectory() as tmp:
        safetensors_cases(c, tmp)
    if gguf is None:
        c.skip(f"convert fuzz: no gguf package ({GGUF_MISSING})")
        return
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.RandomState(1)
        cfg, meta, tensors = test_gguf.small_model(rng)
        field_cases(c, tmp, meta, tensors)
        seeds = []
        for i, edit in enumerate((None, "q8")):
            t = dict(tensors)
            if edit == "q8":
                t = {k: (test_gguf.encode(v, "Q8_0") if v.ndim == 2 else v) for k, v in t.items()}
            p = os.path.join(tmp, f"seed{i}.gguf")
            test_gguf.write_gguf(p, meta, t)
            reader = gguf.GGUFReader(p)
            head_end = reader.data_offset
            del reader
            seeds.append((open(p, "rb").read(), head_end))
        seconds = float(os.environ.get("ML_FUZZ_SECONDS", "20"))
        seed = int(os.environ.get("ML_FUZZ_SEED", str(int(time.time()) % 100000)))
        fuzz(c, tmp, seeds, seconds, seed)


if __name__ == "__main__":
    checks = Checks()
    checks.run(lambda: main(checks))
